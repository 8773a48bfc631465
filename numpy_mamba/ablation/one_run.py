"""One training run of the ablation, a unit of the runner: (seed, model, arm, task set, length) trained by
Algorithm 1, recording at every checkpoint (step 0, the initialisation, included) the accuracy per
task group on Table 1's test prompts and every layer's mechanism (``terms.py``), and layer 1's terms
along training; and what a run varies: arms, task sets, held-out pairs, test prompts, terms.

Streams: seed s's world is ``runs.worlds.world_for(s)``, training default_rng([s, 11, 0, model])
(the same initialisation and minibatches at every depth, task set and factor), test prompts
default_rng([s, 11, 1, test, prompt set]) (the same for every model, depth and factor: paired).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..data import SECTION4, World, testing_batch
from ..fused import network
from ..measure.tasks import task_group_names, task_groups
from ..model import PAPER_MODELS as MODELS
from ..network import Network
from ..runs.worlds import world_for
from ..sgd import DivergenceError, train
from .terms import layer_scores, pattern_terms, score_by_step, signed_steps

STREAM = 11
ARMS = {"one_layer": (1, False), "three_layer": (3, False), "three_layer_prenorm": (3, True)}   # (layers, pre-norm)
# the training task sets: T_tr (Condition 1's cycle), every ordered pair of T, and every ordered pair
# but HELD_OUT, which stay unseen so that the all-pairs arm's generalisation can still be measured
TASK_SETS = ("cycle", "all", "heldout")
# one pair of patterns held out per pattern: (0, 2) and (3, 5) two steps apart, (1, 4) three steps
# apart on the cycle, each in both orders; every pattern keeps four of its five partners
HELD_OUT = ((0, 2), (2, 0), (3, 5), (5, 3), (1, 4), (4, 1))
TESTS = {"FQ": dict(alpha=0.5, placement="farthest"), "R": dict(alpha=0.5, placement="random"),
         "CQ": dict(alpha=0.5, placement="closest"), "clean": dict(alpha=0.0, placement="random")}
# every run of a seed and model: (arm, task set, length); each chooses its own step size
RUNS = tuple((arm, tasks, length) for arm, (_, prenorm) in ARMS.items()
             for tasks, length in ((("cycle", "short"),) if prenorm else
                                   (("cycle", "short"), ("cycle", "long"), ("all", "short"), ("all", "long"),
                                    ("heldout", "short"))))
PROMPT_SETS = ("all", "heldout")            # test prompts from every task of T, and from HELD_OUT only
TERMS = ("S", "init", "linear", "product", "via_ends", "via_middle", "via_other", "outside", "dW_B", "dW_C")
TRACKED = ("S", "linear", "product", "via_middle")          # terms of layer 1 recorded along training


def arm_network(model: str, arm: str) -> Network:
    """The Network an arm trains: eq (3) at one layer, the residual or pre-norm stack at three."""
    n_layers, prenorm = ARMS[arm]
    return network(model, n_layers, prenorm)


def run_length(settings, length: str) -> int:
    """Steps of a run: T_short ("short") or T_long ("long")."""
    return {"short": settings.T_short, "long": settings.T_long}[length]


@dataclass(frozen=True)
class HeldOutWorld(World):
    """A seed's world whose training tasks T_tr are every ordered pair of T but ``HELD_OUT``: training
    on it (``sgd.train`` draws T_tr, ``TrainConfig.tasks = "cycle"``) never sees the held-out pairs,
    so accuracy on them measures generalisation to tasks never trained on."""

    held_out: tuple = HELD_OUT

    def training_tasks(self) -> np.ndarray:
        tasks = self.all_tasks()
        return tasks[[tuple(t) not in set(self.held_out) for t in tasks.tolist()]]


def training_world(world: World, tasks: str) -> tuple:
    """(world to train on, TrainConfig.tasks) of a task set of TASK_SETS."""
    if tasks == "heldout":
        return HeldOutWorld(world.mu, world.nu, world.v_star, world.beta), "cycle"
    return world, tasks


def prompts_for(world, settings, seed: int) -> dict:
    """Seed ``seed``'s test prompts of every setting in TESTS and prompt set (every task of T, and
    only the held-out pairs): {(test, prompt set): (Batch, task group (n,))}."""
    out = {}
    for i, (name, test) in enumerate(TESTS.items()):
        for j, which in enumerate(PROMPT_SETS):
            tasks = None if which == "all" else np.array(HELD_OUT)
            b = testing_batch(world, settings.n_test, SECTION4.l_ts, K_prime=settings.K_prime,
                              kappa_a_prime=settings.kappa_a_prime, label_rule="target", target=settings.target,
                              rng=np.random.default_rng([seed, STREAM, 1, i, j]), tasks=tasks, **test)
            out[name, which] = (b, task_groups(b.task, world.M1))
    return out


def group_counts(net: Network, params, tests: dict, n_groups: int) -> dict:
    """{"test/prompt set": {"wrong": (G,), "n": (G,)}} misclassified prompts (eq (5)) per task group."""
    out = {}
    for (name, which), (batch, group) in tests.items():
        with np.errstate(over="ignore", invalid="ignore"):
            wrong = net.misclassified(params, batch.P, batch.z)
        out[f"{name}/{which}"] = {"wrong": np.bincount(group[wrong], minlength=n_groups).tolist(),
                                  "n": np.bincount(group, minlength=n_groups).tolist()}
    return out


def mechanism_by_layer(world, model: str, arm: str, params, layers: list, clean, delta: float) -> dict:
    """Every layer's pattern terms (``terms.pattern_terms`` on its W_B, W_C) and attention scores
    by signed step on the clean test prompts: {"terms": [per layer], "scores": [per layer]}.  A
    value that overflowed (a run on its way to diverging) is None: not measured, never inf."""
    n_layers, prenorm = ARMS[arm]
    with np.errstate(over="ignore", invalid="ignore"):
        s = layer_scores(model, n_layers, prenorm, params, clean.P)
        steps = signed_steps(clean, world.M1)
        found = {"terms": [pattern_terms(world, layer.W_B, layer.W_C, delta) for layer in layers],
                 "scores": [score_by_step(x, steps, world.M1) for x in s]}
    return finite_or_none(found)


def finite_or_none(obj):
    """``obj`` (nested dicts and lists of numbers) with every non-finite number replaced by None."""
    if isinstance(obj, dict):
        return {k: finite_or_none(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite_or_none(v) for v in obj]
    return None if isinstance(obj, float) and not np.isfinite(obj) else obj


def run_unit(settings, seed: int, model: str, arm: str, tasks: str, length: str, step: dict) -> dict:
    """Train ``model`` (arm: depth and architecture; tasks: a task set of TASK_SETS) on seed ``seed``'s
    world with step = {"delta", "eta"} (its own, ``gap.selection``) for ``run_length`` steps.  Records, at every checkpoint (step
    0 = the initialisation included), accuracy per task group and every layer's mechanism
    (``mechanism_by_layer``), and layer 1's terms every ``record_every`` steps; a diverged run keeps
    what it recorded before and says at which step it diverged."""
    world, net = world_for(seed), arm_network(model, arm)
    train_on, config_tasks = training_world(world, tasks)
    config = settings.config(step["eta"], step["delta"], run_length(settings, length), config_tasks)
    tests, n_groups = prompts_for(world, settings, seed), len(task_group_names(world.M1))
    clean = tests["clean", "all"][0]
    checkpoints = {}

    def record(t, params):
        layers = net.layers(params)
        if t % settings.checkpoint_every == 0:
            checkpoints[t] = {**group_counts(net, params, tests, n_groups),
                              **mechanism_by_layer(world, model, arm, params, layers, clean, config.delta)}
            first = checkpoints[t]["terms"][0]
        else:
            with np.errstate(over="ignore", invalid="ignore"):
                first = finite_or_none(pattern_terms(world, layers[0].W_B, layers[0].W_C, config.delta))
        return {f"terms_{k}": first[k] for k in TRACKED}

    diverged_at = None
    try:
        _, history = train(train_on, config, net, rng=np.random.default_rng([seed, STREAM, 0, MODELS.index(model)]),
                           record_every=settings.record_every, record=record)
    except DivergenceError as exc:
        history, diverged_at = exc.history, exc.step
    return {"seed": seed, "model": model, "arm": arm, "tasks": tasks, "length": length, "T": config.T, **step,
            "diverged_at": diverged_at,
            "checkpoints": {str(t): c for t, c in checkpoints.items()},
            "trajectory": finite_or_none({k: np.asarray(v, dtype=float).tolist() for k, v in history.items()})}

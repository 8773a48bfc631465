"""The ablation as independent units for ``runs.jobs``: the step-size rule per model and arm (delta
= 0.2 first, the next delta only where every eta diverged) and one training run per (seed, model,
arm, task set), which records accuracy per task group at every checkpoint (Algorithm 1's
initialisation included), every layer's mechanism terms and attention scores by step there, and
layer 1's terms along training (``terms.py``).

Streams: selection as ``reproduce``'s three-layer runs (default_rng([k, 8, 40, model + 1, n_layers,
...])); seed s's world is ``runs.worlds.world_for(s)``, training default_rng([s, 11, 0, model]) (the
same initialisation and minibatch stream at every depth, task set and factor), test prompts
default_rng([s, 11, 1, test, prompt set]) (the same prompts for every model, depth and factor: paired).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..data import SECTION4, World, testing_batch
from ..measure.tasks import task_group_names, task_groups
from ..model import PAPER_MODELS as MODELS
from ..network import Network
from ..runs.jobs import Plan, Unit, run_plans
from ..measure.rules import STEP_SIZE_RULE as RULE
from ..runs.step_size import selection_plan as step_size_plan
from ..runs.worlds import selection_world, world_for
from ..sgd import DivergenceError, train
from .results import assemble
from .settings import (ARMS, HELD_OUT, PROMPT_SETS, STREAM, TESTS, TRACKED, AblationSettings, arm_network,
                       run_length)
from .terms import layer_scores, pattern_terms, score_by_step, signed_steps


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
    """(world to train on, TrainConfig.tasks) of a task set of ``settings.TASK_SETS``."""
    if tasks == "heldout":
        return HeldOutWorld(world.mu, world.nu, world.v_star, world.beta), "cycle"
    return world, tasks


def prompts_for(world, settings: AblationSettings, seed: int) -> dict:
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


def run_unit(settings: AblationSettings, seed: int, model: str, arm: str, tasks: str, step: dict) -> dict:
    """Train ``model`` (arm: depth and architecture; tasks: a task set of TASK_SETS) on seed ``seed``'s
    world with step = {"delta", "eta"} for ``run_length`` steps.  Records, at every checkpoint (step
    0 = the initialisation included), accuracy per task group and every layer's mechanism
    (``mechanism_by_layer``), and layer 1's terms every ``record_every`` steps; a diverged run keeps
    what it recorded before and says at which step it diverged."""
    world, net = world_for(seed), arm_network(model, arm)
    train_on, config_tasks = training_world(world, tasks)
    config = settings.config(step["eta"], step["delta"], run_length(settings, arm, tasks), config_tasks)
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
    return {"seed": seed, "model": model, "arm": arm, "tasks": tasks, "T": config.T, **step, "diverged_at": diverged_at,
            "checkpoints": {str(t): c for t, c in checkpoints.items()},
            "trajectory": finite_or_none({k: np.asarray(v, dtype=float).tolist() for k, v in history.items()})}


def selection_plan(settings: AblationSettings, model: str, arm: str, delta: float) -> Plan:
    """step_size.py's rule over ``eta_grid`` at one delta (``step_size.selection_plan``: held-out hinge
    loss and margin of the arm's own Network, the etas of a selection seed trained together):
    assembles to its record, or to {"chosen": None, ...} when every eta diverged (then the next delta
    is tried)."""
    n_layers, prenorm = ARMS[arm]
    stream = (8, round(100 * settings.p_a), MODELS.index(model) + 1, n_layers) + ((2,) if prenorm else ())
    seeds = range(settings.select_seeds)
    rule = step_size_plan({"eta": settings.eta_grid}, seeds, selection_world,
                          settings.config(settings.eta_grid[0], delta, settings.T_short), arm_network(model, arm),
                          settings.n_heldout, stream, f"step size {model} {arm} delta = {delta:g}")

    def assemble(found):
        try:
            record = rule.assemble(found)
        except ValueError:                               # every eta diverged at this delta
            record = {"rule": RULE, "grid": {"eta": list(settings.eta_grid)}, "seeds": list(seeds), "chosen": None,
                      "candidates": [{"fields": {"eta": e}, "losses": [None] * len(seeds), "diverged": True,
                                      "mean": None} for e in settings.eta_grid]}
        return {"delta": delta, **record}

    return Plan(rule.units, assemble)


def choose_steps(settings: AblationSettings, jobs: int, progress=True) -> dict:
    """{model: {arm: {"delta", "eta", "tried": [record per delta tried]}}}: delta = 0.2 first, the next
    delta of ``settings.deltas`` only where every eta diverged.  Raises ValueError if none trains."""
    tried = {(m, a): [] for m in MODELS for a in ARMS}
    pending = list(tried)
    for delta in settings.deltas:
        found, _ = run_plans({key: selection_plan(settings, *key, delta) for key in pending}, jobs=jobs,
                             name=f"ablation: step size at delta = {delta:g}", progress=progress)
        for key, record in found.items():
            tried[key].append(record)
        pending = [key for key in pending if found[key]["chosen"] is None]
        if not pending:
            break
    if pending:
        raise ValueError(f"no eta of {settings.eta_grid} trains at any delta of {settings.deltas} for {pending}.")
    return {m: {a: {"delta": tried[m, a][-1]["delta"], "eta": tried[m, a][-1]["chosen"]["eta"], "tried": tried[m, a]}
                for a in ARMS} for m in MODELS}


def plan(settings: AblationSettings, steps: dict) -> Plan:
    """Every (seed, model, arm, task set) run as a unit, slowest first; assembles to the "ablation" JSON.
    The residual arms train on every task set, the pre-norm arm on the cycle only."""
    keys = [(s, m, a, tasks) for s in range(settings.seeds) for m in MODELS for a in ARMS
            for tasks in (("cycle",) if ARMS[a][1] else ("cycle", "all", "heldout"))]
    cost = {"mamba": 2.0, "linear_transformer": 1.0}        # relative cost of a three-layer step; orders units only
    keys.sort(key=lambda k: -(cost[k[1]] if ARMS[k[2]][0] > 1 else 0.05) * run_length(settings, k[2], k[3]))
    units = [Unit(k, f"seed {k[0] + 1}/{settings.seeds} {k[1]} {k[2]} tasks={k[3]}", run_unit,
                  (settings, k[0], k[1], k[2], k[3], {"delta": steps[k[1]][k[2]]["delta"], "eta": steps[k[1]][k[2]]["eta"]}))
             for k in keys]
    return Plan(units, lambda found: assemble(settings, steps, [found[k] for k in sorted(found)]))

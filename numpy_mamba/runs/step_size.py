"""Training settings the paper does not give (the step size eta, and delta where a grid holds it)
chosen per model on held-out *training-distribution* prompts, never on test settings, by the rule
``measure.rules.choose`` (its text: ``measure.rules.STEP_SIZE_RULE``): every candidate of the grid
trains from the same initialisation on the same minibatch stream of each selection seed, is scored
by the hinge loss (eq (4)) on held-out training prompts, and the lowest mean wins, diverged runs
excluded, ties broken by the paper's delta, then the smaller eta.

This module is the training and scoring the rule needs: ``heldout_loss_after_training`` for any
``Network`` (``network.py``: eq (3), the stacks of ``stack.py`` with or without pre-norm, an Appendix
E.6 gate), and ``selection_plan``, the same rule as independent units for the runner: one per
selection seed, ``heldout_losses`` training every candidate together (``sgd.train_together``: each
minibatch drawn once, the same numbers).
"""
from __future__ import annotations

import itertools
from dataclasses import replace
from typing import Callable, Mapping, Sequence

import numpy as np

from .runner import Plan, Unit
from ..data import training_batch
from ..loss import hinge
from ..network import Network, as_network
from ..measure.rules import DIVERGENCE_RULE, STEP_SIZE_RULE, candidates, choose
from ..sgd import DivergenceError, TrainConfig, train_together

RULES = {"step-size": STEP_SIZE_RULE, "divergence": DIVERGENCE_RULE}      # the rules a command using this one cites
TRAINING_SETS = {"cycle": lambda world: None, "all": lambda world: world.all_tasks()}   # TrainConfig.tasks -> tasks


def heldout_loss(world_for_seed: Callable, config: TrainConfig, net: Network, n_heldout: int,
                 stream: Sequence[int], fields: dict, seed: int) -> tuple[float, float]:
    """The scoring step of the rule for one candidate ``fields`` and selection seed ``seed``.

    Trains the Network ``net`` on world ``world_for_seed(seed)`` with ``config`` updated by
    ``fields`` (eta, delta) and rng ``default_rng([seed, *stream, 1])`` (initialisation and minibatches,
    the same for every candidate), then returns (hinge loss (eq (4)), mean margin z F) on ``n_heldout``
    prompts of Definition 1 from ``default_rng([seed, *stream, 2])``; NaN if the run diverged or collapsed.
    """
    return heldout_losses(world_for_seed, config, net, n_heldout, stream, [fields], seed)[0]


def heldout_losses(world_for_seed: Callable, config: TrainConfig, net: Network, n_heldout: int,
                   stream: Sequence[int], candidates: Sequence[dict], seed: int) -> list[tuple[float, float]]:
    """``heldout_loss`` for every candidate of ``candidates`` on selection seed ``seed``, in one go: the
    candidates share their minibatch stream, so ``sgd.train_together`` draws each minibatch once and
    the held-out prompts are drawn once.  The same numbers as one ``heldout_loss`` per candidate."""
    world, net = world_for_seed(seed), as_network(net)
    configs = [replace(config, **fields) for fields in candidates]
    runs = train_together(world, configs, net, rng=np.random.default_rng([seed, *stream, 1]))
    cfg = configs[0]                                        # the prompt fields are every candidate's
    held = training_batch(world, n_heldout, cfg.l_tr, p_a=cfg.p_a, K=cfg.K, kappa_a=cfg.kappa_a,    # its training tasks
                          rng=np.random.default_rng([seed, *stream, 2]), tasks=TRAINING_SETS[cfg.tasks](world))
    scores = []
    for run in runs:
        if isinstance(run, DivergenceError):                # CollapseError included
            scores.append((float("nan"), float("nan")))
            continue
        with np.errstate(over="ignore", invalid="ignore"):
            F = net.F(run[0], held.P)
            scores.append((float(np.mean(hinge(F, held.z))), float(np.mean(held.z * F))))
    return scores


def heldout_loss_after_training(world_for_seed: Callable, config: TrainConfig, net: Network, n_heldout: int,
                                stream: Sequence[int]) -> Callable[[dict, int], tuple]:
    """``heldout_loss`` with everything but (fields, seed) fixed: the callable ``choose`` takes."""
    stream = [int(s) for s in stream]
    return lambda fields, seed: heldout_loss(world_for_seed, config, net, n_heldout, stream, fields, seed)


def selection_plan(grid: Mapping[str, Sequence], seeds: Sequence[int], world_for_seed: Callable,
                   config: TrainConfig, net: Network, n_heldout: int, stream: Sequence[int], label: str) -> Plan:
    """The rule of ``choose`` as a ``runs.runner.Plan``: one unit ``heldout_losses`` per selection seed
    (every candidate trained together), assembled by ``choose`` in the parent.  Same numbers as
    ``choose(grid, heldout_loss_after_training(...), seeds)``, for any number of worker processes.
    ``world_for_seed`` must be a module-level function (units go to worker processes)."""
    seeds, stream, every = [int(s) for s in seeds], [int(s) for s in stream], candidates(grid)
    units = [Unit(seed, f"{label}: {len(every)} candidates of {', '.join(grid)}, selection seed {seed}", heldout_losses,
                  (world_for_seed, config, net, n_heldout, stream, every, seed)) for seed in seeds]
    index = {tuple(sorted(fields.items())): k for k, fields in enumerate(every)}

    def assemble(found: dict) -> dict:
        return choose(grid, lambda fields, seed: found[seed][index[tuple(sorted(fields.items()))]], seeds)

    return Plan(units, assemble)


def table_rows(selection: dict) -> list[list[str]]:
    """[candidate, held-out loss per seed..., mean or 'diverged', chosen?] as strings, for reports
    (a tied winner's cell says the tie-break chose it)."""
    rows = []
    for r in selection["candidates"]:
        name = ", ".join(f"{k} = {v:g}" for k, v in r["fields"].items())
        per_seed = ["diverged" if v is None else f"{v:.2e}" for v in r["losses"]]
        mean = "excluded (diverged)" if r["mean"] is None else f"{r['mean']:.2e}"
        won = "**chosen**" + (" (tie-break)" if len(selection.get("tied", ())) > 1 else "")
        rows.append([name, *per_seed, mean, won if r["fields"] == selection["chosen"] else ""])
    return rows

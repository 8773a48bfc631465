"""Step sizes of the theory checks, chosen by the step-size rule every experiment command shares
(``runs/step_size.py``): per model and training p_a for the "alpha" experiments (Theorems 2 and
4, Remark 5, Corollary 1), and for Mamba at each M1 of the gates experiment (Corollary 2, Lemma 5).

Selection seed k trains on worlds from default_rng([k, SELECTION_STREAM, 9]) and on streams
[k, SELECTION_STREAM, ...]: no experiment of the theory section uses that stream, so the rule
never sees an experiment's world, minibatch or test prompt.
"""
from __future__ import annotations

from functools import partial

import numpy as np

from ..data import World, make_world
from ..model import PAPER_MODELS as MODELS
from ..fused import network
from ..runs.step_size import selection_plan
from ..sgd import TrainConfig
from .settings import GatesVsM1, Tolerance

SELECTION_STREAM = 30


def selection_world(params: dict, k: int) -> World:
    """The world of step-size selection seed ``k``: one of ``params`` (d, M1, M2, V, beta) from
    stream [k, SELECTION_STREAM, 9], never the experiments' world."""
    return make_world(**params, rng=np.random.default_rng([k, SELECTION_STREAM, 9]))


def step_size_plans(world: World, s: Tolerance) -> dict:
    """eta for each model and training p_a of ``tolerated_alpha`` by the rule of ``runs/step_size.py``
    over s.eta_grid, on s.select_seeds with worlds and streams of their own, scored on s.n_heldout
    held-out training prompts; the experiments' T, B, delta, l_tr.  {"model p_a=x": Plan} whose
    results are the rule's records."""
    params = {"d": world.d, "M1": world.M1, "M2": world.M2, "V": world.V, "beta": world.beta}
    plans = {}
    for m, model in enumerate(MODELS):
        for p_a in s.p_a_train[model]:
            config = TrainConfig(T=s.T, B=s.B, eta=s.eta_grid[0], l_tr=s.l_tr, p_a=p_a, delta=s.delta)
            plans[f"{model} p_a={p_a}"] = selection_plan(
                {"eta": s.eta_grid}, s.select_seeds, partial(selection_world, params), config, network(model),
                s.n_heldout, (SELECTION_STREAM, round(100 * p_a), m + 1), f"theory step size, {model}, p_a = {p_a}")
    return plans


def chosen_steps(s: Tolerance, records: dict) -> tuple[dict, dict]:
    """({model: {str(p_a): eta}}, {model: {str(p_a): record}}) from ``step_size_plans``' results."""
    eta, step_size = {}, {}
    for model in MODELS:
        for p_a in s.p_a_train[model]:
            rec = records[f"{model} p_a={p_a}"]
            step_size.setdefault(model, {})[str(p_a)] = rec
            eta.setdefault(model, {})[str(p_a)] = rec["chosen"]["eta"]
    return eta, step_size


def gates_step_size_plans(s: GatesVsM1) -> dict:
    """eta for Mamba at each M1 of ``gates_vs_M1`` by the rule of ``runs/step_size.py`` over
    s.eta_grid, on s.select_seeds with worlds of that M1 and streams of their own
    ([k, SELECTION_STREAM, 100 + M1, ...]); the experiment's T, B, delta, l_tr, p_a.
    {"mamba M1=x": Plan} whose results are the rule's records."""
    plans = {}
    for M1 in s.M1_grid:
        params = {"d": s.d, "M1": M1, "M2": s.M2, "V": s.V, "beta": s.beta}
        config = TrainConfig(T=s.T, B=s.B, eta=s.eta_grid[0], l_tr=s.l_tr, p_a=s.p_a, delta=s.delta)
        plans[f"mamba M1={M1}"] = selection_plan({"eta": s.eta_grid}, s.select_seeds, partial(selection_world, params),
                                                 config, network("mamba"), s.n_heldout, (SELECTION_STREAM, 100 + M1, 1),
                                                 f"theory step size, mamba, M1 = {M1}")
    return plans


def chosen_by_M1(s: GatesVsM1, records: dict) -> tuple[dict, dict]:
    """({str(M1): eta}, {str(M1): record}) from ``gates_step_size_plans``' results."""
    step_size = {str(M1): records[f"mamba M1={M1}"] for M1 in s.M1_grid}
    return {M1: rec["chosen"]["eta"] for M1, rec in step_size.items()}, step_size

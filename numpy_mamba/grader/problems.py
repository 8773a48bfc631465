"""The autograder's seeded problems, shared by the gates and the gradients exercises.

Every exercise function is run on the same small seeded problems, each chosen to expose one
difficulty: a plain batch, l = 1 with B = 1, m != d+1 (a transposed answer then has the wrong
shape), saturated gates (|w^T p| between 30 and 50 on some columns), prompts on both sides of
the hinge (z F > 1, and misclassified prompts with |F| > 1), prompts from the data model of
Section 3.2, and prompts within 1e-11 of the hinge's kink, where only an analytic gradient is
right (a finite difference of the loss crosses the kink or drowns in rounding).  The gradients
exercise adds one large problem graded within a CPU budget (``budget_problem``; the budget's unit
is one forward pass on it, ``forward``, timed by ``forward_seconds``).  A student's answer is
compared with
  * the package: ``gradients.gradients`` (eqs (93), (118), (135)) or ``model.gating`` (eq (3));
  * an independent check: central differences of the mean hinge loss with its active set held
    fixed, along three random directions (gradients, ``directional``), or F computed from the
    student's gates against the literal eq (1) scan (gates).
(see ``exercises/``).  The known mistakes that turn a failure into a hint live in ``mistakes.py``;
``PROBLEM_NOTES`` says what to check when an answer fails on one kind of problem only.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..data import SECTION4, make_world, training_batch
from ..model import Params, init_params, log_gating, scores
from .hints import rel_error

KINK_MARGIN = 1e-3      # random problems keep |1 - zF| above this (the kink problem is built on it)
ON_KINK = 1e-11         # the kink problem's prompts: 1 - zF = +-ON_KINK (rounding in F: ~1e-15)
PROBLEM_NOTES = {       # problem-name prefix -> what to check when only that problem fails
    "saturated": "numerics with saturated gates (|w^T p| ~ 40): use expit / log-space products; "
                 "never divide by a product of (1 - sigma).",
    "inactive": "the hinge: gradient 0 where 1 - zF <= 0, slope -z wherever 1 - zF > 0 (also for "
                "misclassified prompts with |F| >= 1).",
    "l = 1": "an off-by-one in the sums over i or s: with l = 1 there is one context example.",
    "m = 4": "shapes: your code assumes m = d+1 (square W_B, W_C).",
    "hinge's kink": "the hinge: slope -z where 1 - zF > 0 (here by 1e-11), 0 where 1 - zF < 0. A "
                   "finite difference cannot resolve this; only the analytic gradient can.",
}


@dataclass(frozen=True)
class Problem:
    """One seeded grading problem: params (W_B, W_C: (m, d+1); w: (d+1,)), P (B, d+1, l+1), z (B,)."""

    name: str
    params: Params
    P: np.ndarray
    z: np.ndarray


def smooth_loss(pb: Problem, field: str):
    """The mean hinge loss as a function of ``field`` of the params with the hinge's active set
    held fixed (1 - zF > 0 at the problem): smooth, and its gradient at the problem is the hinge
    loss's, also for prompts within a step of the kink."""
    active = 1.0 - pb.z * outputs(pb.params, pb.P) > 0                    # the hinge's slope -z here
    return lambda x: float(np.mean(np.where(active, 1.0 - pb.z * outputs(pb.params._replace(**{field: x}), pb.P),
                                            0.0)))


def random_prompts(rng, B, d, l):
    """Gaussian inputs, random +-1 labels, the query's label slot 0 (eq (2)): (B, d+1, l+1)."""
    P = np.zeros((B, d + 1, l + 1))
    P[:, :d, :] = rng.standard_normal((B, d, l + 1))
    P[:, d, :l] = rng.choice([-1.0, 1.0], size=(B, l))
    return P


def _random_params(rng, d, m, scale=1.0):
    W_B = rng.normal(0.0, scale / np.sqrt(d + 1), (m, d + 1))
    W_C = rng.normal(0.0, scale / np.sqrt(d + 1), (m, d + 1))
    return Params(W_B, W_C, rng.normal(0.0, 1.0 / np.sqrt(d + 1), d + 1))


def outputs(params, P):
    """F of eq (3) for a batch, from the package's gates and scores: (B,)."""
    G = np.exp(log_gating(params.w, P))
    return np.sum(G * P[:, -1, :] * scores(params, P), axis=1)


def _basic(rng, B=4, d=5, l=5, m=None):
    params = _random_params(rng, d, d + 1 if m is None else m)
    P = random_prompts(rng, B, d, l)
    return params, P, rng.choice([-1.0, 1.0], size=B)


def _saturated(rng, B=3, d=5, l=6):
    """Coordinate 0 carries a +-1 flag on some context columns and w_0 = 40, so those gates
    see |w^T p| of 30-50; the query and the other columns stay moderate, so the gradients are
    not all ~e^{-40} (a correct but naive 1 - sigma(a) must still pass)."""
    params, P, z = _basic(rng, B, d, l)
    P[:, 0, :] = 0.0
    flags = [{1: 1.0, 3: -1.0, 4: -1.2}, {0: -1.0, l - 1: -0.8, 2: 1.1}, {l - 1: 1.0, 0: -1.0}]
    for n in range(B):
        for i, value in flags[n % len(flags)].items():
            P[n, 0, i] = value
    w = params.w.copy()
    w[0] = 40.0
    return Params(params.W_B, params.W_C, w), P, z


def _both_sides(rng, B=6, d=5, l=5):
    """Large outputs (|F| > 1.2); z = sign(F) on even prompts (inactive: z F > 1) and
    -sign(F) on odd ones (misclassified, |F| > 1: active, though F is not in (-1, 1))."""
    params, P, _ = _basic(rng, B, d, l)
    F = outputs(params, P)
    c = 2.0 / max(np.min(np.abs(F)), 1e-3)
    params = Params(np.sqrt(c) * params.W_B, np.sqrt(c) * params.W_C, params.w)
    F = outputs(params, P)
    z = np.where(np.arange(B) % 2 == 0, np.sign(F), -np.sign(F))
    return params, P, z


def _data_model(rng, B=4, l=6):
    world = make_world(d=8, M1=3, M2=2, V=2, beta=3.0, rng=rng)
    batch = training_batch(world, B, l, p_a=0.5, rng=rng)
    base = init_params(world.d, delta=0.2, rng=rng)
    noise = _random_params(rng, world.d, world.d + 1, scale=0.3)
    params = Params(base.W_B + noise.W_B, base.W_C + noise.W_C, base.w)
    return params, batch.P, batch.z


def _acceptable(name, params, P, z):
    F = outputs(params, P)
    if name.startswith("hinge's kink"):
        return bool(np.all(np.abs(np.abs(1.0 - z * F) - ON_KINK) < 1e-3 * ON_KINK))
    if np.any(np.abs(1.0 - z * F) < KINK_MARGIN):
        return False
    if name.startswith("inactive"):
        return bool(np.all(np.abs(F) > 1.2) and np.any(z * F > 1) and np.any(z * F < -1))
    return bool(np.any(1.0 - z * F > 0))


def _on_kink(rng, B=4, d=5, l=5):
    """Every prompt within ON_KINK of the hinge's kink: 1 - z F = +ON_KINK on even prompts
    (active) and -ON_KINK on odd ones (inactive).  The query's features are scaled by t, found
    by bisection, so that z F(t) = 1 -+ ON_KINK to a few units of rounding.  A central or
    one-sided difference with a step that moves F by more than ON_KINK crosses the kink; one
    with a smaller step loses every digit to rounding in the loss."""
    params, P, _ = _basic(rng, B, d, l)
    z = np.ones(B)
    for n in range(B):
        target = 1.0 - (ON_KINK if n % 2 == 0 else -ON_KINK)
        base = P[n:n + 1].copy()

        def zF(t):
            Q = base.copy()
            Q[0, :-1, -1] *= t
            return z[n] * outputs(params, Q)[0]
        z[n] = np.sign(zF(1.0)) or 1.0
        low, high = 0.0, 1.0
        while zF(high) < target and high < 1e6:
            high *= 2.0
        for _ in range(200):
            middle = 0.5 * (low + high)
            low, high = (middle, high) if zF(middle) < target else (low, middle)
        P[n, :-1, -1] *= 0.5 * (low + high)
    return params, P, z


PROBLEM_RECIPES = (
    ("basic (B=4, l=5)", _basic),
    ("l = 1, B = 1", lambda rng: _basic(rng, B=1, l=1)),
    ("m = 4 != d+1 = 6", lambda rng: _basic(rng, B=3, m=4)),
    ("saturated gates |w^T p| 30-50", _saturated),
    ("inactive hinge side, |F| > 1", _both_sides),
    ("data model (Definition 1)", _data_model),
    ("hinge's kink, |1 - zF| = 1e-11", _on_kink),
)


@lru_cache(maxsize=8)
def make_problems(seed: int = 0) -> tuple:
    """The seeded grading problems, each redrawn (seed stream [seed, k, attempt]) until every
    prompt is at least KINK_MARGIN away from the hinge's kink (the kink problem: within
    ON_KINK of it, by construction)."""
    problems = []
    for k, (name, recipe) in enumerate(PROBLEM_RECIPES):
        for attempt in range(100):
            params, P, z = recipe(np.random.default_rng([seed, k, attempt]))
            if _acceptable(name, params, P, z):
                break
        else:
            raise RuntimeError(f"could not draw grading problem {name!r} (see _acceptable)")
        problems.append(Problem(name, params, P, z))
    return tuple(problems)


# The gradients' budget problem: large enough that a pass per coordinate of W_B or W_C (14,641 of
# them) costs at least 5 times the budget however it is vectorised, while a derivation with Python
# loops over prompts and tokens stays 5 times below it (``python -m numpy_mamba grade --margins
# gradients`` measures both; tutorials/INSTRUCTORS.md).
BUDGET_SIZE = {"d": 120, "B": 32, "l": 10}
BUDGET_NAME = "largest: d = {d}, B = {B}, l = {l} (CPU budget)".format(**BUDGET_SIZE)


@lru_cache(maxsize=8)
def budget_problem(seed: int = 0) -> Problem:
    """The problem graded within a CPU budget: ``BUDGET_SIZE``, prompts of the data model away
    from the kink."""
    d, B, l = BUDGET_SIZE["d"], BUDGET_SIZE["B"], BUDGET_SIZE["l"]
    for attempt in range(100):
        rng = np.random.default_rng([seed, 99, attempt])
        world = make_world(d=d, rng=rng)
        batch = training_batch(world, B, l, p_a=0.5, rng=rng)
        base, noise = init_params(world.d, delta=SECTION4.delta, rng=rng), _random_params(rng, world.d, world.d + 1)
        params = Params(base.W_B + noise.W_B, base.W_C + noise.W_C, base.w + noise.w)
        if _acceptable(BUDGET_NAME, params, batch.P, batch.z):
            return Problem(BUDGET_NAME, params, batch.P, batch.z)
    raise RuntimeError("could not draw the budget problem (see _acceptable)")


def forward(pb: Problem) -> None:
    """One forward pass of eq (3) on ``pb``: the gradients' budget is counted in these.  Its
    products are einsums, which never start BLAS threads: the grader's multithreaded BLAS would
    count its own waits in this thread's CPU time, and a child computes on one thread."""
    W_B, W_C, w = pb.params
    u = np.einsum("bm,md->bd", np.einsum("md,bd->bm", W_C, pb.P[:, :, -1]), W_B)   # W_B^T W_C p_query: (B, d+1)
    s = np.einsum("bdl,bd->bl", pb.P, u)                                           # s_i: (B, l+1)
    np.sum(np.exp(log_gating(w, pb.P)) * pb.P[:, -1, :] * s, axis=1)


def directional(f, x: np.ndarray, seed, count: int = 3, step: float = 1e-5):
    """An independent check of a gradient of ``f`` at ``x`` that costs 2 ``count`` calls of f:
    check(answer) -> the relative error of <answer, v> against central differences of f along
    ``count`` random unit directions v (float64; rounding leaves about 1e-9 of it)."""
    rng = np.random.default_rng(seed)
    directions = [v / np.linalg.norm(v) for v in (rng.standard_normal(x.shape) for _ in range(count))]
    slopes = np.array([(f(x + step * v) - f(x - step * v)) / (2 * step) for v in directions])
    return lambda answer: rel_error(np.array([np.vdot(answer, v) for v in directions]), slopes)


def forward_seconds(forward_pass, problem, runs: int = 30, seconds: float = 0.1) -> float:
    """The budget's unit: CPU seconds of ``forward_pass(problem)``, the model's forward pass on
    the budget problem, best of ``runs`` or of as many as fit in ``seconds`` (at least 5; this
    thread's CPU time, which a busy machine barely changes), so that a budget reads as a number
    of forward passes on any machine."""
    times = []
    while len(times) < 5 or len(times) < runs and sum(times) < seconds:
        start = time.thread_time()
        forward_pass(problem)
        times.append(time.thread_time() - start)
    return min(times)

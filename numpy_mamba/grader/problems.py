"""The autograder's seeded problems, shared by the gates and the gradients exercises.

Every exercise function is run on the same small seeded problems, each chosen to expose one
difficulty: a plain batch, l = 1 with B = 1, m != d+1 (a transposed answer then has the wrong
shape), saturated gates (|w^T p| between 30 and 50 on some columns), prompts on both sides of
the hinge (z F > 1, and misclassified prompts with |F| > 1), prompts from the data model of
Section 3.2, and prompts within 1e-11 of the hinge's kink, where only an analytic gradient is
right (a finite difference of the loss crosses the kink or drowns in rounding).  A student's answer is compared with
  * the package: ``gradients.gradients`` (eqs (93), (118), (135)) or ``model.gating`` (eq (3));
  * an independent check: central finite differences of the mean hinge loss with its active
    set held fixed (gradients), or
    F computed from the student's gates against the literal eq (1) scan (gates).
(see ``exercises/``).  The known mistakes that turn a failure into a hint live in ``mistakes.py``;
``PROBLEM_NOTES`` says what to check when an answer fails on one kind of problem only.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy.special import log_expit

from ..data import SECTION4, make_world, training_batch
from ..gradcheck import numerical_gradient
from ..model import Params, init_params, log_gating, scores
from .mistakes import backward

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
    """One seeded grading problem: params (W_B, W_C: (m, d+1); w: (d+1,)), P (B, d+1, l+1),
    z (B,), and ``numerical``: central differences of the mean hinge loss with the hinge's active
    set held fixed (1 - zF > 0 at the problem), a smooth function whose gradient at the problem
    is the hinge loss's, also for prompts within a step of the kink; for the paper-size problem,
    the grader's own reading form of the gradients (``mistakes.backward``)."""

    name: str
    params: Params
    P: np.ndarray
    z: np.ndarray
    numerical: Params


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


def _F(params, P):
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
    F = _F(params, P)
    c = 2.0 / max(np.min(np.abs(F)), 1e-3)
    params = Params(np.sqrt(c) * params.W_B, np.sqrt(c) * params.W_C, params.w)
    F = _F(params, P)
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
    F = _F(params, P)
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
            return z[n] * _F(params, Q)[0]
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
    ON_KINK of it, by construction); computed once per seed."""
    problems = []
    for k, (name, recipe) in enumerate(PROBLEM_RECIPES):
        for attempt in range(100):
            params, P, z = recipe(np.random.default_rng([seed, k, attempt]))
            if _acceptable(name, params, P, z):
                break
        else:
            raise RuntimeError(f"could not draw grading problem {name!r} (see _acceptable)")
        active = 1.0 - z * _F(params, P) > 0                     # the hinge's slope -z here
        numerical = numerical_gradient(lambda p: float(np.mean(np.where(active, 1.0 - z * _F(p, P), 0.0))), params)
        problems.append(Problem(name, params, P, z, numerical))
    return tuple(problems)


PAPER_NAME = f"paper size: d = {SECTION4.d}, B = 64, l = {SECTION4.l_tr} (CPU budget)"


@lru_cache(maxsize=8)
def paper_problem(seed: int = 0) -> Problem:
    """Section 4's size: d = 30, m = d+1 (1,953 parameters), a batch of B = 64 prompts of l = 20
    examples from the data model, away from the kink; graded within a CPU budget."""
    for attempt in range(100):
        rng = np.random.default_rng([seed, 99, attempt])
        world = make_world(rng=rng)
        batch = training_batch(world, 64, SECTION4.l_tr, p_a=0.5, rng=rng)
        base, noise = init_params(world.d, delta=SECTION4.delta, rng=rng), _random_params(rng, world.d, world.d + 1)
        params = Params(base.W_B + noise.W_B, base.W_C + noise.W_C, base.w + noise.w)
        if _acceptable(PAPER_NAME, params, batch.P, batch.z):
            return Problem(PAPER_NAME, params, batch.P, batch.z, backward(params, batch.P, batch.z))
    raise RuntimeError("could not draw the paper-size problem (see _acceptable)")


def _yardstick(params, P):
    """F of eq (3) for a batch, numpy and scipy alone: (B,)."""
    a = np.einsum("d,bdl->bl", params.w, P)                                # w^T p_i: (B, l+1)
    keep = log_expit(-a)
    later = np.cumsum(keep[:, ::-1], axis=1)[:, ::-1] - keep               # sum_{j>i} log(1 - sigma_j)
    s = np.einsum("bdi,bd->bi", P, (P[:, :, -1] @ params.W_C.T) @ params.W_B)
    return np.sum(np.exp(log_expit(a) + later) * P[:, -1, :] * s, axis=1)


@lru_cache(maxsize=1)
def forward_seconds() -> float:
    """The budgets' unit: CPU seconds of one forward pass of eq (3) on the paper-size problem,
    written here so that the package's own speed does not move it (best of 100, this thread's
    CPU time, which a busy machine barely changes)."""
    pb, best = paper_problem(0), float("inf")
    for _ in range(100):
        start = time.thread_time()
        _yardstick(pb.params, pb.P)
        best = min(best, time.thread_time() - start)
    return best

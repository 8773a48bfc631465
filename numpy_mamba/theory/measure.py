"""Training runs and measurements behind ``python -m numpy_mamba theory`` (Theorems 1-4,
Corollaries 1-2, Lemmas 4-6).

Everything here is built from the core (data, model, gradients); nothing is fitted toward the
paper's constants.  The theorems are stated up to constants, so the experiments measure
trends: steps to reach a loss, slopes on log-log axes, signs and orders of magnitude.
"""
from __future__ import annotations

import numpy as np

from .._checks import check_positive, check_positive_int, check_probability
from ..data import World, testing_batch, training_batch
from ..loss import hinge
from ..model import log_gating
from ..network import Network, as_network
from ..sgd import divergence, sgd_update


def steps_to_epsilon(world: World, net: Network | str, *, p_a: float, l_tr: int, eta: float, delta: float,
                     eps: float, T_max: int, seed: int, B: int = 64, B_held: int = 128) -> dict:
    """Iterations of Algorithm 1 on the Network ``net`` until the hinge loss on a fixed held-out
    batch of training prompts (Definition 1) first falls below ``eps``.  Paper: Theorems 1 (eq (9)) and 3 (eq (14)).

    The held-out batch (B_held prompts, drawn once from seed stream [seed, 2]) is scored before
    every update, so the count has one-step resolution.  Returns {"T": int or None (not reached
    within T_max, or diverged: ``sgd.divergence`` on the held-out outputs), "diverged": bool, "loss0":
    float, "loss_end": float}.
    """
    net = as_network(net)
    p_a = check_probability(p_a, "p_a")
    T_max = check_positive_int(T_max, "T_max")
    eps, eta = check_positive(eps, "eps"), check_positive(eta, "eta")
    rng = np.random.default_rng([seed, 1])
    params = net.init(world.d, rng, delta=delta)
    held = training_batch(world, B_held, l_tr, p_a=p_a, rng=np.random.default_rng([seed, 2]))
    loss0 = loss = None
    for t in range(T_max + 1):
        with np.errstate(over="ignore", invalid="ignore"):
            F = net.F(params, held.P)
            loss = float(np.mean(hinge(F, held.z)))
        if divergence(F, loss, params):                     # sgd.DIVERGENCE_RULE
            return {"T": None, "diverged": True, "loss0": loss0, "loss_end": None}
        loss0 = loss if loss0 is None else loss0
        if loss < eps:
            return {"T": t, "diverged": False, "loss0": loss0, "loss_end": loss}
        if t == T_max:
            break
        batch = training_batch(world, B, l_tr, p_a=p_a, rng=rng)
        params = sgd_update(params, net.F_and_gradients(params, batch.P, batch.z)[1], eta)      # eq (19)
    return {"T": None, "diverged": False, "loss0": loss0, "loss_end": loss}


def error_curve(world: World, net: Network | str, params, *, alphas, l_ts: int, kappa_a_prime: float,
                B_test: int, seed: int, chunk: int = 250, **test_kwargs) -> np.ndarray:
    """Test error of eq (5) (ties count as errors) of the Network ``net`` on testing prompts of Definition 2 at each
    alpha; (n_alpha,).  Prompts come from seed stream [seed, 7, k] for the k-th alpha, drawn in
    chunks so long prompts stay small in memory.
    """
    net, errors = as_network(net), []
    for k, alpha in enumerate(alphas):
        rng = np.random.default_rng([seed, 7, k, l_ts])
        wrong = 0.0
        for start in range(0, B_test, chunk):
            n = min(chunk, B_test - start)
            batch = testing_batch(world, n, l_ts, alpha=float(alpha), kappa_a_prime=kappa_a_prime,
                                  rng=rng, **test_kwargs)
            wrong += n * float(np.mean(net.misclassified(params, batch.P, batch.z)))
        errors.append(wrong / B_test)
    return np.asarray(errors)


def largest_tolerated(alphas, errors, threshold: float) -> float:
    """Largest alpha before the error curve first exceeds ``threshold`` (linear interpolation
    between grid points); the last grid alpha if it never does, 0 if it starts above."""
    alphas, errors = np.asarray(alphas, float), np.asarray(errors, float)
    if alphas.ndim != 1 or alphas.shape != errors.shape or alphas.size == 0 or np.any(np.diff(alphas) <= 0):
        raise ValueError(f"alphas must be increasing and match errors in length; got shapes {alphas.shape}, {errors.shape}.")
    above = np.nonzero(errors > threshold)[0]
    if above.size == 0:
        return float(alphas[-1])
    k = above[0]
    if k == 0:
        return 0.0
    a0, a1, e0, e1 = alphas[k - 1], alphas[k], errors[k - 1], errors[k]
    return float(a0 + (threshold - e0) / (e1 - e0) * (a1 - a0))


def fit_slope(x, y) -> tuple[float, float]:
    """Least-squares slope and intercept of log y on log x (both positive)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    if x.shape != y.shape or x.ndim != 1 or x.size < 2 or np.any(x <= 0) or np.any(y <= 0) or not np.all(np.isfinite(y)):
        raise ValueError(f"fit_slope needs two matching 1-d arrays of >= 2 positive finite values; got x {x}, y {y}.")
    x, y = np.log(x), np.log(y)
    slope, intercept = np.polyfit(x, y, 1)
    return float(slope), float(intercept)


def lemma6_sum(w, P) -> np.ndarray:
    """Lemma 6, eq (39): sum_{i=1}^{l} G_{i,l+1}(w) (l - i + 1) per prompt; P (B, d+1, l+1) -> (B,)."""
    G = np.exp(log_gating(w, P))[:, :-1]                     # (B, l)
    l = G.shape[1]
    return G @ (l - np.arange(1, l + 1) + 1.0)


def projections(world: World, w) -> dict:
    """Lemmas 4-5: the projections of w on the unit directions v*_s, mu_j / beta, nu_k / beta
    (lists over s, j, k) and its label weight w_{d+1}.  The paper's (mu_j^T, 0) w is beta times
    the ``mu`` entry."""
    x = np.asarray(w)[:world.d]
    return {"v_star": (world.v_star @ x).tolist(),
            "mu": (world.mu @ x / world.beta).tolist(),
            "nu": (world.nu @ x / world.beta).tolist(),
            "w_label": float(np.asarray(w)[-1])}

"""What the theory experiments share: their world (Section 4's, seed 0), the settings' JSON form,
and the measurements behind Theorems 1-4 and Lemma 6 (steps to a loss, error curves, slopes).

Everything here is built from the core (data, model, gradients); nothing is fitted toward the
paper's constants.  The theorems are stated up to constants, so the experiments measure
trends: steps to reach a loss, slopes on log-log axes, signs and orders of magnitude.
"""
from __future__ import annotations

import json
from dataclasses import asdict

import numpy as np

from .._checks import check_positive, check_positive_int, check_probability
from ..data import SECTION4, World, make_world, testing_batch, training_batch
from ..loss import hinge
from ..measure.rules import sample_sd
from ..model import log_gating
from ..network import Network, as_network
from ..runs.report import Template
from ..sgd import divergence, sgd_update

WORLD = {name: getattr(SECTION4, name) for name in ("d", "M1", "M2", "V", "beta")}
WORLD_SEED = 0
ETA_GRID = (0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0)
LABEL_WORD = {"flip": "flipped", "target": "targeted (+1)", "random": "random"}     # a label_rule in a sentence
TEXT = Template(__package__, "theory.md")


def world() -> World:
    """The world of the theory checks: Section 4's sizes, seed ``WORLD_SEED``."""
    return make_world(**WORLD, rng=WORLD_SEED)


def header(run) -> dict:
    """What every theory JSON records first: the world, its seed and the command line."""
    return {"world": WORLD, "world_seed": WORLD_SEED, "command": run.line}


class Recorded:
    """``to_dict``: the settings as their JSON records them: every field, "quick" only on a quick
    run, a chosen "eta" only once chosen."""

    def to_dict(self) -> dict:
        out = json.loads(json.dumps(asdict(self)))        # tuples as lists: the JSON's values
        if not out.get("quick"):
            out.pop("quick", None)
        if "eta" in out and out["eta"] is None:
            out.pop("eta")
        return out


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


def slopes(x, y_by_seed, claim: float) -> dict:
    """Per seed the ``fit_slope`` of y on x over the points it has (y None or < 1: not reached; fewer
    than 3 points: no slope), their mean and sample sd: {"per_seed", "mean", "sd", "claim"}."""
    per_seed = []
    for y in y_by_seed:
        keep = [k for k, v in enumerate(y) if v is not None and v >= 1]
        if len(keep) >= 3:
            per_seed.append(fit_slope(np.asarray(x)[keep], np.asarray(y, dtype=object)[keep].astype(float))[0])
    mean, sd = (float(np.mean(per_seed)), sample_sd(per_seed)) if per_seed else (None, None)
    return {"per_seed": per_seed, "mean": mean, "sd": sd, "claim": claim}


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


# ---------------------------------------------------------------- numbers as the report writes them
def pm(sl) -> str:
    """A fitted slope's mean ± sd over seeds (``slopes``), or "n/a"."""
    if sl is None or sl.get("mean") is None:
        return "n/a"
    return TEXT("pm", mean=sl["mean"], sd=sl["sd"], n=len(sl["per_seed"]))


def seeds_text(sl) -> str:
    """A fitted slope's mean ± sd as a claim row states it, or "n/a"."""
    if sl is None or sl.get("mean") is None:
        return "n/a"
    return f"{sl['mean']:.2f} ± {sl['sd']:.2f} ({len(sl['per_seed'])} seeds)"


def rounded(mapping, nd=2) -> str:
    """A dict as '{k: v, ...}' with rounded values (keys may come back from JSON as strings)."""
    return "{" + ", ".join(f"{k}: {round(v, nd) if isinstance(v, float) else v}" for k, v in mapping.items()) + "}"

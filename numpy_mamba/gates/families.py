"""Other gates of Appendix E.6: Mamba-2, RetNet, Gated Retention, Gated Linear Attention.

Each model is linear attention times a gate, as eq (3) is for Mamba (Appendix E.6):

    F(Psi; P) = sum_{i=1}^{l+1} G_{i,l+1} y_i p_i^T W_B^T W_C p_query          (scalar gate)
    F(Psi; P) = sum_{i=1}^{l+1} y_i (W_B p_i (.) g_i)^T W_C p_query               (GLA, eq (198))

with keys k_i = W_B p_i, queries q = W_C p_query and values v_i = p_i (W_B, W_C play the
paper's W_K, W_Q in eqs (187)-(199)).  A gate is one entry of the registry ``GATES``, a
``GateFamily``: its label, its parameter container, its gate, the gate's backward pass (dL/dgate
-> gradients of its own parameters) and its initialisation.  Everything else reads the entry:
the attention scores and the gradients of W_B and W_C are the core's (model.py, gradients.py),
put together with the gate in ``attention.py``; the literal recurrence (``scan.py``), the
comparison command and its figures (``compare.py``, ``plots.py``) take every gate of ``GATES``.
Adding a gate is one entry here plus its tests; the core does not change.

The decay gates of eqs (189), (192), (195) share one shape,

    G_{i,t} = prod_{j=i+1}^{t} gamma_j   (i < t),      G_{t,t} = 1,

so each only writes log gamma_j and the chain rule from dL/dlog gamma_j to its parameters
(``decay_gates`` and ``decay_backward`` below, which ``attention.py`` applies to every decay gate).
Unlike Mamba's G_{i,l+1} = sigma(w^T p_i) prod_{j>i}(1 - sigma(w^T p_j)), the gate on example i
depends only on the tokens AFTER i: these gates can forget, but cannot single out example i.
The literal recurrences are in ``scan.py``; tests/test_gates.py proves both forms agree.

Initialisation: W_B, W_C and w as in Algorithm 1 (the same draws as Mamba's), a = 0,
gamma = 1/2, tau = 1, GLA's W with N(0, 1/(d+1)) entries like w; so every decay starts near
Mamba's 1 - sigma(w^T p) ~ 1/2, and differences come from what a gate looks at, not from how
long it remembers at the start.  Every one of these is trained, gamma and tau included.

Notes on the paper's Appendix E.6 (each checked in tests/test_gates.py):
1. Mamba-2 has G_{t,t} = 1 where Mamba has sigma(w^T p_query), and in Mamba-2, RetNet and Gated
   Retention no factor of the weight on example i depends on p_i.
2. Eq (188), second line, writes v_t k_i^T where it means v_t k_t^T; eq (194) writes
   gamma(w; i) h_{t-1} where it means gamma(w; t), as in (193).
3. GLA: the update (196) as printed multiplies the rows of h (the value side) by
   sigma(W p_i)^{1/tau} at every step; unrolled, that is not (197).  The closed form (197)-(198),
   which the paper analyses and differentiates in (199), gates each key once with no decay:
   ``"gla"`` implements (198), and ``scan.gla_scan_eq196`` runs (196) literally to show it
   differs.  The GLA of Yang et al. (a cumulative per-key-feature decay) is neither.
4. Eqs (197)-(199) write u_i and p_i for the same token (here u_i = p_i); W is written in
   R^{d0 x d0}, but it gates the m-dimensional key, so here W is (m, d+1) (the two agree for the
   default m = d+1).  Our gradient for GLA's W equals eq (199) once dF/dg is chained through
   the hinge.
"""
from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np
from scipy.special import expit, log_expit

from .._checks import as_real_array


class Mamba2Params(NamedTuple):
    """Psi of Mamba-2 (eq (187)): W_B, W_C (m, d+1); w (d+1,); a () with gamma = e^{-softplus(w^T p) e^a}."""

    W_B: np.ndarray
    W_C: np.ndarray
    w: np.ndarray
    a: np.ndarray


class RetNetParams(NamedTuple):
    """Psi of RetNet (eq (190)): W_B, W_C (m, d+1); the decay gamma () in (0, 1], trainable."""

    W_B: np.ndarray
    W_C: np.ndarray
    gamma: np.ndarray


class GatedRetentionParams(NamedTuple):
    """Psi of Gated Retention (eq (193)): W_B, W_C (m, d+1); w (d+1,); tau () > 0."""

    W_B: np.ndarray
    W_C: np.ndarray
    w: np.ndarray
    tau: np.ndarray


class GLAParams(NamedTuple):
    """Psi of Gated Linear Attention (eq (198)): W_B, W_C (m, d+1); W (m, d+1); tau () > 0.

    The paper writes W in R^{d0 x d0}; the gate multiplies the key W_B p_i in R^m, so W must be
    (m, d+1).  The two agree for the default m = d+1 = d0.
    """

    W_B: np.ndarray
    W_C: np.ndarray
    W: np.ndarray
    tau: np.ndarray


# ---------------------------------------------------------------- shared decay-gate algebra
def decay_gates(log_gamma) -> np.ndarray:
    """G_{i,l+1} = prod_{j=i+1}^{l+1} gamma_j from log gamma (B, l+1) -> (B, l+1); eqs (189), (195).

    An exclusive suffix sum in log space, so long prompts and tiny gamma stay finite; G_{l+1} = 1.
    """
    suffix = np.cumsum(log_gamma[:, ::-1], axis=1)[:, ::-1]      # sum_{j>=i} log gamma_j
    exclusive = np.zeros_like(suffix)
    exclusive[:, :-1] = suffix[:, 1:]                             # sum_{j>i}; empty at i = l+1
    return np.exp(exclusive)


def decay_backward(G, dG) -> np.ndarray:
    """dL/dlog gamma_j = sum_{i<j} dL/dG_i G_i, since dG_i/dlog gamma_j = G_i for j > i.

    G, dG : (B, l+1) -> (B, l+1), an exclusive prefix sum.
    """
    c = dG * G
    return np.cumsum(c, axis=1) - c


def _logits(w, P) -> np.ndarray:
    return np.einsum("d,bdl->bl", w, P)                           # w^T p_j: (B, l+1)


# ---------------------------------------------------------------- Mamba-2, eqs (187)-(189)
def mamba2_log_gamma(params: Mamba2Params, P) -> np.ndarray:
    """log gamma(w, a; j) = -softplus(w^T p_j) e^a, eq (187).  P (B, d+1, l+1) -> (B, l+1)."""
    return -np.logaddexp(0.0, _logits(params.w, P)) * np.exp(params.a)


def mamba2_backward(params: Mamba2Params, P, log_gamma, d_log) -> tuple:
    """(dw, da) from d_log = dL/dlog gamma_j (B, l+1): d log gamma_j/dw = -sigma(w^T p_j) e^a p_j,
    d log gamma_j/da = log gamma_j."""
    sigma = expit(_logits(params.w, P))
    dw = np.einsum("bdl,bl->d", P, -d_log * sigma * np.exp(params.a))
    da = np.sum(d_log * log_gamma)
    return dw, np.asarray(da)


# ---------------------------------------------------------------- RetNet, eqs (190)-(192)
def retnet_log_gamma(params: RetNetParams, P) -> np.ndarray:
    """log gamma for every token, the same for all inputs: G_{i,l+1} = gamma^{l+1-i}, eq (192)."""
    return np.full(P.shape[::2], np.log(params.gamma))            # (B, l+1)


def retnet_backward(params: RetNetParams, P, log_gamma, d_log) -> tuple:
    """(dgamma,): dL/dgamma = sum_j dL/dlog gamma_j / gamma."""
    return (np.asarray(np.sum(d_log) / params.gamma),)


# ---------------------------------------------------------------- Gated Retention, (193)-(195)
def gated_retention_log_gamma(params: GatedRetentionParams, P) -> np.ndarray:
    """log gamma(w; j) = log sigma(w^T p_j) / tau, eq (193).  P (B, d+1, l+1) -> (B, l+1)."""
    return log_expit(_logits(params.w, P)) / params.tau


def gated_retention_backward(params: GatedRetentionParams, P, log_gamma, d_log) -> tuple:
    """(dw, dtau): d log gamma_j/dw = (1 - sigma_j) p_j / tau, d log gamma_j/dtau = -log gamma_j / tau."""
    sigma = expit(_logits(params.w, P))
    dw = np.einsum("bdl,bl->d", P, d_log * (1.0 - sigma) / params.tau)
    dtau = -np.sum(d_log * log_gamma) / params.tau
    return dw, np.asarray(dtau)


# ---------------------------------------------------------------- GLA, eqs (196)-(199)
def gla_gate(params: GLAParams, P) -> np.ndarray:
    """g_{k,i} = sigma(W p_i)_k^{1/tau}, one gate per key feature k, eq (198); (B, m, l+1).

    Computed as exp(log sigma / tau) so a saturated logit gives 0, not 0^(1/tau) warnings.
    """
    X = params.W @ P                                              # W p_i: (B, m, l+1)
    return np.exp(log_expit(X) / params.tau)


def gla_backward(params: GLAParams, P, g, dg) -> tuple:
    """(dW, dtau) from dL/dg (B, m, l+1); eq (199) is the dW part for one prompt.

    dg_{k,i}/dW_k = g_{k,i} (1 - sigma(W p_i)_k) p_i^T / tau, dg/dtau = -g log sigma / tau^2.
    """
    X = params.W @ P                                              # (B, m, l+1)
    c = dg * g
    dW = np.tensordot(c * (1.0 - expit(X)) / params.tau, P, axes=([0, 2], [0, 2]))  # (m, d+1)
    dtau = -np.sum(c * log_expit(X)) / params.tau ** 2
    return dW, np.asarray(dtau)


# ---------------------------------------------------------------- the registry
class GateFamily(NamedTuple):
    """One gate of Appendix E.6, everything a model adds to linear attention: the one entry a new
    gate adds to ``GATES``.

    label       : its name in figures and tables, with its equations, e.g. "Mamba-2 (187-189)".
    params_type : its NamedTuple of parameters; the first two fields are W_B, W_C, the rest the gate's.
    gate        : (params, P (B, d+1, l+1)) -> log gamma_j (B, l+1), for a decay gate
                  G_{i,t} = prod_{j=i+1}^{t} gamma_j; or, with ``per_key``, the gate g (B, m, l+1) of
                  each key feature, as GLA's eq (198).
    backward    : (params, P, gate's value, dL/d(gate's value)) -> gradients of the gate's own fields,
                  in field order: its derivative.
    shapes      : (m, d+1) -> {gate field: shape};  ``positive``: fields that must be > 0.
    init        : (W_B, W_C, w, rng) -> params, given Algorithm 1's W_B, W_C and w^(0).
    per_key     : True when ``gate`` gives one value per key feature.
    """

    label: str
    params_type: type
    gate: Callable
    backward: Callable
    shapes: Callable
    positive: tuple
    init: Callable
    per_key: bool = False


# Initial values (README, "Other gates"): a = 0, tau = 1, gamma = 1/2, so that every decay
# starts near Mamba's 1 - sigma(w^T p) ~ 1/2 and differences come from what the gate sees.
# A plain dict: a script or a test registers a gate of its own with GATES[name] = GateFamily(...).
GATES = {
    "mamba2": GateFamily(
        "Mamba-2 (187-189)", Mamba2Params, mamba2_log_gamma, mamba2_backward,
        lambda m, d0: {"w": (d0,), "a": ()}, (),
        lambda W_B, W_C, w, rng: Mamba2Params(W_B, W_C, w, np.asarray(0.0))),
    "retnet": GateFamily(
        "RetNet (190-192)", RetNetParams, retnet_log_gamma, retnet_backward,
        lambda m, d0: {"gamma": ()}, ("gamma",),
        lambda W_B, W_C, w, rng: RetNetParams(W_B, W_C, np.asarray(0.5))),
    "gated_retention": GateFamily(
        "Gated Retention (193-195)", GatedRetentionParams, gated_retention_log_gamma, gated_retention_backward,
        lambda m, d0: {"w": (d0,), "tau": ()}, ("tau",),
        lambda W_B, W_C, w, rng: GatedRetentionParams(W_B, W_C, w, np.asarray(1.0))),
    "gla": GateFamily(
        "GLA (196-199)", GLAParams, gla_gate, gla_backward,
        lambda m, d0: {"W": (m, d0), "tau": ()}, ("tau",),
        lambda W_B, W_C, w, rng: GLAParams(
            W_B, W_C, rng.normal(0.0, 1.0 / np.sqrt(W_B.shape[1]), size=W_B.shape), np.asarray(1.0)),
        per_key=True),
}


def gate_family(model: str) -> GateFamily:
    """The registry's entry for ``model``, or a ValueError that lists the gates of ``GATES``."""
    if model not in GATES:
        raise ValueError(f"model must be one of the Appendix E.6 gates {tuple(GATES)}; got {model!r}.")
    return GATES[model]


def check_gate_params(model: str, params):
    """Validate ``params`` for the Appendix E.6 ``model``; return float64 arrays in its container."""
    family = gate_family(model)
    kind = family.params_type
    if not isinstance(params, kind):
        raise ValueError(f"model={model!r} needs {kind.__name__}({', '.join(kind._fields)}); "
                         f"got {type(params).__name__}.")
    arrays = {name: as_real_array(getattr(params, name), name) for name in kind._fields}
    W_B, W_C = arrays["W_B"], arrays["W_C"]
    if W_B.ndim != 2 or W_B.shape != W_C.shape:
        raise ValueError(f"W_B and W_C must both have shape (m, d+1); got {W_B.shape} and {W_C.shape}.")
    for name, shape in family.shapes(*W_B.shape).items():
        if arrays[name].shape != shape:
            raise ValueError(f"{name} of {kind.__name__} must have shape {shape}; got {arrays[name].shape}.")
    for name in family.positive:
        if not np.all(arrays[name] > 0):
            raise ValueError(f"{name} of {kind.__name__} must be > 0; got {arrays[name]}.")
    return kind(**arrays)

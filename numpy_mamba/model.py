"""The one-layer Mamba in its closed form, eq (3): linear attention times a sigmoid gate.

    F(Psi; P) = sum_{i=1}^{l+1} G_{i,l+1}(w) * y_i * p_i^T W_B^T W_C p_query

    G_{i,l+1}(w) = sigma(w^T p_i) * prod_{j=i+1}^{l+1} (1 - sigma(w^T p_j))   (i <= l)
    G_{l+1,l+1}(w) = sigma(w^T p_query)

The linear Transformer of Section 3.4 is the same model with every G = 1.

Read ``forward_literal`` first: one prompt, term by term, as the paper prints eq (3).
``forward`` checks its input and runs ``forward_terms``, the same for a batch of prompts (the
scores s_i in one matrix-vector pass, the gates in log space so that long prompts and saturated
gates stay finite); tests/test_model.py proves the two equal, and equal to the recurrent scan of
eq (1) in ``scan.py``.  Training runs eq (3) fused (``numpy_mamba/fused/eq3.py``).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.special import expit, log_expit

from ._checks import as_generator, as_real_array, check_labels, check_positive_int, check_prompts, check_real
from .data import SECTION4

PAPER_MODELS = ("mamba", "linear_transformer")      # eq (3), and Section 3.4's eq (3) with G = 1


class Params(NamedTuple):
    """The trainable set Psi = {W_B, W_C, w} of eq (3).

    W_B, W_C : (m, d+1) key and query matrices (B_i = u_i^T W_B^T, C_i = W_C u_i in eq (1)).
    w        : (d+1,)   the gate's parameter, the last column w_{d+1} of W in eq (1).
    Gradients come back in the same container.
    """

    W_B: np.ndarray
    W_C: np.ndarray
    w: np.ndarray


def check_model(model) -> str:
    """``model`` if it names one of the paper's two models, else a ValueError that lists them."""
    if model not in PAPER_MODELS:
        raise ValueError(f"model must be one of the paper's models {PAPER_MODELS}; got {model!r}.")
    return model


def check_params(params) -> Params:
    """Validate shapes and finiteness; return a float64 ``Params``."""
    if not isinstance(params, Params):
        raise ValueError(f"params must be numpy_mamba.Params(W_B, W_C, w); got {type(params).__name__}.")
    W_B = as_real_array(params.W_B, "W_B")
    W_C = as_real_array(params.W_C, "W_C")
    w = as_real_array(params.w, "w")
    if W_B.ndim != 2 or W_C.ndim != 2 or W_B.shape != W_C.shape:
        raise ValueError(
            f"W_B and W_C must both have shape (m, d+1); got {W_B.shape} and {W_C.shape}."
        )
    if w.shape != (W_B.shape[1],):
        raise ValueError(f"w must have shape (d+1,) = ({W_B.shape[1]},) to match W_B; got {w.shape}.")
    return Params(W_B, W_C, w)


def check_inputs(params, P, model: str, z=None) -> tuple:
    """The input of ``forward``, ``hinge_loss`` and ``gradients``, checked in full (``check_model``,
    ``check_params``, ``check_prompts``, ``check_labels``, in that order, each raising a ValueError
    that says what it received): (params, P (B, d+1, l+1), z (B,) or None, single), single True
    when P was one prompt (d+1, l+1)."""
    check_model(model)
    params = check_params(params)
    P, single = check_prompts(P, params.W_B.shape[1])
    return params, P, None if z is None else check_labels(z, P.shape[0]), single


def init_params(d: int, m: int | None = None, delta: float = SECTION4.delta, rng=None) -> Params:
    """Initialisation of Algorithm 1 (Section 2).

    The first d diagonal entries of W_B^(0) and W_C^(0), both (m, d+1), equal ``delta``;
    every other entry is 0.  w^(0) ~ N(0, I_{d+1} / (d+1)).

    The hidden size m defaults to d+1.  The paper sets m = l+1 (Section 2), but then
    "the first d diagonal entries equal delta" cannot hold whenever l+1 < d, as in its own
    experiments (l = 20, d = 30); tests/test_paper_notes.py shows it.

    Paper: Algorithm 1, line 2.  ``rng``: an ``np.random.Generator`` or an integer seed.
    """
    d = check_positive_int(d, "d")
    m = d + 1 if m is None else check_positive_int(m, "m")
    if m < d:
        raise ValueError(
            f"m = {m} < d = {d}: the first d diagonal entries of the (m, d+1) matrices W_B, W_C "
            "cannot all be set to delta (Algorithm 1). Use m >= d (default m = d+1)."
        )
    expected = "a positive number (the paper uses (0, 0.2])"
    if not (np.isfinite(check_real(delta, "delta", expected)) and delta > 0):
        raise ValueError(f"delta must be {expected}; got {delta}.")
    rng = as_generator(rng, "init_params")
    W_B = np.zeros((m, d + 1))
    W_B[np.arange(d), np.arange(d)] = delta
    w = rng.normal(0.0, 1.0 / np.sqrt(d + 1), size=d + 1)
    return Params(W_B, W_B.copy(), w)


def forward(params: Params, P, model: str = "mamba"):
    """Model output F(Psi; P) of eq (3).

    F = sum_{i=1}^{l+1} G_{i,l+1}(w) y_i p_i^T W_B^T W_C p_query  (``model="mamba"``), or the
    same with every G = 1 (``model="linear_transformer"``, Section 3.4).
    P : (d+1, l+1) -> float; (B, d+1, l+1) -> (B,).  The query column's term vanishes because
    its label slot is 0 (eq (2)).  Paper: eq (3); the batched form of ``forward_literal``.
    """
    params, P, _, single = check_inputs(params, P, model)
    F = forward_terms(model, params, P).F
    return float(F[0]) if single else F


def forward_literal(params: Params, P, model: str = "mamba") -> float:
    """Eq (3) for ONE prompt P (d+1, l+1), term by term as the paper prints it; returns F.

    Slow on purpose (Python loops over tokens, the gate as the product of eq (3), no log space):
    it is the form to read next to the paper.  ``forward`` computes the same for a batch, and
    tests/test_model.py proves them equal for both of the paper's models.
    """
    check_model(model)
    params = check_params(params)
    P = as_real_array(P, "P")
    if P.ndim != 2:
        raise ValueError(f"forward_literal takes one prompt P of shape (d+1, l+1); got shape {P.shape}. "
                         "Use forward(...) for a batch.")
    P, _ = check_prompts(P, params.W_B.shape[1])
    P = P[0]
    W_B, W_C, w = params
    l = P.shape[1] - 1
    p = [P[:, i] for i in range(l + 1)]                 # p_1..p_l, then p_{l+1} = p_query
    p_query, y = p[l], P[-1, :]                         # y_i: the label row; y_{l+1} = 0
    sigma = [expit(w @ p_i) for p_i in p]               # sigma(w^T p_i)
    F = 0.0
    for i in range(l + 1):
        if model == "mamba":                            # G_{i,l+1}(w) of eq (3)
            G_i = sigma[i] * np.prod([1.0 - sigma[j] for j in range(i + 1, l + 1)])
        else:                                           # linear Transformer: G = 1 (Section 3.4)
            G_i = 1.0
        F += G_i * y[i] * (p[i] @ W_B.T @ W_C @ p_query)
    return float(F)


# ---------------------------------------------------------------- the batched form
def output(model: str, params: Params, P) -> np.ndarray:
    """Unchecked F(Psi; P) of eq (3) for P (B, d+1, l+1) -> (B,): ``forward_terms``' F (the F of
    ``network(model)``)."""
    return forward_terms(model, params, P).F


def output_scale(model: str, params: Params, P) -> np.ndarray:
    """S = sum_i G_{i,l+1} |y_i| |p_i|^T |W_B|^T |W_C| |p_query|: eq (3) with every factor replaced by
    its absolute value (the gates are positive already), P (B, d+1, l+1) -> (B,), unchecked.

    Every partial sum that any evaluation of F makes is at most S in size, so F's rounding error
    is a small multiple of 2^-53 S, whatever the BLAS kernel: ``loss.TIE_RTOL`` counts an F within
    that of 0 as a tie.  F = 0 exactly happens (a linear Transformer at Algorithm 1's
    initialisation, where same-pattern examples with opposite labels cancel); its computed value
    is rounding noise of either sign.
    """
    return np.sum(gates_for(model, params, P) * np.abs(P[:, -1, :]) * absolute_scores(params, P), axis=1)


def absolute_scores(params, P) -> np.ndarray:
    """|p_i|^T |W_B|^T |W_C| |p_query| for P (B, d+1, l+1) -> (B, l+1): ``scores`` with every factor
    replaced by its absolute value, an upper bound of |s_i| and of each of its partial sums."""
    return scores(Params(np.abs(params.W_B), np.abs(params.W_C), None), np.abs(P))


class Terms(NamedTuple):
    """What the forward pass of the paper's two models leaves for the backward pass.

    F (B,) output; G (B, l+1) gates; s (B, l+1) scores;
    sigma = sigma(w^T p_i) (B, l+1) for Mamba, None for the linear Transformer (G = 1).
    """

    F: np.ndarray
    G: np.ndarray
    s: np.ndarray
    sigma: np.ndarray | None


def forward_terms(model: str, params: Params, P) -> Terms:
    """Unchecked eq (3) for P (B, d+1, l+1), with the gates, scores and sigmoids the gradients reuse."""
    s = scores(params, P)                           # s_i = p_i^T W_B^T W_C p_query: (B, l+1)
    y = P[:, -1, :]                                 # y_i, 0 for the query (eq (2)): (B, l+1)
    if model != "mamba":                            # linear Transformer: G = 1, Section 3.4
        return Terms(np.sum(y * s, axis=1), np.ones_like(s), s, None)
    a = gate_logits(params.w, P)                    # w^T p_i: (B, l+1)
    log_sigma = log_expit(a)                        # log sigma(w^T p_i), shared by G and sigma
    G = np.exp(log_gates(a, log_sigma))             # G_{i,l+1}(w): (B, l+1)
    F = np.einsum("bi,bi->b", G * y, s)             # F = sum_i G_i y_i s_i: (B,)
    return Terms(F, G, s, np.exp(log_sigma))


def scores(params: Params, P) -> np.ndarray:
    """Unchecked s_i = p_i^T W_B^T W_C p_query for P (B, d+1, l+1) -> (B, l+1).

    Computed as p_i^T u with u = W_B^T W_C p_query: one vector per prompt, one pass over P.
    """
    p_query = np.ascontiguousarray(P[:, :, -1])     # (B, d+1); contiguous, so BLAS takes it
    u = p_query @ (params.W_C.T @ params.W_B)       # rows u^T = p_query^T W_C^T W_B: (B, d+1)
    return (u[:, None, :] @ P)[:, 0, :]             # p_i^T u: (B, l+1)


def gate_logits(w, P) -> np.ndarray:
    """a_i = w^T p_i for every column of P: (d+1,), (B, d+1, l+1) -> (B, l+1)."""
    return w @ P                                    # broadcast matmul: (B, l+1)


def log_gates(a, log_sigma) -> np.ndarray:
    """log G_{i,l+1} of eq (3) from the gate logits a_i = w^T p_i and log sigma(a_i), (B, l+1).

    log G_i = log sigma(a_i) + sum_{j=i+1}^{l+1} log(1 - sigma(a_j)), with
    log(1 - sigma(a)) = log sigma(a) - a (no second log-sigmoid) and the suffix sums taken by a
    reversed running sum (no cancellation), so l = 10,000 and |a| = 50 stay finite.
    """
    log_G = np.zeros_like(log_sigma)                        # (B, l+1); the query's sum is empty
    log_keep = log_sigma - a                                # log(1 - sigma(a_j)): (B, l+1)
    log_G[:, :-1] = np.cumsum(log_keep[:, :0:-1], axis=1)[:, ::-1]   # sum_{j>i}, i = 1..l
    log_G += log_sigma                                      # + log sigma(a_i)
    return log_G


def log_gating(w, P) -> np.ndarray:
    """log G_{i,l+1}(w) of eq (3) in log space (``log_gates``): P (B, d+1, l+1) -> (B, l+1)."""
    a = gate_logits(w, P)                                   # (B, l+1)
    return log_gates(a, log_expit(a))


def gating(w, P) -> np.ndarray:
    """The gates G_{i,l+1}(w) of eq (3), i = 1..l+1.

    w : (d+1,); P : (d+1, l+1) -> (l+1,) or (B, d+1, l+1) -> (B, l+1).
    Computed as exp(log G) (see ``log_gating``); values in [0, 1].  Paper: eq (3), (90), (92).
    """
    w = as_real_array(w, "w")
    if w.ndim != 1:
        raise ValueError(f"w must be a vector of shape (d+1,); got shape {w.shape}.")
    P, single = check_prompts(P, w.shape[0])
    G = np.exp(log_gating(w, P))
    return G[0] if single else G


def gates_for(model: str, params: Params, P) -> np.ndarray:
    """Unchecked gates of the paper's two models: eq (3) for Mamba, all ones for the linear
    Transformer (Section 3.4).  P (B, d+1, l+1) -> (B, l+1)."""
    if model == "mamba":
        return np.exp(log_gating(params.w, P))
    return np.ones(P.shape[::2])                    # (B, l+1): G = 1, Section 3.4


LOG_TINY = float(np.log(np.nextafter(0.0, 1.0)))     # log of the smallest positive float64, -744.4


def why_output_is_zero(model: str, params: Params, P) -> str:
    """Why eq (3) gives F = 0 exactly on the prompts P (B, d+1, l+1), in words (for
    ``sgd.CollapseError``): every gate G_{i,l+1}(w) underflowed (Mamba), or the scores are 0."""
    if model == "mamba" and (top := np.max(log_gating(params.w, P)[:, :-1])) < LOG_TINY:
        return (f"every gate G_(i,l+1) of eq (3) underflowed to 0: the largest log G is {top:.4g}, below "
                f"float64's range (log of its smallest positive number is {LOG_TINY:.1f}); |w| = "
                f"{np.linalg.norm(params.w):.3g}")
    return (f"the attention scores p_i^T W_B^T W_C p_query are 0 (largest |score| "
            f"{np.max(np.abs(scores(params, P))):.3g})")


def attention_scores(params: Params, P) -> np.ndarray:
    """Linear-attention scores p_i^T W_B^T W_C p_query of eq (3), i = 1..l+1.

    P : (d+1, l+1) -> (l+1,) or (B, d+1, l+1) -> (B, l+1).  W_B plays the key and W_C the
    query of a Transformer (Section 2).  Paper: eq (3), Corollary 1.
    """
    params = check_params(params)
    P, single = check_prompts(P, params.W_B.shape[1])
    s = scores(params, P)
    return s[0] if single else s

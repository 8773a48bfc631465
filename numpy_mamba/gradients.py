"""Analytic gradients of the mean hinge loss, eqs (93), (118), (135) of Appendix E.

For one prompt with 1 - z F > 0 (the hinge's active side; see ``loss.hinge_active``):

    dl/dW_C = -z sum_{i=1}^{l}   G_i y_i W_B p_i p_query^T                          (93)
    dl/dW_B = -z sum_{i=1}^{l+1} G_i y_i W_C p_query p_i^T                          (118)
    dl/dw   =  z sum_{i=1}^{l}   y_i s_i G_i ( sum_{s=i+1}^{l+1} sigma(w^T p_s) p_s
                                              - (1 - sigma(w^T p_i)) p_i )          (135)

with s_i = p_i^T W_B^T W_C p_query; on the inactive side all three are 0.  The batch gradient
is the mean over prompts (Algorithm 1, eq (19)).  The sums over i in (93) and (118) differ in
their upper limit, but the query's label y_{l+1} is 0, so they agree.

Read ``gradients_literal`` first: one prompt and one term at a time, as the equations read.
``gradients`` checks its input and runs ``F_and_gradients``, the batched form: no Python loop
over prompts or tokens, every sum over the columns p_i one matrix-vector pass over P, and the
double sum of (135) one prefix sum.  tests/test_gradients.py proves the two equal to 1e-12 and
checks them against central finite differences.  Training runs the same sums fused
(``numpy_mamba/fused/eq3.py``: four products with P).
"""
from __future__ import annotations

import numpy as np
from scipy.special import expit

from .loss import mean_hinge_slope
from .model import Params, check_inputs, forward_terms, gate_logits


def gradients(params, P, z, model: str = "mamba") -> Params:
    """Gradient of ``hinge_loss`` (mean over the batch) w.r.t. W_B, W_C, w.

    P : (d+1, l+1) or (B, d+1, l+1); z : scalar or (B,).  Returns Params(dW_B, dW_C, dw) with
    the shapes of ``params``; dw = 0 for ``model="linear_transformer"`` (its gate is 1).
    Paper: eqs (93), (118), (135), (19).
    """
    params, P, z, _ = check_inputs(params, P, model, z)
    return F_and_gradients(model, params, P, z)[1]


def F_and_gradients(model: str, params: Params, P, z) -> tuple:
    """F and eqs (118), (93), (135) for the paper's two models, summed over the batch: ``gradients``
    without the input checks, plus the output F it computes on the way (``network(model)``'s
    F_and_gradients).  The batched reading form; ``fused.eq3.F_and_gradients`` computes the same in
    fewer passes over P.

    With h^n = dL/dF^n, the slope of the mean hinge loss (-z^n / B on the active side, else 0),
    and s_i = p_i^T W_B^T W_C p_query, the batch sums of the three equations are

        dW_B = sum_n sum_i  h^n G_i y_i  W_C p_query p_i^T                              (118)
        dW_C = sum_n sum_i  h^n G_i y_i  W_B p_i p_query^T                              (93)
        dw   = sum_n sum_i -h^n G_i y_i s_i (sum_{s>i} sigma(w^T p_s) p_s - (1 - sigma(w^T p_i)) p_i)  (135)

    h^n G_i y_i = dL/ds_i is the weight each equation gives example i; (118) and (93) then share
    the sum k^n = sum_i dL/ds_i p_i (``attention_backward``), and (135) regroups by column p_s
    (``gate_backward_terms``).  P (B, d+1, l+1), z (B,) -> (F (B,), Params(dW_B, dW_C, dw)).
    """
    F, G, s, sigma = forward_terms(model, params, P)        # eq (3): F, G_{i,l+1}(w), s_i, sigma(w^T p_i)
    h = mean_hinge_slope(F, z)                               # h^n = dL/dF^n: (B,)
    y = P[:, -1, :]                                          # y_i; y_{l+1} = 0 (eq (2)): (B, l+1)
    dL_ds = G * y * h[:, None]                               # h^n G_i y_i: (B, l+1)
    dW_B, dW_C = attention_backward(params, P, dL_ds)        # eqs (118), (93)
    if model == "mamba":
        dw = gate_backward_terms(P, sigma, dL_ds * s)        # eq (135), with dL/dG_i G_i = h^n y_i s_i G_i
    else:
        dw = np.zeros_like(params.w)                         # G = 1 does not depend on w
    return F, Params(dW_B, dW_C, dw)


def attention_backward(params: Params, P, dL_ds) -> tuple:
    """(dW_B, dW_C) of a loss that depends on the scores s_i = p_i^T W_B^T W_C p_query.

    dL_ds = dL/ds_i (B, l+1).  With k^n = sum_i dL/ds_i p_i (B, d+1) and K = sum_n k^n p_query^T
    (d+1, d+1): dW_B = W_C K^T (eq (118)) and dW_C = W_B K (eq (93)); (m, d+1) each.
    """
    k = column_sum(P, dL_ds)                                 # k^n = sum_i dL/ds_i p_i: (B, d+1)
    p_query = np.ascontiguousarray(P[:, :, -1])              # (B, d+1)
    K = k.T @ p_query                                        # sum_n k^n p_query^T: (d+1, d+1)
    return params.W_C @ K.T, params.W_B @ K                  # eq (118), eq (93)


def gate_backward_terms(P, sigma, dL_dG_G) -> np.ndarray:
    """sum over prompts and i of dL/dG_i dG_i/dw (eq (135)), given dL/dG_i G_i (B, l+1) and
    sigma_s = sigma(w^T p_s) (B, l+1); P (B, d+1, l+1) -> (d+1,).

    dG_i/dw = G_i ((1 - sigma_i) p_i - sum_{s=i+1}^{l+1} sigma_s p_s), so with c_i = dL/dG_i G_i
    sum_i c_i dG_i/dw / G_i = sum_s p_s (c_s (1 - sigma_s) - sigma_s sum_{i<s} c_i)
                            = sum_s p_s (c_s - sigma_s sum_{i<=s} c_i):  one prefix sum.
    """
    c = dL_dG_G
    weight = c - sigma * np.cumsum(c, axis=1)                # the weight of column p_s: (B, l+1)
    return column_sum(P, weight).sum(axis=0)                 # sum_{n,s} weight_s p_s: (d+1,)


def gate_backward(w, P, G, dG) -> np.ndarray:
    """Chain rule through the Mamba gate (eq (135)): sum_{n,i} dG_{n,i} dG_{n,i}/dw, shape (d+1,).

    P (B, d+1, l+1), G and dG = dL/dG (B, l+1); see ``gate_backward_terms``.
    """
    return gate_backward_terms(P, expit(gate_logits(w, P)), dG * G)


def column_sum(P, weights) -> np.ndarray:
    """sum_i weights_i p_i for every prompt: P (B, d+1, l+1), weights (B, l+1) -> (B, d+1).

    One batched matrix-vector product, one pass over P.
    """
    return (P @ weights[:, :, None])[:, :, 0]


def gradients_literal(params, P, z, model: str = "mamba") -> Params:
    """The same gradient, one prompt and one term at a time, as eqs (93), (118), (135) read.

    Slow on purpose: Python loops over prompts n and tokens i.  Use ``gradients`` to run.
    """
    params, P, z, _ = check_inputs(params, P, model, z)
    W_B, W_C, w = params
    B, _, n_tokens = P.shape
    l = n_tokens - 1
    dW_B, dW_C, dw = np.zeros_like(W_B), np.zeros_like(W_C), np.zeros_like(w)
    for n in range(B):
        p = [P[n, :, i] for i in range(l + 1)]                # p[0..l-1] context, p[l] = p_query
        p_query, y = p[l], P[n, -1, :]
        sigma = [expit(w @ p_i) for p_i in p]
        if model == "mamba":
            G = [sigma[i] * np.prod([1.0 - sigma[j] for j in range(i + 1, l + 1)]) for i in range(l + 1)]
        else:
            G = [1.0] * (l + 1)
        F = sum(G[i] * y[i] * (p[i] @ W_B.T @ W_C @ p_query) for i in range(l + 1))
        if not 1.0 - z[n] * F > 0.0:                          # inactive side of the hinge
            continue
        # eq (93): -z sum_{i=1}^{l} G_i y_i W_B p_i p_query^T
        dW_C += -z[n] * sum(G[i] * y[i] * np.outer(W_B @ p[i], p_query) for i in range(l))
        # eq (118): -z sum_{i=1}^{l+1} G_i y_i W_C p_query p_i^T
        dW_B += -z[n] * sum(G[i] * y[i] * np.outer(W_C @ p_query, p[i]) for i in range(l + 1))
        if model == "mamba":
            # eq (135): z sum_{i=1}^{l} y_i s_i G_i (sum_{s=i+1}^{l+1} sigma_s p_s - (1 - sigma_i) p_i)
            for i in range(l):
                s_i = p[i] @ W_B.T @ W_C @ p_query
                suffix = sum((sigma[t] * p[t] for t in range(i + 1, l + 1)), np.zeros_like(w))
                dw += z[n] * y[i] * s_i * G[i] * (suffix - (1.0 - sigma[i]) * p[i])
    return Params(dW_B / B, dW_C / B, dw / B)

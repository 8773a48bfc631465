"""Analytic gradients of the mean hinge loss, eqs (93), (118), (135) of Appendix E.

For one prompt with 1 - z F > 0 (the hinge's active side; see ``loss.hinge_active``):

    dl/dW_C = -z sum_{i=1}^{l}   G_i y_i W_B p_i p_query^T                          (93)
    dl/dW_B = -z sum_{i=1}^{l+1} G_i y_i W_C p_query p_i^T                          (118)
    dl/dw   =  z sum_{i=1}^{l}   y_i s_i G_i ( sum_{s=i+1}^{l+1} sigma(w^T p_s) p_s
                                              - (1 - sigma(w^T p_i)) p_i )          (135)

with s_i = p_i^T W_B^T W_C p_query; on the inactive side all three are 0.  The batch gradient
is the mean over prompts (Algorithm 1, eq (19)).  The sums over i in (93) and (118) differ in
their upper limit, but the query's label y_{l+1} is 0, so they agree.

``gradients`` is the vectorised version (no Python loop over prompts or tokens; the double sum
in (135) becomes one prefix sum, and every sum over columns is one matrix-vector pass over P).
``gradients_literal`` follows each equation term by term for reading.  tests/test_gradients.py
proves them equal to 1e-12 and checks both against central finite differences;
tests/test_speed_paths.py checks this fast path against a plain einsum per equation.
"""
from __future__ import annotations

import numpy as np
from scipy.special import expit

from ._checks import check_labels, check_prompts
from ._models import PAPER_MODELS, check_model, extension
from .loss import mean_hinge_slope
from .model import Params, check_params, forward_terms, gate_logits
from .numerics import running_sum


def _checked(params, P, z, model):
    check_model(model)
    params = check_params(params, model)
    P, _ = check_prompts(P, params.W_B.shape[1])
    z = check_labels(z, P.shape[0])
    return params, P, z


def column_sum(P, weights) -> np.ndarray:
    """sum_i weights_i p_i for every prompt: P (B, d+1, l+1), weights (B, l+1) -> (B, d+1).

    One batched matrix-vector product, one pass over P.
    """
    return (P @ weights[:, :, None])[:, :, 0]


def gate_weights(sigma, c, out=None) -> np.ndarray:
    """The weight of each column p_s in dw of eq (135), given c_i = dL/dG_i G_i (B, l+1).

    dG_i/dw = G_i ((1 - sigma_i) p_i - sum_{s=i+1}^{l+1} sigma_s p_s), so
    sum_i c_i dG_i/dw = sum_s p_s (c_s (1 - sigma_s) - sigma_s sum_{i<s} c_i)
                      = sum_s p_s (c_s - sigma_s sum_{i<=s} c_i): an inclusive prefix sum.
    sigma = sigma(w^T p_s) (B, l+1) -> (B, l+1), written into ``out`` if given.
    """
    inclusive = running_sum(c)                                # sum_{i<=s} c_i: (B, l+1)
    return np.subtract(c, np.multiply(sigma, inclusive, out=inclusive), out=out)


def gate_backward(w, P, G, dG) -> np.ndarray:
    """Chain rule through the Mamba gate (eq (135)): sum_{n,i} dG_{n,i} dG_{n,i}/dw, shape (d+1,).

    P (B, d+1, l+1), G and dG (B, l+1); the column weights are ``gate_weights``.
    """
    coeff = gate_weights(expit(gate_logits(w, P)), dG * G)   # (B, l+1)
    return column_sum(P, coeff).sum(axis=0)                  # sum_{n,s} coeff_s p_s: (d+1,)


def attention_weights(params: Params, P, key_sum) -> tuple:
    """(dW_B, dW_C) from k = sum_i dL/ds_i p_i (B, d+1), the batch's keys weighted by dL/ds.

    dL/dW_B = sum_n W_C p_query k^T (eq (118)) and dL/dW_C = W_B sum_n k p_query^T (eq (93)),
    (m, d+1) each; both use M = sum_n k p_query^T, one (d+1, d+1) product over the batch.
    """
    p_query = np.ascontiguousarray(P[:, :, -1])               # (B, d+1)
    M = key_sum.T @ p_query                                   # sum_n k p_query^T: (d+1, d+1)
    return params.W_C @ M.T, params.W_B @ M                   # eq (118), eq (93)


def attention_backward(params: Params, P, ds) -> tuple:
    """(dW_B, dW_C) of a loss that depends on the scores s_i = p_i^T W_B^T W_C p_query.

    ds = dL/ds_i (B, l+1); see ``attention_weights`` for eqs (93), (118).
    """
    return attention_weights(params, P, column_sum(P, ds))   # k = sum_i ds_i p_i: (B, d+1)


def gradients(params, P, z, model: str = "mamba") -> Params:
    """Gradient of ``hinge_loss`` (mean over the batch) w.r.t. W_B, W_C, w; vectorised.

    P : (d+1, l+1) or (B, d+1, l+1); z : scalar or (B,).  Returns Params(dW_B, dW_C, dw) with
    the shapes of ``params``; dw = 0 for ``model="linear_transformer"`` (its gate is 1).  For
    a registered extension (an Appendix E.6 gate) the result is that model's container, from
    its own backward given dL/dF.  Paper: eqs (93), (118), (135), (19).

    The forward pass makes two matrix-vector passes over P (``model.forward_terms``) and so does
    the backward: the sums over columns of (93)/(118) and of (135) (``column_sum``).
    """
    params, P, z = _checked(params, P, z, model)
    return value_and_gradients(model, params, P, z)[1]


def value_and_gradients(model: str, params, P, z) -> tuple:
    """Unchecked (F (B,), gradients of eqs (93), (118), (135)) for P (B, d+1, l+1), z (B,):
    ``gradients`` without the input checks, plus the output F it computes on the way
    (``sgd.train`` checks its inputs once and runs this at every step, one forward pass per step)."""
    if (ext := extension(model)) is not None:                 # e.g. an Appendix E.6 gate
        F, cache = ext.output(params, P)
        return F, ext.backward(params, P, cache, mean_hinge_slope(F, z))
    F, G, s, sigma = forward_terms(model, params, P)
    r = mean_hinge_slope(F, z)                                # d(mean loss)/dF^n: (B,)
    if model == "mamba":
        ds = np.multiply(G, P[:, -1, :])                      # dL/ds_i = r G_i y_i: (B, l+1)
        ds *= r[:, None]
        c = ds * s                                            # c_i = dL/dG_i G_i = ds_i s_i
        coeff = gate_weights(sigma, c, out=c)                 # in place: one array fewer
        dw = column_sum(P, coeff).sum(axis=0)                 # eq (135), summed over the batch
    else:
        ds = r[:, None] * P[:, -1, :]                         # dL/ds_i = r y_i (G = 1)
        dw = np.zeros_like(params.w)                          # G = 1 does not depend on w
    key_sum = column_sum(P, ds)                               # sum_i ds_i p_i: (B, d+1)
    return F, Params(*attention_weights(params, P, key_sum), dw)   # eqs (118), (93)


def gradients_literal(params, P, z, model: str = "mamba") -> Params:
    """The same gradient, one prompt and one term at a time, as eqs (93), (118), (135) read.

    Slow on purpose: Python loops over prompts n and tokens i.  Use ``gradients`` to run.
    Only the paper's two models; the Appendix E.6 gates are checked by finite differences.
    """
    if model not in PAPER_MODELS:
        raise ValueError(f"gradients_literal covers the paper's models {PAPER_MODELS}; got "
                         f"{model!r}. Use gradients(...) for other models.")
    params, P, z = _checked(params, P, z, model)
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

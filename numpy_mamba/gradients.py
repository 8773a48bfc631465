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
in (135) becomes one exclusive prefix sum).  ``gradients_literal`` follows each equation term by
term for reading.  tests/test_gradients.py proves them equal to 1e-12 and checks both against
central finite differences.
"""
from __future__ import annotations

import numpy as np
from scipy.special import expit

from ._checks import check_labels, check_model, check_prompts
from .loss import hinge_active
from .gates import GATES
from .model import Params, check_params, gate_logits, output_terms


def _checked(params, P, z, model):
    check_model(model)
    params = check_params(params, model)
    P, _ = check_prompts(P, params.W_B.shape[1])
    z = check_labels(z, P.shape[0])
    return params, P, z


def gate_backward(w, P, G, dG) -> np.ndarray:
    """Chain rule through the Mamba gate: sum_{n,i} dG_{n,i} dG_{n,i}/dw, shape (d+1,).

    dG_i/dw = G_i ((1 - sigma_i) p_i - sum_{s=i+1}^{l+1} sigma_s p_s).  With c_i = dG_i G_i,
    sum_i c_i sum_{s>i} sigma_s p_s = sum_s sigma_s p_s sum_{i<s} c_i: an exclusive prefix sum.
    P (B, d+1, l+1), G and dG (B, l+1).
    """
    sigma = expit(gate_logits(w, P))                          # (B, l+1)
    c = dG * G                                                # (B, l+1)
    before = np.cumsum(c, axis=1) - c                         # sum_{i<s} c_i: (B, l+1)
    coeff = c * (1.0 - sigma) - sigma * before                # weight of each column p_s
    return (P @ coeff[:, :, None]).sum(axis=0)[:, 0]         # sum_{n,s} coeff_s p_s: (d+1,)


def key_gated_backward(params, P, r, g) -> tuple:
    """dW_B, dW_C and dL/dg for a per-key-feature gate g (B, m, l+1), eq (198).

    F = sum_i y_i sum_k (W_B p_i)_k g_{k,i} (W_C p_query)_k and r = dL/dF (B,).
    """
    y = P[:, -1, :]                                           # (B, l+1)
    keys = params.W_B @ P                                     # W_B p_i: (B, m, l+1)
    q = P[:, :, -1] @ params.W_C.T                            # W_C p_query: (B, m)
    weight = (r[:, None] * y)[:, None, :]                     # dL/d(term i): (B, 1, l+1)
    dkeys = weight * g * q[:, :, None]                        # (B, m, l+1)
    dq = np.sum(weight * g * keys, axis=2)                    # (B, m)
    dW_B = np.tensordot(dkeys, P, axes=([0, 2], [0, 2]))     # sum_{n,i} dkeys p_i^T: (m, d+1)
    dW_C = dq.T @ P[:, :, -1]                                 # (m, d+1)
    dg = weight * keys * q[:, :, None]                        # dL/dg_{k,i}: (B, m, l+1)
    return dW_B, dW_C, dg


def gradients(params, P, z, model: str = "mamba") -> Params:
    """Gradient of ``hinge_loss`` (mean over the batch) w.r.t. W_B, W_C, w; vectorised.

    P : (d+1, l+1) or (B, d+1, l+1); z : scalar or (B,).  Returns Params(dW_B, dW_C, dw) with
    the shapes of ``params``; dw = 0 for ``model="linear_transformer"`` (its gate is 1).  For
    an Appendix E.6 gate the result is that gate's container (e.g. Mamba2Params(dW_B, dW_C, dw,
    da)): W_B, W_C as below, the gate's own fields from ``GATES[model].backward``.
    Paper: eqs (93), (118), (135), (19); Appendix E.6.
    """
    params, P, z = _checked(params, P, z, model)
    B = P.shape[0]
    F, G, s = output_terms(model, params, P)                  # (B,), (B, l+1), (B, l+1)
    r = np.where(hinge_active(F, z), -z, 0.0) / B             # d(mean loss)/dF^n: (B,)
    if G.ndim == 3:                                           # per-key-feature gate (GLA)
        dW_B, dW_C, dG = key_gated_backward(params, P, r, G)
    else:
        y = P[:, -1, :]                                       # (B, l+1)
        ds = r[:, None] * G * y                               # dL/ds_i: (B, l+1)
        p_query = P[:, :, -1]                                 # (B, d+1)
        key_sum = (P @ ds[:, :, None])[:, :, 0]               # sum_i ds_i p_i: (B, d+1)
        q = p_query @ params.W_C.T                            # W_C p_query: (B, m)
        dW_B = q.T @ key_sum                                  # (m, d+1), eq (118)
        dW_C = params.W_B @ (key_sum.T @ p_query)             # (m, d+1), eq (93)
        dG = r[:, None] * y * s                               # dL/dG_i: (B, l+1)
    if model in GATES:                                        # Appendix E.6: the gate's own chain rule
        family = GATES[model]
        return family.params_type(dW_B, dW_C, *family.backward(params, P, G, dG))
    if model == "mamba":
        dw = gate_backward(params.w, P, G, dG)                # eq (135)
    else:
        dw = np.zeros_like(params.w)
    return Params(dW_B, dW_C, dw)


def gradients_literal(params, P, z, model: str = "mamba") -> Params:
    """The same gradient, one prompt and one term at a time, as eqs (93), (118), (135) read.

    Slow on purpose: Python loops over prompts n and tokens i.  Use ``gradients`` to run.
    Only the paper's two models; the Appendix E.6 gates are checked by finite differences.
    """
    if model in GATES:
        raise ValueError(f"gradients_literal covers model='mamba' and 'linear_transformer'; got "
                         f"{model!r}. Use gradients(...) for the Appendix E.6 gates.")
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

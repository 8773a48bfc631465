"""Eq (3) fused: the forward and backward pass that training runs, in four products with P.

    eq3_forward(model, W_B, W_C, w, P) -> (F, cache)       eq (3)                  reads P once
    eq3_backward(dF, cache) -> (dW_B, dW_C, dw, dP)        eqs (118), (93), (135)  reads P once more
    F_and_gradients(model, params, P, z) -> (F, grads)     both, for the mean hinge loss (eq (4))
    output(model, params, P) -> F                          eq (3), OUTPUT_ROWS prompts at a time

The reading forms are ``model.forward_terms`` and ``gradients.F_and_gradients``.  What changes
here is only how the same sums are taken:

- eq (3) needs four products with P and nothing else of its size: the forward pass the scores
  s_i = u^T p_i (u = W_B^T W_C p_query) and the gate logits a_i = w^T p_i, the backward pass
  k = sum_i dL/ds_i p_i (eqs (118), (93)) and sum_i c_i p_i (eq (135)); between them everything
  is a (B, l+1) array.  Each pair is taken ``PIECE_BYTES`` (2 MiB) of prompts at a time, so
  that its second product reads them from cache (``_row_products``, ``_column_products``).
- The gates are running products of 1 - sigma(a_j) in [0, 1] (``numerics.sigmoid_pair``: one
  exp per token for sigma and 1 - sigma), not exp of running sums of log-sigmoids: a product of
  numbers in [0, 1] neither overflows nor cancels, and it underflows to 0 where exp(log G) does.
- ``eq3_backward(..., input_gradient=True)`` also gives dL/dP, for a stack's top layer
  (``layer.top_layer_forward``), which is eq (3) of its input.

tests/test_fused.py proves each equal to its reading form to 1e-12 on l = 1, l = 10,000,
saturated gates (|w^T p| ~ 50) and prompts on the flat side of the hinge.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..loss import mean_hinge_slope
from ..model import Params
from .numerics import in_pieces, pieces, sigmoid_pair

# Bytes of prompts read at a time (one prompt at least): about a core's cache, so that the second
# product of each pair reads them from there; ``bench`` times the step at short and long prompts.
PIECE_BYTES = 2 << 20


class Eq3Cache(NamedTuple):
    """What ``eq3_backward`` needs from ``eq3_forward`` (B prompts, l+1 tokens, D = d+1).

    P (B, D, l+1), p_query (B, D), W_B, W_C (m, D), w (D,), u = W_B^T W_C p_query (B, D);
    s, G, Gy = G_i y_i and Gys = G_i y_i s_i (B, l+1); sigma = sigma(w^T p_i) (B, l+1);
    G and sigma are None for the linear Transformer.
    """

    P: np.ndarray
    p_query: np.ndarray
    W_B: np.ndarray
    W_C: np.ndarray
    w: np.ndarray
    u: np.ndarray
    s: np.ndarray
    G: np.ndarray | None
    Gy: np.ndarray
    Gys: np.ndarray
    sigma: np.ndarray | None


def eq3_forward(model: str, W_B, W_C, w, P) -> tuple:
    """F of eq (3) for P (B, D, l+1) -> (F (B,), Eq3Cache), unchecked, from two products with P.

    F = sum_i G_i y_i s_i with G_i = sigma_i prod_{j>i} (1 - sigma_j); G = 1 for the linear
    Transformer.  Same F as ``model.forward_terms``; a query label slot that is not 0 (the input
    of a stack's top layer) adds its term G_{l+1} y_{l+1} s_{l+1}, as eq (1) does.
    """
    p_query = np.ascontiguousarray(P[:, :, -1])              # (B, D)
    u = p_query @ (W_C.T @ W_B)                              # u^T = p_query^T W_C^T W_B: (B, D)
    mamba = model == "mamba"
    s, a = _row_products(P, u, w if mamba else None)         # s_i = u^T p_i, a_i = w^T p_i: (B, l+1)
    y = P[:, -1, :]                                          # y_i; 0 for the query: (B, l+1)
    G = sigma = None
    if mamba:
        sigma, keep = sigmoid_pair(a)                        # sigma(a_i), 1 - sigma(a_i)
        G = np.empty_like(sigma)
        G[:, -1] = 1.0
        np.cumprod(keep[:, :0:-1], axis=1, out=G[:, -2::-1])    # prod_{j>i} (1 - sigma_j)
        G *= sigma                                           # G_i of eq (3)
    Gy = y if G is None else G * y                           # G = 1 for the linear Transformer, Section 3.4
    Gys = Gy * s
    return Gys.sum(axis=1), Eq3Cache(P, p_query, W_B, W_C, w, u, s, G, Gy, Gys, sigma)


def eq3_backward(dF, cache: Eq3Cache, input_gradient: bool = False) -> tuple:
    """(dW_B, dW_C, dw, dP) of a loss with dL/dF = dF (B,), from two more products with P; dw is
    None for the linear Transformer, dP = dL/dP (B, D, l+1) is computed only with ``input_gradient``.

    The sums of ``gradients.F_and_gradients``, taken the same way: dL/ds_i = dF G_i y_i,
    k = sum_i dL/ds_i p_i, K = sum_n k p_query^T, dW_B = W_C K^T (118), dW_C = W_B K (93);
    c_i = dL/ds_i s_i and dw = sum_s (c_s - sigma_s sum_{i<=s} c_i) p_s (135).
    """
    P, p_query, W_B, W_C, w, u, s, G, Gy, Gys, sigma = cache
    dL_ds = Gy * dF[:, None]                                 # (B, l+1)
    weight = None
    if sigma is None:
        k, dw = _column_products(P, dL_ds), None
    else:
        c = Gys * dF[:, None]                                # dL/dG_i G_i
        weight = np.cumsum(c, axis=1)
        weight *= sigma
        np.subtract(c, weight, out=weight)                   # c_s - sigma_s sum_{i<=s} c_i = dL/da_s
        k, dw = _column_products(P, dL_ds, weight)
    K = k.T @ p_query                                        # (D, D)
    dP = _input_gradient(dF, cache, dL_ds, weight, k) if input_gradient else None
    return W_C @ K.T, W_B @ K, dw, dP


def _input_gradient(dF, cache: Eq3Cache, dL_ds, dL_da, k):
    """dL/dP (B, D, l+1) of eq (3): p_i enters s_i = p_i^T u (as key), a_i = w^T p_i and y_i (its
    last entry), and p_query every s_i (as query: W_C^T W_B k)."""
    P, p_query, W_B, W_C, w, u, s, G, Gy, Gys, sigma = cache
    dP = u[:, :, None] * dL_ds[:, None, :]                   # as key: ds_i/dp_i = u: (B, D, l+1)
    if dL_da is not None:
        dP += w[:, None] * dL_da[:, None, :]                 # da_i/dp_i = w
    dP[:, -1, :] += dF[:, None] * (s if G is None else G * s)     # dF/dy_i = G_i s_i
    dP[:, :, -1] += k @ (W_B.T @ W_C)                        # as query: sum_i dL/ds_i W_C^T W_B p_i
    return dP


def _pieces(P) -> list:
    """Slices of P's prompts, about ``PIECE_BYTES`` each (one prompt at least), first prompt first."""
    return pieces(len(P), max(1, PIECE_BYTES * len(P) // P.nbytes))


def _row_products(P, u, w=None) -> tuple:
    """(u_n^T P_n, w^T P_n or None) for every prompt n: P (B, D, N), u (B, D), w (D,) -> (B, N) each."""
    if P.nbytes <= PIECE_BYTES:
        return (u[:, None, :] @ P)[:, 0, :], None if w is None else w @ P
    B, _, N = P.shape
    s, a = np.empty((B, 1, N)), None if w is None else np.empty((B, N))
    for k in _pieces(P):                                     # the second product reads P[k] from cache
        np.matmul(u[k, None, :], P[k], out=s[k])
        if w is not None:
            np.matmul(w, P[k], out=a[k])
    return s[:, 0, :], a


def _column_products(P, g, q=None):
    """P_n g_n for every prompt (B, D), and sum_n P_n q_n (D,) when q is given: P (B, D, N), g, q (B, N)."""
    if P.nbytes <= PIECE_BYTES:
        k = (P @ g[:, :, None])[:, :, 0]
        return k if q is None else (k, (P @ q[:, :, None]).sum(axis=0)[:, 0])
    B, D, _ = P.shape
    k, Pq = np.empty((B, D, 1)), None if q is None else np.empty((B, D, 1))
    for piece in _pieces(P):                                 # the second product reads P[piece] from cache
        np.matmul(P[piece], g[piece, :, None], out=k[piece])
        if q is not None:
            np.matmul(P[piece], q[piece, :, None], out=Pq[piece])
    return k[:, :, 0] if q is None else (k[:, :, 0], Pq.sum(axis=0)[:, 0])     # summed in prompt order


def F_and_gradients(model: str, params: Params, P, z) -> tuple:
    """``gradients.F_and_gradients`` fused (``eq3_forward``, ``eq3_backward``): the same F (B,) and
    Params(dW_B, dW_C, dw) of the mean hinge loss for P (B, d+1, l+1), z (B,), unchecked, from four
    products with P.  What ``sgd.train`` runs at every step, through ``fused.network("mamba")``."""
    F, cache = eq3_forward(model, *params, P)
    dW_B, dW_C, dw, _ = eq3_backward(mean_hinge_slope(F, z), cache)
    return F, Params(dW_B, dW_C, np.zeros_like(params.w) if dw is None else dw)


OUTPUT_ROWS = 512        # prompts per piece of ``output``: 4,000 test prompts in 7/8 of the time


def output(model: str, params: Params, P) -> np.ndarray:
    """Unchecked F(Psi; P) of eq (3) for P (B, d+1, l+1) -> (B,): ``eq3_forward``'s F,
    OUTPUT_ROWS prompts at a time."""
    return in_pieces(lambda part: eq3_forward(model, *params, part)[0], P, OUTPUT_ROWS)

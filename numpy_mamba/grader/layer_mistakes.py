"""Known mistakes of the stack exercise (tutorials/exercises/stack.py: ``layer_backward``).

``backward`` is the Mamba layer's backward pass (the reading form of ``layer.layer_backward``,
written again here with einsum) with one switch per mistake; with the defaults it equals
``layer.layer_backward`` (tests/test_grader_compare.py).  ``LAYER_MISTAKES`` pairs each mistake
with its hint and the graded parts (dH, dW_B, dW_C, dW) it changes; ``exercises/stack.py`` turns
them into the per-part mistakes ``hints.py`` compares a failed answer with.
"""
from __future__ import annotations

import numpy as np
from scipy.special import expit

PATHS = ("value", "key", "query", "gate")
BETWEEN = {"i<k<=t": lambda i, k, t: (i < k) & (k <= t),          # correct: the factors k = i+1..t
           "i<=k<=t": lambda i, k, t: (i <= k) & (k <= t),
           "i<k<t": lambda i, k, t: (i < k) & (k < t)}


def backward(dO, cache, *, drop=(), residual=False, query_only=False, between="i<k<=t",
             S_transposed=False, dS_transposed=False):
    """dL/dH (B, D, N) and (dW_B, dW_C, dW) of one Mamba layer (``layer.LayerCache``), with mistakes.

    drop: paths of H left out of dH ("value", "key", "query", "gate"; dW_* stay right);
    residual: dO added to dH (the stack's residual, which is not the layer's);
    query_only: only the query column t = l+1 of dO used; between: the gate limit of
    d log G_{j,i,t} / d a_{j,k} = -sigma(a_{j,k}) (``BETWEEN``); S_transposed: s_{t,i} where
    s_{i,t} belongs (value and gate paths); dS_transposed: dL/dS transposed in the score
    backward (key and query roles exchanged).
    """
    H, layer, _, K, Q, S, G, a = cache
    W_B, W_C, W = layer
    n = H.shape[2]
    if query_only:
        dO = np.where(np.arange(n) == n - 1, dO, 0.0)
    S_used = np.swapaxes(S, 1, 2) if S_transposed else S
    # o_{t,j} = sum_i G_{j,i,t} h_{i,j} s_{i,t}
    dG = dO[:, :, None, :] * H[:, :, :, None] * S_used[:, None]           # dL/dG_{j,i,t}: (B, D, N, N)
    dH_value = np.einsum("bjt,bjit,bit->bji", dO, G, S_used)               # value path
    dS = np.einsum("bjt,bjit,bji->bit", dO, G, H)                          # dL/ds_{i,t}: (B, N, N)
    c = G * dG                                                             # dL/dlog G_{j,i,t}
    i, k, t = np.ogrid[:n, :n, :n]
    da = (expit(-a) * c.sum(axis=3)                                        # k = i: (1 - sigma)
          - expit(a) * np.einsum("bjit,ikt->bjk", c, BETWEEN[between](i, k, t)))   # later k: -sigma
    dW = np.einsum("bdk,bjk->dj", H, da)                                   # a_{j,k} = w_j^T h_k
    dS_used = np.swapaxes(dS, 1, 2) if dS_transposed else dS
    dK = np.einsum("bit,bmt->bmi", dS_used, Q)                             # dL/dk_i = sum_t dS_{i,t} q_t
    dQ = np.einsum("bit,bmi->bmt", dS_used, K)                             # dL/dq_t = sum_i dS_{i,t} k_i
    dW_B, dW_C = np.einsum("bmi,bdi->md", dK, H), np.einsum("bmt,bdt->md", dQ, H)
    paths = {"value": dH_value, "gate": np.einsum("dj,bjk->bdk", W, da),
             "key": np.einsum("md,bmi->bdi", W_B, dK), "query": np.einsum("md,bmt->bdt", W_C, dQ)}
    dH = sum(paths[p] for p in PATHS if p not in drop) + (dO if residual else 0.0)
    return dH, (dW_B, dW_C, dW)


# (key, hint, the parts it changes, how to make it: backward's switches, or a function of the
# correct parts (dH, dW_B, dW_C, dW) -> the mistaken parts)
LAYER_MISTAKES = (
    ("residual", "dH includes dO itself: the residual H^(k) = H^(k-1) + O^(k) belongs to the stack "
     "(its backward adds dO to what layer_backward returns); layer_backward returns only the "
     "paths through O: value, key, query and gates.", ("dH",), {"residual": True}),
    ("no_value", "the value path is missing from dH: o_{t,j} contains h_{i,j} itself, so dL/dh_{i,j} "
     "gets sum_t dO_{j,t} G_{j,i,t} s_{i,t}.", ("dH",), {"drop": ("value",)}),
    ("no_key", "the key path is missing from dH: s_{i,t} = k_i^T q_t with k_i = W_B h_i, so h_i "
     "gets W_B^T dL/dk_i, dL/dk_i = sum_t dL/ds_{i,t} q_t.", ("dH",), {"drop": ("key",)}),
    ("no_query", "the query path is missing from dH: s_{i,t} depends on h_t through q_t = W_C h_t, "
     "so every column t (the query column l+1 too) gets W_C^T dL/dq_t, dL/dq_t = sum_i "
     "dL/ds_{i,t} k_i.", ("dH",), {"drop": ("query",)}),
    ("no_gate", "the gate path is missing from dH: every gate G_{j,i,t} depends on h_k through "
     "a_{j,k} = w_j^T h_k, so h_k gets sum_j w_j dL/da_{j,k} (= W @ dA).", ("dH",), {"drop": ("gate",)}),
    ("gate_from_i", "gate limit off by one: log G_{j,i,t} = log sigma(a_{j,i}) + sum_{k=i+1}^{t} "
     "log(1 - sigma(a_{j,k})), so the -sigma(a_{j,k}) term is for i < k <= t; you included k = i.",
     ("dH", "dW"), {"between": "i<=k<=t"}),
    ("gate_before_t", "gate limit off by one: the product in G_{j,i,t} runs up to k = t INCLUDED, so "
     "the -sigma(a_{j,k}) term is for i < k <= t; you stopped at k < t.", ("dH", "dW"),
     {"between": "i<k<t"}),
    ("query_column_only", "you used only the query column of dO: in a stack every column of a "
     "layer's output feeds the layers above, so dO is dense; sum over every token t (only the "
     "top layer's dO is zero outside [d+1, l+1]).", ("dH", "dW_B", "dW_C", "dW"), {"query_only": True}),
    ("S_transposed", "S^T where S belongs: o_{t,j} = sum_i G_{j,i,t} h_{i,j} s_{i,t} uses "
     "s_{i,t} = k_i^T q_t = S[:, i, t] (key i, query t); you used S[:, t, i] in the value or "
     "gate path.", ("dH", "dW"), {"S_transposed": True}),
    ("dS_transposed", "dL/dS transposed in the score backward: dL/dk_i = sum_t dL/ds_{i,t} q_t "
     "(sum over the query index t) and dL/dq_t = sum_i dL/ds_{i,t} k_i; you exchanged the two "
     "indices.", ("dH", "dW_B", "dW_C"), {"dS_transposed": True}),
    ("transposed", "transposed: dW_B and dW_C have W_B's shape (m, d+1): sum over prompts and tokens "
     "of (dL/dk_i) h_i^T and (dL/dq_t) h_t^T, column vector times row vector.", ("dW_B", "dW_C"),
     lambda dH, dW_B, dW_C, dW: (dH, dW_B.T, dW_C.T, dW)),
    ("swapped", "dW_B and dW_C swapped: W_B makes the keys k_i = W_B h_i (dW_B = sum (dL/dk_i) h_i^T) "
     "and W_C the queries q_t = W_C h_t (dW_C = sum (dL/dq_t) h_t^T).", ("dW_B", "dW_C"),
     lambda dH, dW_B, dW_C, dW: (dH, dW_C, dW_B, dW)),
    ("dW_transposed", "dW transposed: column j of W is channel j's gate parameter w_j, so "
     "dW[:, j] = sum_k h_k dL/da_{j,k} (dW = sum H dA^T, not dA H^T).", ("dW",),
     lambda dH, dW_B, dW_C, dW: (dH, dW_B, dW_C, dW.T)),
)


def mistaken_parts(dO, cache, make) -> tuple:
    """(dH, dW_B, dW_C, dW) with one mistake: ``make`` is backward's switches or a function of the
    correct parts."""
    if isinstance(make, dict):
        dH, grads = backward(dO, cache, **make)
        return (dH,) + tuple(grads)
    dH, grads = backward(dO, cache)
    return make(dH, *grads)

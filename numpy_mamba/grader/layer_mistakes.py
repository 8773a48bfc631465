"""Known mistakes of the stack exercise (tutorials/exercises/stack.py: ``layer_backward``).

Each is ``layer.layer_backward`` with one term changed, built from the layer's own forward and
backward (``layer_forward``, ``layer_backward``, ``scores_backward``), so that no formula of the
gates or of their gradient is written again here: a mistake that feeds the backward pass another
input (dO with its query column only, S where S^T belongs) calls it on that input; one that drops
a path of dH or changes a gate's limit removes or adds that term, computed from the forward
pass's cache.  ``LAYER_MISTAKES`` pairs each mistake with its hint and the graded parts (dH,
dW_B, dW_C, dW) it changes; ``exercises/stack.py`` turns them into the per-part mistakes
``hints.py`` compares a failed answer with.
"""
from __future__ import annotations

import numpy as np
from scipy.special import expit

from ..layer import layer_backward, layer_forward, scores_backward

PATHS = ("value", "key", "query", "gate")


def _reference(dO, cache, dH=None) -> tuple:
    """(dH, dW_B, dW_C, dW) of ``layer_backward``, dH passed through ``dH`` when given."""
    dH_ref, grads = layer_backward(dO, cache)
    return (dH_ref if dH is None else dH(dH_ref),) + tuple(grads)


def _dS(dO, cache) -> np.ndarray:
    """dL/ds_{i,t} = sum_j G_{j,i,t} dO_{j,t} h_{i,j}: (B, N, N)."""
    return np.einsum("bjit,bjt,bji->bit", cache.G, dO, cache.H)


def paths(dO, cache) -> dict:
    """dH's four paths (B, D, N): the value path, the key and query paths (``scores_backward``
    with the other matrix 0), and the gate path, what is left of ``layer_backward``'s dH."""
    layer, dS = cache.layer, _dS(dO, cache)
    value = np.einsum("bjit,bit,bjt->bji", cache.G, cache.S, dO)             # sum_t G_{j,i,t} s_{i,t} dO_{j,t}
    key = scores_backward(dS, cache._replace(layer=layer._replace(W_C=np.zeros_like(layer.W_C))))[0]
    query = scores_backward(dS, cache._replace(layer=layer._replace(W_B=np.zeros_like(layer.W_B))))[0]
    return {"value": value, "key": key, "query": query, "gate": layer_backward(dO, cache)[0] - value - key - query}


def _without(path: str):
    def make(dO, cache):
        return _reference(dO, cache, dH=lambda dH: dH - paths(dO, cache)[path])
    return make


def _gate_limit(kind: str):
    """The -sigma(a_{j,k}) term of d log G_{j,i,t} / d a_{j,k} over i <= k <= t ("from_i": k = i
    added, sum_t dL/dlog G_{j,k,t} = h_{k,j} times the value path) or i < k < t ("before_t": the
    terms t = k left out, dO_{j,k} sum_{i<k} G_{j,i,k} h_{i,j} s_{i,k})."""
    def make(dO, cache):
        sigma = expit(cache.a)                                                   # (B, D, N)
        if kind == "from_i":
            da = -sigma * cache.H * paths(dO, cache)["value"]
        else:
            O = layer_forward(cache.H, cache.layer)[0]
            own = np.diagonal(cache.G, axis1=2, axis2=3) * cache.H * np.diagonal(cache.S, axis1=1, axis2=2)[:, None]
            da = sigma * dO * (O - own)
        dH, dW_B, dW_C, dW = _reference(dO, cache)
        return (dH + cache.layer.W @ da, dW_B, dW_C,                             # a_{j,k} = w_j^T h_k
                dW + np.tensordot(cache.H, da, axes=([0, 2], [0, 2])))
    return make


def _query_column_only(dO, cache):
    n = dO.shape[2]
    return _reference(np.where(np.arange(n) == n - 1, dO, 0.0), cache)


def _S_transposed(dO, cache):
    return _reference(dO, cache._replace(S=np.swapaxes(cache.S, 1, 2)))


def _dS_transposed(dO, cache):
    dS = _dS(dO, cache)
    right, wrong = scores_backward(dS, cache), scores_backward(np.swapaxes(dS, 1, 2), cache)
    dH, _, _, dW = _reference(dO, cache)
    return dH - right[0] + wrong[0], wrong[1], wrong[2], dW


def _parts(change):
    """A mistake made of the correct parts: ``change(dH, dW_B, dW_C, dW)`` -> the mistaken parts."""
    return lambda dO, cache: change(*_reference(dO, cache))


# (key, hint, the parts it changes, fn(dO, cache) -> the mistaken parts (dH, dW_B, dW_C, dW))
LAYER_MISTAKES = (
    ("residual", "dH includes dO itself: the residual H^(k) = H^(k-1) + O^(k) belongs to the stack "
     "(its backward adds dO to what layer_backward returns); layer_backward returns only the "
     "paths through O: value, key, query and gates.", ("dH",),
     lambda dO, cache: _reference(dO, cache, dH=lambda dH: dH + dO)),
    ("no_value", "the value path is missing from dH: o_{t,j} contains h_{i,j} itself, so dL/dh_{i,j} "
     "gets sum_t dO_{j,t} G_{j,i,t} s_{i,t}.", ("dH",), _without("value")),
    ("no_key", "the key path is missing from dH: s_{i,t} = k_i^T q_t with k_i = W_B h_i, so h_i "
     "gets W_B^T dL/dk_i, dL/dk_i = sum_t dL/ds_{i,t} q_t.", ("dH",), _without("key")),
    ("no_query", "the query path is missing from dH: s_{i,t} depends on h_t through q_t = W_C h_t, "
     "so every column t (the query column l+1 too) gets W_C^T dL/dq_t, dL/dq_t = sum_i "
     "dL/ds_{i,t} k_i.", ("dH",), _without("query")),
    ("no_gate", "the gate path is missing from dH: every gate G_{j,i,t} depends on h_k through "
     "a_{j,k} = w_j^T h_k, so h_k gets sum_j w_j dL/da_{j,k} (= W @ dA).", ("dH",), _without("gate")),
    ("gate_from_i", "gate limit off by one: log G_{j,i,t} = log sigma(a_{j,i}) + sum_{k=i+1}^{t} "
     "log(1 - sigma(a_{j,k})), so the -sigma(a_{j,k}) term is for i < k <= t; you included k = i.",
     ("dH", "dW"), _gate_limit("from_i")),
    ("gate_before_t", "gate limit off by one: the product in G_{j,i,t} runs up to k = t INCLUDED, so "
     "the -sigma(a_{j,k}) term is for i < k <= t; you stopped at k < t.", ("dH", "dW"),
     _gate_limit("before_t")),
    ("query_column_only", "you used only the query column of dO: in a stack every column of a "
     "layer's output feeds the layers above, so dO is dense; sum over every token t (only the "
     "top layer's dO is zero outside [d+1, l+1]).", ("dH", "dW_B", "dW_C", "dW"), _query_column_only),
    ("S_transposed", "S^T where S belongs: o_{t,j} = sum_i G_{j,i,t} h_{i,j} s_{i,t} uses "
     "s_{i,t} = k_i^T q_t = S[:, i, t] (key i, query t); you used S[:, t, i] in the value or "
     "gate path.", ("dH", "dW"), _S_transposed),
    ("dS_transposed", "dL/dS transposed in the score backward: dL/dk_i = sum_t dL/ds_{i,t} q_t "
     "(sum over the query index t) and dL/dq_t = sum_i dL/ds_{i,t} k_i; you exchanged the two "
     "indices.", ("dH", "dW_B", "dW_C"), _dS_transposed),
    ("transposed", "transposed: dW_B and dW_C have W_B's shape (m, d+1): sum over prompts and tokens "
     "of (dL/dk_i) h_i^T and (dL/dq_t) h_t^T, column vector times row vector.", ("dW_B", "dW_C"),
     _parts(lambda dH, dW_B, dW_C, dW: (dH, dW_B.T, dW_C.T, dW))),
    ("swapped", "dW_B and dW_C swapped: W_B makes the keys k_i = W_B h_i (dW_B = sum (dL/dk_i) h_i^T) "
     "and W_C the queries q_t = W_C h_t (dW_C = sum (dL/dq_t) h_t^T).", ("dW_B", "dW_C"),
     _parts(lambda dH, dW_B, dW_C, dW: (dH, dW_C, dW_B, dW))),
    ("dW_transposed", "dW transposed: column j of W is channel j's gate parameter w_j, so "
     "dW[:, j] = sum_k h_k dL/da_{j,k} (dW = sum H dA^T, not dA H^T).", ("dW",),
     _parts(lambda dH, dW_B, dW_C, dW: (dH, dW_B, dW_C, dW.T))),
)


def mistaken_parts(dO, cache, make) -> tuple:
    """(dH, dW_B, dW_C, dW) with the mistake ``make`` (an entry's last item)."""
    return tuple(make(dO, cache))

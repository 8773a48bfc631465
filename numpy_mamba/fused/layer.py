"""The layer of ``layer.py`` fused, tokens outermost, and the stack's top layer as eq (3).

    layer_forward_fused(X, layer, model) -> (O, cache)      eqs (88)-(90), X and O (N, B, D)
    layer_backward_fused(dO, cache) -> (dX, grads)          its backward, the chain rule of layer_backward
    top_layer_forward(X, layer, model) -> (o, cache)        the top layer, as far as F reads it: (B,)
    top_layer_backward(do, cache) -> (dX, grads)            its backward

Inside the door hidden states are laid out tokens outermost, X[i, n] = h_i of prompt n
(N = l+1 tokens, B prompts, D = d+1 channels), so that each token's (B, D) slab is contiguous;
``stack.py`` of the door takes and returns P (B, D, N) like the core.  Every cache's ``H`` is
the layer's input as ``layer.LayerCache`` holds it, (B, D, N).  The reading form is
``layer.layer_forward`` / ``layer.layer_backward``, which holds the gates as a (B, D, N, N)
tensor; tests/test_fused.py proves the two equal to 1e-12.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..layer import LayerCache, LayerParams, layer_backward, layer_forward
from .eq3 import Eq3Cache, eq3_backward, eq3_forward
from .numerics import sigmoid_pair, upper_ones


MAX_DECAY = np.exp(-600.0)   # the factored gates need every exp within e^(+-300)


class LayerFusedCache(NamedTuple):
    """What ``layer_backward_fused`` needs (N = l+1 tokens, B prompts, D = d+1 channels; (N, B, D)).

    X the layer's input, X[i, n] = h_i of prompt n; layer; MW = [M | W] (D, 2D) with M = W_B^T W_C
    (just M for the linear Transformer); Y = X M; S (B, N, N) the scores s_{i,t}, 0 for i > t;
    for Mamba (else None) sigma, keep = sigma(a), 1 - sigma(a), E, v, U = v X and O.
    """

    X: np.ndarray
    layer: LayerParams
    MW: np.ndarray
    Y: np.ndarray
    S: np.ndarray
    sigma: np.ndarray | None
    keep: np.ndarray | None
    E: np.ndarray | None
    v: np.ndarray | None
    U: np.ndarray | None
    O: np.ndarray | None

    @property
    def H(self) -> np.ndarray:
        """The layer's input as ``LayerCache`` holds it, (B, D, N) (a copy, laid out as P is)."""
        return np.ascontiguousarray(self.X.transpose(1, 2, 0))


class GateTensorCache(NamedTuple):
    """``layer_forward_fused``'s cache when the gate-tensor form ran: X (N, B, D) and the LayerCache."""

    X: np.ndarray
    cache: LayerCache

    @property
    def H(self) -> np.ndarray:
        return self.cache.H


def layer_forward_fused(X, layer: LayerParams, model: str = "mamba"):
    """``layer.layer_forward`` with tokens outermost: X (N, B, D), X[i, n] = h_i of prompt n ->
    (O (N, B, D), cache), unchecked.

    o_{t,j} = sum_{i<=t} G_{j,i,t} h_{i,j} s_{i,t} with s_{i,t} = h_i^T M h_t, M = W_B^T W_C, and,
    for Mamba, G_{j,i,t} = sigma(a_{j,i}) Q_{j,t} / Q_{j,i}, Q_{j,t} = prod_{1<k<=t} (1 - sigma(a_{j,k})):
    with E = Q / sqrt(Q_N) and v = sigma / E, o_t = E_t sum_{i<=t} s_{i,t} v_i h_i, one (N, N) x
    (N, D) matmul per prompt.  Every E and v lies within e^(+-300) while Q_N >= e^-600; a channel
    whose gates decay faster (l = 1000, |a| = 50) sends the layer to the gate-tensor form.
    """
    N, B, D = X.shape
    M = layer.W_B.T @ layer.W_C                              # s_{i,t} = h_i^T M h_t: (D, D)
    MW = np.concatenate([M, layer.W], axis=1) if model == "mamba" else M
    YA = (X.reshape(N * B, D) @ MW).reshape(N, B, -1)        # rows h_i^T M and a_i = W^T h_i
    Y = YA[:, :, :D]
    S = _prompts(Y) @ X.transpose(1, 2, 0)                   # s_{i,t}: (B, N, N)
    S *= upper_ones(N)                                       # 0 for i > t
    O = np.empty_like(X)
    if model != "mamba":
        np.matmul(S.transpose(0, 2, 1), _prompts(X), out=_prompts(O))   # o_t = sum_{i<=t} s_{i,t} h_i
        return O, LayerFusedCache(X, layer, MW, Y, S, None, None, None, None, None, None)
    sigma, keep = sigmoid_pair(YA[:, :, D:])                 # sigma(a_{j,i}), 1 - sigma(a_{j,i})
    Q = np.empty_like(keep)
    Q[0] = 1.0                                               # Q starts after token 1
    for t in range(1, N):
        np.multiply(Q[t - 1], keep[t], out=Q[t])
    if np.any(Q[-1] < MAX_DECAY):
        return _gate_tensor_forward(X, layer)
    E = Q
    E /= np.sqrt(Q[-1])                                      # Q_t / sqrt(Q_N)
    v = sigma / E
    U = v * X                                                # v_{j,i} h_{i,j}
    np.matmul(S.transpose(0, 2, 1), _prompts(U), out=_prompts(O))       # Z_t = sum_{i<=t} s_{i,t} U_i
    O *= E
    return O, LayerFusedCache(X, layer, MW, Y, S, sigma, keep, E, v, U, O)


def layer_backward_fused(dO, cache, input_gradient: bool = True):
    """Backward pass of ``layer_forward_fused``: dO = dL/dO (N, B, D) ->
    (dL/dX (N, B, D), LayerParams(dW_B, dW_C, dW)); the chain rule of ``layer.layer_backward``, step
    by step.  Without ``input_gradient`` (the first layer: nothing needs dL/dP) dL/dX is None."""
    if isinstance(cache, GateTensorCache):                   # the gate-tensor form ran
        dH, grads = layer_backward(dO.transpose(1, 2, 0), cache.cache)
        return dH.transpose(2, 0, 1), grads
    X, layer, MW, Y, S, sigma, keep, E, v, U, O = cache
    N, B, D = X.shape
    dYA = np.empty((N, B, MW.shape[1]))                      # dL/dY and, for Mamba, dL/da side by side
    values, dZ = (X, dO) if sigma is None else (U, dO * E)   # O = Z = S^T X, or O = E Z with Z = S^T U
    dvalues = np.empty_like(X)
    np.matmul(S, _prompts(dZ), out=_prompts(dvalues))        # sum_{t>=i} s_{i,t} dZ_t
    dS = _prompts(values) @ dZ.transpose(1, 2, 0)            # dL/ds_{i,t} = values_i . dZ_t
    dS *= upper_ones(N)                                      # s_{i,t} is used for i <= t only
    if sigma is not None:
        _gate_backward(dO, cache, dvalues, out=dYA[:, :, D:])
    np.matmul(dS, _prompts(X), out=_prompts(dYA[:, :, :D]))  # key side: dL/dy_i = sum_t dS_{i,t} h_t
    flat = dYA.reshape(N * B, -1)
    dMW = X.reshape(N * B, D).T @ flat                       # Y = X M, A = X W: (D, D) or (D, 2D)
    dM = dMW[:, :D]
    grads = LayerParams(layer.W_C @ dM.T, layer.W_B @ dM,    # M = W_B^T W_C
                        np.zeros_like(layer.W) if sigma is None else dMW[:, D:])
    if not input_gradient:
        return None, grads
    dX = dvalues if sigma is None else dvalues * v           # value path (U = v X)
    _prompts(dX)[...] += dS.transpose(0, 2, 1) @ _prompts(Y)     # query side: sum_i dS_{i,t} y_i
    dX += (flat @ MW.T).reshape(N, B, D)                     # through Y = X M and A = X W
    return dX, grads


def _gate_backward(dO, cache: LayerFusedCache, dU, out) -> None:
    """dL/da (N, B, D) into ``out``, given dL/dU = dU: a enters O through sigma(a) in v and through
    the running product Q of 1 - sigma(a) in E (+) and v (-); the scale sqrt(Q_N) cancels in O."""
    sigma, keep, U, O = cache.sigma, cache.keep, cache.U, cache.O
    g = dU * U                                               # dL/dlog v = dL/dlog sigma (v = sigma / E)
    dlogQ = dO * O                                           # dL/dlog Q_t: through E_t ...
    dlogQ -= g                                               # ... and through v_t
    for t in range(len(dlogQ) - 2, 0, -1):                   # dL/dlog keep_k = sum_{t>=k} dL/dlog Q_t, k > 1
        dlogQ[t] += dlogQ[t + 1]
    dlogQ[0] = 0.0                                           # keep_1 is not in Q
    dlogQ *= sigma                                           # d log(1 - sigma) / da = -sigma
    np.multiply(keep, g, out=out)                            # d log sigma / da = 1 - sigma
    out -= dlogQ


def _prompts(A):
    """(N, B, k) -> (B, N, k): prompt n's (N, k) matrix as A[n], a view."""
    return A.transpose(1, 0, 2)


def _gate_tensor_forward(X, layer: LayerParams):
    """``layer.layer_forward`` on (B, D, N), (N, B, D) in and out (its LayerCache stays (B, D, N))."""
    O, cache = layer_forward(np.ascontiguousarray(X.transpose(1, 2, 0)), layer, "mamba")
    return O.transpose(2, 0, 1), GateTensorCache(X, cache)


# ---------------------------------------------------------------- the top layer
class TopLayerCache(NamedTuple):
    """``top_layer_forward``'s cache: X (N, B, D), the layer, and eq (3)'s cache of its input."""

    X: np.ndarray
    layer: LayerParams
    eq3: Eq3Cache

    @property
    def H(self) -> np.ndarray:
        """The layer's input as ``layer.LayerCache`` holds it, (B, D, N) (eq (3)'s P, laid out as P is)."""
        return self.eq3.P


def top_layer_forward(X, layer: LayerParams, model: str = "mamba"):
    """o_{l+1,d+1} of the stack's top layer, the one entry of its output that F reads: X (N, B, D)
    -> ((B,), TopLayerCache).  It is eq (3) of the layer's input with w = W[:, -1] (the one-layer
    identity of ``stack.py``), so the top layer costs what eq (3) costs."""
    o, cache = eq3_forward(model, layer.W_B, layer.W_C, layer.W[:, -1], np.ascontiguousarray(X.transpose(1, 2, 0)))
    return o, TopLayerCache(X, layer, cache)


def top_layer_backward(do, cache: TopLayerCache, input_gradient: bool = True):
    """dL/do (B,) -> (dL/dX (N, B, D) or None, LayerParams): only the column W[:, -1] of dW is not 0."""
    dW_B, dW_C, dw, dP = eq3_backward(do, cache.eq3, input_gradient)
    dW = np.zeros_like(cache.layer.W)
    if dw is not None:
        dW[:, -1] = dw
    return None if dP is None else dP.transpose(2, 0, 1), LayerParams(dW_B, dW_C, dW)

"""The residual stack of ``stack.py`` fused: what training runs for Section 4.2's models.

    stack_forward(layers, P, model, prenorm) -> (F, caches)     P (B, D, N) -> F (B,)
    stack_backward(dF, caches) -> [LayerParams]
    F_and_gradients(model, layers, P, z, prenorm) -> (F, grads) in parts of CACHE_BYTES of prompts
    output(model, layers, P, prenorm) -> F                      OUTPUT_ROWS prompts at a time
    output_scale(model, layers, P, prenorm) -> S                the size of the terms of F

Every layer but the top runs ``layer.layer_forward_fused`` (tokens outermost, no (B, D, N, N)
gate tensor); the top layer only as far as F reads it, o_{l+1, d+1}, which is eq (3) of its input
(``layer.top_layer_forward``).  The hidden states H^(k) are (N, B, D) inside; P comes in as
(B, D, N) and every cache's ``H`` (the layer's input) goes out as (B, D, N), as the core's.
The reading form is ``numpy_mamba.stack``; tests/test_fused.py proves the two equal to 1e-12.
"""
from __future__ import annotations

import numpy as np

from ..layer import LayerParams
from ..loss import mean_hinge_slope
from ..model import Params
from ..model import output_scale as eq3_output_scale
from ..rmsnorm import rms_norm_backward, rms_norm_forward
from ..stack import PreNormCache, layer_cache
from .layer import TopLayerCache, layer_backward_fused, layer_forward_fused, top_layer_backward, top_layer_forward
from .numerics import in_pieces


def stack_forward(layers, P, model: str = "mamba", prenorm: bool = False):
    """Unchecked ``stack.stack_forward`` fused: P (B, D, N) -> (F (B,), [cache of each layer]), the
    top layer's a TopLayerCache; with ``prenorm`` each cache is a PreNormCache.  Every cache's ``H``
    is the layer's input, (B, D, N)."""
    H, caches = np.ascontiguousarray(P.transpose(2, 0, 1)), []       # tokens outermost: (N, B, D)
    for k, layer in enumerate(layers, start=1):
        X, norm = _norm_forward(H) if prenorm else (H, None)
        if k < len(layers):
            O, cache = layer_forward_fused(X, layer, model)
            H = H + O
        else:
            o, cache = top_layer_forward(X, layer, model)
            F = H[-1, :, -1] + o                      # F = H^(L-1)[d+1, l+1] + o^(L)_{l+1, d+1}
        caches.append(cache if norm is None else PreNormCache(cache, norm))
    return F, caches


def stack_backward(dF, caches) -> list:
    """Unchecked backward of ``stack_forward``: dF = dL/dF (B,) -> [LayerParams of gradients], first
    layer first; ``stack.stack_backward`` tokens outermost.  Nothing needs dL/dH^(0) = dL/dP."""
    dH = np.zeros_like(layer_cache(caches[-1]).X)
    dH[-1, :, -1] = dF                                # F = H^(L)[d+1, l+1]; tokens outermost
    grads = []
    for k in range(len(caches) - 1, -1, -1):
        inner = layer_cache(caches[k])
        if isinstance(inner, TopLayerCache):          # F reads o^(L)_{l+1, d+1} only
            dX, grad = top_layer_backward(dF, inner, input_gradient=k > 0)
        else:
            dX, grad = layer_backward_fused(dH, inner, input_gradient=k > 0)
        grads.append(grad)
        if k == 0:
            break
        if isinstance(caches[k], PreNormCache):       # O^(k) reads X^(k) = RMSNorm(H^(k-1))
            dX = _norm_backward(dX, caches[k].norm)
        dH = dH + dX                                  # residual path plus the layer's own paths
    return grads[::-1]


def _norm_forward(H):
    """``rms_norm_forward`` of H (N, B, D): (X (N, B, D), its NormCache, which holds (B, D, N))."""
    X, norm = rms_norm_forward(H.transpose(1, 2, 0))
    return X.transpose(2, 0, 1), norm


def _norm_backward(dX, norm):
    return rms_norm_backward(dX.transpose(1, 2, 0), norm).transpose(2, 0, 1)


CACHE_BYTES = 2 ** 18     # a large batch runs in parts whose hidden states (N, part, D) fit in a core's cache


def F_and_gradients(model: str, layers, P, z, prenorm: bool = False) -> tuple:
    """Unchecked (F (B,), gradients of the mean hinge loss, eqs (4), (19)) for P (B, d+1, l+1),
    z (B,): ``stack.F_and_gradients`` fused, which ``sgd.train`` runs at every step.  A batch of
    more than twice ``CACHE_BYTES`` of prompts runs in parts, whose gradients add up to the batch's."""
    B = P.shape[0]
    part = max(1, CACHE_BYTES // P[0].nbytes)
    if B <= 2 * part:
        F, caches = stack_forward(layers, P, model, prenorm=prenorm)
        return F, stack_backward(mean_hinge_slope(F, z), caches)
    Fs, total = [], None
    for start in range(0, B, part):
        F, caches = stack_forward(layers, P[start:start + part], model, prenorm=prenorm)
        grads = stack_backward(mean_hinge_slope(F, z[start:start + part], B), caches)    # (1/B) of the whole batch
        total = grads if total is None else [LayerParams(*map(np.add, a, b)) for a, b in zip(total, grads)]
        Fs.append(F)
    return np.concatenate(Fs), total


OUTPUT_ROWS = 256        # prompts per piece of ``output``: 2,000 test prompts at three layers in 2/3 of the time


def output(model: str, layers, P, prenorm: bool = False) -> np.ndarray:
    """Unchecked F for P (B, d+1, l+1) -> (B,), OUTPUT_ROWS prompts at a time."""
    return in_pieces(lambda part: stack_forward(layers, part, model, prenorm=prenorm)[0], P, OUTPUT_ROWS)


def output_scale(model: str, layers, P, prenorm: bool = False) -> np.ndarray:
    """``stack.output_scale`` from the fused forward, OUTPUT_ROWS prompts at a time: S (B,) =
    |H^(L-1)[d+1, l+1]| + ``model.output_scale`` of the top layer's eq (3), whose cache holds
    its terms G_i y_i s_i."""
    return in_pieces(lambda part: _top_scale(model, layers, part, prenorm), P, OUTPUT_ROWS)


def _top_scale(model: str, layers, P, prenorm: bool) -> np.ndarray:
    F, caches = stack_forward(layers, P, model, prenorm=prenorm)
    top = layer_cache(caches[-1])                              # TopLayerCache: X^(L) and its eq (3)
    o = np.sum(top.eq3.Gys, axis=1)                            # o^(L)_{l+1, d+1} = sum_i G_i y_i s_i: (B,)
    eq3 = Params(top.layer.W_B, top.layer.W_C, top.layer.W[:, -1])
    return np.abs(F - o) + eq3_output_scale(model, eq3, top.H)  # |H^(L-1)[d+1, l+1]| + the top layer's S

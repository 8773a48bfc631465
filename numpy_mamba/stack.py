"""A residual stack of eq (1) layers: the three-layer Mamba and linear Transformer of Section 4.2.

The paper trains three-layer models in Section 4.2 and Appendix B (Figures 3-6, Table 1) but
does not write the multi-layer architecture down.  This one is OUR choice:

    H^(0) = P,    H^(k) = H^(k-1) + O^(k),    F = H^(L)[d+1, l+1]   (label row, query column)

- Layer k has its own ``LayerParams(W_B, W_C, W)``: W_B, W_C (m, d+1) as in eq (1), and
  W = (w_1, ..., w_{d+1}) (d+1, d+1), whose column j is channel j's gate parameter,
  Delta_{j,i} = softplus(w_j^T h_i) (exactly the W of ``scan.scan_outputs``).
- Column t of O^(k) is the output o_t of the eq (1) scan (h_0 = 0, A = -I, exact zero-order
  hold) run over ALL columns h_1..h_{l+1} of H^(k-1).  Per channel j (Appendix E.1, eqs (88)-(90))

      o_{t,j} = sum_{i<=t} G_{j,i,t} h_{i,j} s_{i,t},    s_{i,t} = h_i^T W_B^T W_C h_t,
      G_{j,i,t} = sigma(w_j^T h_i) prod_{k=i+1}^{t} (1 - sigma(w_j^T h_k)),

  with the gates in log space.  ``model="linear_transformer"`` sets every gate to 1: causal
  linear attention with the same residual stack.
- Only P is a prompt in the sense of eq (2): from layer 2 on, the input's query label slot
  H^(k-1)[d+1, l+1] holds the previous layers' F, not 0, so P is validated once, at the entry.
- The one-layer identity: with L = 1, F = o_{l+1, d+1} is eq (3) with w = W[:, -1] (only the
  label channel of the query's output reaches F), and the W_B, W_C, W[:, -1] gradients are
  eqs (118), (93), (135); the other columns of dW are exactly 0.
- Without a gate each layer's output is cubic in its input (h_{i,j} s_{i,t}, s quadratic in h),
  so the linear Transformer's stack starts far above the hinge's margin unless delta is small
  (tests/test_stack.py measures the median |F| at initialisation).
- ``prenorm=True`` (``stack_forward``, ``value_and_gradients``, ``output``) is an ablation, not
  the paper's model: H^(k) = H^(k-1) + O^(k)(RMSNorm(H^(k-1))), with the norm of ``rmsnorm.py``.

Code: ``init_stack`` (Algorithm 1's initialisation for every layer), ``forward``, ``hinge_loss``,
``gradients`` (a list of LayerParams) and ``forward_with_caches`` (every layer's scores and
gates, for plots), each with its input checks at the top; ``stack_forward`` / ``stack_backward``
are the same passes unchecked.  ``layer.py`` is one layer, CS231n style: ``layer_forward(H, layer,
model) -> (O, cache)`` and ``layer_backward(dO, cache) -> (dH, LayerParams)``, the backward written
by hand below the forward.  This is the reading form; training runs the same stack fused
(``numpy_mamba/fused/stack.py``: no (B, D, N, N) gate tensor, the top layer as eq (3)).
tests/test_stack.py checks every O^(k) against ``scan.scan_outputs``, the one-layer identity, a
two-layer stack computed by hand, and every gradient against central finite differences.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._checks import as_generator, as_real_array, check_labels, check_positive_int, check_prompts
from .data import SECTION4
from .layer import LayerCache, LayerParams, gates, layer_backward, layer_forward  # noqa: F401  (the grader's kit)
from .loss import hinge, mean_hinge_slope
from .model import PAPER_MODELS, Params, forward_terms, init_params
from .model import output_scale as eq3_output_scale
from .rmsnorm import NormCache, rms_norm_backward, rms_norm_forward


def init_stack(d: int, n_layers: int, m: int | None = None, delta: float = SECTION4.delta, rng=None) -> list:
    """Algorithm 1's initialisation for every layer: list of ``n_layers`` LayerParams.

    W_B, W_C : (m, d+1) with the first d diagonal entries delta, the rest 0 (``model.init_params``);
    W : (d+1, d+1) with N(0, 1/(d+1)) entries, each column w_j drawn like eq (3)'s w^(0).
    m defaults to d+1.  ``rng``: an ``np.random.Generator`` or an integer seed.

    Draw order: layer 1's W[:, -1] is ``init_params(d, m, delta, rng).w``, the only draw taken
    from ``rng`` itself; every other entry comes from the child ``rng.spawn(1)[0]``.  So a
    one-layer stack starts where eq (3) does, and ``sgd.train`` then draws the same minibatches
    at every depth for a given seed (tests/test_stack.py).
    """
    n_layers = check_positive_int(n_layers, "n_layers")
    rng = as_generator(rng, "init_stack")
    W_B, W_C, w = init_params(d, m, delta, rng)              # validates d, m, delta
    child = rng.spawn(1)[0]                                  # does not advance rng
    layers = []
    for k in range(n_layers):
        W = child.normal(0.0, 1.0 / np.sqrt(d + 1), size=(d + 1, d + 1))
        if k == 0:
            W[:, -1] = w
        layers.append(LayerParams(W_B.copy(), W_C.copy(), W))
    return layers


def check_layers(layers, d0: int | None = None) -> list:
    """Validate a stack: a non-empty list (or tuple) of LayerParams with finite float arrays,
    W_B and W_C (m, d+1) and W (d+1, d+1), the same d+1 in every layer (and = ``d0`` if given)."""
    if not isinstance(layers, (list, tuple)) or hasattr(layers, "_fields"):      # a bare LayerParams too
        raise ValueError(f"layers must be a list of LayerParams (one per layer); got {type(layers).__name__}."
                         + (" Wrap a single layer as [layer]." if isinstance(layers, LayerParams) else ""))
    if len(layers) == 0:
        raise ValueError("layers is empty: a stack needs at least one LayerParams.")
    checked = []
    for k, layer in enumerate(layers, start=1):
        if not isinstance(layer, LayerParams):
            raise ValueError(f"layer {k} must be LayerParams(W_B, W_C, W); got {type(layer).__name__}.")
        W_B, W_C, W = (as_real_array(x, f"layer {k}: {name}") for x, name in zip(layer, layer._fields))
        if W_B.ndim != 2:
            raise ValueError(f"layer {k}: W_B must have shape (m, d+1); got {W_B.shape}.")
        d0 = W_B.shape[1] if d0 is None else d0
        if W_B.shape[1] != d0:
            raise ValueError(f"layer {k}: W_B has shape {W_B.shape}; expected (m, d+1) with d+1 = {d0} "
                             f"(the rows of P and of layer 1).")
        if W_C.shape != W_B.shape:
            raise ValueError(f"layer {k}: W_C has shape {W_C.shape}; expected W_B's shape {W_B.shape}.")
        if W.shape != (d0, d0):
            raise ValueError(f"layer {k}: W has shape {W.shape}; expected (d+1, d+1) = ({d0}, {d0}).")
        checked.append(LayerParams(W_B, W_C, W))
    return checked


def check_stack_model(model) -> str:
    """``model`` if it names one of the paper's two models, else a ValueError that lists them."""
    if model not in PAPER_MODELS:
        raise ValueError(f"a stack is built from the paper's models {PAPER_MODELS}; got {model!r}.")
    return model


def check_inputs(layers, P, model, z=None) -> tuple:
    """The input of ``forward``, ``hinge_loss`` and ``gradients``, checked (``check_stack_model``,
    ``check_layers``, ``check_prompts``, ``check_labels``): (layers, P (B, d+1, l+1), z (B,) or None,
    single).  Eq (2) holds for P, not for H^(k), k >= 1, so P is checked here, once."""
    check_stack_model(model)
    layers = check_layers(layers)
    P, single = check_prompts(P, layers[0].W_B.shape[1])
    return layers, P, None if z is None else check_labels(z, P.shape[0]), single


class PreNormCache(NamedTuple):
    """One layer's cache in the pre-norm stack: the layer's own cache (its input is X^(k)) and the
    RMS norm's cache of X^(k) = RMSNorm(H^(k-1))."""

    layer: object
    norm: NormCache


def forward(layers, P, model: str = "mamba"):
    """Output F = H^(L)[d+1, l+1] of the stack (see the module docstring).

    layers : list of LayerParams; P : (d+1, l+1) -> float, or (B, d+1, l+1) -> (B,).
    One layer: eq (3) with w = W[:, -1].  Paper: eqs (1), (3), Section 4.2 (architecture ours).
    """
    layers, P, _, single = check_inputs(layers, P, model)
    F = stack_forward(layers, P, model)[0]
    return float(F[0]) if single else F


def hinge_loss(layers, P, z, model: str = "mamba") -> float:
    """Mean hinge loss (1/B) sum_n max{0, 1 - z^n F(P^n)} of eq (4) for the stack; z : scalar or (B,)."""
    layers, P, z, _ = check_inputs(layers, P, model, z)
    return float(np.mean(hinge(stack_forward(layers, P, model)[0], z)))


def gradients(layers, P, z, model: str = "mamba") -> list:
    """Gradient of ``hinge_loss`` w.r.t. every layer's W_B, W_C, W: list of LayerParams, same shapes.

    dW = 0 for the linear Transformer.  One layer: (dW_B, dW_C, dW[:, -1]) are eqs (118), (93),
    (135) and the other columns of dW are 0.  Paper: eqs (4), (19); backward by hand (see above).
    """
    layers, P, z, _ = check_inputs(layers, P, model, z)
    F, caches = stack_forward(layers, P, model)
    return stack_backward(mean_hinge_slope(F, z), caches)


def forward_with_caches(layers, P, model: str = "mamba"):
    """F and every layer's LayerCache (scores S, gates G, inputs H) for P (B, d+1, l+1): (F (B,), list)."""
    layers, P, _, _ = check_inputs(layers, P, model)
    return stack_forward(layers, P, model)


# ---------------------------------------------------------------- unchecked
def stack_forward(layers, P, model: str = "mamba", prenorm: bool = False):
    """Unchecked forward through the stack: P (B, D, N) -> (F (B,), [LayerCache of each layer]).
    Each layer is the eq (1) scan in closed form; H^(k) = H^(k-1) + O^(k) (Section 4.2, our
    architecture).  ``prenorm``: the pre-norm variant (not the paper's, an ablation),
    H^(k) = H^(k-1) + O^(k)(RMSNorm(H^(k-1))) with ``rmsnorm.py``; each cache is then a PreNormCache.
    """
    H, caches = P, []
    for layer in layers:
        X, norm = rms_norm_forward(H) if prenorm else (H, None)    # the layer's input X^(k)
        O, cache = layer_forward(X, layer, model)
        H = H + O                                     # residual: H^(k) = H^(k-1) + O^(k)
        caches.append(cache if norm is None else PreNormCache(cache, norm))
    return H[:, -1, -1], caches                       # F = H^(L)[d+1, l+1]


def stack_backward(dF, caches) -> list:
    """Unchecked backward through the stack of ``stack_forward``: dF = dL/dF (B,) -> [LayerParams of
    gradients], first layer first.  The chain rule of eq (19) through H^(k) = H^(k-1) + O^(k):
    dL/dH^(k-1) = dL/dH^(k) + (layer k's dH)."""
    dH = np.zeros_like(layer_cache(caches[-1]).H)
    dH[:, -1, -1] = dF                                # F = H^(L)[d+1, l+1]
    grads = []
    for cache in reversed(caches):
        dX, grad = layer_backward(dH, layer_cache(cache))
        grads.append(grad)
        if isinstance(cache, PreNormCache):           # O^(k) reads X^(k) = RMSNorm(H^(k-1))
            dX = rms_norm_backward(dX, cache.norm)
        dH = dH + dX                                  # residual path plus the layer's own paths
    return grads[::-1]


def layer_cache(cache):
    """The layer's own cache of one entry of ``stack_forward``'s list (a PreNormCache holds it)."""
    return cache.layer if isinstance(cache, PreNormCache) else cache


def output(model: str, layers, P, prenorm: bool = False) -> np.ndarray:
    """Unchecked F for P (B, d+1, l+1) -> (B,) (``network.network(model, n_layers)``'s F)."""
    return stack_forward(layers, P, model, prenorm=prenorm)[0]


def F_and_gradients(model: str, layers, P, z, prenorm: bool = False) -> tuple:
    """Unchecked (F (B,), gradients of the mean hinge loss, eqs (4), (19)) for P (B, d+1, l+1),
    z (B,): the stack's ``Network.F_and_gradients``; ``prenorm``: the pre-norm stack."""
    F, caches = stack_forward(layers, P, model, prenorm=prenorm)
    return F, stack_backward(mean_hinge_slope(F, z), caches)


def output_scale(model: str, layers, P, prenorm: bool = False) -> np.ndarray:
    """S (B,): the size of the terms that make the stack's F, for P (B, d+1, l+1), unchecked.

    F = H^(L-1)[d+1, l+1] + o^(L)_{l+1, d+1}, and o^(L)_{l+1, d+1} is eq (3) of the top layer's input
    X^(L) with w = W[:, -1] (the one-layer identity), so S = |H^(L-1)[d+1, l+1]| + that eq (3)'s
    ``model.output_scale``: the terms of F's last sums with every factor replaced by its absolute
    value (``loss.TIE_RTOL``).  The layers below enter as the top layer's input, as P enters eq (3):
    their rounding perturbs X^(L) like any input, while an F that is 0 in exact arithmetic is 0
    because these last sums cancel.
    """
    F, caches = stack_forward(layers, P, model, prenorm=prenorm)
    top, X = layers[-1], layer_cache(caches[-1]).H                 # the top layer and its input X^(L)
    eq3 = Params(top.W_B, top.W_C, top.W[:, -1])
    o = forward_terms(model, eq3, X).F                             # o^(L)_{l+1, d+1}: (B,)
    return np.abs(F - o) + eq3_output_scale(model, eq3, X)         # |H^(L-1)[d+1, l+1]| + the top layer's S

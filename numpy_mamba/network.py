"""What is trained, as one value: a ``Network`` says which model, how deep, and how to run it.

    net = network("mamba")                              eq (3): Params(W_B, W_C, w)
    net = network("linear_transformer")                 Section 3.4: eq (3) with every G = 1
    net = network("mamba", n_layers=3)                  Section 4.2: the residual stack of stack.py
    net = network("mamba", n_layers=3, prenorm=True)    the pre-norm stack (an ablation, not the paper's)

    params = net.init(d, rng)                           Algorithm 1's initialisation
    F = net.output(params, P)                           eq (3) (or the stack's F): (B,)
    loss, grads = net.value_and_gradients(params, P, z) eq (4), and its gradients shaped like params

``sgd.train``, the step-size rule and the experiments take a Network, so nothing downstream asks
which model it holds, and a combination that cannot work is refused here, when the Network is
made.  The core knows only the paper's two models and their stacks; other gated models
(Appendix E.6) build their own Network from the same parts (``numpy_mamba.gates.network``).

The Networks made here run the reading forms (``model.forward_terms``, ``gradients.F_and_gradients``,
``stack.py``).  ``numpy_mamba.fused.network`` takes the same arguments and makes the same Network
with the fused forms, which the experiment commands train; tests/test_fused.py proves the two equal.

One return convention, as ``jax.value_and_grad`` has it: a *value* is the loss, the function that
the gradients are gradients of.  ``value_and_gradients`` returns (mean hinge loss, gradients), checked
and public; the unchecked functions that training calls return (F, gradients), since the loop needs
F for its error count as well as for the loss, and they are named for that: ``F_and_gradients``
(``Network.F_and_gradients``, ``gradients.F_and_gradients``, ``stack.F_and_gradients``).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Callable

import numpy as np

from ._checks import as_generator, check_labels, check_positive_int, check_prompts
from .data import SECTION4
from . import stack
from .gradients import F_and_gradients
from .loss import hinge, misclassified
from .model import PAPER_MODELS, check_params, init_params, output, output_scale, why_output_is_zero


def one_layer(params) -> list:
    """[params]: the layers of a one-layer model (``Network.layers``)."""
    return [params]


@dataclass(frozen=True)
class Network:
    """One model as a value: its name and the four functions training needs.

    name             : str, for reports and JSON ("mamba", "mamba, 3 layers", ...).
    init_params      : (d, m, delta, rng) -> params: Algorithm 1's initialisation.
    check_params     : params -> (params as float64 arrays, d+1); ValueError where they do not fit.
    F                : (params, P (B, d+1, l+1)) -> F (B,), without input checks.
    F_and_gradients  : (params, P, z (B,)) -> (F (B,), gradients of the mean hinge loss (eq (4))
                       shaped like params), without input checks: what ``sgd.train`` runs at every step.
    F_scale          : (params, P) -> S (B,), F with every factor replaced by its absolute value: the
                       size of the terms that make F, so an F within ``loss.TIE_RTOL`` S of 0 is a tie.
    why_zero         : (params, P) -> str, what makes F exactly 0 (for ``sgd.CollapseError``); optional.
    layers           : params -> [each layer's container (W_B, W_C, gate)], first layer first: [params]
                       for one layer, the list itself for a stack (for measurements of layer k).

    The methods ``init``, ``output`` and ``value_and_gradients`` check their input once, then
    call these.
    """

    name: str
    init_params: Callable
    check_params: Callable
    F: Callable
    F_and_gradients: Callable
    F_scale: Callable
    why_zero: Callable | None = None
    layers: Callable = one_layer                    # a stack's Network passes ``list``

    def init(self, d: int, rng, m: int | None = None, delta: float = SECTION4.delta):
        """Algorithm 1's initialisation for this model (``model.init_params``, ``stack.init_stack``):
        W_B, W_C (m, d+1) with delta on the first d diagonal entries, gate parameters ~ N(0, 1/(d+1))."""
        return self.init_params(d, m, delta, as_generator(rng, f"{self.name}: init"))

    def check(self, params, d: int | None = None):
        """``params`` as float64 arrays in their container, refused with a ValueError if they do not
        fit this model (or, with ``d``, a world of dimension d)."""
        params, d0 = self.check_params(params)
        if d is not None and d0 != d + 1:
            raise ValueError(f"params must fit the world's d = {d}: W_B, W_C of shape (m, d+1) = (m, {d + 1}); "
                             f"got parameters for d = {d0 - 1}, W_B of shape (m, {d0}) ({self.name}).")
        return params

    def output(self, params, P):
        """F(Psi; P): P (d+1, l+1) -> float, or (B, d+1, l+1) -> (B,)."""
        params, d0 = self.check_params(params)
        P, single = check_prompts(P, d0)
        F = self.F(params, P)
        return float(F[0]) if single else F

    def misclassified(self, params, P, z, F=None) -> np.ndarray:
        """Unchecked per-prompt error of eq (5), ties within rounding of 0 included
        (``loss.misclassified`` with S = ``F_scale``): P (B, d+1, l+1), z (B,) -> bool (B,).
        ``F``: this Network's F on P, when the caller has it already."""
        F = self.F(params, P) if F is None else F
        with np.errstate(over="ignore", invalid="ignore"):    # an overflowed S is no decision: an error
            return misclassified(F, z, self.F_scale(params, P))

    def value_and_gradients(self, params, P, z) -> tuple:
        """(mean hinge loss of eq (4), its gradients shaped like params) for P (d+1, l+1) or
        (B, d+1, l+1) and z, a label or (B,) labels in {-1, +1}.  Paper: eqs (4), (19)."""
        params, d0 = self.check_params(params)
        P, _ = check_prompts(P, d0)
        z = check_labels(z, P.shape[0])
        F, grads = self.F_and_gradients(params, P, z)
        return float(np.mean(hinge(F, z))), grads

    def __repr__(self) -> str:
        return f"Network({self.name!r})"


def network(model: str = "mamba", n_layers: int = 1, prenorm: bool = False) -> Network:
    """The Network of one of the paper's models.

    model    : "mamba" (eq (3)) or "linear_transformer" (Section 3.4, every G = 1).
    n_layers : 1 is eq (3) itself, params ``Params(W_B, W_C, w)``; more is Section 4.2's residual
               stack of ``stack.py``, params a list of ``LayerParams``, one per layer.
    prenorm  : the pre-norm stack of ``stack.py`` (RMSNorm before every layer; an ablation, not the
               paper's model) at any depth, one layer included; params a list of ``LayerParams``.
    """
    if model not in PAPER_MODELS:
        raise ValueError(f"model must be one of the paper's models {PAPER_MODELS}; got {model!r}. Other "
                         "gated models (Appendix E.6) make their own Network: numpy_mamba.gates.network(name).")
    n_layers = check_positive_int(n_layers, "n_layers")
    if not isinstance(prenorm, (bool, np.bool_)):
        raise ValueError(f"prenorm must be True or False; got {prenorm!r}.")
    prenorm = bool(prenorm)
    if n_layers == 1 and not prenorm:
        return Network(model, init_params, _check_eq3, partial(output, model),
                       partial(F_and_gradients, model), partial(output_scale, model), partial(why_output_is_zero, model))
    name = f"{model}, {n_layers} layer{'s' * (n_layers > 1)}" + (", pre-norm" if prenorm else "")
    return Network(name, partial(_init_stack, n_layers), partial(_check_stack, n_layers),
                   partial(stack.output, model, prenorm=prenorm),
                   partial(stack.F_and_gradients, model, prenorm=prenorm),
                   partial(stack.output_scale, model, prenorm=prenorm), layers=list)


def as_network(model) -> Network:
    """A Network as it is, or the one-layer Network of a paper model's name (``network(model)``)."""
    if isinstance(model, Network):
        return model
    if isinstance(model, str):
        return network(model)
    raise ValueError(f"expected a Network (numpy_mamba.network(...)) or one of the paper's model names "
                     f"{PAPER_MODELS}; got {type(model).__name__}.")


def _check_eq3(params):
    params = check_params(params)
    return params, params.W_B.shape[1]


def _init_stack(n_layers, d, m, delta, rng):
    return stack.init_stack(d, n_layers, m, delta, rng)


def _check_stack(n_layers, layers):
    layers = stack.check_layers(layers)
    if len(layers) != n_layers:
        raise ValueError(f"this Network has {n_layers} layer(s) but params holds {len(layers)}.")
    return layers, layers[0].W_B.shape[1]


def leaves(params) -> list:
    """Every trainable array of ``params``, in order: the fields of a container (a NamedTuple), or
    of each layer of a list of them."""
    if not isinstance(params, (list, tuple)):
        return [params]
    return [a for part in params for a in leaves(part)]


def map_leaves(f: Callable, params, *others):
    """``params`` with every array x replaced by f(x, *the matching arrays of others), in the same
    container (a NamedTuple, or a list of them)."""
    if not isinstance(params, (list, tuple)):
        return f(params, *others)
    parts = [map_leaves(f, *group) for group in zip(params, *others)]
    return type(params)(*parts) if hasattr(params, "_fields") else parts

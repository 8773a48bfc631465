"""The one switch to the fused forms: ``network(model, n_layers, prenorm)``, the Network the commands train.

It takes the arguments of ``numpy_mamba.network`` and returns the same Network (same name, same
initialisation and input checks, same numbers to 1e-12) whose F, F_and_gradients and F_scale run
the fused forms of this subpackage.  ``sgd.train`` trains whatever Network it is given, so this
is the only place where the fast form is chosen.
"""
from __future__ import annotations

from dataclasses import replace
from functools import partial

from ..network import Network, one_layer
from ..network import network as reading_network
from . import eq3, stack


def network(model: str = "mamba", n_layers: int = 1, prenorm: bool = False) -> Network:
    """``numpy_mamba.network(model, n_layers, prenorm)`` with the fused forms: eq (3) by
    ``eq3.output`` and ``eq3.F_and_gradients``, a stack by ``stack.output``, ``stack.F_and_gradients``
    and ``stack.output_scale``.  Arguments are checked by ``numpy_mamba.network``."""
    net = reading_network(model, n_layers, prenorm)
    if net.layers is one_layer:
        return replace(net, F=partial(eq3.output, model), F_and_gradients=partial(eq3.F_and_gradients, model))
    return replace(net, F=partial(stack.output, model, prenorm=prenorm),
                   F_and_gradients=partial(stack.F_and_gradients, model, prenorm=prenorm),
                   F_scale=partial(stack.output_scale, model, prenorm=prenorm))

"""The fused forms: the same equations as the core, taken in fewer passes over memory.  Off the
reading path: no core module imports this subpackage; the commands train through ``network``.

    network.py    ``network(model, n_layers, prenorm)``: the core's Network with the fused forms (the switch)
    eq3.py        eq (3) and eqs (93), (118), (135) in four products with P, P read in cache-sized pieces
    layer.py      a stack's layer tokens outermost without the (B, D, N, N) gate tensor; the top layer as eq (3)
    stack.py      the residual stack of those layers, large batches in cache-sized parts
    numerics.py   their helpers: sigma and 1 - sigma from one exp, the causal mask, pieces of a batch

Each is tested equal to its reading form (``model.forward_terms``, ``gradients.F_and_gradients``,
``layer.layer_forward``/``layer_backward``, ``stack.py``) to 1e-12 in tests/test_fused.py, on l = 1,
l = 10,000, saturated gates and prompts on the flat side of the hinge.
"""
from .network import network
from .stack import stack_forward

__all__ = ["network", "stack_forward"]

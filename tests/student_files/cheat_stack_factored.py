"""Cheat: the factored backward, reached through numpy_mamba.stack (it hands a LayerCache on
to layer_backward)."""
import numpy_mamba.stack as stack


def layer_backward(dO, cache):
    return stack.layer_backward_factored(dO, cache)

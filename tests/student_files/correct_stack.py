"""Correct: layer_backward from _stack_common (the forward pass and numpy_mamba.layer.gates
allowed by the hand-out, a plain tuple instead of LayerParams); the grader must pass it."""
from _stack_common import my_layer_backward


def layer_backward(dO, cache):
    return my_layer_backward(dO, cache)

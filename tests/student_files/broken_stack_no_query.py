"""Broken: the query path (q_t = W_C h_t) is left out of dH; dW_B, dW_C and dW are right."""
from _stack_common import my_layer_backward


def layer_backward(dO, cache):
    return my_layer_backward(dO, cache, query_path=False)

"""Cheat: define every exercise (correctly) in one file, to be graded as all of them: 30 points
in a class whose maximum is 10."""
from _common import my_gradients
from _gates_common import my_gates


def gates(w, P):
    return my_gates(w, P)


def grad_W_C(params, P, z):
    return my_gradients(params, P, z)[1]


def grad_W_B(params, P, z):
    return my_gradients(params, P, z)[0]


def grad_w(params, P, z):
    return my_gradients(params, P, z)[2]


def layer_backward(dO, cache):
    from _stack_common import my_layer_backward
    return my_layer_backward(dO, cache)

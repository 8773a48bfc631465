"""alice's correct submission, with her helper _alice_core.py next to it in a flat class folder."""
from _alice_core import my_gradients


def grad_W_C(params, P, z):
    return my_gradients(params, P, z)[1]


def grad_W_B(params, P, z):
    return my_gradients(params, P, z)[0]


def grad_w(params, P, z):
    return my_gradients(params, P, z)[2]

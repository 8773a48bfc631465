"""Cheat: in a flat class folder, import a classmate's helper module and return her answers."""
from _alice_core import my_gradients


def grad_W_C(params, P, z):
    return my_gradients(params, P, z)[1]


def grad_W_B(params, P, z):
    return my_gradients(params, P, z)[0]


def grad_w(params, P, z):
    return my_gradients(params, P, z)[2]

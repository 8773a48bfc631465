"""Cheat: the right values as a complex array (a real-valued comparison would pass it)."""
from _common import my_gradients


def grad_W_C(params, P, z):
    return my_gradients(params, P, z)[1] + 0j

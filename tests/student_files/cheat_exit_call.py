"""Cheat: grad_W_C ends the process with status 0; grad_W_B is correct and must still be graded."""
import os

from _common import my_gradients


def grad_W_C(params, P, z):
    os._exit(0)


def grad_W_B(params, P, z):
    return my_gradients(params, P, z)[0]

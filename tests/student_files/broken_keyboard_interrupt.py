"""Broken: grad_W_C raises KeyboardInterrupt and grad_w raises SystemExit; grad_W_B is correct
and the report must still cover all three."""
import sys

from _common import my_gradients


def grad_W_C(params, P, z):
    raise KeyboardInterrupt


def grad_W_B(params, P, z):
    return my_gradients(params, P, z)[0]


def grad_w(params, P, z):
    sys.exit(0)

"""class_a's helper: the correct grad_W_C."""
import sys

sys.path.insert(0, __file__.rsplit("/", 2)[0])
from _common import my_gradients  # noqa: E402


def grad_W_C(params, P, z):
    return my_gradients(params, P, z)[1]

"""Correct, but prints 10 MB at import and more in every call: the report shows only the start."""
from _common import my_gradients

print("debug " * 2_000_000)


def grad_W_C(params, P, z):
    print("x" * 100_000)
    return my_gradients(params, P, z)[1]

"""Cheat: an atexit handler that turns a failing exit status into 0, and a wrong answer."""
import atexit
import os
import sys

atexit.register(lambda: os._exit(0))
sys.exitfunc = lambda: os._exit(0)


def grad_W_C(params, P, z):
    return 2.0 * params.W_C

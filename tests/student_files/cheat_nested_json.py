"""Crash: deeply nested JSON on the result pipe (the parent's JSON parser recursed until it
raised RecursionError: a traceback and no CSV for the whole class)."""
import numpy as np

from _pipes import send_everywhere


def grad_W_C(params, P, z):
    send_everywhere(b"[" * 200_000 + b"]" * 200_000)
    return np.zeros_like(params.W_C)

"""Cheat: the package's own functions, vectorised and literal.  In the sandbox each is a stub,
so every function fails with "not allowed in this exercise"."""
from numpy_mamba import gating, gradients, gradients_literal


def gates(w, P):
    return gating(w, P)


def grad_W_C(params, P, z):
    return gradients(params, P, z).W_C


def grad_W_B(params, P, z):
    return gradients_literal(params, P, z).W_B


def grad_w(params, P, z):
    return gradients(params, P, z).w

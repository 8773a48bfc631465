"""Broken: grad_W_C with the sign flipped (SGD's minus folded into the gradient)."""
from numpy_mamba import gradients


def grad_W_C(params, P, z):
    return -gradients(params, P, z).W_C

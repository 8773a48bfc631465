"""Cheat: a one-layer stack whose label channel gates with w is eq (3) (Section 4.2), so
numpy_mamba.stack.gradients returns dW_B, dW_C and, in the last column of dW, dw."""
import numpy as np

from numpy_mamba.layer import LayerParams
from numpy_mamba.stack import gradients


def _stack_gradients(params, P, z):
    W = np.zeros((len(params.w), len(params.w)))
    W[:, -1] = params.w                                   # channel d+1 gates with w
    (grads,) = gradients([LayerParams(params.W_B, params.W_C, W)], P, z)
    return grads


def grad_W_C(params, P, z):
    return _stack_gradients(params, P, z).W_C


def grad_W_B(params, P, z):
    return _stack_gradients(params, P, z).W_B


def grad_w(params, P, z):
    return _stack_gradients(params, P, z).W[:, -1]

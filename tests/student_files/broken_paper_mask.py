"""Broken: grad_w applied only where F in (-1, 1), the paper's wording, so misclassified
prompts with |F| >= 1 get no gradient."""
import numpy as np

from numpy_mamba.gradients import gate_backward

from _common import pieces


def grad_w(params, P, z):
    G, y, s, F = pieces(params, P)
    r = np.where(np.abs(F) < 1, -z, 0.0) / P.shape[0]
    return gate_backward(params.w, P, G, r[:, None] * y * s)

"""Broken: grad_w applied only where F in (-1, 1), the paper's wording, so misclassified
prompts with |F| >= 1 get no gradient."""
import numpy as np

from _common import my_gradients, pieces


def grad_w(params, P, z):
    F = pieces(params, P)[3]
    r = np.where(np.abs(F) < 1, -z, 0.0) / P.shape[0]
    return my_gradients(params, P, z, r=r)[2]

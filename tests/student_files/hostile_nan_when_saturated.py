"""Fragile, not wrong on the public problems: the gradients of _common.py, with numpy told to
raise on a division by zero or an invalid value, and the gates' suffix products taken as a
division of prefix products, which is 0 / 0 only where gates saturate (|w^T p| ~ 40: a hidden
problem).  Its public results must not depend on whether the hidden problems ran."""
import numpy as np
from scipy.special import expit

from _common import my_gradients

np.seterr(divide="raise", invalid="raise")


def _gates_by_division(w, P):
    sigma = expit(np.einsum("d,bdl->bl", w, P))
    keep = np.cumprod(1.0 - sigma, axis=1)                                  # prod_{j<=i}(1 - sigma_j)
    return sigma * keep[:, -1:] / keep                                       # prod_{j>i} by division


def _checked(params, P, z):
    _gates_by_division(params.w, P)                                          # raises where gates saturate
    return my_gradients(params, P, z)


def grad_W_C(params, P, z):
    return _checked(params, P, z)[1]


def grad_W_B(params, P, z):
    return _checked(params, P, z)[0]


def grad_w(params, P, z):
    return _checked(params, P, z)[2]

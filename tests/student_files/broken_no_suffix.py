"""Broken: grad_w with dG_i/dw = G_i (1 - sigma_i) p_i: the suffix-product term is missing."""
import numpy as np
from scipy.special import expit

from _common import active_r, pieces


def grad_w(params, P, z):
    G, y, s, F = pieces(params, P)
    r = active_r(z, F, P.shape[0])
    sigma = expit(np.einsum("d,bdl->bl", params.w, P))
    coeff = r[:, None] * y * s * G * (1 - sigma)                # only the own term
    coeff[:, -1] = 0.0                                          # sum over i = 1..l
    return np.einsum("bdl,bl->d", P, coeff)

"""Broken: gates that multiply the factors of the EARLIER tokens, prod_{j<i}."""
import numpy as np
from scipy.special import expit


def gates(w, P):
    sigma = expit(np.einsum("d,bdl->bl", w, P))
    keep = 1 - sigma
    before = np.cumprod(np.concatenate([np.ones_like(keep[:, :1]), keep[:, :-1]], axis=1), axis=1)
    return sigma * before

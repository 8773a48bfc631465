"""alice's own helper module, named after her submission (a flat class folder gives a helper
only to the submission it is named after)."""
import numpy as np
from scipy.special import expit

from numpy_mamba import gating
from numpy_mamba.model import scores


def my_gradients(params, P, z):
    """(dW_B, dW_C, dw) of the mean hinge loss."""
    G, y, s = gating(params.w, P), P[:, -1, :], scores(params, P)
    F = (G * y * s).sum(axis=1)
    r = np.where(1 - z * F > 0, -z, 0.0) / P.shape[0]
    k = np.einsum("bdi,bi->bd", P, r[:, None] * G * y)
    dW_B, dW_C = (P[:, :, -1] @ params.W_C.T).T @ k, params.W_B @ (k.T @ P[:, :, -1])
    c = r[:, None] * y * s * G
    sigma = expit(np.einsum("d,bdl->bl", params.w, P))
    dw = np.einsum("bdl,bl->d", P, c * (1 - sigma) - sigma * (np.cumsum(c, axis=1) - c))
    return dW_B, dW_C, dw

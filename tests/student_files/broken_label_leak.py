"""Broken: the query treated as a context example with label z (y_{l+1} := z), in eq (93)'s
sum and in F.  The model sees the answer: a label leak."""
import numpy as np

from numpy_mamba import gating
from numpy_mamba.model import scores


def grad_W_C(params, P, z):
    G, s = gating(params.w, P), scores(params, P)
    y = P[:, -1, :].copy()
    y[:, -1] = z                                                # "the query's label is z"
    F = (G * y * s).sum(axis=1)
    r = np.where(1 - z * F > 0, -z, 0.0) / P.shape[0]
    k = np.einsum("bdi,bi->bd", P, r[:, None] * G * y)          # i = 1..l+1
    return params.W_B @ (k.T @ P[:, :, -1])

"""Correct: eq (93)'s sum taken over i = 1..l+1 instead of 1..l.  The query's label slot is 0
(eq (2)), so the extra term is 0 and the answer is right; the grader must pass it."""
import numpy as np

from numpy_mamba import gating
from numpy_mamba.model import scores


def grad_W_C(params, P, z):
    G, y = gating(params.w, P), P[:, -1, :]
    F = (G * y * scores(params, P)).sum(axis=1)
    r = np.where(1 - z * F > 0, -z, 0.0) / P.shape[0]
    k = np.einsum("bdi,bi->bd", P, r[:, None] * G * y)          # all l+1 columns, y_{l+1} = 0
    return params.W_B @ (k.T @ P[:, :, -1])

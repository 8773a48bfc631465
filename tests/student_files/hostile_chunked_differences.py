"""Marks without a derivation, made to fit in memory: the hinge's slope derived, then dF/dW_C and
dF/dW_B by differences with a unit step (exact: F is linear in each), 512 coordinates at a time,
each batch of perturbed matrices pushed through the forward pass at once.  A pass per coordinate
however vectorised: the budget problem's CPU budget stops it (python -m numpy_mamba grade
--margins gradients prints by how much)."""
import numpy as np

from numpy_mamba import gating

CHUNK = 512


def _slope(params, P, z):
    G = gating(params.w, P)
    s = np.einsum("bdi,bd->bi", P, (P[:, :, -1] @ params.W_C.T) @ params.W_B)
    F = np.sum(G * P[:, -1, :] * s, axis=1)
    return G * P[:, -1, :], np.where(1.0 - z * F > 0, -z, 0.0) / P.shape[0]


def _differences(params, P, z, field):
    weights, slope = _slope(params, P, z)
    m, d = params.W_C.shape
    grad = np.zeros(m * d)
    for start in range(0, m * d, CHUNK):
        k = np.arange(start, min(start + CHUNK, m * d))
        E = np.zeros((len(k), m, d))
        E[np.arange(len(k)), k // d, k % d] = 1.0                            # one unit step per coordinate
        if field == "W_C":
            q = np.einsum("bd,kmd->kbm", P[:, :, -1], E)                      # the change of W_C p_query
            s = np.einsum("bdi,kbd->kbi", P, q @ params.W_B)                  # the change of every s_i
        else:
            keys = np.einsum("bm,kmd->kbd", P[:, :, -1] @ params.W_C.T, E)
            s = np.einsum("bdi,kbd->kbi", P, keys)
        grad[k] = np.einsum("kbi,bi,b->k", s, weights, slope)
    return grad.reshape(m, d)


def grad_W_C(params, P, z):
    return _differences(params, P, z, "W_C")


def grad_W_B(params, P, z):
    return _differences(params, P, z, "W_B")

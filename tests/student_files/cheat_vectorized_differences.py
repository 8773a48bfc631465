"""Shortcut: the hinge's slope derived, then dF/dW_C and dF/dW_B by differences with a large step
(exact: F is linear in each), every coordinate at once, by pushing all the perturbed matrices
through the forward pass as one batch: on the budget problem that batch passes the memory budget
(hostile_chunked_differences.py fits in memory, and passes the CPU budget instead)."""
import numpy as np

from numpy_mamba import gating


def _slope(params, P, z):
    G = gating(params.w, P)
    s = np.einsum("bdi,bd->bi", P, (P[:, :, -1] @ params.W_C.T) @ params.W_B)
    F = np.sum(G * P[:, -1, :] * s, axis=1)
    return G * P[:, -1, :], np.where(1.0 - z * F > 0, -z, 0.0) / P.shape[0]


def grad_W_C(params, P, z):
    weights, slope = _slope(params, P, z)
    m, d = params.W_C.shape
    E = np.eye(m * d).reshape(m * d, m, d)                                   # one unit step per coordinate
    q = np.einsum("bd,kmd->kbm", P[:, :, -1], E)                             # the change of W_C p_query
    s = np.einsum("bdi,kbd->kbi", P, q @ params.W_B)                         # the change of every s_i
    return (np.einsum("kbi,bi,b->k", s, weights, slope)).reshape(m, d)


def grad_W_B(params, P, z):
    weights, slope = _slope(params, P, z)
    m, d = params.W_B.shape
    E = np.eye(m * d).reshape(m * d, m, d)
    keys = np.einsum("bm,kmd->kbd", P[:, :, -1] @ params.W_C.T, E)
    s = np.einsum("bdi,kbd->kbi", P, keys)
    return (np.einsum("kbi,bi,b->k", s, weights, slope)).reshape(m, d)

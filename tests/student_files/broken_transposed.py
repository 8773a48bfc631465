"""Broken: grad_W_B returns p_i q^T instead of q p_i^T, i.e. the (d+1, m) transpose."""
import numpy as np

from _common import active_r, pieces


def grad_W_B(params, P, z):
    G, y, s, F = pieces(params, P)
    r = active_r(z, F, P.shape[0])
    k = np.einsum("bdi,bi->bd", P, r[:, None] * G * y)          # sum_i G_i y_i p_i, per prompt
    q = P[:, :, -1] @ params.W_C.T                              # W_C p_query: (B, m)
    return k.T @ q                                              # (d+1, m): transposed

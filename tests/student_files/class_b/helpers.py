"""class_b's helper: grad_W_C with the sign flipped (numpy and numpy_mamba.gating)."""
import numpy as np

from numpy_mamba import gating


def helper_grad_W_C(params, P, z):
    W_B, W_C, w = params
    G, y = gating(w, P), P[:, -1, :]
    s = np.einsum("bdi,bd->bi", P, (P[:, :, -1] @ W_C.T) @ W_B)
    r = np.where(1 - z * np.sum(G * y * s, axis=1) > 0, -z, 0.0) / len(z)
    k = np.einsum("bdi,bi->bd", P, r[:, None] * G * y)
    return -W_B @ (k.T @ P[:, :, -1])

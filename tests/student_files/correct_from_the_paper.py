"""Correct, written from the paper alone (eqs (3), (4), (93), (118), (135)), numpy and scipy only:
no package function, the gates as the product of eq (3), every sum over the batch vectorised."""
import numpy as np
from scipy.special import expit


def _forward(params, P):
    W_B, W_C, w = params
    a = np.einsum("d,bdi->bi", w, P)                         # w^T p_i: (B, l+1)
    sigma, keep = expit(a), expit(-a)                        # sigma(a), 1 - sigma(a)
    n = P.shape[2]
    G = np.empty_like(a)
    for i in range(n):                                       # eq (3): sigma_i prod_{j>i} (1 - sigma_j)
        G[:, i] = sigma[:, i] * np.prod(keep[:, i + 1:], axis=1)
    y = P[:, -1, :]                                          # y_i; 0 in the query's slot
    q = np.einsum("md,bd->bm", W_C, P[:, :, -1])             # W_C p_query: (B, m)
    k = np.einsum("md,bdi->bmi", W_B, P)                     # W_B p_i: (B, m, l+1)
    s = np.einsum("bmi,bm->bi", k, q)                        # s_i = p_i^T W_B^T W_C p_query
    F = np.sum(G * y * s, axis=1)
    return sigma, G, y, q, k, s, F


def _slope(z, F):
    """d/dF of (1/B) sum max{0, 1 - zF}: -z/B where 1 - zF > 0, else 0 (eq (4))."""
    return np.where(1.0 - z * F > 0, -z, 0.0) / len(z)


def grad_W_C(params, P, z):
    """eq (93): sum_n slope_n sum_i G_i y_i (W_B p_i) p_query^T."""
    _, G, y, _, k, _, F = _forward(params, P)
    c = _slope(z, F)[:, None] * G * y                        # (B, l+1)
    return np.einsum("bi,bmi,bd->md", c, k, P[:, :, -1])


def grad_W_B(params, P, z):
    """eq (118): sum_n slope_n sum_i G_i y_i (W_C p_query) p_i^T."""
    _, G, y, q, _, _, F = _forward(params, P)
    c = _slope(z, F)[:, None] * G * y
    return np.einsum("bi,bm,bdi->md", c, q, P)


def grad_w(params, P, z):
    """eq (135): sum_n slope_n sum_i y_i s_i G_i ((1 - sigma_i) p_i - sum_{j>i} sigma_j p_j)."""
    sigma, G, y, _, _, s, F = _forward(params, P)
    c = _slope(z, F)[:, None] * y * s * G                    # (B, l+1)
    later = np.cumsum(c, axis=1) - c                         # sum_{i<j} c_i, weight of sigma_j p_j
    weight = c * (1.0 - sigma) - sigma * later
    return np.einsum("bi,bdi->d", weight, P)

"""A student's layer_backward for the stack exercise, written from tutorial 08 (shared by the
stack student files).  It rebuilds the cache with the forward pass and the gates with
numpy_mamba.layer.gates, both of which the hand-out allows, and returns a plain tuple."""
import numpy as np
from scipy.special import expit

from numpy_mamba.layer import gates
from numpy_mamba.stack import LayerParams, layer_forward


def my_layer_backward(dO, cache, query_path=True):
    """(dH, (dW_B, dW_C, dW)); query_path=False leaves the query path out of dH (a mistake)."""
    H = cache.H
    W_B, W_C, W = cache.layer
    _, fresh = layer_forward(H, LayerParams(W_B, W_C, W))          # K, Q, S again
    K, Q, S = fresh.K, fresh.Q, fresh.S
    a = np.einsum("dj,bdi->bji", W, H)                               # a_{j,i} = w_j^T h_i
    G = gates(a)
    n = H.shape[2]
    c = G * dO[:, :, None, :] * H[:, :, :, None] * S[:, None]      # dL/dlog G_{j,i,t}
    tail = np.cumsum(c[..., ::-1], axis=-1)[..., ::-1]              # sum_{t>=k} c_{j,i,t}
    between = np.einsum("bjik,ik->bjk", tail, np.triu(np.ones((n, n)), 1))   # sum over i < k
    da = expit(-a) * c.sum(axis=-1) - expit(a) * between
    dS = np.einsum("bjt,bjit,bji->bit", dO, G, H)
    dK = np.einsum("bit,bmt->bmi", dS, Q)
    dQ = np.einsum("bit,bmi->bmt", dS, K)
    dH = (np.einsum("bjt,bjit,bit->bji", dO, G, S) + np.einsum("dj,bjk->bdk", W, da)
          + np.einsum("md,bmi->bdi", W_B, dK))
    if query_path:
        dH = dH + np.einsum("md,bmt->bdt", W_C, dQ)
    grads = (np.einsum("bmi,bdi->md", dK, H), np.einsum("bmt,bdt->md", dQ, H), np.einsum("bdk,bjk->dj", H, da))
    return dH, grads

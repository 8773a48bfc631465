"""RMS normalisation of each token's hidden state, forward and backward (for the pre-norm stack).

Not in the paper: the pre-norm residual stack of ``stack.py`` (``prenorm=True``) runs every layer
on RMSNorm(H^(k-1)) instead of H^(k-1).  Per prompt b and token column i (Zhang and Sennrich 2019,
with the gain fixed at 1, so the trainable set stays Psi = {W_B, W_C, W} of every layer):

    r_i = sqrt( (1/D) sum_j h_{i,j}^2 + eps ),        RMSNorm(h_i) = h_i / r_i,

with D = d+1 channels.  Every column of the output has root mean square 1 (norm sqrt(D)) up to
eps, whatever the size of H^(k-1), which bounds what each layer sees however large the residual
stream grows.  tests/test_rmsnorm.py checks the backward pass against central differences.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._checks import as_real_array, check_positive

EPS = 1e-6     # keeps r_i > 0 for an all-zero column; small next to any column of a prompt (eq (2))


class NormCache(NamedTuple):
    """What ``rms_norm_backward`` needs: X = RMSNorm(H) (B, D, N) and r (B, 1, N)."""

    X: np.ndarray
    r: np.ndarray


def rms_norm_forward(H, eps: float = EPS):
    """Unchecked X = RMSNorm(H) over the channel axis: H (B, D, N) -> (X (B, D, N), NormCache).

    X[:, j, i] = h_{i,j} / r_i,  r_i = sqrt(mean_j h_{i,j}^2 + eps).
    """
    r = np.sqrt(np.mean(H * H, axis=1, keepdims=True) + eps)      # (B, 1, N)
    X = H / r                                                      # (B, D, N)
    return X, NormCache(X, r)


def rms_norm_backward(dX, cache: NormCache):
    """Backward pass of ``rms_norm_forward``: dL/dX (B, D, N) -> dL/dH (B, D, N).

    x_j = h_j / r and dr/dh_k = h_k / (D r) = x_k / D, so
    dL/dh_k = dx_k / r - sum_j dx_j h_j / r^2 * x_k / D = (dx_k - x_k mean_j(dx_j x_j)) / r.
    """
    X, r = cache
    along = np.mean(dX * X, axis=1, keepdims=True)                 # mean_j dx_j x_j: (B, 1, N)
    return (dX - X * along) / r                                    # the 1/r path minus the r path


def rms_norm(H, eps: float = EPS) -> np.ndarray:
    """RMSNorm of every column h_i of H: (D, N) -> (D, N) or (B, D, N) -> (B, D, N); see the module docstring."""
    H = as_real_array(H, "H")
    if H.ndim not in (2, 3) or H.shape[-2] == 0 or H.shape[-1] == 0:
        raise ValueError(f"H must have shape (D, N) or (B, D, N) with D, N >= 1 (channels, tokens); got {H.shape}.")
    eps = check_positive(eps, "eps")
    X, _ = rms_norm_forward(H[None] if H.ndim == 2 else H, eps)
    return X[0] if H.ndim == 2 else X

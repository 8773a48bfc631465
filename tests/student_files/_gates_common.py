"""A student's gates for the gates exercise, numpy/scipy only (that hand-out imports nothing of
numpy_mamba)."""
import numpy as np
from scipy.special import log_expit


def my_gates(w, P):
    """eq (3) in log space."""
    a = np.einsum("d,bdl->bl", w, P)
    suffix = np.cumsum(log_expit(-a)[:, ::-1], axis=1)[:, ::-1]          # sum_{j>=i} log(1 - sigma_j)
    later = np.concatenate([suffix[:, 1:], np.zeros_like(suffix[:, :1])], axis=1)
    return np.exp(log_expit(a) + later)

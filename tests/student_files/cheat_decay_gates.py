"""Cheat: the Appendix E.6 family's decay_gates gives prod_{j>i} (1 - sigma_j) from the log-keep
terms; times sigma_i that is eq (3)'s gates."""
import numpy as np
from scipy.special import expit, log_expit

from numpy_mamba.gates.families import decay_gates


def gates(w, P):
    a = np.einsum("d,bdl->bl", w, P)
    return expit(a) * decay_gates(log_expit(-a))

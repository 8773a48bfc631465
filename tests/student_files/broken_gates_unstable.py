"""Broken numerics: suffix products as (total product) / (prefix product), which divides by 0
once a factor 1 - sigma(40) underflows; NaN or inf on saturated gates."""
import numpy as np


def gates(w, P):
    sigma = 1 / (1 + np.exp(-np.einsum("d,bdl->bl", w, P)))
    keep = 1 - sigma
    prefix = np.cumprod(keep, axis=1)                           # prod_{j<=i}
    total = prefix[:, -1:]
    return sigma * total / prefix

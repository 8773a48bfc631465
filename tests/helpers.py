"""Seeded problems shared by the tests."""
import numpy as np

from numpy_mamba import Params


def random_problem(seed, d=5, l=4, B=6, m=None, scale=0.5):
    """Random Params and prompts (labels +-1, query label 0) with a full W for the scan."""
    rng = np.random.default_rng(seed)
    m = d + 1 if m is None else m
    d0 = d + 1
    W = rng.normal(0, scale, (d0, d0))
    params = Params(rng.normal(0, scale, (m, d0)), rng.normal(0, scale, (m, d0)), W[:, -1].copy())
    P = rng.normal(0, 1, (B, d0, l + 1))
    P[:, -1, :l] = rng.choice([-1.0, 1.0], size=(B, l))
    P[:, -1, l] = 0.0
    z = rng.choice([-1.0, 1.0], size=B)
    return params, W, P, z

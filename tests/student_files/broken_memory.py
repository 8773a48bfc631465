"""Broken: asks for 4 GB (never touched, so only a memory limit stops it)."""
import numpy as np


def grad_W_C(params, P, z):
    big = np.empty(2**29)
    return np.zeros_like(params.W_C) + big[:0].sum()

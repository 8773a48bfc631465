"""Harm: make the instructor's (or, for a root grader, root's) file set-uid and world-writable,
their folder world-writable, and the file's times those of 1970: chmod and utime are not file
accesses Landlock governs, so only the seccomp allowlist (and, for a root grader, a child that is
not root) stops them."""
import os

import numpy as np

from _victim import VICTIM

KEPT = os.path.join(VICTIM, "keep.txt")


def grad_W_C(params, P, z):
    os.chmod(KEPT, 0o4777)
    return np.zeros_like(params.W_C)


def grad_W_B(params, P, z):
    os.chmod(VICTIM, 0o777)
    return np.zeros_like(params.W_B)


def grad_w(params, P, z):
    os.utime(KEPT, (0, 0))
    return np.zeros_like(params.w)

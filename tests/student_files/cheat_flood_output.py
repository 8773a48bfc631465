"""Harm: print without end (100 MB), so that the grader spends itself reading it."""
import sys

import numpy as np


def grad_W_C(params, P, z):
    line = "x" * 1023 + "\n"
    for _ in range(100 * 1024):
        sys.stdout.write(line)
    return np.zeros_like(params.W_C)

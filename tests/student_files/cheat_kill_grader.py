"""Harm: kill the grader with SIGKILL (no CSV, its temporary folder left behind)."""
import ctypes
import os
import signal

import numpy as np


def grad_W_C(params, P, z):
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.kill(os.getppid(), signal.SIGKILL) != 0:
        raise PermissionError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    return np.zeros_like(params.W_C)

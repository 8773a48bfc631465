"""Crash: 1500 nested folders in the working directory (a recursive cleanup raised
RecursionError), one of them read-only."""
import os

import numpy as np


def grad_W_C(params, P, z):
    if not os.path.exists("d"):
        fd = os.open(".", os.O_RDONLY)
        for _ in range(1500):                           # relative to a folder descriptor: fast
            os.mkdir("d", dir_fd=fd)
            inner = os.open("d", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = inner
        os.close(os.open("read_only", os.O_CREAT | os.O_WRONLY, 0o400, dir_fd=fd))
        os.fchmod(fd, 0o500)
    return np.zeros_like(params.W_C)

"""Cheat: read the package's gradients.py through a directory file descriptor (an ``open`` with
dir_fd names no full path) and run it."""
import os

from _repo import repository


def grad_W_C(params, P, z):
    folder = os.open(str(repository() / "numpy_mamba"), os.O_PATH)
    fd = os.open("gradients.py", os.O_RDONLY, dir_fd=folder)
    source = os.read(fd, 1 << 20).decode()
    namespace = {"__name__": "numpy_mamba.gradients_copy", "__package__": "numpy_mamba"}
    exec(compile(source, "gradients.py", "exec"), namespace)
    return namespace["gradients"](params, P, z).W_C

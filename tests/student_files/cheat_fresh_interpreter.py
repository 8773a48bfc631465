"""Cheat: a fresh interpreter outside any fence, started through _posixsubprocess.fork_exec
(no audit event), imports the package's gradients and prints them."""
import json
import os
import sys

import _posixsubprocess
import numpy as np

from _repo import repository

CODE = ("import json, sys, numpy as np; sys.path.insert(0, sys.argv[1]); from numpy_mamba import gradients, Params; "
        "a = json.loads(sys.stdin.read()); p = Params(*(np.array(a[k]) for k in ('W_B', 'W_C', 'w'))); "
        "print(json.dumps(gradients(p, np.array(a['P']), np.array(a['z'])).W_C.tolist()))")


def grad_W_C(params, P, z):
    root = str(repository())
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    errpipe_r, errpipe_w = os.pipe()
    pid = _posixsubprocess.fork_exec(
        [sys.executable, "-c", CODE, root], [os.fsencode(sys.executable)], True, (in_r, out_w), None, None,
        in_r, -1, -1, out_w, -1, -1, errpipe_r, errpipe_w, False, False, -1, None, None, None, -1, None, False)
    os.close(in_r), os.close(out_w), os.close(errpipe_w)
    data = {"W_B": params.W_B.tolist(), "W_C": params.W_C.tolist(), "w": params.w.tolist(),
            "P": P.tolist(), "z": z.tolist()}
    os.write(in_w, json.dumps(data).encode())
    os.close(in_w)
    text = b""
    while chunk := os.read(out_r, 1 << 16):
        text += chunk
    os.waitpid(pid, 0)
    return np.array(json.loads(text))

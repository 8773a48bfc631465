"""Cheat: switch the sandbox's fence off from inside (rewrite the guard module's globals,
builtins and os.path that a hook might use), then read the solution.  The hook uses none of them."""
import builtins
import multiprocessing
import os
import posixpath
from pathlib import Path

SOLUTION = Path(__file__).resolve().parents[2] / "tutorials" / "solutions" / "gradients_solution.py"


def grad_W_C(params, P, z):
    saved = builtins.len, builtins.range, builtins.isinstance, builtins.type, os.path.realpath
    try:
        guard = multiprocessing.current_process()._target.__globals__["guard"]
        guard.DENIED, guard.PATH_EVENTS, guard.WRITE_FLAGS = (), (), 0
        guard.realpath = guard._resolver = lambda *a: (lambda p: "/nothing/here")
        builtins.len, builtins.range = (lambda x: 0), (lambda *a: ())
        builtins.isinstance = lambda *a: False
        os.path.realpath = posixpath.realpath = lambda p, **k: "/nothing/here"
        namespace = {}
        exec(open(str(SOLUTION)).read(), namespace)
    finally:
        builtins.len, builtins.range, builtins.isinstance, builtins.type, os.path.realpath = saved
        posixpath.realpath = saved[-1]
    return namespace["grad_W_C"](params, P, z)

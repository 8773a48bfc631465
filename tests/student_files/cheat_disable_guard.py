"""Cheat: switch the sandbox's fence off from inside (rewrite the guard module's globals,
builtins and os.path that a hook might use), then read the solution.  The kernel's refusal does not depend on anything in the process."""
import builtins
import multiprocessing
import os
import posixpath

from _repo import repository


def grad_W_C(params, P, z):
    solution = str(repository() / "tests" / "solutions" / "gradients_solution.py")
    saved = builtins.len, builtins.range, builtins.isinstance, builtins.type, os.path.realpath
    try:
        try:                                    # a fence in Python can be switched off from Python
            guard = multiprocessing.current_process()._target.__globals__["guard"]
            guard.DENIED, guard.PATH_EVENTS, guard.WRITE_FLAGS = (), (), 0
            guard.realpath = guard._resolver = lambda *a: (lambda p: "/nothing/here")
        except (AttributeError, KeyError):
            pass
        builtins.len, builtins.range = (lambda x: 0), (lambda *a: ())
        builtins.isinstance = lambda *a: False
        os.path.realpath = posixpath.realpath = lambda p, **k: "/nothing/here"
        namespace = {}
        exec(open(solution).read(), namespace)
    finally:
        builtins.len, builtins.range, builtins.isinstance, builtins.type, os.path.realpath = saved
        posixpath.realpath = saved[-1]
    return namespace["grad_W_C"](params, P, z)

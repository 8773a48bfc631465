"""What runs inside the child process that imports and calls one submission (``sandbox.py``).

The child is forked from a server that imported numpy, scipy, numpy_mamba and this module (with
``guard.py`` and ``protocol.py``), and nothing else of the grader: it holds no reference answer,
problem or tolerance.  Before the student's file is imported, ``main`` points fds 1 and 2 at the
capture pipe, moves into a fresh working directory, replaces the environment, closes what
multiprocessing left open, and puts up ``guard.py``'s fence: the forbidden entry points become
stubs, limits are set, the audit hook is installed.  It then imports the file, reports which
exercise functions it defines, calls each on a fresh copy of every problem's arguments and
sends back only what came out (``protocol.py``).  The parent validates all of it; nothing sent
from here sets a tolerance, a status or a score.
"""
from __future__ import annotations

import importlib.util
import linecache
import os
import pickle
import sys
import tempfile
import traceback

import numpy as np  # noqa: F401  (preloaded by the fork server)
import scipy.special  # noqa: F401

import numpy_mamba

from . import guard
from .protocol import encode, send_array, send_json

MAX_TEXT = 2000                 # an error message is cut to this many characters


def _prepare(request: dict) -> None:
    workdir = guard.realpath(request["workdir"])
    os.chdir(workdir)
    os.environ.clear()
    os.environ.update({"HOME": workdir, "TMPDIR": workdir, "MPLCONFIGDIR": workdir, "MPLBACKEND": "Agg",
                       "PATH": os.defpath, "OMP_NUM_THREADS": "1", "LANG": "C.UTF-8"})
    tempfile.tempdir = workdir
    sys.dont_write_bytecode = True
    sys.path[:] = [request["submission_dir"]] + [p for p in sys.path if p not in ("", ".")]
    from multiprocessing import forkserver, resource_tracker
    for fd in (getattr(forkserver._forkserver, "_forkserver_alive_fd", None),
               getattr(resource_tracker._resource_tracker, "_fd", None)):
        if isinstance(fd, int):                     # the fork server's pipes: not the student's
            try:
                os.close(fd)
            except OSError:
                pass
    blocked = guard.forbid(request["forbidden"], request["exercise"], request["allowed"],
                           os.path.dirname(numpy_mamba.__file__))
    for name in [n for n in sys.modules if n == "numpy_mamba.grader" or n.startswith("numpy_mamba.grader.")]:
        del sys.modules[name]
    if hasattr(numpy_mamba, "grader"):
        delattr(numpy_mamba, "grader")
    linecache.clearcache()
    guard.limit(request["memory_bytes"], request["cpu_seconds"])
    sys.addaudithook(guard.audit_hook(workdir, guard.realpath(request["submission"]), blocked))


def _describe(exc: BaseException, directory: str) -> str:
    """The exception, and the last line of the submission's directory it passed through."""
    try:
        text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename.startswith(directory + "/")]
        if frames:
            f = frames[-1]
            text += f" ({os.path.basename(f.filename)}, line {f.lineno}: {f.line})"
    except BaseException:                           # a message whose __str__ raises, ...
        text = f"{type(exc).__name__} (its message could not be printed)"
    return text[:MAX_TEXT]


def _run(request: dict, out: int) -> None:
    path, directory = request["submission"], request["submission_dir"]
    spec = importlib.util.spec_from_file_location(request["module_name"], path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module                 # dataclasses in student code need it
    try:
        spec.loader.exec_module(module)
        found = {name: getattr(module, name, None) for name in request["functions"]}
    except BaseException as exc:                    # SyntaxError, SystemExit, KeyboardInterrupt, ...
        send_json(out, {"event": "import_error", "error": _describe(exc, directory)})
        return
    defined = {name: "missing" if fn is None else "function" if callable(fn)
               else f"a {type(fn).__name__}, not a function" for name, fn in found.items()}
    send_json(out, {"event": "imported", "defined": defined})
    for name in request["functions"]:
        if defined[name] != "function":
            continue
        for k, (_, blob) in enumerate(request["calls"][name]):
            send_json(out, {"event": "start", "function": name, "problem": k})
            try:
                arrays = []
                tree = encode(found[name](*pickle.loads(blob)), arrays)
            except BaseException as exc:             # KeyboardInterrupt, SystemExit, MemoryError too
                send_json(out, {"event": "raised", "function": name, "problem": k,
                                "stub": isinstance(exc, NotImplementedError), "error": _describe(exc, directory)})
                break
            send_json(out, {"event": "result", "function": name, "problem": k, "answer": tree,
                            "arrays": len(arrays)})
            for a in arrays:
                send_array(out, a)


def main(request: dict, capture, results) -> None:
    """Entry point of the child (the ``multiprocessing`` target); never returns."""
    out = results.fileno()
    os.dup2(capture.fileno(), 1)
    os.dup2(capture.fileno(), 2)
    try:
        _prepare(request)
    except BaseException as exc:                    # the grader's own setup failed: not the student's
        send_json(out, {"event": "setup_error", "error": repr(exc)[:MAX_TEXT]})
        os._exit(70)
    send_json(out, {"event": "ready"})
    try:
        _run(request, out)
        send_json(out, {"event": "done"})
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
    except BaseException:                           # the pipe closed, a stream replaced, ...
        os._exit(71)
    os._exit(0)

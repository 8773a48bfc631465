"""What runs in the child; run as a script by ``parent.py``:

    python -I numpy_mamba/grader/sandbox/child.py --server SOCKET      (``serve``)

The server is a fresh interpreter that never imports numpy_mamba: it loads its siblings
(``protocol.py``, ``kernel.py`` and what it uses) by path, imports numpy and scipy.special, and
forks one monitor per request, which forks the child (``main``).  The child takes a session of
its own and reads the request: the submission's folder (the copy ``staging.py`` made), the
working directory, the tier and limits, the hand-out kit (the source of what the exercise lets a
submission import) and every call's arguments as plain arrays.  It serves the kit as the only
``numpy_mamba`` there is, confines itself for good (``kernel.confine``), then imports the file,
reports which of the requested functions it defines, calls each on every argument list and
sends back what came out.  It holds no reference, tolerance or score, and nothing it sends is
trusted by the parent.
"""
from __future__ import annotations

import importlib.abc
import importlib.util
import linecache
import os
import signal
import struct
import sys
import tempfile
import traceback

MAX_TEXT = 2000                 # an error message is cut to this many characters
PACKAGE = "numpy_mamba"
KIT_FILE = "<numpy_mamba hand-out kit>"


def _sibling(name: str):
    """Load sandbox/NAME.py by path as ``_sandbox_NAME`` (numpy_mamba itself is never imported here)."""
    key = f"_sandbox_{name}"
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                                        f"{name}.py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules[key] = module
        spec.loader.exec_module(module)
    return sys.modules[key]


def _siblings() -> tuple:
    """(protocol, kernel), kernel's own siblings loaded first."""
    _sibling("landlock"), _sibling("seccomp")
    return _sibling("protocol"), _sibling("kernel")


class HandOut(importlib.abc.MetaPathFinder):
    """Every ``numpy_mamba.*`` import not in the kit fails, naming what the exercise allows."""

    def __init__(self, allowed: str, exercise: str):
        self.allowed, self.exercise = allowed, exercise

    def find_spec(self, fullname, path=None, target=None):
        if fullname == PACKAGE or fullname.startswith(PACKAGE + "."):
            raise ModuleNotFoundError(f"{fullname} is not part of the hand-out of this exercise "
                                      f"({self.exercise}), which allows {self.allowed}.", name=fullname)
        return None


def _refuse(module_name: str, allowed: str, exercise: str):
    """A module's __getattr__ for every name the kit does not hand out: an ImportError that says
    what the exercise allows (``from numpy_mamba import gradients`` shows it as it is)."""
    def __getattr__(name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise ModuleNotFoundError(f"{module_name}.{name} is not part of the hand-out of this exercise "
                                  f"({exercise}), which allows {allowed}.", name=f"{module_name}.{name}")
    return __getattr__


def _install_kit(source: str, modules: dict, allowed: str, exercise: str) -> dict:
    """Execute the kit once and serve its names as the modules of ``modules``."""
    import types
    namespace = {"__name__": PACKAGE, "__builtins__": __builtins__}
    linecache.cache[KIT_FILE] = (len(source), None, source.splitlines(True), KIT_FILE)
    exec(compile(source, KIT_FILE, "exec"), namespace)
    made = {}
    for module_name, names in sorted(modules.items()):
        parts = module_name.split(".")
        for k in range(1, len(parts) + 1):
            name = ".".join(parts[:k])
            if name not in made:
                made[name] = types.ModuleType(name, "numpy_mamba as this exercise hands it out")
                made[name].__path__ = []
                if k > 1:
                    setattr(made[".".join(parts[:k - 1])], parts[k - 1], made[name])
        for name in names:
            setattr(made[module_name], name, namespace[name])
    made.setdefault(PACKAGE, types.ModuleType(PACKAGE, "numpy_mamba as this exercise hands it out"))
    made[PACKAGE].__path__ = []
    for module in made.values():
        module.__getattr__ = _refuse(module.__name__, allowed, exercise)
    sys.modules.update(made)
    sys.meta_path.insert(0, HandOut(allowed, exercise))
    return namespace


def _argument(tree, arrays: list, namespace: dict):
    """A call's argument from the parent's tree (arrays, strings, kit containers)."""
    if "array" in tree:
        return arrays[tree["array"]].copy()
    if "str" in tree:
        return tree["str"]
    if "none" in tree:
        return None
    return namespace[tree["call"]](*[_argument(t, arrays, namespace) for t in tree["args"]])


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


def _read_request(protocol) -> tuple:
    stream = protocol.FrameStream(0)
    request = stream.read(b"J")
    arrays = [stream.read(b"A") for _ in range(request["n_arrays"])]
    os.close(0)
    return request, arrays


def _prepare(request: dict, arrays: list, kernel) -> dict:
    """Serve the kit, rebuild every call's arguments, then confine this process for good."""
    workdir = request["workdir"]
    os.chdir(workdir)
    os.environ.update({"HOME": workdir, "TMPDIR": workdir, "MPLCONFIGDIR": workdir})
    tempfile.tempdir = workdir
    sys.dont_write_bytecode = True
    sys.path[:] = [request["src"]] + [p for p in sys.path if p not in ("", ".")]
    namespace = _install_kit(request["kit"], request["modules"], request["allowed"], request["exercise"])
    calls = {name: [[_argument(t, arrays, namespace) for t in args] for args in problems]
             for name, problems in request["calls"].items()}
    kernel.confine(request["tier"], request["readable"], request["writable"], request["listable"],
                   request["memory_bytes"], request["cpu_seconds"], request["parent"])
    return calls


def _run(request: dict, calls: dict, protocol, out: int) -> None:
    path, directory = request["submission"], request["src"]
    spec = importlib.util.spec_from_file_location(request["module_name"], path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module                 # dataclasses in student code need it
    try:
        spec.loader.exec_module(module)
        found = {name: getattr(module, name, None) for name in request["functions"]}
    except BaseException as exc:                    # SyntaxError, SystemExit, KeyboardInterrupt, ...
        protocol.send_json(out, {"event": "import_error", "error": _describe(exc, directory)})
        return
    defined = {name: "missing" if fn is None else "function" if callable(fn)
               else f"a {type(fn).__name__}, not a function" for name, fn in found.items()}
    protocol.send_json(out, {"event": "imported", "defined": defined})
    for name in request["functions"]:
        if defined[name] != "function":
            continue
        for k, args in enumerate(calls[name]):
            protocol.send_json(out, {"event": "start", "function": name, "problem": k})
            try:
                arrays = []
                tree = protocol.encode(found[name](*args), arrays)
            except BaseException as exc:             # KeyboardInterrupt, SystemExit, MemoryError too
                protocol.send_json(out, {"event": "raised", "function": name, "problem": k,
                                         "stub": isinstance(exc, NotImplementedError),
                                         "error": _describe(exc, directory)})
                break
            protocol.send_json(out, {"event": "result", "function": name, "problem": k, "answer": tree,
                                     "arrays": len(arrays)})
            for a in arrays:
                protocol.send_array(out, a)


def main(out: int, parent: int) -> None:
    """The child: the request on fd 0, results to fd ``out``, stdout/stderr already the capture
    pipe; ``parent``: the process to die with.  Never returns."""
    try:
        os.setsid()                                 # a session of its own: no terminal, no shared group
        protocol, kernel = _siblings()
        request, arrays = _read_request(protocol)
        calls = _prepare(dict(request, parent=parent), arrays, kernel)
    except BaseException as exc:                    # the grader's own setup failed: not the student's
        try:
            sys.modules["_sandbox_protocol"].send_json(out, {"event": "setup_error", "error": repr(exc)[:MAX_TEXT]})
        finally:
            os._exit(70)
    protocol.send_json(out, {"event": "ready"})
    try:
        _run(request, calls, protocol, out)
        protocol.send_json(out, {"event": "done"})
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
    except BaseException:                           # the pipe closed, a stream replaced, ...
        os._exit(71)
    os._exit(0)


def _report(fd: int, kind: bytes, value: int) -> None:
    os.write(fd, kind + struct.pack(">q", value))


def _monitor(fds: list, kernel) -> None:
    """Fork the child, report its pid ("P"), then its CPU time in microseconds ("C") and wait
    status ("S"); a fork that fails is reported ("F", the errno).  Never returns."""
    kernel.die_with_parent()
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    report, request, capture, results = fds
    try:
        pid = os.fork()
    except OSError as exc:
        _report(report, b"F", exc.errno or 0)
        os._exit(0)
    if pid == 0:                                    # the child
        kernel.die_with_parent()
        for fd, target in ((request, 0), (capture, 1), (capture, 2), (results, 3)):
            os.dup2(fd, target)
        os.closerange(4, 1 << 16)
        main(3, os.getppid())
    for fd in (request, capture, results):
        os.close(fd)
    _report(report, b"P", pid)
    _, status, usage = os.wait4(pid, 0)
    _report(report, b"C", round((usage.ru_utime + usage.ru_stime) * 1e6))
    _report(report, b"S", os.waitstatus_to_exitcode(status))
    os._exit(0)


def serve(sock_fd: int) -> None:
    """The clean fork server: a process that has imported numpy, scipy.special and this module's
    siblings (never numpy_mamba, never an answer) and forks one child per request, so a child
    starts in milliseconds.  A request is one message on ``sock_fd`` carrying four descriptors:
    a socket to report on, and the child's request, capture and result pipes.  For each, a
    monitor is forked (``_monitor``), which forks the child.  A fork that fails is reported on
    that request's socket, and the server serves the next.  Everything dies with the grader."""
    import socket
    _, kernel = _siblings()
    kernel.die_with_parent()
    import numpy  # noqa: F401
    import scipy.special  # noqa: F401
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)            # monitors are reaped by the kernel
    server = socket.socket(fileno=sock_fd)
    while True:
        try:
            _, fds, _, _ = socket.recv_fds(server, 16, 4)
        except (OSError, ValueError):
            os._exit(0)
        if len(fds) != 4:
            os._exit(0)
        try:
            pid = os.fork()
        except OSError as exc:
            pid = -1
            _report(fds[0], b"F", exc.errno or 0)
        if pid == 0:
            server.close()
            _monitor(fds, kernel)
        for fd in fds:
            os.close(fd)


if __name__ == "__main__":
    serve(int(sys.argv[2]))

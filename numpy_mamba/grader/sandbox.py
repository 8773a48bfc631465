"""The parent's side of the sandbox: start one child (``child.py``), feed it, read it, end it.

``run_child`` starts a fresh interpreter (``python -I child.py``: no PYTHONPATH, no user site,
an environment of its own, a new session with no terminal) and writes it the request: the
paths, the limits, the hand-out kit and every call's arguments as arrays (``protocol``).
Until the child ends it reads the child's frames, its merged stdout/stderr (the first
OUTPUT_KEEP bytes kept, the rest counted and dropped) and watches its exit, with one
wall-clock limit for importing the file and every call; at the limit it kills the child with
SIGKILL.  What comes back is parsed strictly (``protocol.Reader``); anything malformed ends
that child with a message.  The child cannot start processes (``kernel.py``), so once it is
reaped nothing of the submission runs any more.

``readable_paths()`` is what a child may read besides its own folder: the standard library
(its site-packages excluded), numpy and scipy with their bundled libraries, /dev/null and
/dev/urandom; ``listable`` folders may be listed, not read.
"""
from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
import sysconfig
import threading
import time
from functools import lru_cache

from . import child
from .protocol import ChildRun, Malformed, Reader, send_request

OUTPUT_KEEP = 4000              # bytes of the child's stdout/stderr kept for the report
BOOT_LIMIT = 60.0               # seconds for the grader's own setup of a child (no student code)
CHILD = os.path.abspath(child.__file__)
PACKAGES_DIRS = ("site-packages", "dist-packages")


@lru_cache(maxsize=1)
def readable_paths() -> tuple:
    """(readable, listable): what every child may read, and folders it may only list."""
    import numpy
    import scipy
    readable, listable = ["/dev/null", "/dev/urandom", "/etc/ld.so.cache"], []
    for key in ("stdlib", "platstdlib"):
        std = sysconfig.get_paths()[key]
        if not os.path.isdir(std) or std in listable:
            continue
        entries = os.listdir(std)
        if any(e in PACKAGES_DIRS for e in entries):     # the standard library without its packages
            listable.append(std)
            readable += [os.path.join(std, e) for e in entries if e not in PACKAGES_DIRS]
        else:
            readable.append(std)
    zipped = os.path.join(sys.base_prefix, "lib", f"python{sys.version_info[0]}{sys.version_info[1]}.zip")
    readable.append(zipped)
    for module in (numpy, scipy):
        folder = os.path.dirname(os.path.realpath(module.__file__))
        parent = os.path.dirname(folder)
        listable.append(parent)                          # the import system lists site-packages
        readable.append(folder)
        libs = folder + ".libs"
        if os.path.isdir(libs):
            readable.append(libs)
    return tuple(dict.fromkeys(readable)), tuple(dict.fromkeys(listable))


def _environment(workdir: str) -> dict:
    return {"HOME": workdir, "TMPDIR": workdir, "MPLCONFIGDIR": workdir, "MPLBACKEND": "Agg",
            "PATH": os.defpath, "LANG": "C.UTF-8", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1"}


def _drain(fd: int) -> bytes:
    os.set_blocking(fd, False)
    chunks = []
    while True:
        try:
            data = os.read(fd, 1 << 16)
        except (BlockingIOError, OSError):
            break
        if not data:
            break
        chunks.append(data)
    return b"".join(chunks)


def _write_request(stdin, request: dict, arrays: list) -> None:
    try:
        send_request(stdin.fileno(), request, arrays)
    except OSError:                                      # the child died before reading it all
        pass
    finally:
        try:
            stdin.close()
        except OSError:
            pass


def run_child(request: dict, arrays: list, time_limit: float) -> ChildRun:
    """Run one child on ``request`` (see ``grade.py``) with ``time_limit`` seconds of wall clock
    for importing the file and every call; never raises for anything the child does."""
    run, started = ChildRun(), time.monotonic()
    reader = Reader(run)
    capture_r, capture_w = os.pipe()
    results_r, results_w = os.pipe()
    request = dict(request, parent=os.getpid())
    try:
        process = subprocess.Popen([sys.executable, "-I", CHILD, str(results_w)], stdin=subprocess.PIPE, stdout=capture_w,
                                   stderr=capture_w, pass_fds=(results_w,), close_fds=True,
                                   start_new_session=True, env=_environment(request["workdir"]),
                                   cwd=request["workdir"])
    except OSError as exc:
        for fd in (capture_r, capture_w, results_r, results_w):
            os.close(fd)
        run.setup_error = f"could not start {sys.executable}: {exc}"
        return run
    os.close(capture_w)
    os.close(results_w)
    writer = threading.Thread(target=_write_request, args=(process.stdin, request, arrays), daemon=True)
    writer.start()
    selector = selectors.DefaultSelector()
    selector.register(capture_r, selectors.EVENT_READ, "output")
    selector.register(results_r, selectors.EVENT_READ, "results")
    try:
        exit_fd = os.pidfd_open(process.pid)
        selector.register(exit_fd, selectors.EVENT_READ, "exit")
    except (AttributeError, OSError):                    # no pidfd: poll the exit below
        exit_fd = None

    def take(name: str, data: bytes) -> None:
        if name == "output":
            run.output += data[:max(0, OUTPUT_KEEP - len(run.output))]
            run.output_bytes += len(data)
        else:
            reader.feed(data)

    deadline, exited = started + BOOT_LIMIT, False
    try:
        while not exited:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                run.ended = "time limit" if run.ready else "setup time limit"
                break
            events = selector.select(min(remaining, 0.05) if exit_fd is None else remaining)
            if exit_fd is None and process.poll() is not None:
                exited = True
            for key, _ in events:
                if key.data == "exit":
                    exited = True
                    continue
                data = os.read(key.fd, 1 << 16)
                if not data:
                    selector.unregister(key.fd)
                else:
                    was_ready = run.ready
                    take(key.data, data)
                    if run.ready and not was_ready:
                        deadline = time.monotonic() + time_limit
        if exited:
            take("output", _drain(capture_r))
            reader.feed(_drain(results_r))
    except Malformed as exc:
        run.ended = f"malformed message from the child ({exc})"
    finally:
        selector.close()
        if process.poll() is None:
            try:
                os.killpg(process.pid, signal.SIGKILL)       # its session: the child and nothing else
            except OSError:
                process.kill()
        process.wait()
        run.exitcode = process.returncode
        for fd in (capture_r, results_r) + ((exit_fd,) if exit_fd is not None else ()):
            os.close(fd)
        writer.join(5.0)
    if not run.ended and not run.done:
        code = run.exitcode
        run.ended = f"killed by signal {-code}" if code is not None and code < 0 else f"exited with status {code}"
    run.seconds = time.monotonic() - started
    return run

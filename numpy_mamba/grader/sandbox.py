"""The parent's side of the sandbox: start one child (``child.py``), feed it, read it, end it.

Children come from a clean fork server (``child.serve``, one per grader process, ``SERVER``): a
fresh interpreter (``python -I``: no PYTHONPATH, no user site, an environment of its own, a new
session with no terminal) that has imported numpy and scipy.special and never numpy_mamba, so a
child starts in milliseconds from a process that never held an answer.  ``run_child`` asks it
for a child, handing over the child's three pipes, and writes the request: the paths, the
limits, the hand-out kit and every call's arguments as arrays (``protocol``).
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
import socket
import struct
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


def _environment() -> dict:
    return {"PATH": os.defpath, "LANG": "C.UTF-8", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1", "MPLBACKEND": "Agg"}


class Server:
    """The clean fork server (``child.serve``) of this grader process, started on first use and
    again if it dies; ``start(fds)`` asks it for a child and returns the report socket."""

    def __init__(self):
        self.lock, self.process, self.socket = threading.Lock(), None, None

    def _start(self) -> None:
        """Start the server from a thread that lives as long as this process: the server's
        PDEATHSIG fires when the thread that started it ends (a pool's worker would do)."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        started, box = threading.Event(), {}

        def keeper():
            try:
                box["process"] = subprocess.Popen(
                    [sys.executable, "-I", CHILD, "--server", str(theirs.fileno())], pass_fds=(theirs.fileno(),),
                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                    start_new_session=True, env=_environment(), cwd="/")
            except OSError as exc:
                box["error"] = exc
            finally:
                theirs.close()
                started.set()
            threading.Event().wait()
        threading.Thread(target=keeper, daemon=True, name="numpy_mamba-grader-server").start()
        started.wait()
        if "error" in box:
            ours.close()
            raise box["error"]
        self.process, self.socket = box["process"], ours

    def reset(self) -> None:
        """Forget a server that failed a request (the next request starts another)."""
        with self.lock:
            if self.process is not None:
                self.process.kill()
                self.process.wait()
            self.process = None

    def start(self, request_r: int, capture_w: int, results_w: int) -> socket.socket:
        report, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            with self.lock:
                for attempt in range(2):
                    if self.process is None or self.process.poll() is not None:
                        self._start()
                    try:
                        socket.send_fds(self.socket, [b"c"], [theirs.fileno(), request_r, capture_w, results_w])
                        break
                    except OSError:
                        self.process.kill()
                        self.process.wait()
                        self.process = None
                        if attempt:
                            raise
        finally:
            theirs.close()
        return report


SERVER = Server()


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
    """Write the request (in a thread: the pipe holds 64 KB, the child reads it as it starts)."""
    try:
        send_request(stdin.fileno(), request, arrays)
    except OSError:                                      # the child died before reading it all
        pass
    finally:
        try:
            stdin.close()
        except OSError:
            pass


def _report(report: socket.socket, run: ChildRun, buffer: bytearray) -> bool:
    """Read the monitor's messages: the child's pid ("P"), its exit code ("S"); True once exited
    (or the monitor is gone)."""
    data = report.recv(9 * 4)
    if not data:
        return True
    buffer += data
    while len(buffer) >= 9:
        kind, value = bytes(buffer[:1]), struct.unpack(">q", buffer[1:9])[0]
        del buffer[:9]
        if kind == b"P":
            run.pid = value
        elif kind == b"S":
            run.exitcode = value
            return True
    return False


def run_child(request: dict, arrays: list, time_limit: float) -> ChildRun:
    """Run one child on ``request`` (see ``grade.py``) with ``time_limit`` seconds of wall clock
    for importing the file and every call; never raises for anything the child does.  A server
    that dies before forking the child (no pid reported) is replaced and asked once more."""
    run = _run_child(request, arrays, time_limit)
    if run.pid is None and not run.ready and not run.setup_error:
        SERVER.reset()
        run = _run_child(request, arrays, time_limit)
    return run


def _run_child(request: dict, arrays: list, time_limit: float) -> ChildRun:
    run, started, buffer = ChildRun(), time.monotonic(), bytearray()
    reader = Reader(run)
    capture_r, capture_w = os.pipe()
    results_r, results_w = os.pipe()
    request_r, request_w = os.pipe()
    try:
        report = SERVER.start(request_r, capture_w, results_w)
    except OSError as exc:
        for fd in (capture_r, capture_w, results_r, results_w, request_r, request_w):
            os.close(fd)
        run.setup_error = f"could not start a child: {exc}"
        return run
    for fd in (capture_w, results_w, request_r):
        os.close(fd)
    writer = threading.Thread(target=_write_request, args=(os.fdopen(request_w, "wb"), request, arrays), daemon=True)
    writer.start()
    selector = selectors.DefaultSelector()
    selector.register(capture_r, selectors.EVENT_READ, "output")
    selector.register(results_r, selectors.EVENT_READ, "results")
    selector.register(report, selectors.EVENT_READ, "exit")

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
            for key, _ in selector.select(remaining):
                if key.data == "exit":
                    exited = exited or _report(report, run, buffer)
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
        if run.exitcode is None:
            _kill(run, report, buffer)
        report.close()
        for fd in (capture_r, results_r):
            os.close(fd)
        writer.join(5.0)
    if not run.ended and not run.done:
        code = run.exitcode
        run.ended = f"killed by signal {-code}" if code is not None and code < 0 else f"exited with status {code}"
    run.seconds = time.monotonic() - started
    return run


def _kill(run: ChildRun, report: socket.socket, buffer: bytearray) -> None:
    """SIGKILL the child (it cannot have started anything) and wait for its monitor's report."""
    report.settimeout(BOOT_LIMIT)
    try:
        while run.pid is None and not _report(report, run, buffer):
            pass
        if run.pid is not None and run.exitcode is None:
            try:
                os.kill(run.pid, signal.SIGKILL)
            except OSError:
                pass
            while not _report(report, run, buffer):
                pass
    except OSError:                                      # the monitor is gone: so is the child
        pass

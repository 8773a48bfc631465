"""The grader's side of one child: ask the fork server for it, feed it, read it, judge it, end it.

Children come from a clean fork server (``child.serve``, one per grader process, ``SERVER``): a
fresh interpreter (``python -I``) that has imported numpy and scipy.special and never
numpy_mamba.  ``run_child`` hands it the child's pipes and writes the request (paths, tier,
limits, kit, every call's arguments as arrays: ``protocol``).  Until the child ends it reads
its frames and its merged stdout/stderr (OUTPUT_KEEP bytes kept, the rest counted), and every
POLL seconds judges it on what the kernel counts for it alone:

  * its CPU time over all its threads since it was ready (``/proc/PID/stat``), against the time
    limit: a busy machine slows a child down without costing it any of its limit;
  * wall-clock time: IDLE seconds without computing (a child that waits), and a backstop
    (``Limits.wall``) generous enough for a busy machine;
  * output (OUTPUT_LIMIT) and the size of its working directory (DISK_LIMIT);

and SIGKILLs it at the first one it exceeds.  A fork that fails is reported for that child
alone: the server goes on serving the others.  What comes back is parsed strictly
(``protocol.Reader``).
"""
from __future__ import annotations

import math
import os
import selectors
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from dataclasses import dataclass

from .protocol import ChildRun, Malformed, Reader, send_request
from .staging import DISK_LIMIT, disk_usage

OUTPUT_KEEP = 4000              # bytes of the child's stdout/stderr kept for the report
OUTPUT_LIMIT = 64 * 2**20       # a child printing more than this is stopped
BOOT_LIMIT = 60.0               # seconds for the grader's own setup of a child (no student code)
POLL = 0.05                     # seconds between two looks at a running child's CPU time
IDLE = 5.0                      # seconds without a tick of CPU time: a child that waits is stopped
CHILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "child.py")


@dataclass(frozen=True)
class Limits:
    """One child's limits: ``cpu`` seconds of its own CPU time for its calls (all of them),
    ``import_cpu`` seconds for importing the file first (None: ``cpu``), ``memory_mb`` of address
    space beyond what it maps when confined, ``wall`` seconds."""

    cpu: float
    memory_mb: int
    wall: float
    import_cpu: float | None = None

    @property
    def kernel_cpu(self) -> int:
        """The kernel's backstop (RLIMIT_CPU) over the child's whole life: import, calls, 5 s."""
        return int(self.cpu) + int(self.import_cpu or 0) + 5


def _environment() -> dict:
    return {"PATH": os.defpath, "LANG": "C.UTF-8", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1", "MPLBACKEND": "Agg"}


class Server:
    """The clean fork server of this grader process, started on first use and again if it dies;
    ``start(fds)`` asks it for a child and returns the socket the child's monitor reports on."""

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
        """Forget a server that died (the next request starts another)."""
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
CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` so far, over all its threads (nan if unknown)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
    except (OSError, IndexError, ValueError):
        return float("nan")


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


class _Watch:
    """One running child: its monitor's messages, and the limits it is judged on."""

    def __init__(self, run: ChildRun, report: socket.socket, limits: Limits, workdir: str):
        self.run, self.report, self.limits, self.workdir = run, report, limits, workdir
        self.buffer, self.exited, self.total_cpu = bytearray(), False, float("nan")
        self.ready_at, self.ready_cpu, self.last_cpu, self.last_tick = None, 0.0, 0.0, 0.0
        self.before_ready = 0.0                          # its CPU time when last seen before "ready"

    def messages(self) -> None:
        """Read the monitor's messages: pid "P", CPU microseconds "C", exit "S", fork failure "F"."""
        data = self.report.recv(64)
        if not data:
            self.exited = True
            return
        self.buffer += data
        while len(self.buffer) >= 9:
            kind, value = bytes(self.buffer[:1]), struct.unpack(">q", self.buffer[1:9])[0]
            del self.buffer[:9]
            if kind == b"P":
                self.run.pid = value
            elif kind == b"C":
                self.total_cpu = value / 1e6
            elif kind == b"S":
                self.run.exitcode, self.exited = value, True
            elif kind == b"F":
                self.run.setup_error = f"could not start a process for this submission: {os.strerror(value)}"
                self.exited = True

    def starting(self) -> None:
        """Note its CPU time while it starts (a child that is gone by the time its "ready" frame
        is read, on a loaded machine, is then still measured)."""
        cpu = cpu_seconds(self.run.pid) if self.run.pid else float("nan")
        if not math.isnan(cpu):
            self.before_ready = cpu

    def became_ready(self) -> None:
        """Its CPU time at "ready": read now, or, if it has already ended, the last reading before
        (an over-count by at most one poll, never unknown)."""
        self.ready_at = self.last_tick = time.monotonic()
        cpu = cpu_seconds(self.run.pid) if self.run.pid else float("nan")
        self.ready_cpu = self.last_cpu = self.before_ready if math.isnan(cpu) else cpu

    def imported(self) -> None:
        """The submission is imported: the clock starts again for the calls, so a module-level
        import (scipy.optimize and scipy.stats: ~0.7 s of CPU) is never charged to a budget that
        counts forward passes of the calls; the import had its own limit, from "ready".  Without
        ``import_cpu`` one limit covers the import and the calls together."""
        if self.limits.import_cpu is None:
            return
        cpu = cpu_seconds(self.run.pid) if self.run.pid else float("nan")
        if not math.isnan(cpu):
            self.ready_cpu = self.last_cpu = cpu

    def over(self) -> str:
        """Why the child must stop now ("" while it is within its limits)."""
        run, limits = self.run, self.limits
        if self.ready_at is None:
            return ""
        now = time.monotonic()
        cpu = cpu_seconds(run.pid) if run.pid else float("nan")
        if cpu - self.ready_cpu > (limits.cpu if run.imported or limits.import_cpu is None else limits.import_cpu):
            return "time limit"
        if not cpu <= self.last_cpu:                      # it computed (or its CPU time is unknown)
            self.last_cpu, self.last_tick = cpu, now
        if now - self.last_tick > IDLE or now - self.ready_at > limits.wall:
            return "wall-clock limit"
        if run.output_bytes > OUTPUT_LIMIT:
            return "output limit"
        if disk_usage(self.workdir) > DISK_LIMIT:
            return "disk limit"
        return ""

    def kill(self) -> None:
        """SIGKILL the child (it cannot have started anything) and wait for its monitor's report."""
        self.report.settimeout(BOOT_LIMIT)
        try:
            while self.run.pid is None and not self.exited:
                self.messages()
            if self.run.pid is not None and not self.exited:
                try:
                    os.kill(self.run.pid, signal.SIGKILL)
                except OSError:
                    pass
                while not self.exited:
                    self.messages()
        except OSError:                                  # the monitor is gone: so is the child
            pass


def run_child(request: dict, arrays: list, limits: Limits) -> ChildRun:
    """Run one child on ``request``; never raises for anything the child does.  A server that
    died before answering (no message at all) is replaced and asked once more."""
    run = _run_child(request, arrays, limits)
    if run.pid is None and not run.ready and not run.setup_error:
        SERVER.reset()
        run = _run_child(request, arrays, limits)
    return run


def _run_child(request: dict, arrays: list, limits: Limits) -> ChildRun:
    run = ChildRun()
    capture_r, capture_w = os.pipe()
    results_r, results_w = os.pipe()
    request_r, request_w = os.pipe()
    try:
        report = SERVER.start(request_r, capture_w, results_w)
    except OSError as exc:
        for fd in (capture_r, results_r, request_w):
            os.close(fd)
        run.setup_error = f"could not start a child: {exc}"
        return run
    finally:
        for fd in (capture_w, results_w, request_r):
            os.close(fd)
    writer = threading.Thread(target=_write_request, args=(os.fdopen(request_w, "wb"), request, arrays), daemon=True)
    writer.start()
    watch = _Watch(run, report, limits, request["workdir"])
    try:
        _follow(watch, Reader(run), capture_r, results_r)
    finally:
        if not watch.exited:
            watch.kill()
        report.close()
        for fd in (capture_r, results_r):
            os.close(fd)
        writer.join(5.0)
    _conclude(watch)
    return run


def _take_output(run: ChildRun, data: bytes) -> None:
    run.output += data[:max(0, OUTPUT_KEEP - len(run.output))]
    run.output_bytes += len(data)


def _follow(watch: _Watch, reader: Reader, capture_r: int, results_r: int) -> None:
    """Read the child's output, frames and exit until it ends or must be stopped."""
    run, boot_deadline = watch.run, time.monotonic() + BOOT_LIMIT
    selector = selectors.DefaultSelector()
    selector.register(capture_r, selectors.EVENT_READ, "output")
    selector.register(results_r, selectors.EVENT_READ, "results")
    selector.register(watch.report, selectors.EVENT_READ, "exit")
    try:
        while not watch.exited:
            stop = watch.over() if run.ready else "setup time limit" if time.monotonic() > boot_deadline else ""
            if not run.ready:
                watch.starting()
            if stop:
                run.ended = stop
                return
            for key, _ in selector.select(POLL):
                if key.data == "exit":
                    watch.messages()
                    continue
                data = os.read(key.fd, 1 << 16)
                if not data:
                    selector.unregister(key.fd)
                elif key.data == "output":
                    _take_output(run, data)
                else:
                    was_ready, was_imported = run.ready, run.imported
                    reader.feed(data)
                    if run.ready and not was_ready:
                        watch.became_ready()
                    if run.imported and not was_imported:
                        watch.imported()
        for fd, take in ((capture_r, lambda d: _take_output(run, d)), (results_r, reader.feed)):
            os.set_blocking(fd, False)
            while True:
                try:
                    data = os.read(fd, 1 << 16)
                except OSError:
                    break
                if not data:
                    break
                take(data)
    except Malformed as exc:
        run.ended = f"malformed message from the child ({exc})"
    finally:
        selector.close()


def _conclude(watch: _Watch) -> None:
    """The child's CPU time since ready (since its submission was imported, with an import limit
    of its own), and why it ended if it did not finish."""
    run = watch.run
    if run.ready:
        run.cpu = watch.total_cpu - watch.ready_cpu
    if not run.ended and not run.done and not run.setup_error:
        code = run.exitcode
        if run.cpu > watch.limits.cpu or code == -signal.SIGXCPU:
            run.ended = "time limit"                     # the kernel's CPU limit, the backstop
        else:
            run.ended = f"killed by signal {-code}" if code is not None and code < 0 else f"exited with status {code}"

"""The parent's side of the sandbox: run one child (``child.py``) and collect what it sent.

``run_child`` starts the child from a ``multiprocessing`` fork server that has imported numpy,
scipy, numpy_mamba and ``child.py`` only, so a child starts in milliseconds from a process that
never ran student code and never held a reference answer.  The request (paths, the calls'
arguments) goes to the child pickled: trusted data flows parent -> child only.  Until the
child ends, ``run_child`` reads its frames, its merged stdout/stderr (the first OUTPUT_KEEP
bytes kept, the rest counted and dropped) and watches its exit, with one wall-clock limit for
importing the file and every call; at the limit it kills the child with SIGKILL, which no
handler can catch.  What comes back is parsed strictly (``protocol.Reader``).
"""
from __future__ import annotations

import multiprocessing
import os
import selectors
import threading
import time
from multiprocessing import spawn

from . import child
from .protocol import ChildRun, Malformed, Reader

OUTPUT_KEEP = 4000              # bytes of the child's stdout/stderr kept for the report
BOOT_LIMIT = 60.0               # seconds for the grader's own setup of a child (no student code)
CHILD_NAME = "numpy_mamba-grader-child"
_START = threading.Lock()       # Process.start from several threads, one at a time


def _without_main(get_preparation_data):
    """multiprocessing re-imports the parent's main script in a child; a grader child must not
    (it would run the caller's code, e.g. a script or a pytest entry point, next to the student's)."""
    def prepared(name):
        data = get_preparation_data(name)
        if str(name).startswith(CHILD_NAME):
            data.pop("init_main_from_path", None)
            data.pop("init_main_from_name", None)
        return data
    prepared.grader_filter = True
    return prepared


def _context():
    with _START:
        if not getattr(spawn.get_preparation_data, "grader_filter", False):
            spawn.get_preparation_data = _without_main(spawn.get_preparation_data)
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["numpy", "scipy.special", "numpy_mamba", child.__name__])
    return ctx


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


def run_child(request: dict, time_limit: float) -> ChildRun:
    """Run one child on ``request`` (see ``grade.py``) with ``time_limit`` seconds of wall clock
    for importing the file and every call; never raises for anything the child does."""
    ctx = _context()
    run, started = ChildRun(), time.monotonic()
    reader = Reader(run)
    capture_r, capture_w = ctx.Pipe(duplex=False)
    results_r, results_w = ctx.Pipe(duplex=False)
    with _START:
        process = ctx.Process(target=child.main, args=(request, capture_w, results_w), daemon=True,
                              name=CHILD_NAME)
        process.start()
    capture_w.close()
    results_w.close()
    fds = {capture_r.fileno(): "output", results_r.fileno(): "results"}
    selector = selectors.DefaultSelector()
    for fd, name in fds.items():
        selector.register(fd, selectors.EVENT_READ, name)
    selector.register(process.sentinel, selectors.EVENT_READ, "exit")

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
            for fd, name in fds.items():
                take(name, _drain(fd))
    except Malformed as exc:
        run.ended = f"malformed message from the child ({exc})"
    finally:
        selector.close()
        if process.is_alive():
            process.kill()
        process.join()
        run.exitcode = process.exitcode
        process.close()
        capture_r.close()
        results_r.close()
    if not run.ended and not run.done:
        code = run.exitcode
        run.ended = f"killed by signal {-code}" if code is not None and code < 0 else f"exited with status {code}"
    run.seconds = time.monotonic() - started
    return run

"""Independent units of work (one seed, one setting) run in worker processes.

    units = [Unit(key=seed, label=f"seed {seed}", fn=train_one, args=(world, cfg, seed)) for seed in seeds]
    results = run_units(units, jobs=2, name="gates")     # {seed: train_one(...)}, in the order of units

Every unit gets its randomness only from its own seed stream (np.random.default_rng([seed, k, ...]))
and its inputs as a fresh copy (pickled, also with ``jobs=1``), and results are assembled by key,
never by completion order, so ``--jobs N`` gives the same numbers as ``--jobs 1``, bit for bit.

Workers are started fresh (forkserver, or spawn where there is none), never forked from a parent
that may have started BLAS threads, with OMP/OPENBLAS/MKL_NUM_THREADS=1 in their environment, so
NumPy is single-threaded in each.  Whatever process runs the units keeps freed memory at the top
of its heap (memory.py: glibc's M_TOP_PAD).  Workers ignore SIGINT: a Ctrl-C (to the parent
alone or to the whole process group) raises ``Interrupted`` in the parent (see interrupts.py),
which cancels pending units and terminates the workers.  A unit that raises stops the run with
``UnitError`` carrying the worker's traceback.  One line per finished unit goes to stderr, with
elapsed and estimated time left.
"""
from __future__ import annotations

import argparse
import multiprocessing
import os
import pickle
import signal
import sys
import threading
import time
import traceback
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Mapping, NamedTuple

from .args import positive_int
from .interrupts import check_interrupted, interrupts_held, sigint_blocked
from .memory import keep_heap_padding

THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS")
START_LIMIT = 120.0              # seconds for the workers to start: a fresh interpreter importing numpy and scipy,
                                 # a few seconds even on a loaded machine


# ---------------------------------------------------------------- --jobs
def default_jobs() -> int:
    """The number of cores this process may run on (its CPU affinity where the OS reports one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:                                  # macOS, Windows
        return os.cpu_count() or 1


def add_jobs_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--jobs", type=positive_int, default=default_jobs(), metavar="N",
                        help="worker processes for independent seeds/settings (default: the number of "
                             f"usable cores, here {default_jobs()}); the numbers do not depend on N")


# ---------------------------------------------------------------- units
@dataclass(frozen=True)
class Unit:
    """``fn(*args, **kwargs)``: one independent piece of work.  ``fn`` must be a module-level
    function (workers import it by name); ``key`` finds its result, ``label`` names it in progress."""
    key: Hashable
    label: str
    fn: Callable
    args: tuple = ()
    kwargs: Mapping = field(default_factory=dict)


class Plan(NamedTuple):
    """An experiment as units plus ``assemble({key: result}) -> result`` (run in the parent)."""
    units: list
    assemble: Callable[[dict], Any]


class UnitError(RuntimeError):
    """A unit raised in a worker (the message holds its traceback) or its worker died."""


def _call(fn, args, kwargs):
    """Run one unit in a worker: (True, value, seconds) or (False, traceback text, seconds)."""
    start = time.perf_counter()
    try:
        value = fn(*args, **kwargs)
    except BaseException:                                  # noqa: BLE001 - sent back to the parent
        return False, traceback.format_exc(), time.perf_counter() - start
    return True, value, time.perf_counter() - start


def _worker_start(parent: int, ready) -> None:
    """Each worker: ignore Ctrl-C (the parent stops it), say it is up (``ready``), then exit by
    itself if the run's process ``parent`` dies (a forkserver worker's own parent is the server)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    keep_heap_padding()                                     # memory.py: a step reuses its pages
    ready.release()

    def watch():
        while True:
            time.sleep(1.0)
            try:
                os.kill(parent, 0)
            except ProcessLookupError:
                os._exit(1)

    threading.Thread(target=watch, daemon=True).start()


def _duration(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s}s" if s < 60 else f"{s // 60}m{s % 60:02d}s"


class _Progress:
    def __init__(self, name: str, total: int, stream):
        self.name, self.total, self.stream, self.done = name, total, stream, 0
        self.start = time.perf_counter()

    def unit_done(self, label: str) -> None:
        self.done += 1
        if self.stream is None:
            return
        elapsed = time.perf_counter() - self.start
        left = elapsed / self.done * (self.total - self.done)
        print(f"[{self.name}] {self.done}/{self.total} units done ({label}) elapsed {_duration(elapsed)}, "
              f"left ~{_duration(left)}", file=self.stream, flush=True)


def _pool_context(units):
    method = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
    ctx = multiprocessing.get_context(method)
    if method == "forkserver":                              # imported once, before any worker forks
        ctx.set_forkserver_preload(sorted({u.fn.__module__ for u in units} - {"builtins", None}))
    return ctx


@contextmanager
def _single_threaded_workers():
    """OMP/OPENBLAS/MKL_NUM_THREADS=1 for the processes started inside (the parent's own value is
    restored afterwards).  Takes effect because workers start a fresh interpreter."""
    saved = {v: os.environ.get(v) for v in THREAD_VARIABLES}
    os.environ.update({v: "1" for v in THREAD_VARIABLES})
    try:
        yield
    finally:
        for v, value in saved.items():
            if value is None:
                os.environ.pop(v, None)
            else:
                os.environ[v] = value


def _stop(pool: ProcessPoolExecutor) -> None:
    """Cancel pending units and end every worker now (not after its current unit)."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    manager = getattr(pool, "_executor_manager_thread", None)
    results = getattr(pool, "_result_queue", None)          # shutdown() forgets both
    pool.shutdown(wait=False, cancel_futures=True)
    for p in processes:
        p.terminate()
    for p in processes:
        p.join(5.0)
        if p.is_alive():
            p.kill()
            p.join()
    # A worker ended while sending a result leaves half a message in the result pipe, and the
    # pool's manager thread would wait for the rest forever (and the interpreter for it at exit).
    # With every worker gone, closing our copy of the pipe's write end turns that wait into EOF.
    if results is not None:
        results._writer.close()
    if manager is not None:
        manager.join()


def _run_serial(units, payloads, progress) -> dict:
    out = {}
    for unit, payload in zip(units, payloads):
        fn, args, kwargs = pickle.loads(payload)            # a fresh copy, as a worker gets
        check_interrupted()
        start = time.perf_counter()
        out[unit.key] = (fn(*args, **kwargs), time.perf_counter() - start)
        check_interrupted()
        progress.unit_done(unit.label)
    return out


def _wait_for_workers(pool: ProcessPoolExecutor, ready, n: int) -> None:
    """Wait until ``n`` workers have run ``_worker_start``; a worker that ended before, a broken
    pool or START_LIMIT seconds without all of them raise UnitError saying which."""
    started, deadline = 0, time.monotonic() + START_LIMIT
    while started < n:
        if ready.acquire(timeout=1.0):
            started += 1
            continue
        ended = [p.exitcode for p in (getattr(pool, "_processes", None) or {}).values() if p.exitcode is not None]
        broken = getattr(pool, "_broken", False)
        if ended or broken:
            raise UnitError(f"a worker process ended before it started ({started} of {n} up; exit codes "
                            f"{ended}{'; ' + str(broken) if broken else ''})")
        if time.monotonic() > deadline:
            raise UnitError(f"a worker process did not start within {START_LIMIT:.0f} s ({started} of {n} up)")


def _run_pool(units, jobs: int, progress) -> dict:
    done, pool = {}, None
    with _single_threaded_workers():
        try:
            # A worker interrupted while it attaches to the pool's queues prints a traceback, so
            # Ctrl-C waits (blocked, not lost) until every worker is up: well under a second.
            with sigint_blocked():
                ctx = _pool_context(units)
                ready = ctx.Semaphore(0)
                pool = ProcessPoolExecutor(jobs, mp_context=ctx, initializer=_worker_start,
                                           initargs=(os.getpid(), ready))
                pending = {pool.submit(_call, u.fn, u.args, dict(u.kwargs)): u for u in units}
                _wait_for_workers(pool, ready, min(jobs, len(units)))
            while pending:
                finished, _ = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
                check_interrupted()
                for future in finished:
                    unit = pending.pop(future)
                    try:
                        ok, value, seconds = future.result()
                    except BrokenProcessPool as exc:
                        raise UnitError(f"a worker process died while running unit {unit.label!r} ({exc})") from None
                    if not ok:
                        raise UnitError(f"unit {unit.label!r} failed in a worker process:\n{value.rstrip()}")
                    done[unit.key] = (value, seconds)
                    progress.unit_done(unit.label)
        except BaseException:
            if pool is not None:
                with interrupts_held():
                    _stop(pool)
            raise
        pool.shutdown(wait=True)
    return done


def _run(units, jobs: int, name: str, progress) -> dict:
    units, payloads = list(units), []
    keys = [u.key for u in units]
    if len(set(keys)) != len(keys):
        raise ValueError(f"every unit needs its own key; got {keys}.")
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs must be a whole number >= 1; got {jobs!r}.")
    for u in units:
        try:
            payloads.append(pickle.dumps((u.fn, u.args, dict(u.kwargs))))
        except Exception as exc:                           # noqa: BLE001 - say which unit
            raise ValueError(f"unit {u.label!r} cannot be sent to a worker process (its function must be "
                             f"module-level and its arguments picklable): {exc}") from None
    stream = sys.stderr if progress is True else (progress or None)
    workers = min(jobs, len(units))
    if stream is not None:
        print(f"[{name}] {len(units)} units, " + (f"{workers} worker processes" if workers > 1 else "in this process"),
              file=stream, flush=True)
    bar = _Progress(name, len(units), stream)
    if workers == 1:
        keep_heap_padding()                                 # memory.py: a step reuses its pages
    found = _run_pool(units, workers, bar) if workers > 1 else _run_serial(units, payloads, bar)
    return {k: found[k] for k in keys}


def run_units(units, jobs: int = 1, name: str = "run", progress=True) -> dict:
    """Run every unit, ``jobs`` at a time (``jobs=1``: in this process); return {unit.key: result}
    in the order of ``units``.  ``progress``: True (stderr), False, or a file.  Raises
    ``UnitError`` if a unit fails in a worker, ``Interrupted`` on Ctrl-C (workers stopped)."""
    return {k: value for k, (value, _) in _run(units, jobs, name, progress).items()}


def run_plans(plans: Mapping[str, Plan], jobs: int = 1, name: str = "run", progress=True) -> tuple[dict, dict]:
    """Run the units of every plan in one pool, then assemble each plan in the parent.
    Returns ({plan name: assembled result}, {plan name: seconds of its units, summed})."""
    units = [Unit((p, u.key), u.label, u.fn, u.args, u.kwargs) for p, plan in plans.items() for u in plan.units]
    found = _run(units, jobs, name, progress)
    results, seconds = {}, {}
    for p, plan in plans.items():
        mine = {u.key: found[(p, u.key)] for u in plan.units}
        results[p] = plan.assemble({k: value for k, (value, _) in mine.items()})
        seconds[p] = round(sum(s for _, s in mine.values()), 1)
    return results, seconds

"""How every experiment command runs its work: independent units in worker processes, output that
appears all at once or not at all, and Ctrl-C.

    units = [Unit(seed, f"seed {seed}", train_one, (settings, seed)) for seed in range(8)]
    found = run_units(units, jobs=2, name="gates")     # {seed: train_one(settings, seed)}, in the order of units

    def work(stage):                                   # stage.dir: every file under its final name
        save_json(stage.dir / "gates.json", found)
    return run_staged("gates", out, work)              # exit code: 0, 1 (a unit failed), 2 (bad --out), 130 (Ctrl-C)

The same numbers for every ``--jobs``: a unit takes its randomness only from its own seed stream
and its inputs as a fresh copy (pickled, with ``jobs=1`` too), and results are assembled by key,
never by completion order.  Workers are fresh interpreters (forkserver, else spawn) with one BLAS
thread each (``THREAD_VARIABLES``), so NumPy never oversubscribes the cores.

All or nothing (``run_staged``): ``--out`` is checked (a hidden staging folder made in it, with
``tempfile``) before anything is computed; every file is written there and moved into place with
``os.replace`` only when the command is done, the report's sections merged into REPORT.md as it is
at that moment.  A failure or a Ctrl-C leaves ``--out`` as it was, says so in one line, and leaves no
staging folder and no worker behind.

Ctrl-C and SIGTERM (``handle_interrupts``) raise ``Interrupted`` in the parent; the pool's pending
units are cancelled and its workers ended (they ignore SIGINT from birth: they are forked while it is
blocked).  A signal that lands while the outputs are moved (``interrupts_held``) waits for the move.
"""
from __future__ import annotations

import ctypes
import multiprocessing
import os
import pickle
import platform
import shutil
import signal
import sys
import tempfile
import threading
import time
import traceback
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Hashable, Mapping, NamedTuple

from .output import REPORT_TITLE, SECTION, merge_section

THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS")
STAGING_PREFIX = ".partial-"
TOP_PAD = 64 << 20          # bytes glibc keeps at the top of the heap (keep_heap_padding)
MMAP_THRESHOLD = 32 << 20   # arrays up to this size come from the heap, not from fresh pages (ditto)


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
    """Units plus ``assemble({key: result}) -> result`` (run in the parent): the step-size rule."""
    units: list
    assemble: Callable[[dict], Any]


class UnitError(RuntimeError):
    """A unit raised in a worker (the message holds its traceback) or its worker died."""


def keep_heap_padding() -> bool:
    """Keep freed arrays' pages for the next training step (glibc's malloc; elsewhere nothing).

    A step allocates and frees the same arrays every time; glibc would give the freed memory back
    to the system and take it again page by page, each page zeroed on a fault.  Two settings keep
    it: M_TOP_PAD (TOP_PAD bytes kept at the top of the heap) and M_MMAP_THRESHOLD (arrays up to
    MMAP_THRESHOLD bytes on the heap, not in pages of their own).  The second must be set too:
    setting the first freezes glibc's adaptive threshold wherever it stands, which depends on what
    the process happened to allocate and free before (measured: a three-layer unit spent 3.0 s of
    its 10.7 in the kernel with only M_TOP_PAD, 0.1 s of 7.4 with both).  No number changes;
    process-wide, so only the commands' own processes call it.  True if glibc took both."""
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    mallopt = ctypes.CDLL(None).mallopt
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return mallopt(-3, MMAP_THRESHOLD) == 1 and mallopt(-2, TOP_PAD) == 1    # <malloc.h>: -3 M_MMAP_THRESHOLD, -2 M_TOP_PAD


def _call(fn, args, kwargs):
    """One unit in a worker: (True, value, seconds) or (False, traceback text, seconds)."""
    start = time.perf_counter()
    try:
        value = fn(*args, **kwargs)
    except BaseException:                                   # noqa: BLE001 - sent back to the parent
        return False, traceback.format_exc(), time.perf_counter() - start
    return True, value, time.perf_counter() - start


def _worker_start(parent: int) -> None:
    """Each worker ignores Ctrl-C (the parent stops it) and exits by itself if the run's process dies."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    keep_heap_padding()

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


@contextmanager
def _workers_started(units):
    """SIGINT blocked and BLAS at one thread while the pool's processes start: they inherit both
    (a fork keeps the signal mask), so a Ctrl-C to the whole process group cannot hit a worker
    before it ignores SIGINT.  A SIGINT that reaches this process meanwhile (through a thread that
    does not block it, such as BLAS's) is only recorded, and raised once every worker is registered."""
    saved = {v: os.environ.get(v) for v in THREAD_VARIABLES}
    os.environ.update({v: "1" for v in THREAD_VARIABLES})
    method = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
    context = multiprocessing.get_context(method)
    from multiprocessing import resource_tracker
    resource_tracker.ensure_running()                       # first: starting it unblocks SIGINT in this thread
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        with interrupts_held():
            if method == "forkserver":                      # the server forks every worker: start it blocked
                context.set_forkserver_preload(sorted({u.fn.__module__ for u in units} - {"builtins", None}))
                from multiprocessing import forkserver
                forkserver.ensure_running()
            yield context
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        for v, value in saved.items():
            os.environ.pop(v, None) if value is None else os.environ.__setitem__(v, value)
    check_interrupted()


def _stop(pool: ProcessPoolExecutor) -> None:
    """Cancel pending units and end every worker now, not after its current unit."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    manager, results = getattr(pool, "_executor_manager_thread", None), getattr(pool, "_result_queue", None)
    pool.shutdown(wait=False, cancel_futures=True)
    for p in processes:
        p.terminate()
    for p in processes:
        p.join(5.0)
        if p.is_alive():
            p.kill()
            p.join()
    # A worker ended while sending a result leaves half a message in the result pipe, and the pool's
    # manager thread would wait for the rest forever; with every worker gone, closing our copy of
    # the pipe's write end turns that wait into EOF.
    if results is not None:
        results._writer.close()
    if manager is not None:
        manager.join()


def _run(units: list, jobs: int, say: Callable[[str], None]) -> dict:
    """{key: (value, seconds)} of every unit, ``jobs`` at a time (1: in this process)."""
    if jobs == 1:
        keep_heap_padding()
        done = {}
        for u in units:
            fn, args, kwargs = pickle.loads(pickle.dumps((u.fn, u.args, dict(u.kwargs))))   # a worker's fresh copy
            check_interrupted()
            start = time.perf_counter()
            done[u.key] = (fn(*args, **kwargs), time.perf_counter() - start)
            check_interrupted()
            say(u.label)
        return done
    done, pool = {}, None
    try:
        with _workers_started(units) as context:
            pool = ProcessPoolExecutor(jobs, mp_context=context, initializer=_worker_start, initargs=(os.getpid(),))
            pending = {pool.submit(_call, u.fn, u.args, dict(u.kwargs)): u for u in units}
        while pending:
            finished, _ = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
            check_interrupted()
            for future in finished:
                unit = pending.pop(future)
                try:
                    ok, value, seconds = future.result()
                except BrokenProcessPool:
                    running = ", ".join(repr(u.label) for u in [unit, *pending.values()][:4])
                    raise UnitError(f"a worker process died while running one of the units {running}: a crash, or "
                                    "the system ran out of memory") from None
                if not ok:
                    raise UnitError(f"unit {unit.label!r} failed in a worker process:\n{value.rstrip()}")
                done[unit.key] = (value, seconds)
                say(unit.label)
    except BaseException:
        if pool is not None:
            with interrupts_held():
                _stop(pool)
        raise
    pool.shutdown(wait=True)
    return done


def run_units(units, jobs: int = 1, name: str = "run", progress=True, *, seconds: bool = False) -> dict:
    """Run every unit, ``jobs`` at a time; return {unit.key: result} in the order of ``units``
    ({key: (result, seconds)} with ``seconds``).  ``progress``: True (stderr), False, or a file:
    one line per finished unit with the time left.  Raises ``UnitError`` if a unit fails,
    ``Interrupted`` on Ctrl-C (workers stopped), ValueError for units that cannot be run."""
    units = list(units)
    keys = [u.key for u in units]
    if len(set(keys)) != len(keys):
        raise ValueError(f"every unit needs its own key; got {keys}.")
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs must be a whole number >= 1; got {jobs!r}.")
    for u in units:
        try:
            pickle.dumps((u.fn, u.args, dict(u.kwargs)))
        except Exception as exc:                            # noqa: BLE001 - say which unit
            raise ValueError(f"unit {u.label!r} cannot be sent to a worker process (its function must be "
                             f"module-level and its arguments picklable): {exc}") from None
    stream = sys.stderr if progress is True else (progress or None)
    workers, start, count = min(jobs, len(units)), time.perf_counter(), [0]

    def say(label: str) -> None:
        count[0] += 1
        if stream is not None:
            elapsed = time.perf_counter() - start
            left = elapsed / count[0] * (len(units) - count[0])
            print(f"[{name}] {count[0]}/{len(units)} units done ({label}) elapsed {_duration(elapsed)}, "
                  f"left ~{_duration(left)}", file=stream, flush=True)

    if stream is not None:
        print(f"[{name}] {len(units)} units, " + (f"{workers} worker processes" if workers > 1 else "in this process"),
              file=stream, flush=True)
    found = _run(units, max(workers, 1), say)
    return {k: found[k] if seconds else found[k][0] for k in keys}


# ---------------------------------------------------------------- Ctrl-C and SIGTERM
class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM arrived; ``exit_code`` is 128 + the signal number (130 for Ctrl-C)."""

    def __init__(self, signum: int = signal.SIGINT):
        super().__init__(signal.Signals(signum).name)
        self.signum, self.exit_code = signum, 128 + signum


class _Signals:
    """Process-wide, as signals are: the first signal received (kept until ``handle_interrupts``
    ends, so a raise that a library swallowed is raised again by the next check) and how many
    ``interrupts_held`` blocks are open."""
    received: int | None = None
    held: int = 0


def _on_signal(signum, frame):
    if _Signals.received is None:
        _Signals.received = signum
    if not _Signals.held:
        raise Interrupted(signum)


@contextmanager
def handle_interrupts():
    """Inside: SIGINT and SIGTERM are recorded and raise ``Interrupted``.  A SIGINT that the
    environment ignores (a background job of a script) stays ignored, as Python itself does; an
    ``Interrupted`` raised inside a destructor (which Python would print and drop) is not printed."""
    main = threading.current_thread() is threading.main_thread()
    watched = [s for s in (signal.SIGINT, signal.SIGTERM) if main and signal.getsignal(s) is not signal.SIG_IGN]
    previous = {s: signal.signal(s, _on_signal) for s in watched}
    _Signals.received, _Signals.held, hook = None, 0, sys.unraisablehook
    sys.unraisablehook = lambda u: None if isinstance(u.exc_value, Interrupted) else hook(u)
    try:
        yield
    finally:
        sys.unraisablehook = hook
        for s, handler in previous.items():
            signal.signal(s, handler)
        _Signals.received, _Signals.held = None, 0


def check_interrupted() -> None:
    """Raise ``Interrupted`` if a signal arrived, even if its first raise was swallowed."""
    if _Signals.received is not None:
        raise Interrupted(_Signals.received)


@contextmanager
def interrupts_held():
    """A block that a signal does not cut short (moving results into place, cleaning up): a signal
    that arrives inside is recorded, and ``check_interrupted()`` after the block raises it."""
    _Signals.held += 1
    try:
        yield
    finally:
        _Signals.held -= 1


# ---------------------------------------------------------------- all or nothing
class OutputError(Exception):
    """``--out`` (or ``--report``) cannot be written; found before anything is computed."""


class Staging:
    """A hidden folder inside ``out`` that collects one command's files until ``commit``.

    Making it is the check that ``out`` can be created and written.  ``stage.dir``: every output
    file, flat, under its final name; ``stage.report``: the REPORT.md sections (``write_section``),
    merged at ``commit`` into ``report`` (default OUT/REPORT.md) as it is then, other sections kept.
    """

    def __init__(self, out, command: str, report=None):
        self.out, self.command, self.committed, self.dir = Path(out), command, False, None
        self.target = self.out / "REPORT.md" if report is None else Path(report)
        self._made: list[Path] = []                         # folders made here, deepest first
        try:
            self._make_folder(self.out, "--out")
            self.dir = Path(self._writable(lambda: tempfile.mkdtemp(prefix=f"{STAGING_PREFIX}{command}-", dir=self.out),
                                           f"--out {self.out}"))
            if self.target.exists() and not self.target.is_file():
                raise OutputError(f"the report {self.target} exists and is not a file")
            if self.target.parent != self.out:
                self._make_folder(self.target.parent, "--report")
                fd, probe = self._writable(lambda: tempfile.mkstemp(prefix=STAGING_PREFIX, dir=self.target.parent),
                                           f"the folder of the report {self.target}")
                os.close(fd)
                os.unlink(probe)
        except OutputError:
            self.discard()
            raise
        self.report = self.dir / "REPORT.md"

    @staticmethod
    def _writable(make, what: str):
        try:
            return make()
        except OSError as exc:
            raise OutputError(f"{what} is not writable ({exc.strerror})") from None

    def _make_folder(self, path: Path, what: str) -> None:
        try:
            if path.exists() and not path.is_dir():
                raise OutputError(f"{what} {path} exists and is not a folder")
            missing = [p for p in (path, *path.parents) if not p.exists()]
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise OutputError(f"{what} {path} cannot be created ({exc.strerror})") from None
        self._made = missing + self._made

    def commit(self) -> list[Path]:
        """Move every staged file into ``out`` and merge the staged report sections; a signal meanwhile
        is raised afterwards, an error puts back every file replaced so far.  Returns the final paths."""
        check_interrupted()
        with interrupts_held():
            files = sorted(p for p in self.dir.iterdir() if p != self.report)
            if any(not p.is_file() for p in files):
                raise ValueError(f"{self.command} staged a folder; only files can be moved: {files}")
            previous, done = self.dir / ".previous", []
            previous.mkdir()
            merged = self.target.parent / f"{self.dir.name}-{self.target.name}"    # same filesystem as the report
            try:
                for path in files:
                    done.append(_replace(path, self.out / path.name, previous))
                if self.report.exists():
                    text = self.target.read_text() if self.target.exists() else REPORT_TITLE
                    for name, markdown in SECTION.findall(self.report.read_text()):
                        text = merge_section(text, name, markdown)
                    merged.write_text(text)
                    if self.target.exists():
                        shutil.copymode(self.target, merged)
                    done.append(_replace(merged, self.target, previous))
            except BaseException:
                for dest, backup in reversed(done):
                    os.replace(backup, dest) if backup else dest.unlink()
                merged.unlink(missing_ok=True)
                raise
            self.committed = True
            self.discard()
        check_interrupted()
        return [dest for dest, _ in done]

    def discard(self) -> None:
        """Remove the staging folder (and, unless committed, the folders this run made)."""
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
        if not self.committed:
            for folder in self._made:
                try:
                    folder.rmdir()                          # only if empty: never another run's files
                except OSError:
                    pass
            self._made = []


def _replace(src: Path, dest: Path, previous: Path):
    """os.replace(src, dest), keeping the old dest (a hard link, else a copy) in ``previous``."""
    backup = None
    if dest.is_file():
        backup = previous / f"{len(list(previous.iterdir()))}-{dest.name}"
        try:
            os.link(dest, backup)
        except OSError:
            shutil.copy2(dest, backup)
    os.replace(src, dest)
    return dest, backup


def run_staged(command: str, out, work, *, report=None, stream=None) -> int:
    """Check ``out``, run ``work(stage)`` (it writes into ``stage.dir`` and ``stage.report``), commit.

    Returns the exit code: 0 done, 1 a unit failed, 2 ``out`` cannot be written, 128 + the signal
    (130) interrupted; any of them but 0 leaves ``out`` as it was and says so in one line on
    stderr; other exceptions propagate after the clean-up."""
    err, stage = sys.stderr if stream is None else stream, None

    def unchanged(what: str) -> str:
        if stage is not None and stage.committed:
            return f"{command}: {what} after the new results were complete and in place in {out}"
        return f"{command}: {what} before its results were complete: nothing in {out} was changed"

    def clean_up():
        with interrupts_held():                             # a second Ctrl-C cannot cut this short
            if stage is not None:
                stage.discard()

    with handle_interrupts():
        try:
            stage = Staging(out, command, report)
            work(stage)
            stage.commit()
        except OutputError as exc:
            print(f"{command}: error: {exc}", file=err)
            return 2
        except KeyboardInterrupt as exc:
            clean_up()
            print(unchanged(f"interrupted ({exc or 'SIGINT'})"), file=err)
            return exc.exit_code if isinstance(exc, Interrupted) else 130
        except UnitError as exc:
            clean_up()
            print(f"{command}: error: {exc}\n{unchanged('stopped')}", file=err)
            return 1
        except BaseException:
            clean_up()
            if _Signals.received is not None:   # the interrupt surfaced in a library as another error, e.g.
                signum = _Signals.received       # matplotlib's renderer turned it into "Invalid bounding box"
                print(unchanged(f"interrupted ({signal.Signals(signum).name})"), file=err)
                return 128 + signum
            print(unchanged("failed"), file=err)
            raise
    return 0

"""Ctrl-C and SIGTERM for the long commands: never lost, never half-handled.

Inside ``handle_interrupts()`` a SIGINT or SIGTERM raises ``Interrupted`` (a KeyboardInterrupt,
exit code 128 + signal number) and is also recorded, so a raise that some library swallows (a
raise inside a garbage-collector callback is printed and dropped by Python) is raised again by
the next ``check_interrupted()`` (and Python's "Exception ignored in" traceback for it is not
printed): the units loop calls it after every unit, and the final move of the outputs calls it
before starting and after finishing. Inside ``interrupts_held()`` a signal is only recorded (the
final moves and the clean-up are never cut in half). As Python itself does, a SIGINT that the
environment ignores (a background job of a script) stays ignored.
"""
from __future__ import annotations

import signal
import sys
import threading
from contextlib import contextmanager


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM arrived; ``exit_code`` is 128 + the signal number (130 for Ctrl-C)."""

    def __init__(self, signum: int = signal.SIGINT):
        super().__init__(signal.Signals(signum).name)
        self.signum, self.exit_code = signum, 128 + signum


class _Signals:
    """Signals are process-wide, so this state is too: the first signal received (sticky until
    ``handle_interrupts`` exits, so a raise swallowed somewhere is raised again at the next check)
    and how many ``interrupts_held`` blocks are open."""
    received: int | None = None
    defer: int = 0


def _on_signal(signum, frame):
    if _Signals.received is None:
        _Signals.received = signum
    if not _Signals.defer:
        raise Interrupted(signum)


@contextmanager
def handle_interrupts():
    """Inside: SIGINT and SIGTERM are recorded and raise ``Interrupted``.  A SIGINT that the
    caller's environment ignores (a background job of a script) stays ignored."""
    main = threading.current_thread() is threading.main_thread()
    watched = [s for s in (signal.SIGINT, signal.SIGTERM) if main and signal.getsignal(s) is not signal.SIG_IGN]
    previous = {s: signal.signal(s, _on_signal) for s in watched}
    _Signals.received, _Signals.defer = None, 0
    hook = sys.unraisablehook

    def quiet(unraisable):
        # Python prints an exception raised in a __del__ or a GC callback with its traceback and
        # drops it; ours is recorded, and check_interrupted() raises it again, so print nothing.
        if not isinstance(unraisable.exc_value, Interrupted):
            hook(unraisable)

    sys.unraisablehook = quiet
    try:
        yield
    finally:
        sys.unraisablehook = hook
        for s, handler in previous.items():
            signal.signal(s, handler)
        _Signals.received, _Signals.defer = None, 0


def received_signal() -> int | None:
    """The signal recorded inside ``handle_interrupts`` (None if none arrived)."""
    return _Signals.received


def check_interrupted() -> None:
    """Raise ``Interrupted`` if a signal arrived, even if the raise in the handler was swallowed
    (e.g. it landed in a garbage-collector callback)."""
    if _Signals.received is not None:
        raise Interrupted(_Signals.received)


@contextmanager
def interrupts_held():
    """A block that a signal does not cut short (moving results into place, cleaning up): a signal
    that arrives inside is only recorded; ``check_interrupted()`` after the block raises it."""
    _Signals.defer += 1
    try:
        yield
    finally:
        _Signals.defer -= 1


@contextmanager
def sigint_blocked():
    """SIGINT held back (not lost) while worker processes start: they inherit this thread's
    block, so a Ctrl-C during their start-up cannot kill them (with a traceback) before they
    ignore it; and a SIGINT that the kernel hands to another thread of this process (BLAS
    threads do not block it) is only recorded here.  Either way it is raised when the block ends."""
    if not hasattr(signal, "pthread_sigmask"):              # Windows
        with interrupts_held():
            yield
        check_interrupted()
        return
    from multiprocessing import resource_tracker
    resource_tracker.ensure_running()                       # starting it later would unblock SIGINT
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        with interrupts_held():
            yield
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    check_interrupted()

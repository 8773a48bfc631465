"""The children of one exercise of one submission: a group of problems in as few children as it
takes (``run_calls``), the budget problem in a child of its own per entry.

``run_calls`` runs entries on problems in a fresh child, and again in a fresh one after any call
that ended its child (a limit, os._exit, a crash): that call fails, and the functions after it
are called in the next child.  What comes back is a ``Calls``: {(entry, problem index): Call},
which entries the file defines, its import error.  A child that cannot be started raises
``SandboxFailed``, the grader's failure on that one file.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from . import sandbox
from .sandbox import Call


class SandboxFailed(Exception):
    """A child could not be started for one file (a fork refused, a confinement the kernel
    would not apply): that file fails, as the grader's failure, and the others are graded."""


def stopped(run, limits: sandbox.Limits, doing: str = "running it") -> str:
    """Why a child stopped while ``doing`` something, for the student."""
    if run.ended == "time limit":
        return (f"did not finish within the time limit ({limits.cpu:g} s of CPU time for importing the file and "
                f"every call) while {doing}: an endless loop?")
    if run.ended.startswith("malformed"):
        return f"the grader stopped the process while {doing}: it wrote to the grader's result channel ({run.ended})"
    if run.ended in ("wall-clock limit", "output limit", "disk limit"):
        return f"the grader stopped the process while {doing}: it passed its {run.ended}"
    return f"the process ended while {doing} ({run.ended}): os._exit, a signal, or a crash"


def _note(run) -> str:
    return "time limit" if run.ended == "time limit" else "stopped" if run.ended else "process ended"


@dataclass
class Calls:
    """What the children of one exercise did: {(entry, problem index): Call}, which entries the
    file defines (None until it imported), its import error."""

    calls: dict = field(default_factory=dict)
    defined: dict | None = None
    import_error: str = ""


def run_calls(job_of, todo: list, indices: list, folder, isolation, limits, sub=None) -> Calls:
    """Run ``todo`` (entries) on problems ``indices`` at tier ``isolation`` within ``limits``, a
    fresh child whenever a call ends one; ``job_of(entries, indices)`` makes a child's Job; what
    the children print is added to ``sub`` (None: to nobody)."""
    out = Calls()
    for _ in range(len(todo) + 1):                          # each child finishes >= 1 function
        run = sandbox.run(job_of(todo, indices), folder, isolation, limits)
        if sub is not None:
            sub.output += run.output.decode("utf-8", "replace")
            sub.output_bytes += run.output_bytes
        if run.setup_error or run.ended == "setup time limit" or not run.ready:
            raise SandboxFailed(f"the grader could not start the sandbox: {run.setup_error or run.ended}")
        todo = take(run, todo, indices, limits, out)
        if not todo:
            break
    return out


def take(run, todo: list, indices: list, limits, out: Calls) -> list:
    """Add what child ``run`` did with entries ``todo`` on problems ``indices`` to ``out``; the
    entries still to call in a fresh child.  A call the child was not asked for (another
    function, a problem number out of range) is the child's forgery: its run counts as stopped."""
    if not run.imported:
        out.import_error = run.import_error or stopped(run, limits, "importing the file")
        return []
    out.defined = out.defined or {name: run.defined.get(name, "missing") for name in todo}
    todo = [name for name in todo if out.defined.get(name) == "function"]
    asked = {(name, k) for name in todo for k in range(len(indices))}
    forged = [key for key in list(run.calls) + [run.running] if key is not None and key not in asked]
    if forged:
        run = replace(run, calls={key: c for key, c in run.calls.items() if key in asked},
                      running=run.running if run.running in asked else None,
                      ended=f"malformed message from the child (a call it was not asked: {forged[0][0][:40]!r} "
                            f"on problem {forged[0][1]})")
    for (name, k), call in run.calls.items():
        if "MemoryError" in call.error:
            call = replace(call, error=call.error + f" [a submission may allocate at most {limits.memory_mb} MB]")
        out.calls[(name, indices[k])] = replace(call, cpu=run.cpu) if len(indices) == 1 else call
    if run.running is not None:
        name, k = run.running
        out.calls[(name, indices[k])] = Call(error=stopped(run, limits), note=_note(run), cpu=run.cpu)

    def finished(name):
        mine = [out.calls.get((name, k)) for k in indices]
        return any(c is not None and not c.returned for c in mine) or all(c is not None for c in mine)
    remaining = [name for name in todo if not finished(name)]
    if remaining and (len(remaining) == len(todo) or forged):    # no progress, or forged: not again
        for name in remaining:
            k = next(k for k in indices if (name, k) not in out.calls)
            out.calls[(name, k)] = Call(error=stopped(run, limits, "between calls"), note=_note(run))
        remaining = []
    return remaining


def over_budget(call: Call, limits: sandbox.Limits) -> Call:
    """A call of the budget problem as the student reads it: stopped at its CPU time limit, it
    is over the budget, and the message says why that is the point."""
    if "time limit" not in call.error:
        return call
    return replace(call, note="over the budget", error=(
        f"used more than its CPU budget on the largest problem ({limits.cpu:.2f} s here, at least five times what "
        "a derivation needs, Python loops over prompts and tokens included): a per-coordinate method (finite "
        "differences, complex step, dual numbers, vectorised or not) needs one forward pass per parameter; "
        "derive the gradient instead"))

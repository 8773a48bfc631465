"""The parent's side of grading: from what a function returned to pass / FAIL and a hint.

No student code runs here.  The child (``child.py``) sends what each call returned, and
``sandbox`` decodes it into plain objects: an ndarray of a numeric dtype, None, ``Items``
(a returned tuple or list, item by item) or ``Other`` (anything else, by its type's name).
``compare_array`` checks one answer that should be one array: the dtype (real float64: complex,
integer, bool and float32 fail), the shape, finiteness, then the relative error against the
package's answer and against the independent check.  ``grade_function`` turns one function's
calls on one group of problems (public or hidden) into a ``Result`` with points and, when it
fails, a hint (``hints.py``).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from .hints import hint_for, rel_error
from .registry import Prepared, Row
from .sandbox import Call, Items


@dataclass
class Result:
    """One graded function on one group of problems: status "pass", "FAIL", "not attempted" (a
    stub, or not defined); ``group``: "public", "hidden", or "" when there is one group."""

    name: str
    status: str
    max_rel: float = float("nan")
    hint: str = ""
    rows: list = field(default_factory=list)
    points: float = 0.0
    max_points: float = 0.0
    defined: bool = True
    group: str = ""

    @property
    def label(self) -> str:
        return f"{self.name} ({self.group})" if self.group else self.name


def combine(results) -> dict:
    """{function: one Result over its groups of problems}: the worst status, the points summed,
    the largest error, every row, the hints joined (each after its group's name)."""
    out = {}
    for r in results:
        hint = f"{r.group} problems: {r.hint}" if r.group and r.hint else r.hint
        if r.name not in out:
            out[r.name] = Result(r.name, r.status, r.max_rel, hint, list(r.rows), r.points, r.max_points, r.defined)
            continue
        c = out[r.name]
        c.status = c.status if r.status == "pass" else r.status if c.status == "pass" else c.status
        c.max_rel = r.max_rel if np.isnan(c.max_rel) else c.max_rel if np.isnan(r.max_rel) else max(c.max_rel, r.max_rel)
        c.hint = "; ".join(h for h in (c.hint, hint) if h)
        c.rows += r.rows
        c.points, c.max_points = c.points + r.points, c.max_points + r.max_points
    return out


def describe(answer) -> str:
    """What an answer is, for a message: "an array of shape (3,) and dtype float32", ..."""
    if answer is None:
        return "None"
    if isinstance(answer, Items):
        named = f" ({', '.join(answer.fields)})" if answer.fields else ""
        return f"a {answer.type_name} of {len(answer)} items{named}"
    if isinstance(answer, np.ndarray):
        return f"an array of shape {answer.shape} and dtype {answer.dtype}"
    return str(answer)


def answer_note(answer, value: np.ndarray) -> str:
    """Why ``answer`` cannot be compared with the array ``value`` ("" when it can)."""
    if not isinstance(answer, np.ndarray):
        return f"returned {describe(answer)}"
    if answer.dtype.kind == "c":
        return f"complex dtype {answer.dtype}"
    if answer.dtype.kind in "biu":
        return f"dtype {answer.dtype}, not float64"
    if answer.dtype.kind != "f" or answer.dtype.itemsize < 8:
        return f"dtype {answer.dtype}, not float64"
    if answer.shape != value.shape:
        return f"shape {answer.shape}, expected {value.shape}"
    if not np.all(np.isfinite(answer)):
        return "NaN or inf"
    return ""


def compare_array(name, problem, answer, reference, exercise) -> Row:
    """The default ``Exercise.compare``: one answer that should be one real float64 array."""
    note = answer_note(answer, reference.value)
    if note:
        return Row(problem.name, note=note)
    S = answer.astype(np.float64)
    with np.errstate(all="ignore"):
        e_ref, e_ind = rel_error(S, reference.value), float(reference.independent(S))
    ok = e_ref <= exercise.tol_reference and e_ind <= exercise.tol_independent
    return Row(problem.name, e_ref, e_ind, "", bool(ok))


def grade_function(prepared: Prepared, name: str, calls: dict, indices, points: float, group: str = "",
                   stopped: Call | None = None) -> Result:
    """Grade function ``name`` on problems ``indices`` from ``calls`` {index: Call} (missing where
    it was not run), worth ``points`` when it passes all of them.  ``stopped``: the call (of any
    group) after which the function was not run any more."""
    exercise, indices = prepared.exercise, list(indices)
    result = Result(name, "pass", max_points=float(points), group=group)
    stub = next((c for c in [stopped, *calls.values()] if c is not None and c.stub), None)
    if stub is not None:
        result.status, result.hint = "not attempted", f"still a stub: {stub.error}"
        return result
    answers = []
    for k in indices:
        pb, ref, call, answer = prepared.problems[k], prepared.references[name][k], calls.get(k), None
        if call is None:
            row = Row(pb.name, note="not run")
            result.hint = result.hint or (f"not run, as an earlier call failed: {stopped.error}"
                                          if stopped is not None else "")
        elif not call.returned:
            row = Row(pb.name, note=call.note or "no answer")
            result.hint = result.hint or f"on problem '{pb.name}': {call.error}"
        else:                                       # the piece this function grades (``Exercise.part``)
            answer, note = exercise.part(name, call.answer) if exercise.part else (call.answer, "")
            row = Row(pb.name, note=note) if note else exercise.compare(name, pb, answer, ref, exercise)
        result.rows.append(replace(row, cpu=call.cpu) if call is not None else row)
        answers.append(answer)
    errors = [e for r in result.rows if r.note != "not run" for e in (r.err_reference, r.err_independent)]
    result.max_rel = max(errors) if errors else float("nan")
    if all(r.ok for r in result.rows):
        result.points = float(points)
        return result
    result.status = "FAIL"
    if not result.hint:                             # known mistakes are matched on the small problems
        small = [j for j, k in enumerate(indices) if k != prepared.budget]
        keep = small if any(not result.rows[j].ok for j in small) else list(range(len(indices)))
        result.hint = hint_for(prepared, name, [answers[j] for j in keep], [result.rows[j] for j in keep],
                               [indices[j] for j in keep])
    return result

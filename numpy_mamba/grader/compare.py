"""The parent's side of grading: from what a function returned to pass / FAIL and a hint.

No student code runs here.  The child (``child.py``) sends what each call returned, and
``sandbox.py`` decodes it into plain objects: an ndarray of a numeric dtype, None, ``Items``
(a returned tuple or list, item by item) or ``Other`` (anything else, by its type's name).
``compare_array`` checks one answer that should be one array: the dtype (real float64: complex,
integer, bool and float32 fail), the shape, finiteness, then the relative error against the
package's answer and against the independent check.  ``grade_function`` turns one function's
calls into a ``Result`` with points and, when it fails, a hint (``hints.py``).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .hints import hint_for, rel_error
from .protocol import Call, Items, Other  # noqa: F401  (what a call returned)
from .registry import Prepared, Row


@dataclass
class Result:
    """One graded function: status "pass", "FAIL", "not attempted" (a stub, or not defined)."""

    name: str
    status: str
    max_rel: float = float("nan")
    hint: str = ""
    rows: list = field(default_factory=list)
    points: float = 0.0
    max_points: float = 0.0
    defined: bool = True


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


def grade_function(prepared: Prepared, name: str, calls: list) -> Result:
    """Grade function ``name`` from its calls (a Call, or None where it was not run, per problem)."""
    exercise, problems = prepared.exercise, prepared.problems
    points = next(f.points for f in exercise.functions if f.name == name)
    result = Result(name, "pass", max_points=float(points))
    stub = next((c for c in calls if c is not None and c.stub), None)
    if stub is not None:
        result.status, result.hint = "not attempted", f"still a stub: {stub.error}"
        return result
    answers = []
    for pb, ref, call in zip(problems, prepared.references[name], calls):
        answer = None
        if call is None:
            result.rows.append(Row(pb.name, note="not run"))
        elif not call.returned:
            result.rows.append(Row(pb.name, note=call.note or "no answer"))
            result.hint = result.hint or f"on problem '{pb.name}': {call.error}"
        else:                                       # the piece this function grades (``Exercise.part``)
            answer, note = exercise.part(name, call.answer) if exercise.part else (call.answer, "")
            result.rows.append(Row(pb.name, note=note) if note else exercise.compare(name, pb, answer, ref, exercise))
        answers.append(answer)
    errors = [e for r in result.rows for e in (r.err_reference, r.err_independent)]
    result.max_rel = max(errors) if errors else float("nan")
    if all(r.ok for r in result.rows):
        result.points = float(points)
        return result
    result.status = "FAIL"
    if not result.hint:
        result.hint = hint_for(prepared, name, answers, result.rows)
    return result

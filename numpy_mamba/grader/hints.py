"""Turning a failed function into one hint (``compare.grade_function`` calls ``hint_for``).

In order: an answer that is not a real float64 array (None, a tuple, complex, integers,
float32, NaN); an answer within NEAR of the reference where it fails (digits missing: a finite
difference), the other failures explained by their problem's note; a known mistake of the exercise that reproduces the answer on every problem;
a wrong shape (the exercise's own shape hints first, then transposed, one answer per prompt,
the right entries in another shape); all zeros; a constant factor (-1: the sign) or one that
changes with the problem; a known mistake on some problems; a failure on one kind of problem
only (the exercise's ``problem_notes``); else the equation to compare with, and where it fails.
Every branch works on any answer the child can send: nothing here may raise.
"""
from __future__ import annotations

import numpy as np

TOL_MISTAKE = 1e-6      # an answer "is" a known mistake when it matches it this closely
NEAR = 1e-7             # failing everywhere by less than this: right formula, digits missing
NAN_HINT = ("Compute sigma with scipy.special.expit, 1 - sigma(a) as expit(-a), and never divide "
            "by a product of (1 - sigma) factors: with |w^T p| ~ 40 they underflow to 0.")


def rel_error(a, b) -> float:
    """||a - b|| / max(1e-12, ||a|| + ||b||) for arrays of one shape; inf if not finite."""
    with np.errstate(all="ignore"):
        value = float(np.linalg.norm(a - b) / max(1e-12, np.linalg.norm(a) + np.linalg.norm(b)))
    return value if np.isfinite(value) else float("inf")


def _same(S, V) -> bool:
    return isinstance(V, np.ndarray) and S.shape == V.shape and rel_error(S, V) <= TOL_MISTAKE


def _note_hint(note: str, R) -> str:
    """The hint for an answer that is not a comparable array (``compare.answer_note``)."""
    if note == "returned None":
        return "returned None: a missing `return` statement?"
    if note.startswith("returned a Params"):
        return (f"{note}: return only the gradient this function computes, one array of shape "
                f"{R.shape} (the matching field, e.g. `.W_C`).")
    if note.startswith("returned"):
        return f"{note}; expected one array of shape {R.shape}."
    if note.startswith("complex"):
        return (f"{note}: the loss and its gradient are real, so a complex number entered somewhere "
                "(1j, np.sqrt or a fractional power of a negative number, np.fft). Return real float64.")
    if note.startswith("dtype") and ("int" in note or "bool" in note):
        return (f"{note}: the array was made with an integer or boolean dtype (np.zeros(..., dtype=int), "
                "np.zeros_like of an integer array, ...); build it as float64.")
    if note.startswith("dtype"):
        return f"{note}: compute in float64; the tolerance 1e-8 is below float32's precision (~1e-7)."
    return note


def _shape_hint(S, R) -> str:
    """Generic hints for an array of the wrong shape."""
    head = f"wrong shape {S.shape}, expected {R.shape}"
    if R.ndim == 2 and S.shape == R.T.shape:
        return (f"{head}: transposed? Check the order of the outer product (column vector times row "
                "vector) or of the axes.")
    if S.ndim == R.ndim + 1 and S.shape[1:] == R.shape:
        if _same(S.mean(axis=0), R):
            return (f"{head}: you returned one answer per prompt; the loss is the MEAN over the batch, "
                    "so average them (axis 0).")
        return f"{head}: one answer per prompt? Return the answer for the MEAN loss over the batch."
    if S.ndim == 0:
        return f"{head}: a single number (a sum over every axis?)."
    if S.size == R.size:
        return f"{head}: the right number of entries in another shape; a reshape, or an axis swapped?"
    return f"{head}."


def _factor_hint(answers, refs, bad) -> str:
    pairs = [(answers[i], refs[i]) for i in bad if np.vdot(refs[i], refs[i]) > 0]
    if not pairs:
        return ""
    with np.errstate(all="ignore"):
        factors = [float(np.vdot(S, R) / np.vdot(R, R)) for S, R in pairs]
    if not all(np.isfinite(c) and _same(S, c * R) for c, (S, R) in zip(factors, pairs)):
        return ""
    c = factors[0]
    if np.ptp(factors) <= 1e-6 * max(1.0, abs(c)):
        if abs(c + 1.0) < 1e-6:
            return "wrong sign: your answer is minus the reference on every failing problem."
        return f"off by a constant factor {c:.6g} (on every failing problem)."
    shown = ", ".join(f"{f:.4g}" for f in factors[:4])
    return (f"off by a factor that changes from problem to problem ({shown}): one that depends on "
            "the problem's size (B, l, d)?")


def hint_for(prepared, name: str, answers: list, rows: list, indices: list) -> str:
    """One hint for function ``name`` that failed with these answers and rows on problems ``indices``."""
    exercise, problems = prepared.exercise, [prepared.problems[k] for k in indices]
    refs = [prepared.references[name][k].value for k in indices]
    for pb, R, row in zip(problems, refs, rows):
        if row.note == "NaN or inf":
            return f"NaN or inf on problem '{pb.name}'. {NAN_HINT}"
        if row.note and not row.note.startswith("shape") and row.note != "not run":
            return f"on problem '{pb.name}': {_note_hint(row.note, R)}"
    if not all(isinstance(S, np.ndarray) for S in answers):
        return "no answer on some problems."
    answers = [S.astype(np.float64) for S in answers]
    bad = [i for i, row in enumerate(rows) if not row.ok]
    near = [i for i in bad if rows[i].err_reference <= NEAR]
    far = [problems[i].name for i in bad if i not in near]
    noted = [next((text for key, text in exercise.problem_notes.items() if n.startswith(key)), "") for n in far]
    if near and all(noted):
        worst = max(rows[i].err_reference for i in near)
        hint = (f"close to the analytic answer but not equal to it: {worst:.1e} off, above the tolerance "
                f"{exercise.tol_reference:g} that every analytic solution meets. A finite difference (or "
                "float32) gives about this; derive it instead.")
        return hint + "".join(f" On '{n}': {text}" for n, text in zip(far, noted))
    per_problem = [prepared.mistaken(name, k) for k in indices]
    mistaken = [(key, hint, [m[j][2] for m in per_problem]) for j, (key, hint, _) in enumerate(per_problem[0])]
    for key, hint, wrong in mistaken:
        if all(_same(S, V) for S, V in zip(answers, wrong)):
            return hint
    for pb, S, R, row in zip(problems, answers, refs, rows):
        if row.note.startswith("shape"):
            return f"on problem '{pb.name}': " + (exercise.shape_hint(name, S, R, pb) or _shape_hint(S, R))
    failing = [problems[i].name for i in bad]
    if all(not np.any(answers[i]) for i in bad) and any(np.any(refs[i]) for i in bad):
        return ("all zeros where the reference is not: is a condition never true, or a sum never "
                "accumulated (`=` instead of `+=`)?")
    factor = _factor_hint(answers, refs, bad)
    if factor:
        return factor
    for key, hint, wrong in mistaken:
        hits = [problems[i].name for i in bad if _same(answers[i], wrong[i]) and not _same(refs[i], wrong[i])]
        if hits:
            return f"on '{hits[0]}' your answer matches a known mistake: {hint}"
    for key, text in exercise.problem_notes.items():
        if len(failing) == 1 and failing[0].startswith(key):
            return f"fails only on '{failing[0]}': check {text}"
    equation = next(f.equation for f in exercise.functions if f.name == name).split(":")[0]
    return (f"matches no known mistake; compare with {equation} term by term (failing on: "
            f"{', '.join(failing)}).")

"""``python -m numpy_mamba grade PATH/TO/student_file.py``: the autograder of the exercises in
tutorials/exercises/ (see tutorials/README.md).

It imports the student's file and checks every exercise function it defines:

    gates(w, P)             -> (B, l+1)   G_{i,l+1}(w) of eq (3), P batched (B, d+1, l+1)
    grad_W_C(params, P, z)  -> (m, d+1)   d(mean hinge loss)/dW_C, eq (93)
    grad_W_B(params, P, z)  -> (m, d+1)   d(mean hinge loss)/dW_B, eq (118)
    grad_w(params, P, z)    -> (d+1,)     d(mean hinge loss)/dw,   eq (135)

on the seeded problems of ``problems.py`` (l = 1, saturated gates, both sides of the hinge,
...), against the package and against an independent check (central finite differences; for the
gates, the literal eq (1) scan).  It prints one table per function and a summary, with a hint
when an answer matches a known mistake.  Exit status: 0 when every function the file defines
passes; 1 when one fails, raises, is still a stub (NotImplementedError) or none is defined;
2 when the file cannot be imported.  A function the file does not define is "not attempted".
"""
from __future__ import annotations

import argparse
import contextlib
import importlib.util
import signal
import sys
import threading
import textwrap
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .hints import diagnose, match_mistake, rel_error
from .problems import Problem, make_problems
from ..gradients import gradients
from ..model import gating, scores
from ..scan import recurrent_forward

TOL_REFERENCE = 1e-8    # float64 answers that differ only in summation order agree to ~1e-15
TIME_LIMIT = 10.0       # seconds per student call on one small problem (a reference call takes ~1 ms)
TOL_SECOND = 1e-6       # central differences (eps = 1e-5) agree with the truth to ~1e-10 here

# name -> (parameter of Params or None for the gates, signature, what it computes)
EXERCISES = {
    "gates": (None, "gates(w, P) -> (B, l+1)", "eq (3): G_{i,l+1}(w)"),
    "grad_W_C": ("W_C", "grad_W_C(params, P, z) -> (m, d+1)", "eq (93): dL/dW_C"),
    "grad_W_B": ("W_B", "grad_W_B(params, P, z) -> (m, d+1)", "eq (118): dL/dW_B"),
    "grad_w": ("w", "grad_w(params, P, z) -> (d+1,)", "eq (135): dL/dw"),
}


class GraderError(Exception):
    """The student's file could not be loaded."""


@dataclass
class Result:
    """Outcome for one exercise function: status is "pass", "FAIL" or "not attempted"."""

    name: str
    status: str
    max_rel: float = float("nan")
    hint: str = ""
    rows: list = field(default_factory=list)      # (problem, rel. vs package, rel. vs check, note)
    defined: bool = True                          # False: the file has no such function


def load_student(path) -> object:
    """Import the student's file as a module; ``GraderError`` with a readable message if not."""
    path = Path(path)
    if not path.is_file():
        raise GraderError(f"no such file: {path}")
    spec = importlib.util.spec_from_file_location(f"student_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise GraderError(f"{path} is not a Python file (expected a .py file).")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module                           # dataclasses in student code need it
    sys.path.insert(0, str(path.parent.resolve()))            # helpers next to the student's file
    try:
        spec.loader.exec_module(module)
    except BaseException as exc:  # SyntaxError, ImportError, SystemExit, ... from student code
        sys.modules.pop(spec.name, None)
        raise GraderError(f"could not import {path}:\n{_student_traceback(exc, path)}") from None
    finally:
        sys.path.remove(str(path.parent.resolve()))
    return module


def _student_traceback(exc, path=None) -> str:
    lines = traceback.format_exception_only(type(exc), exc)
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if path is None or Path(f.filename).name == Path(path).name]
    where = f" (line {frames[-1].lineno}: {frames[-1].line})" if frames else ""
    return "".join(lines).strip() + where


class StudentTimeout(Exception):
    """A student's function ran longer than the grader allows for one problem."""


@contextlib.contextmanager
def time_limit(seconds: float):
    """Raise ``StudentTimeout`` after ``seconds`` (POSIX main thread; elsewhere no limit)."""
    if not hasattr(signal, "SIGALRM") or threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, frame):
        raise StudentTimeout(f"took longer than {seconds:g} s on one small problem (an endless loop?)")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _call(fn, name, pb: Problem):
    """Run the student's function on copies (so it cannot alter the problem), with a time limit."""
    params = type(pb.params)(*(a.copy() for a in pb.params))
    with np.errstate(all="ignore"), time_limit(TIME_LIMIT):
        if name == "gates":
            return fn(params.w, pb.P.copy())
        return fn(params, pb.P.copy(), pb.z.copy())


def _reference(name, pb: Problem):
    """(package answer, independent check) for one problem."""
    if name == "gates":
        G = gating(pb.params.w, pb.P)
        return G, None
    field_name = EXERCISES[name][0]
    return getattr(gradients(pb.params, pb.P, pb.z), field_name), getattr(pb.numerical, field_name)


def _scan_check(S, pb: Problem) -> float:
    """Relative error between F built from the student's gates and the literal eq (1) scan."""
    d0 = pb.P.shape[1]
    W = np.zeros((d0, d0))
    W[:, -1] = pb.params.w                                    # the gate uses w = w_{d+1}
    F_scan = recurrent_forward(pb.params.W_B, pb.params.W_C, W, pb.P)
    F_student = np.sum(S * pb.P[:, -1, :] * scores(pb.params, pb.P), axis=1)
    return rel_error(F_student, np.atleast_1d(F_scan))


def grade_function(fn, name: str, problems: list[Problem]) -> Result:
    """Check one student function on every problem and diagnose a failure."""
    result = Result(name, "pass")
    answers = []
    for pb in problems:
        ref, check = _reference(name, pb)
        try:
            out = _call(fn, name, pb)
        except NotImplementedError as exc:
            return Result(name, "not attempted", hint=f"still a stub: NotImplementedError: {exc}")
        except (Exception, SystemExit) as exc:
            source = getattr(getattr(fn, "__code__", None), "co_filename", None)
            return Result(name, "FAIL", np.inf,
                          f"raised on problem '{pb.name}': {_student_traceback(exc, source)}")
        try:
            S = np.asarray(out, dtype=np.float64)
        except (TypeError, ValueError):
            return Result(name, "FAIL", np.inf, f"returned {type(out).__name__}, not an array of numbers.")
        if S.shape == ref.shape and not np.all(np.isfinite(S)):
            return Result(name, "FAIL", np.inf,
                          f"NaN or inf on problem '{pb.name}'. Compute sigma with scipy.special.expit, "
                          "1 - sigma(a) as expit(-a), and never divide by a product of (1 - sigma) "
                          "factors: with |w^T p| ~ 40 they underflow to 0.")
        if S.shape != ref.shape:
            result.rows.append((pb.name, np.inf, np.inf, f"shape {S.shape}, expected {ref.shape}"))
        else:
            second = _scan_check(S, pb) if name == "gates" else rel_error(S, check)
            result.rows.append((pb.name, rel_error(S, ref), second, ""))
        answers.append(S)
    result.max_rel = max(max(r[1], r[2]) for r in result.rows)
    failing = [r[0] for r in result.rows if r[1] > TOL_REFERENCE or r[2] > TOL_SECOND]
    if failing:
        result.status = "FAIL"
        result.hint = match_mistake(name, answers, problems) or diagnose(name, answers, problems, failing)
    return result


def grade_module(module, problems: list[Problem]) -> list[Result]:
    """Grade every exercise function ``module`` defines; absent ones are "not attempted"."""
    results = []
    for name in EXERCISES:
        fn = getattr(module, name, None)
        if fn is None:
            results.append(Result(name, "not attempted", hint="not defined in the file", defined=False))
        elif not callable(fn):
            results.append(Result(name, "FAIL", np.inf, f"{name} is a {type(fn).__name__}, not a function"))
        else:
            results.append(grade_function(fn, name, problems))
    return results


def format_report(results: list[Result]) -> str:
    """One table per graded function, then a summary table."""
    out = []
    for r in results:
        if not r.rows:
            continue
        _, signature, what = EXERCISES[r.name]
        second = "vs eq (1) scan" if r.name == "gates" else "vs finite diff."
        out += [f"{signature}    {what}",
                f"  {'problem':<32}{'vs package':>12}{second:>17}  result"]
        for problem, e_ref, e_second, note in r.rows:
            if note:
                out.append(f"  {problem:<32}{note:>29}  FAIL")
                continue
            ok = "ok" if e_ref <= TOL_REFERENCE and e_second <= TOL_SECOND else "FAIL"
            out.append(f"  {problem:<32}{e_ref:>12.1e}{e_second:>17.1e}  {ok}")
        out.append("")
    out += [f"{'function':<10}{'result':<15}{'max rel. error':>15}", "-" * 40]
    for r in results:
        err = "-" if np.isnan(r.max_rel) else f"{r.max_rel:.1e}"
        out.append(f"{r.name:<10}{r.status:<15}{err:>15}")
        if r.hint:
            out += textwrap.wrap(r.hint, 92, initial_indent="          hint: ",
                                 subsequent_indent="                ")
    out.append(f"(tolerances: {TOL_REFERENCE:g} vs the package, {TOL_SECOND:g} vs the check)")
    return "\n".join(out)


def exit_status(results: list[Result]) -> int:
    """0 when every defined function passes (and at least one is defined), else 1."""
    defined = [r for r in results if r.defined]
    return 0 if defined and all(r.status == "pass" for r in defined) else 1


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m numpy_mamba grade", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("path", help="the student's .py file (e.g. tutorials/exercises/gradients.py)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the grading problems (default 0)")
    args = parser.parse_args(argv)
    try:
        module = load_student(args.path)
    except GraderError as exc:
        print(f"grade: {exc}", file=sys.stderr)
        return 2
    results = grade_module(module, make_problems(args.seed))
    print(f"grading {args.path} (seed {args.seed})\n")
    print(format_report(results))
    status = exit_status(results)
    if not any(r.defined for r in results):
        print(f"\nnone of {', '.join(EXERCISES)} is defined in {args.path}.")
    print("\nALL PASSED" if status == 0 else "\nNOT ALL PASSED")
    return status

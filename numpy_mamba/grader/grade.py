"""One submission, start to finish: its files, its exercise, its children, its graded functions.

``grade_submission`` reads the file (measured first: ``sandbox.read_source``; a notebook's code
cells: ``notebook.py``), finds the ONE exercise it is graded as from its top-level names
(``choose``), and copies it with its helper modules (``helpers_of``) into a ``sandbox.Folder``.
A child imports the copy and calls the exercise's functions on the small problems; when a call
ends its child (a limit, os._exit, a crash), that function fails and the ones after it are
graded in a fresh child.  Each function defined then gets a child of its own for the
paper-size problem, within the exercise's CPU and memory budget.  Every answer is compared in
this process (``compare.py``), on the public problems and the hidden ones apart.  Whatever goes
wrong with one file (unreadable, too large, a full disk, a fork that fails) fails that file with
a message; ``grade_many`` grades several, ``jobs`` at a time, and always returns every row.
"""
from __future__ import annotations

import threading
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

from . import sandbox
from .children import Calls, SandboxFailed, over_budget, run_calls
from .compare import Result, grade_function
from .files import helpers_of, inside, source_of
from .problems import forward_seconds
from .registry import all_exercises, identify, prepare, top_level_names
from .sandbox import StagingError, shown


class GraderError(Exception):
    """The grader itself could not grade (an exercise could not be prepared): not the student's fault."""


@dataclass(frozen=True)
class Limits:
    """Per child: CPU seconds of its own for the import and every call; memory in MB."""

    time: float = 10.0
    memory_mb: int = 1024

    def child(self) -> sandbox.Limits:
        return sandbox.Limits(self.time, self.memory_mb, wall=10 * self.time + 30)


@dataclass
class Graded:
    """One exercise of one submission; ``import_error`` set when the file did not import;
    ``hidden_left``: hidden problems this run left out (a student's own run)."""

    exercise: object
    results: list = field(default_factory=list)
    import_error: str = ""
    hidden_left: int = 0


@dataclass
class Submission:
    path: Path
    graded: list = field(default_factory=list)
    problem: str = ""               # why nothing was graded: unreadable, does not parse, no exercise, ...
    grader_error: str = ""          # the grader failed on this file (not the student's doing)
    output: str = ""                # what the file printed (trimmed)
    output_bytes: int = 0
    source: bytes = b""             # what was graded (a notebook: its code cells), for the similarity flag

    @property
    def results(self) -> list:
        return [r for g in self.graded for r in g.results]

    @property
    def imported(self) -> bool:
        return not self.problem.startswith("could not import") and not any(g.import_error for g in self.graded)

    @property
    def error(self) -> str:
        """Why the file earned nothing as a whole: an import error, or why it was not graded."""
        return next((g.import_error for g in self.graded if g.import_error), "") or self.problem or self.grader_error

    @property
    def points(self) -> float:
        return sum(r.points for r in self.results)

    @property
    def max_points(self) -> float:
        """The points this run could give (a student's own run: the public problems' share)."""
        return sum(sum(r.max_points for r in g.results) if g.results else g.exercise.max_points for g in self.graded)

    @property
    def passed(self) -> bool:
        defined = [r for r in self.results if r.defined]
        return self.imported and not self.problem and not self.grader_error and bool(defined) \
            and all(r.status == "pass" for r in defined)


class Session:
    """The prepared exercises of one grading run, computed once.  ``points``: {function: points}
    replacing the exercises' own; ``hidden``: problem-name prefixes hidden from students (None:
    each exercise's own); ``public_only``: grade the public problems only (a student's own run);
    ``isolation``: the tier every child gets (default: the best this machine offers)."""

    def __init__(self, seed: int = 0, limits: Limits = Limits(), points: dict | None = None, hidden=None,
                 public_only: bool = False, isolation=None):
        self.seed, self.limits, self.points, self.hidden = seed, limits, dict(points or {}), hidden
        self.public_only, self._prepared, self._lock = public_only, {}, threading.Lock()
        self.isolation = isolation or sandbox.isolation()

    def exercise(self, exercise):
        """``exercise`` with the instructor's points."""
        if not any(f.name in self.points for f in exercise.functions):
            return exercise
        return replace(exercise, functions=tuple(f._replace(points=self.points.get(f.name, f.points))
                                                 for f in exercise.functions))

    def prepared(self, exercise):
        with self._lock:
            if exercise.name not in self._prepared:
                try:
                    self._prepared[exercise.name] = prepare(self.exercise(exercise), self.seed, self.hidden)
                except Exception as exc:                # a declaration that cannot be served
                    raise GraderError(f"could not prepare exercise {exercise.name!r}: "
                                      f"{type(exc).__name__}: {exc}") from exc
            return self._prepared[exercise.name]

    def budget_limits(self, exercise) -> sandbox.Limits:
        """The paper-size problem's child: ``budget_units`` forward passes of CPU, its memory."""
        cpu = exercise.budget_units * forward_seconds()
        return sandbox.Limits(cpu, exercise.budget_memory_mb, wall=10 * cpu + 30)


def _syntax_message(exc: SyntaxError) -> str:
    line = (exc.text or "").strip()
    return f"SyntaxError: {exc.msg} (line {exc.lineno}: {line})" if exc.lineno else f"SyntaxError: {exc.msg}"


def _grade_exercise(staged: Path, exercise, session: Session, folder, sub: Submission) -> Graded:
    """Grade the staged copy as ``exercise``: the small problems this run wants, then each entry
    with a part that passed them on the paper-size problem within its budget; the results."""
    prepared = session.prepared(exercise)
    exercise = prepared.exercise
    graded = Graded(exercise)
    wanted = [k for k in range(len(prepared.problems)) if not (session.public_only and prepared.hidden[k])]
    graded.hidden_left = len(prepared.problems) - len(wanted)
    small = [k for k in wanted if k != prepared.budget]

    def job_of(entries, indices):
        calls, arrays = prepared.calls(entries, indices)
        return sandbox.Job(staged, exercise.name, exercise.allowed, prepared.kit.source, prepared.kit.modules,
                           tuple(entries), calls, arrays)
    out = run_calls(job_of, list(exercise.entries), small, folder, session.isolation, session.limits.child(), sub)
    if out.defined is None:
        graded.import_error = out.import_error
        return graded
    if prepared.budget in wanted:                           # entries with a part passing the small problems
        limits = session.budget_limits(exercise)
        for entry in [e for e in exercise.entries if out.defined.get(e) == "function"]:
            calls = {k: out.calls.get((entry, k)) for k in small}
            if any(grade_function(prepared, f.name, calls, small, 0.0).status == "pass"
                   for f in exercise.functions if f.called == entry):
                extra = run_calls(job_of, [entry], [prepared.budget], folder, session.isolation, limits, sub)
                out.calls.update({key: over_budget(c, limits) for key, c in extra.calls.items()})
    graded.results = [r for f in exercise.functions for r in _results(prepared, f, out, wanted)]
    return graded


def _shares(prepared, f, wanted: list) -> list:
    """[(group, problem indices, points)] of function ``f``: its points split between the public
    and the hidden problems by their numbers ("" when none is hidden); the paper-size problem's
    budget counts in both, so that no share is earned over it."""
    if not any(prepared.hidden):
        return [("", wanted, float(f.points))]
    hidden = round(f.points * sum(prepared.hidden) / len(prepared.problems), 2)
    budget = [prepared.budget] if prepared.budget in wanted else []    # a budget holds in both groups
    groups = [("public", [k for k in wanted if not prepared.hidden[k]], f.points - hidden),
              ("hidden", [k for k in wanted if prepared.hidden[k]], hidden)]
    return [(g, ks + [k for k in budget if k not in ks] if g == "hidden" else ks, p) for g, ks, p in groups if ks]


def _results(prepared, f, out: Calls, wanted: list) -> list:
    """The Results of function ``f``: one per group of problems (public, hidden) this run graded."""
    shares = _shares(prepared, f, wanted)
    state = (out.defined or {}).get(f.called, "missing")
    points = sum(p for _, _, p in shares)
    if state == "missing":
        return [Result(f.name, "not attempted", hint=("not defined in the file" if f.called == f.name else
                                                      f"{f.called} is not defined in the file"),
                       max_points=points, defined=False)]
    if state != "function":
        return [Result(f.name, "FAIL", float("inf"), f"{f.called} is {state}", max_points=points)]
    calls = {k: out.calls.get((f.called, k)) for k in wanted}
    stopped = next((c for c in calls.values() if c is not None and not c.returned), None)
    return [grade_function(prepared, f.name, {k: calls[k] for k in ks}, ks, p, group, stopped)
            for group, ks, p in shares]


def choose(names, stem: str, exercise_name: str | None = None):
    """(the one exercise a file is graded as, or None, and why not)."""
    exercises = all_exercises()
    if exercise_name:
        return exercises[exercise_name], ""
    found = identify(names, stem)
    if len(found) == 1:
        return found[0], ""
    if not found:
        functions = ", ".join(n for e in exercises.values() for n in e.entries)
        return None, f"none of {functions} is defined in the file."
    return None, (f"the file defines functions of several exercises ({', '.join(e.name for e in found)}); "
                  f"a file is graded as one: name it after its exercise ({found[0].name}.py) or pass --exercise.")


def grade_submission(path, session: Session, exercise_name: str | None = None, folder=None,
                     helpers=None) -> Submission:
    """Grade one file as one exercise; every outcome of the student's code, and every failure of
    this process on this file, becomes part of the Submission.  ``folder``: the folder being
    graded (a symlink leaving it is refused; default: the file's own); ``helpers``: the helper
    modules it may import (default ``helpers_of(path)``)."""
    path = Path(path)
    sub = Submission(path)
    try:
        _grade_into(sub, path, session, exercise_name, folder, helpers)
    except StagingError as exc:
        sub.problem = f"not graded: {exc}"
    except SandboxFailed as exc:
        sub.grader_error = str(exc)
    except GraderError:
        raise
    except Exception as exc:                                # this process's fault, on this file only
        sub.grader_error = f"the grader failed on this file: {type(exc).__name__}: {exc}"
        sub.output += traceback.format_exc(limit=4)
    return sub


def _grade_into(sub: Submission, path: Path, session: Session, exercise_name, folder, helpers) -> None:
    folder = Path(folder) if folder is not None else path.absolute().parent
    if path.is_symlink() and not inside(path, folder):
        sub.problem = f"{shown(path)} is a symbolic link to a file outside {shown(folder)}: not graded."
        return
    if not path.exists():
        sub.problem = f"no such file: {shown(path)}"
        return
    source = sub.source = source_of(path, folder)
    name = (path.stem if path.stem.isidentifier() else "submission") + ".py"
    try:
        names = top_level_names(source, path)
    except SyntaxError as exc:
        named, _ = choose((), path.stem, exercise_name)         # the exercise it was meant to be
        if named is None:
            sub.problem = f"could not import {shown(path)}:\n{_syntax_message(exc)}"
        else:
            sub.graded = [Graded(session.exercise(named), import_error=_syntax_message(exc))]
        return
    except (ValueError, RecursionError, MemoryError) as exc:
        sub.problem = f"could not import {shown(path)}: {type(exc).__name__}: {exc}"
        return
    exercise, why = choose(names, path.stem, exercise_name)
    if exercise is None:
        sub.problem = f"{shown(path)}: {why}"
        return
    helpers = helpers_of(path) if helpers is None else list(helpers)
    if len(helpers) > sandbox.MAX_HELPERS:
        sub.problem = (f"not graded: more than {sandbox.MAX_HELPERS} helper modules next to {shown(path.name)}; "
                       "give each submission a folder of its own")
        return
    copies = {h.name: source_of(h, folder) for h in helpers if h.name.isascii() and h.stem.isidentifier()}
    with sandbox.Folder() as box:
        staged = box.stage(name, source, copies)
        sub.graded = [_grade_exercise(staged, exercise, session, box, sub)]


def grade_many(paths, session: Session, jobs: int = 1, exercise_name: str | None = None, folders=None,
               helpers=None) -> list:
    """Grade each file in its own children, ``jobs`` at a time; results in the order given.
    ``folders``: per file, the folder it was found in; ``helpers``: per file, its helper modules."""
    n = len(paths)
    folders = list(folders) if folders is not None else [None] * n
    helpers = list(helpers) if helpers is not None else [None] * n
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return list(pool.map(lambda k: grade_submission(paths[k], session, exercise_name, folders[k], helpers[k]),
                             range(n)))

"""One submission, start to finish: its files, its exercise, its children, its graded functions.

``grade_submission`` reads the file (opened without following links and measured first: ``files.source_of``; a notebook's code
cells: ``notebook.py``), finds the ONE exercise it is graded as from its top-level names
(``choose``), and copies it with its helper modules (``helpers_of``) into a ``sandbox.Folder``.
A child imports the copy and calls the exercise's functions on the public problems; when a call
ends its child (a limit, os._exit, a crash), that function fails and the ones after it are
graded in a fresh child.  Each function defined then gets a child of its own for the budget
problem (``Exercise.budget``: the largest, within the exercise's CPU and memory budget), and the
hidden problems run last, in children of their own that saw no public problem: nothing of a
hidden problem reaches a public result, and what a file printed is what the public problems'
children printed.  Every answer is compared in this process (``compare.py``), on the public
problems and the hidden ones apart.  Whatever goes wrong with one file (unreadable, too large,
not Python, a full disk, a fork that fails) fails that file with a message, out of the points of
the exercise it was meant for when that is known (``assigned``); ``grade_many`` grades several,
``jobs`` at a time, and always returns every row.
"""
from __future__ import annotations

import re
import threading
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

from . import sandbox
from .children import Calls, SandboxFailed, over_budget, run_calls
from .compare import Result, grade_function
from .files import helpers_of, inside, source_of
from .notebook import cell_of
from .registry import all_exercises, identify, prepare, top_level_names
from .sandbox import Call, StagingError, shown


ENDED = ("time limit", "stopped", "process ended")     # a call that ended its child (children._note)


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
    sources: dict = field(default_factory=dict)    # {file name: bytes} it ran (a notebook: its code cells;
                                                   # its helpers after it), for the similarity flag
    assigned: object = None         # the exercise it is meant for (--exercise, its name, ...), graded or not

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
        """The points this run could give (a student's own run: the public problems' share); a
        file not graded: its assigned exercise's points (0 when no exercise is known)."""
        if not self.graded:
            return self.assigned.max_points if self.assigned is not None else 0.0
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
    ``isolation``: the tier every child gets (default: the best this machine offers);
    ``budget_scale``: the CPU budgets times this (``margins.py`` measures beyond them)."""

    def __init__(self, seed: int = 0, limits: Limits = Limits(), points: dict | None = None, hidden=None,
                 public_only: bool = False, isolation=None, budget_scale: float = 1.0):
        self.seed, self.limits, self.points, self.hidden = seed, limits, dict(points or {}), hidden
        self.public_only, self._prepared, self._lock = public_only, {}, threading.Lock()
        self.isolation, self.budget_scale = isolation or sandbox.isolation(), budget_scale

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

    def budget_limits(self, prepared) -> sandbox.Limits:
        """The budget problem's child: ``budget_units`` forward passes of CPU for the call, the
        budget's memory; importing the file first has the time limit of every child."""
        cpu = prepared.exercise.budget_units * prepared.unit * self.budget_scale
        return sandbox.Limits(cpu, prepared.exercise.budget_memory_mb, wall=10 * cpu + 30 + self.limits.time,
                              import_cpu=self.limits.time)


def syntax_message(exc: SyntaxError, source: bytes = b"", notebook: bool = False) -> str:
    """A SyntaxError as Python shows it: what and where, then the student's line on a line of
    its own with a caret under the column (a notebook: its cell and line in the cell)."""
    if not exc.lineno:
        return f"SyntaxError: {exc.msg}"
    where = f"line {exc.lineno}"
    if notebook:
        where = cell_of(source.decode("utf-8", "replace"), exc.lineno) or where
    text = (exc.text or "").rstrip("\r\n")
    if not text.strip():
        return f"SyntaxError: {exc.msg} ({where})"
    indent = len(text) - len(text.lstrip())
    caret = " " * max(0, (exc.offset or 1) - 1 - indent) + "^"
    return f"SyntaxError: {exc.msg} ({where}):\n    {text.strip()}\n    {caret}"


def _grade_exercise(staged: Path, exercise, session: Session, folder, sub: Submission) -> Graded:
    """Grade the staged copy as ``exercise``: the public problems, each entry with a part that
    passed them on the budget problem, then the hidden problems in children of their own."""
    prepared = session.prepared(exercise)
    exercise = prepared.exercise
    graded = Graded(exercise)
    small = [k for k in range(len(prepared.problems)) if k != prepared.budget]
    public = [k for k in small if not prepared.hidden[k]]
    hidden = [k for k in small if prepared.hidden[k]]

    def run(entries, indices, limits, shown=True) -> Calls:
        def job_of(todo, ks):
            calls, arrays = prepared.calls(todo, ks)
            return sandbox.Job(staged, exercise.name, exercise.allowed, prepared.kit.source, prepared.kit.modules,
                               tuple(todo), calls, arrays)
        return run_calls(job_of, list(entries), indices, folder, session.isolation, limits, sub if shown else None)
    out = run(exercise.entries, public, session.limits.child())
    if out.defined is None:
        graded.import_error = out.import_error
        return graded
    defined = [e for e in exercise.entries if out.defined.get(e) == "function"]
    for entry in defined if prepared.budget is not None else []:
        calls = {k: out.calls.get((entry, k)) for k in public}
        if any(grade_function(prepared, f.name, calls, public, 0.0).status == "pass"
               for f in exercise.functions if f.called == entry):
            held = any(f.called == entry and f.name in exercise.budgeted for f in exercise.functions)
            limits = session.budget_limits(prepared) if held else session.limits.child()
            extra = run([entry], [prepared.budget], limits, shown=False)      # its import printed once already
            out.calls.update({key: over_budget(c, limits) if held else c for key, c in extra.calls.items()})
    ended = {e for (e, k), c in out.calls.items() if k in public and c.note in ENDED}
    again = [e for e in defined if e not in ended]              # one that ended its child: not again
    if hidden and not session.public_only and again:
        secret = run(again, hidden, session.limits.child(), shown=False)
        why = secret.import_error and f"the file did not import again: {secret.import_error}"
        out.calls.update(secret.calls if not why else {(e, k): Call(error=why, note="import error")
                                                       for e in again for k in hidden})
    graded.hidden_left = len(hidden) if session.public_only else 0
    graded.results = [r for f in exercise.functions
                      for r in _results(prepared, f, out, public, [] if session.public_only else hidden)]
    return graded


def _shares(prepared, f, public: list, hidden: list) -> list:
    """[(group, problem indices, points)] of function ``f``: its points split between the public
    and the hidden problems by their numbers ("" when none is hidden); the budget problem is public."""
    public = public + ([prepared.budget] if prepared.budget is not None else [])
    n_hidden = sum(prepared.hidden)
    if not n_hidden:
        return [("", public, float(f.points))]
    share = round(f.points * n_hidden / len(prepared.problems), 2)
    return [("public", public, f.points - share)] + ([("hidden", hidden, share)] if hidden else [])


def _results(prepared, f, out: Calls, public: list, hidden: list) -> list:
    """The Results of function ``f``: one per group of problems (public, hidden) this run graded;
    the hidden share counts only once the budget problem (public) passed."""
    shares = _shares(prepared, f, public, hidden)
    state = (out.defined or {}).get(f.called, "missing")
    points = sum(p for _, _, p in shares)
    if state == "missing":
        return [Result(f.name, "not attempted", hint=("not defined in the file" if f.called == f.name else
                                                      f"{f.called} is not defined in the file"),
                       max_points=points, defined=False)]
    if state != "function":
        return [Result(f.name, "FAIL", float("inf"), f"{f.called} is {state}", max_points=points)]
    results, stopped = [], None
    for group, ks, p in shares:                     # hidden calls not run: stopped by the public one
        calls = {k: out.calls.get((f.called, k)) for k in ks}
        stopped = next((c for c in calls.values() if c is not None and not c.returned), stopped)
        results.append(grade_function(prepared, f.name, calls, ks, p, group, stopped))
    budget_ok = prepared.budget is None or bool(results[0].rows) and results[0].rows[-1].ok
    if len(results) == 2 and results[1].points and not budget_ok:
        results[1] = replace(results[1], status="FAIL", points=0.0, hint="; ".join(h for h in (
            results[1].hint, "counts once the largest problem (public) passes within its budget") if h))
    return results


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


DEFINES = re.compile(r"^[ \t]*(?:async[ \t]+)?def[ \t]+([A-Za-z_][A-Za-z_0-9]*)", re.MULTILINE)


def _grade_into(sub: Submission, path: Path, session: Session, exercise_name, folder, helpers) -> None:
    folder = Path(folder) if folder is not None else path.absolute().parent
    named, _ = choose((), path.stem, exercise_name)                # --exercise, or the file's name
    sub.assigned = session.exercise(named) if named is not None else None
    if path.is_symlink() and not inside(path, folder):
        sub.problem = f"{shown(path)} is a symbolic link to a file outside {shown(folder)}: not graded."
        return
    if not path.exists():
        sub.problem = f"no such file: {shown(path)}"
        return
    source = source_of(path, folder)
    name = (path.stem if path.stem.isidentifier() else "submission") + ".py"
    sub.sources = {name: source}
    try:
        names = top_level_names(source, path)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        why = (syntax_message(exc, source, path.suffix == ".ipynb") if isinstance(exc, SyntaxError)
               else f"{type(exc).__name__}: {exc}")
        if sub.assigned is None:                                 # the functions it tries to define
            meant, _ = choose(set(DEFINES.findall(source.decode("utf-8", "replace"))), path.stem)
            sub.assigned = session.exercise(meant) if meant is not None else None
        if sub.assigned is None:
            sub.problem = f"could not import {shown(path)}:\n{why}"
        else:
            sub.graded = [Graded(sub.assigned, import_error=why)]
        return
    exercise, why = choose(names, path.stem, exercise_name)
    if exercise is None:
        sub.problem = f"{shown(path)}: {why}"
        return
    sub.assigned = session.exercise(exercise)
    helpers = helpers_of(path) if helpers is None else list(helpers)
    if len(helpers) > sandbox.MAX_HELPERS:
        sub.problem = (f"not graded: more than {sandbox.MAX_HELPERS} helper modules next to {shown(path.name)}; "
                       "give each submission a folder of its own")
        return
    copies = {h.name: source_of(h, folder) for h in helpers if h.name.isascii() and h.stem.isidentifier()}
    sub.sources.update(sorted(copies.items()))
    with sandbox.Folder(landlock=session.isolation.landlock_abi >= 1) as box:
        staged = box.stage(name, source, copies)
        sub.graded = [_grade_exercise(staged, exercise, session, box, sub)]


def grade_many(paths, session: Session, jobs: int = 1, exercise_name: str | None = None, folders=None,
               helpers=None) -> list:
    """Grade each file in its own children, ``jobs`` at a time; results in the order given.
    ``folders``: per file, the folder it was found in; ``helpers``: per file, its helper modules.
    A file whose exercise is not known (it does not parse, it is not read, and neither
    --exercise nor its name says) is meant for the class's exercise when the class has one."""
    n = len(paths)
    folders = list(folders) if folders is not None else [None] * n
    helpers = list(helpers) if helpers is not None else [None] * n
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        subs = list(pool.map(lambda k: grade_submission(paths[k], session, exercise_name, folders[k], helpers[k]),
                             range(n)))
    found = {g.exercise.name: g.exercise for s in subs for g in s.graded}
    if len(found) == 1:
        for sub in subs:
            sub.assigned = sub.assigned or next(iter(found.values()))
    return subs

"""One submission, start to finish: its exercise, its child processes, its graded functions.

``grade_submission`` reads the file's top-level names without running it (``ast``) to find the
ONE exercise it is graded as (``choose``: the one ``--exercise`` names, else the one the file is
named after, else the only one whose functions it defines; a file defining functions of several
is refused).  It copies the file and its helper modules (the .py files next to it that define
no exercise function) into a fresh folder (``stage``): a child reads that copy, never the
student's folder, so classmates' files stay out of reach.  For the exercise it runs a child
(``sandbox.py``) that imports the copy and calls the exercise's functions.  When a call ends its
child (the time limit, os._exit, a crash), that function fails and the functions after it are
graded in a fresh child with a fresh limit.  Every answer is then compared in this process
(``compare.py``).  ``grade_many`` grades several submissions, at most ``jobs`` children at a time.
The copy and the cleanup are ``folders.py``'s.
"""
from __future__ import annotations

import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

from .compare import Call, Result, grade_function
from .folders import inside, remove_tree, stage
from .registry import all_exercises, identify, prepare, top_level_names
from .sandbox import readable_paths, run_child

MAX_SOURCE = 2**20              # a submission larger than this (1 MB) is not graded


class GraderError(Exception):
    """The grader itself could not grade (a child could not be set up): not the student's fault."""


@dataclass(frozen=True)
class Limits:
    """Per child: seconds of wall clock for the import and every call; memory in MB."""

    time: float = 10.0
    memory_mb: int = 1024


@dataclass
class Graded:
    """One exercise of one submission; ``import_error`` set when the file did not import."""

    exercise: object
    results: list = field(default_factory=list)
    import_error: str = ""


@dataclass
class Submission:
    path: Path
    graded: list = field(default_factory=list)
    problem: str = ""               # why nothing was graded: not found, does not parse, no exercise
    output: str = ""                # what the file printed (trimmed)
    output_bytes: int = 0
    isolation: str = ""             # what the kernel enforced in its children (kernel.Isolation.line)

    @property
    def results(self) -> list:
        return [r for g in self.graded for r in g.results]

    @property
    def imported(self) -> bool:
        return not self.problem.startswith("could not import") and not any(g.import_error for g in self.graded)

    @property
    def error(self) -> str:
        """Why the file earned nothing as a whole: an import error, or why it was not graded."""
        return next((g.import_error for g in self.graded if g.import_error), "") or self.problem

    @property
    def points(self) -> float:
        return sum(r.points for r in self.results)

    @property
    def max_points(self) -> float:
        return sum(g.exercise.max_points for g in self.graded)

    @property
    def passed(self) -> bool:
        defined = [r for r in self.results if r.defined]
        return self.imported and bool(defined) and all(r.status == "pass" for r in defined)


class Session:
    """The prepared exercises of one grading run (problems, references), computed once.
    ``points``: {graded function: points} replacing the exercises' own (the instructor's)."""

    def __init__(self, seed: int = 0, limits: Limits = Limits(), points: dict | None = None):
        self.seed, self.limits, self._prepared, self._lock = seed, limits, {}, threading.Lock()
        self.points = dict(points or {})

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
                    self._prepared[exercise.name] = prepare(self.exercise(exercise), self.seed)
                except Exception as exc:                # a declaration that cannot be served
                    raise GraderError(f"could not prepare exercise {exercise.name!r}: "
                                      f"{type(exc).__name__}: {exc}") from exc
            return self._prepared[exercise.name]


def _syntax_message(exc: SyntaxError) -> str:
    line = (exc.text or "").strip()
    return f"SyntaxError: {exc.msg} (line {exc.lineno}: {line})" if exc.lineno else f"SyntaxError: {exc.msg}"


def _stopped(run, limits: Limits, doing: str = "running it") -> str:
    if run.ended == "time limit":
        return (f"did not finish within the time limit ({limits.time:g} s for importing the file and "
                f"every call) while {doing}: an endless loop?")
    if run.ended.startswith("malformed"):
        return f"the grader stopped the process while {doing}: it wrote to the grader's result channel ({run.ended})"
    return f"the process ended while {doing} ({run.ended}): os._exit, a signal, or a crash"


def _request(staged: Path, exercise, prepared, functions, workdir: str, limits: Limits) -> dict:
    readable, listable = readable_paths()
    return {"submission": str(staged), "src": str(staged.parent), "workdir": workdir,
            "module_name": f"submission_{staged.stem}", "exercise": exercise.name,
            "allowed": exercise.allowed, "kit": prepared.kit.source, "modules": prepared.kit.modules,
            "functions": list(functions), "calls": {n: prepared.calls[n] for n in functions},
            "readable": list(readable) + [str(staged.parent)], "listable": list(listable),
            "writable": [workdir], "memory_bytes": limits.memory_mb * 2**20, "cpu_seconds": int(limits.time) + 30}


def _grade_exercise(staged: Path, exercise, session: Session, sub: Submission) -> Graded:
    prepared, limits = session.prepared(exercise), session.limits
    exercise = prepared.exercise
    graded, calls, defined = Graded(exercise), {}, None
    n_problems = len(prepared.problems)

    def finished(name):
        mine = [calls.get((name, k)) for k in range(n_problems)]
        return any(c is not None and not c.returned for c in mine) or all(c is not None for c in mine)

    def stop(names, error, note):
        for name in names:
            k = next(k for k in range(n_problems) if (name, k) not in calls)
            calls[(name, k)] = Call(error=error, note=note)

    todo = list(exercise.entries)
    for _ in range(len(todo) + 1):                          # each child finishes >= 1 function
        workdir = tempfile.mkdtemp(prefix="work_", dir=staged.parent.parent)
        try:
            run = run_child(_request(staged, exercise, prepared, todo, workdir, limits), prepared.arrays, limits.time)
        finally:
            remove_tree(workdir)
        sub.isolation = sub.isolation or run.isolation
        if run.output_bytes:
            sub.output += run.output.decode("utf-8", "replace")
            sub.output_bytes += run.output_bytes
        if run.setup_error or run.ended == "setup time limit" or not run.ready:
            raise GraderError(f"could not start the sandbox for {sub.path}: {run.setup_error or run.ended}")
        if not run.imported:
            error = run.import_error or _stopped(run, limits, "importing the file")
            if defined is None:
                graded.import_error = error
                return graded
            stop(todo, error, "not imported")
            break
        defined = defined or run.defined
        todo = [name for name in todo if defined.get(name) == "function"]
        calls.update({key: replace(call, error=call.error + f" [a submission may allocate at most "
                                                f"{limits.memory_mb} MB]") if "MemoryError" in call.error else call
                      for key, call in run.calls.items()})
        if run.running is not None:
            calls[run.running] = Call(error=_stopped(run, limits),
                                      note="time limit" if run.ended == "time limit" else "process ended")
        remaining = [name for name in todo if not finished(name)]
        if remaining and len(remaining) == len(todo):       # no progress: do not start it again
            stop(remaining, _stopped(run, limits, "between calls"), "process ended")
            remaining = []
        todo = remaining
        if not todo:
            break
    for f in exercise.functions:
        state = (defined or {}).get(f.called, "missing")
        if state == "missing":
            graded.results.append(Result(f.name, "not attempted", hint=(
                "not defined in the file" if f.called == f.name else f"{f.called} is not defined in the file"),
                max_points=float(f.points), defined=False))
        elif state != "function":
            graded.results.append(Result(f.name, "FAIL", float("inf"), f"{f.called} is {state}",
                                         max_points=float(f.points)))
        else:
            answers = [calls.get((f.called, k)) for k in range(n_problems)]
            graded.results.append(grade_function(prepared, f.name, answers))
    return graded


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


def grade_submission(path, session: Session, exercise_name: str | None = None, folder=None) -> Submission:
    """Grade one file as one exercise; every outcome of the student's code becomes part of the
    Submission.  ``folder``: the folder being graded (a symlink leaving it is refused); by
    default the file's own folder."""
    path = Path(path)
    sub = Submission(path)
    folder = Path(folder) if folder is not None else path.absolute().parent
    if path.is_symlink() and not inside(path, folder):
        sub.problem = f"{path} is a symbolic link to a file outside {folder}: not graded."
        return sub
    if not path.is_file():
        sub.problem = f"no such file: {path}"
        return sub
    if path.suffix != ".py":
        sub.problem = f"{path} is not a Python file (expected a .py file)."
        return sub
    source = path.read_bytes()
    if len(source) > MAX_SOURCE:
        sub.problem = f"could not import {path}: larger than {MAX_SOURCE // 2**20} MB"
        return sub
    try:
        names = top_level_names(source, path)
    except SyntaxError as exc:
        named, _ = choose((), path.stem, exercise_name)         # the exercise it was meant to be
        if named is None:
            sub.problem = f"could not import {path}:\n{_syntax_message(exc)}"
        else:
            sub.graded = [Graded(session.exercise(named), import_error=_syntax_message(exc))]
        return sub
    except (ValueError, RecursionError, MemoryError) as exc:
        sub.problem = f"could not import {path}: {type(exc).__name__}: {exc}"
        return sub
    exercise, why = choose(names, path.stem, exercise_name)
    if exercise is None:
        sub.problem = f"{path}: {why}"
        return sub
    base = Path(tempfile.mkdtemp(prefix="numpy_mamba_grade_"))
    try:
        staged = stage(path.absolute(), base)
        sub.graded = [_grade_exercise(staged, exercise, session, sub)]
    finally:
        remove_tree(base)
    return sub


def grade_many(paths, session: Session, jobs: int = 1, exercise_name: str | None = None, folders=None) -> list:
    """Grade each file in its own child(ren), ``jobs`` at a time; results in the order given.
    ``folders``: per file, the folder it was found in (symlinks leaving it are refused)."""
    folders = list(folders) if folders is not None else [None] * len(paths)
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return list(pool.map(lambda pf: grade_submission(pf[0], session, exercise_name, pf[1]), zip(paths, folders)))

"""One submission, start to finish: its exercise, its child processes, its graded functions.

``grade_submission`` reads the file's top-level names without running it (``ast``) to find the
exercise(s) it belongs to (``registry.identify``); for each, it runs a child (``sandbox.py``)
that imports the file and calls the exercise's functions.  When a call ends its child (the time
limit, os._exit, a crash), that function fails and the functions after it are graded in a fresh
child with a fresh limit.  Every answer is then compared in this process (``compare.py``).
``grade_many`` grades several submissions, at most ``jobs`` children at a time.
"""
from __future__ import annotations

import ast
import shutil
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

from .compare import Call, Result, grade_function
from .registry import all_exercises, identify, prepare
from .sandbox import run_child

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

    @property
    def results(self) -> list:
        return [r for g in self.graded for r in g.results]

    @property
    def imported(self) -> bool:
        return not self.problem.startswith("could not import") and not any(g.import_error for g in self.graded)

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
    """The prepared exercises of one grading run (problems, references), computed once."""

    def __init__(self, seed: int = 0, limits: Limits = Limits()):
        self.seed, self.limits, self._prepared, self._lock = seed, limits, {}, threading.Lock()

    def prepared(self, exercise):
        with self._lock:
            if exercise.name not in self._prepared:
                self._prepared[exercise.name] = prepare(exercise, self.seed)
            return self._prepared[exercise.name]


def top_level_names(source: bytes, path: Path):
    """Names a file binds at top level (def, class, assignment, import), or a SyntaxError."""
    tree = ast.parse(source, filename=str(path))
    names, body = set(), list(tree.body)
    while body:
        node = body.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.If, ast.Try, ast.With, ast.For, ast.While)):
            body += [n for part in ("body", "orelse", "finalbody") for n in getattr(node, part, [])]
            body += [n for h in getattr(node, "handlers", []) for n in h.body]
    return names


def _syntax_message(exc: SyntaxError) -> str:
    line = (exc.text or "").strip()
    return f"SyntaxError: {exc.msg} (line {exc.lineno}: {line})" if exc.lineno else f"SyntaxError: {exc.msg}"


def _stopped(run, limits: Limits, doing: str = "running it") -> str:
    if run.ended == "time limit":
        return (f"did not finish within the time limit ({limits.time:g} s for importing the file and "
                f"every call) while {doing}: an endless loop?")
    return f"the process ended while {doing} ({run.ended}): os._exit, a signal, or a crash"


def _request(path: Path, exercise, prepared, functions, workdir: str, limits: Limits) -> dict:
    path = path.resolve()
    return {"submission": str(path), "submission_dir": str(path.parent), "workdir": workdir,
            "module_name": f"submission_{path.stem}", "exercise": exercise.name,
            "allowed": exercise.allowed, "forbidden": list(exercise.forbidden),
            "functions": list(functions), "calls": {n: prepared.calls[n] for n in functions},
            "memory_bytes": limits.memory_mb * 2**20, "cpu_seconds": int(limits.time) + 30}


def _grade_exercise(path: Path, exercise, session: Session, sub: Submission) -> Graded:
    prepared, limits = session.prepared(exercise), session.limits
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
        workdir = tempfile.mkdtemp(prefix="numpy_mamba_grade_")
        try:
            run = run_child(_request(path, exercise, prepared, todo, workdir, limits), limits.time)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        if run.output_bytes:
            sub.output += run.output.decode("utf-8", "replace")
            sub.output_bytes += run.output_bytes
        if run.setup_error or run.ended == "setup time limit" or not run.ready:
            raise GraderError(f"could not start the sandbox for {path}: {run.setup_error or run.ended}")
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


def grade_submission(path, session: Session, exercise_name: str | None = None) -> Submission:
    """Grade one file; every outcome of the student's code becomes part of the Submission."""
    path = Path(path)
    sub = Submission(path)
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
        sub.problem = f"could not import {path}:\n{_syntax_message(exc)}"
        return sub
    except (ValueError, RecursionError, MemoryError) as exc:
        sub.problem = f"could not import {path}: {type(exc).__name__}: {exc}"
        return sub
    exercises = ([all_exercises()[exercise_name]] if exercise_name
                 else identify(names, path.stem))
    if not exercises:
        functions = ", ".join(n for e in all_exercises().values() for n in e.entries)
        sub.problem = f"none of {functions} is defined in {path}."
        return sub
    sub.graded = [_grade_exercise(path, e, session, sub) for e in exercises]
    return sub


def grade_many(paths, session: Session, jobs: int = 1, exercise_name: str | None = None) -> list:
    """Grade each file in its own child(ren), ``jobs`` at a time; results in the order given."""
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return list(pool.map(lambda p: grade_submission(p, session, exercise_name), paths))

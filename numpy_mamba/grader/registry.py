"""What an exercise declares, and the registry ``EXERCISES`` that every part of the grader reads.

An exercise is declared in one place: one module in ``grader/exercises/`` that passes one
``Exercise(...)`` to ``register`` (every module there is imported by ``all_exercises``; the
hand-outs are ``exercises/gating.py``, ``exercises/gradients.py`` and ``exercises/stack.py``).  It names

  * its functions, each with signature, equation and points;
  * what of the package its hand-out may import (``imports``: "module:name" entries; the
    child gets exactly these and what they call, as a kit, ``kit.py``, and nothing else of
    numpy_mamba) and, in words, what the hand-out allows;
  * how to draw the seeded problems, how to build one call's arguments from a problem, the
    reference answer, how to compare an answer with it, and the known mistakes behind a hint.

Nothing here is specific to (params, P, z): ``inputs``, ``reference`` and ``compare`` receive
the problem object the exercise's own ``problems`` returned.  A graded function may be one PART
of what the student's function returns: ``Function(..., entry="layer_backward")`` grades one
piece of ``layer_backward``'s answer, picked by the exercise's ``part`` (exercises/stack.py grades
dH, dW_B, dW_C and dW of ``layer_backward(dO, cache) -> (dH, LayerParams)`` as four rows from one
call per problem).
"""
from __future__ import annotations

import ast
import importlib
from dataclasses import dataclass, field
from typing import Any, Callable, NamedTuple

from .kit import KitError, build
from .problems import forward_seconds
from .sandbox import arguments
from .syntax import parse


class Function(NamedTuple):
    """One graded function: name, signature, what it computes, points; ``entry``: the student's
    function it is a part of ("" when it is that function itself)."""

    name: str
    signature: str
    equation: str
    points: float
    entry: str = ""

    @property
    def called(self) -> str:
        """The name of the function the submission defines and the child calls."""
        return self.entry or self.name


class Reference(NamedTuple):
    """The reference answer to one call, and an independent check of any answer.

    ``value``: the package's answer (an ndarray for the hand-outs).
    ``independent(answer) -> float``: relative error of a (validated, right-shaped) answer
    against a check that does not use the package's formula (finite differences, a scan).
    """

    value: Any
    independent: Callable[[Any], float]


@dataclass(frozen=True)
class Row:
    """The outcome of one function on one problem, as the report shows it."""

    problem: str
    err_reference: float = float("inf")
    err_independent: float = float("inf")
    note: str = ""                       # why there is no error to show: "shape (3,), expected (6,)", ...
    ok: bool = False
    cpu: float = float("nan")            # CPU seconds of the call (the budget problem's child)


@dataclass(frozen=True)
class Exercise:
    """Everything the grader needs to know about one hand-out (see the module docstring).

    problems(seed) -> list of problems (each with a ``name``); inputs(function, problem) -> the
    call's positional arguments (plain arrays, strings and package NamedTuples: they are sent to
    the child as arrays and rebuilt there from the kit); reference(function, problem) ->
    Reference; compare(function, problem, answer, reference, exercise) -> Row;
    mistakes(function) -> [(key, hint, fn(problem) -> mistaken answer)]; shape_hint(function,
    answer, reference value, problem) -> str or ""; part(function, answer) -> (piece, note): the
    piece of the entry's answer this function grades, or (None, why not); None: the whole answer.
    inputs is called with the entry's name (``Function.called``), the rest with the function's.
    budget(seed) -> the largest problem, graded in a child of its own per entry (None: none);
    the entries of the functions named in ``budgeted`` within ``budget_units`` forward passes
    of the model on it (``forward(problem)``, timed once per run: ``problems.forward_seconds``)
    and ``budget_memory_mb``, the others within the usual limits.  ``hidden``: name prefixes of
    the problems hidden from students by default.
    """

    name: str                                   # the hand-out's file stem: tutorials/exercises/NAME.py
    functions: tuple
    imports: tuple                              # "numpy_mamba.module:name" a submission may import
    allowed: str                                # what the hand-out's header lets the student use
    independent_check: str                      # column title of the independent check
    problems: Callable
    inputs: Callable
    reference: Callable
    compare: Callable
    mistakes: Callable = lambda name: []
    shape_hint: Callable = lambda name, answer, value, problem: ""
    part: Callable | None = None
    problem_notes: dict = field(default_factory=dict)   # problem-name prefix -> what to check
    tol_reference: float = 1e-8
    tol_independent: float = 1e-6
    budget: Callable | None = None
    forward: Callable | None = None             # one forward pass on a problem: the budget's unit
    budgeted: tuple = ()                        # the functions held to the budget
    budget_units: float = 0.0
    budget_memory_mb: int = 0
    hidden: tuple = ()
    sources: tuple = ()                         # package modules the answers come from (similarity.py)

    @property
    def function_names(self) -> tuple:
        return tuple(f.name for f in self.functions)

    @property
    def entries(self) -> tuple:
        """The functions a submission defines for this exercise, in order, each once."""
        return tuple(dict.fromkeys(f.called for f in self.functions))

    @property
    def max_points(self) -> float:
        return float(sum(f.points for f in self.functions))


EXERCISES: dict = {}


def register(exercise: Exercise) -> Exercise:
    """Add ``exercise`` to ``EXERCISES``; a function name (graded or called) may belong to one
    exercise only, so a file's functions tell which exercise it is (and CSV columns are unique)."""
    taken = {n: e.name for e in EXERCISES.values() if e.name != exercise.name
             for n in e.function_names + e.entries}
    clash = [n for n in dict.fromkeys(exercise.function_names + exercise.entries) if n in taken]
    if clash:
        raise ValueError(f"exercise {exercise.name!r}: function(s) {clash} already belong to "
                         f"{sorted({taken[n] for n in clash})}; function names must be unique.")
    for entry in exercise.imports:
        if entry.count(":") != 1 or not entry.startswith("numpy_mamba"):
            raise ValueError(f"exercise {exercise.name!r}: import {entry!r} is not 'numpy_mamba.module:name'.")
    EXERCISES[exercise.name] = exercise
    return exercise


def all_exercises() -> dict:
    """{name: Exercise} for every declaration in ``grader/exercises/`` (imported on first use)."""
    importlib.import_module(f"{__package__}.exercises")
    return EXERCISES


def top_level_names(source: bytes, path) -> set:
    """Names a file binds at top level (def, class, assignment, import), or a SyntaxError."""
    tree = parse(source, filename=str(path))
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


def identify(names, stem: str = "") -> list:
    """The exercises a file belongs to: the one it is named after (``gradients.py``,
    ``gradients_solution.py``: a helper called ``gates`` in it is not the gates exercise), else
    every exercise one of whose functions is among ``names`` (the file's top-level names)."""
    exercises = all_exercises().values()
    named = [e for e in exercises if stem == e.name or stem.startswith(e.name + "_")]
    return named or [e for e in exercises if set(names or ()) & set(e.entries)]


@dataclass
class Prepared:
    """One exercise at one seed, computed once per grading run and shared by every submission:
    the problems (the budget problem last, ``budget``: its index or None), which are hidden, the
    kit, the reference answers and, lazily, every known mistake on every problem."""

    exercise: Exercise
    seed: int
    problems: list
    hidden: list                                # per problem: hidden from students
    budget: int | None
    kit: Any                                    # kit.Kit: what the child may import
    references: dict                            # function -> [Reference per problem]
    unit: float = float("nan")                  # CPU seconds of one forward pass on the budget problem
    _mistaken: dict = field(default_factory=dict)

    def mistaken(self, name: str, index: int) -> list:
        """[(key, hint, mistaken answer)] of function ``name`` on problem ``index``."""
        if (name, index) not in self._mistaken:
            pb = self.problems[index]
            self._mistaken[(name, index)] = [(key, hint, fn(pb)) for key, hint, fn in self.exercise.mistakes(name)]
        return self._mistaken[(name, index)]

    def calls(self, entries, indices) -> tuple:
        """({entry: [argument trees per problem of ``indices``]}, arrays) for one child."""
        arrays, types_used = [], set()
        calls = {entry: [[arguments(a, arrays, types_used) for a in self.exercise.inputs(entry, self.problems[k])]
                         for k in indices] for entry in entries}
        missing = [t.__qualname__ for t in types_used if (t.__module__, t.__qualname__) not in self.kit.needed]
        if missing:
            raise KitError(f"exercise {self.exercise.name!r} sends {missing} to the child; add them to its imports")
        return calls, arrays


def prepare(exercise: Exercise, seed: int, hidden=None) -> Prepared:
    """Problems (the budget problem last), kit and references, once; ``hidden``: problem-name
    prefixes hidden from students (None: the exercise's own)."""
    problems = list(exercise.problems(seed))
    budget = None
    if exercise.budget is not None:
        problems.append(exercise.budget(seed))
        budget = len(problems) - 1
    prefixes = exercise.hidden if hidden is None else tuple(hidden)
    flags = [any(pb.name.startswith(p) for p in prefixes) for pb in problems]
    references = {f.name: [exercise.reference(f.name, pb) for pb in problems] for f in exercise.functions}
    unit = forward_seconds(exercise.forward, problems[budget]) if budget is not None else float("nan")
    prepared = Prepared(exercise, seed, problems, flags, budget, build(exercise.imports), references, unit)
    prepared.calls(exercise.entries, range(len(problems)))             # every argument can be sent
    return prepared

"""The similarity flag: submissions whose code is the package's own reference, or another
submission's, beyond a stated share (for the instructor to read; never a score).

Code is compared as MOSS compares it, by the winnowed fingerprints of a normalised token stream
(``fingerprint.py``, which says what the normal form keeps and what it makes one): of every file
a submission ran (the graded file or a notebook's code cells, and its helpers), read in a child
of its own within a CPU-time and memory limit, so that a file the reader cannot finish costs its
own row ("not compared", and why) and nothing else.  The reference is what a pasted answer would
hold: the package modules an exercise's answers come from (``Exercise.sources``), the package
functions its hand-out hands out (``Exercise.imports``), and every function, class and module of
the package their code reaches.

A submission's share of a text is the share of its fingerprints found there: REFERENCE_FLAG or
more of them in the reference, or PAIR_FLAG or more shared with another submission of the same
exercise (the share of the smaller file's fingerprints), raises the flag.  Fingerprints found in
more than half of a class of four or more (the hand-out's own code) are left out first, as MOSS
leaves out what every program shares.  A submission that calls what runs code the reader cannot
see (``exec``, ``importlib``, ...) is noted too.  tests/test_grader_similarity.py measures it
on pasted references in every disguise we know and on every honest file we have.
"""
from __future__ import annotations

import ast
import base64
import importlib
import inspect
import json
import os
import subprocess
import sys
import textwrap
import types
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache

from . import fingerprint
from .sandbox import shown
from .syntax import parse

REFERENCE_FLAG = 0.5            # share of a submission's fingerprints found in the package's reference
PAIR_FLAG = 0.8                 # share of the smaller file's fingerprints two submissions have in common
READER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fingerprint.py")
READER_CPU = 20                 # seconds of CPU time to read one submission's files (at most 21 MB)
READER_MEMORY = 2**30           # bytes of memory for it
PACKAGE = "numpy_mamba"


def _ours(value) -> bool:
    name = value.__name__ if isinstance(value, types.ModuleType) else getattr(value, "__module__", None) or ""
    return (name == PACKAGE or name.startswith(PACKAGE + ".")) and (
        isinstance(value, types.ModuleType) or inspect.isfunction(value) or inspect.isclass(value))


def reference_sources(modules, imports=()) -> dict:
    """{name: source} of the reference (module docstring): ``modules`` whole, the objects of
    ``imports`` ("module:name"), and every package function, class or module their code names."""
    todo = [importlib.import_module(m) for m in modules]
    todo += [getattr(importlib.import_module(e.split(":")[0]), e.split(":")[1]) for e in imports]
    found = {}
    while todo:
        obj = todo.pop()
        module = obj if isinstance(obj, types.ModuleType) else importlib.import_module(obj.__module__)
        key = module.__name__ + ("" if obj is module else f":{obj.__qualname__}")
        if key in found:
            continue
        found[key] = textwrap.dedent(inspect.getsource(obj))
        named = {n.id for n in ast.walk(parse(found[key])) if isinstance(n, ast.Name)}
        todo += [vars(module)[name] for name in sorted(named) if _ours(vars(module).get(name))]
    return found


@lru_cache(maxsize=None)
def reference_fingerprints(modules: tuple, imports: tuple = ()) -> frozenset:
    """The fingerprints of the reference of ``modules`` and ``imports`` (the package's own code)."""
    return fingerprint.fingerprints(reference_sources(modules, imports), (), parse)[0]


def read(sources: dict, entries) -> tuple:
    """(fingerprints, what of fingerprint.BUILDERS it names, "" or why it was not compared) of a
    submission's files {file name: bytes}, read in a child of its own (``fingerprint.main``)."""
    request = json.dumps({"sources": {name: base64.b64encode(data).decode() for name, data in sources.items()},
                          "entries": list(entries), "cpu_seconds": READER_CPU, "memory_bytes": READER_MEMORY}).encode()
    try:
        done = subprocess.run([sys.executable, "-I", "-S", READER], input=request, capture_output=True, cwd="/",
                              timeout=10 * READER_CPU + 30, env={"PATH": os.defpath, "LANG": "C.UTF-8"})
    except subprocess.TimeoutExpired:
        return frozenset(), [], "the reader passed its wall-clock limit"
    except OSError as exc:
        return frozenset(), [], f"the reader could not start: {exc.strerror}"
    try:
        answer = json.loads(done.stdout) if not done.returncode else {}
    except ValueError:
        answer = {}
    if "fingerprints" not in answer:
        ended = "its CPU-time limit" if done.returncode in (-24, -9) else f"status {done.returncode}"
        why = answer.get("error") or f"the reader ended ({ended})"
        return frozenset(), [], f"{why}; its limits: {READER_CPU} s of CPU, {READER_MEMORY >> 20} MB"
    return frozenset(answer["fingerprints"]), answer["built"], ""


def _share(mine: frozenset, other: frozenset) -> float:
    return len(mine & other) / len(mine) if mine else 0.0


def flags(subs, jobs: int = 1) -> dict:
    """{submission path: what it is similar to, with the share, or why it was not compared} for
    the submissions flagged; ``jobs``: readers at once."""
    graded = [s for s in subs if s.graded and s.sources]
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        found = dict(zip([s.path for s in graded], pool.map(lambda s: read(s.sources, s.graded[0].exercise.entries),
                                                            graded)))
    groups, notes = {}, {}
    for s in graded:
        groups.setdefault(s.graded[0].exercise.name, (s.graded[0].exercise, []))[1].append(s)
        _, builders, why = found[s.path]
        notes[s.path] = ([f"not compared: {why}"] if why else []) + \
            ([f"runs code the flag cannot read ({', '.join(builders)})"] if builders else [])
    for exercise, members in groups.values():
        sets = [found[s.path][0] for s in members]
        if len(members) >= 4:                       # the hand-out's own code: in most of the class
            common = {w for w in set().union(*sets) if sum(w in ws for ws in sets) * 2 > len(members)}
            sets = [ws - common for ws in sets]
        reference = reference_fingerprints(tuple(exercise.sources), tuple(exercise.imports)) \
            if exercise.sources else frozenset()
        for i, (s, mine) in enumerate(zip(members, sets)):
            if reference and _share(mine, reference) >= REFERENCE_FLAG:
                notes[s.path].append(f"the package's reference ({', '.join(exercise.sources)} and what it calls) "
                                     f"{_share(mine, reference):.2f}")
            for j, other in enumerate(sets):
                smaller = mine if len(mine) <= len(other) else other
                if j != i and smaller and len(mine & other) / len(smaller) >= PAIR_FLAG:
                    notes[s.path].append(f"{shown(members[j].path)} {len(mine & other) / len(smaller):.2f}")
    return {path: "; ".join(n) for path, n in notes.items() if n}

"""The similarity flag: submissions whose code is the package's own reference, or another
submission's, beyond a stated share (for the instructor to read; never a score).

Code is compared as MOSS compares it: by the fingerprints of its normalised token stream
(Schleimer, Wilkerson and Aiken, "Winnowing: local algorithms for document fingerprinting",
SIGMOD 2003).  ``normalised`` reads the file as Python does (a ``coding:`` header included),
parses it and drops what does not compute the answer: docstrings, comments and statements that
are a bare value, code after a return, raise, break or continue, branches under a constant
false test, functions no entry point of the exercise reaches, and assignments to names nothing
reads.  A module bound under another name (``import numpy as xp``, ``np = numpy``, ``from numpy
import einsum as e``) is written as the module's own name.  In the tokens of what is left every
name the file binds itself (variables, parameters, functions) is one placeholder, numbers and
strings theirs, so renaming, reformatting, comments and padding change nothing.  Every run of
K tokens is hashed, and of each WINDOW consecutive hashes the smallest (the rightmost of equals)
is kept: two files sharing a run of K + WINDOW - 1 tokens or more share a fingerprint.

A submission's share of a text is the share of its fingerprints found there: REFERENCE_FLAG or
more of them in the package's source its exercise's answers come from (``Exercise.sources``), or
PAIR_FLAG or more shared with another submission of the same exercise (the share of the smaller
file's fingerprints), raises the flag.  Fingerprints found in more than half of a class of four
or more (the hand-out's own code) are left out first, as MOSS leaves out what every program
shares.  tests/test_grader_similarity.py measures it on pasted references in five disguises and
on every honest file we have.
"""
from __future__ import annotations

import ast
import hashlib
import importlib
import inspect
import io
import keyword
import tokenize
from functools import lru_cache

from .sandbox import shown
from .syntax import parse

K = 12                          # tokens per hashed run (shorter common runs are noise)
WINDOW = 8                      # hashes per winnowing window
REFERENCE_FLAG = 0.5            # share of a submission's fingerprints found in the package's reference
PAIR_FLAG = 0.8                 # share of the smaller file's fingerprints two submissions have in common
SKIP = (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING,
        tokenize.ENDMARKER)
ENDS = (ast.Return, ast.Raise, ast.Break, ast.Continue)
DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _aliases(tree: ast.Module) -> dict:
    """{name: the module or module attribute it is bound to} for imports and ``x = module``."""
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update({(a.asname or a.name.split(".")[0]): (a.name if a.asname else a.name.split(".")[0])
                          for a in node.names})
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.update({(a.asname or a.name): f"{node.module}.{a.name}" for a in node.names})
    changed = True
    while changed:                                          # np = numpy; xp = np
        changed = False
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and node.value.id in found:
                for target in node.targets:
                    if isinstance(target, ast.Name) and target.id not in found:
                        found[target.id], changed = found[node.value.id], True
    return found


def _names_read(tree: ast.AST) -> set:
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


class _Prune(ast.NodeTransformer):
    """Drops what cannot change a returned value (see the module docstring); ``dead`` are the
    names of the definitions no entry point reaches and of stores nothing reads."""

    def __init__(self, aliases: dict, dead: set):
        self.aliases, self.dead = aliases, dead

    def _body(self, body: list) -> list:
        out = []
        for statement in body:
            statement = self.visit(statement)
            for kept in statement if isinstance(statement, list) else [statement] if statement else []:
                out.append(kept)
                if isinstance(kept, ENDS):
                    return out
        return out or [ast.Pass()]

    def generic_visit(self, node):
        for field in ("body", "orelse", "finalbody"):
            if isinstance(getattr(node, field, None), list) and getattr(node, field):
                setattr(node, field, self._body(getattr(node, field)))
        for field, value in ast.iter_fields(node):
            if field not in ("body", "orelse", "finalbody"):
                if isinstance(value, list):
                    setattr(node, field, [self.visit(v) if isinstance(v, ast.AST) else v for v in value])
                elif isinstance(value, ast.AST):
                    setattr(node, field, self.visit(value))
        return node

    def visit_Expr(self, node):                             # a docstring, a bare value: kept if it calls
        return node if any(isinstance(n, ast.Call) for n in ast.walk(node)) else None

    def visit_Pass(self, node):
        return None

    def visit_If(self, node):
        if isinstance(node.test, ast.Constant):
            return self._body(node.body if node.test.value else node.orelse) if (node.body if node.test.value
                                                                                 else node.orelse) else None
        return self.generic_visit(node)

    def visit_While(self, node):
        if isinstance(node.test, ast.Constant) and not node.test.value:
            return None
        return self.generic_visit(node)

    def _definition(self, node):
        return None if node.name in self.dead else self.generic_visit(node)

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _definition

    def visit_Import(self, node):
        return None

    visit_ImportFrom = visit_Import

    def visit_Assign(self, node):
        names = [t.id for t in node.targets if isinstance(t, ast.Name)]
        if len(names) == len(node.targets) and (all(n in self.dead for n in names) or all(n in self.aliases
                                                                                         for n in names)):
            return None
        return self.generic_visit(node)

    def visit_AugAssign(self, node):
        return None if isinstance(node.target, ast.Name) and node.target.id in self.dead else self.generic_visit(node)

    def visit_Name(self, node):
        if node.id in self.aliases and isinstance(node.ctx, ast.Load):
            return ast.copy_location(ast.Name(self.aliases[node.id], node.ctx), node)
        return node


def _dead(tree: ast.Module, entries) -> set:
    """Names of the top-level definitions no entry point (nor top-level code) reaches, and of the
    variables stored and never read."""
    defs = {n.name: n for n in tree.body if isinstance(n, DEFS)}
    reached, todo = set(), [n for n in entries if n in defs] if entries else list(defs)
    todo += [name for n in tree.body if not isinstance(n, DEFS) for name in _names_read(n) if name in defs]
    while todo:
        name = todo.pop()
        if name not in reached:
            reached.add(name)
            todo += [n for n in _names_read(defs[name]) if n in defs]
    read = _names_read(ast.Module([defs[n] for n in reached] + [n for n in tree.body if not isinstance(n, DEFS)], []))
    stored = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    return (set(defs) - reached) | (stored - read)


def normalised(source, entries=()) -> tuple:
    """(the code that computes, as text, the names it binds) of ``source`` (bytes: decoded as
    Python decodes them); ``entries``: the functions the grader calls (empty: keep every one)."""
    tree = parse(source)
    aliases = _aliases(tree)
    for _ in range(3):                                      # a store read only by a dead store is dead too
        tree = _Prune(aliases, _dead(tree, entries)).visit(tree)
    bound = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    bound |= {n.arg for n in ast.walk(tree) if isinstance(n, ast.arg)}
    bound |= {n.name for n in ast.walk(tree) if isinstance(n, DEFS)}
    return ast.unparse(ast.fix_missing_locations(tree)), bound - set(aliases.values())


def tokens(source, entries=()) -> list:
    """The normalised token stream: keywords, operators and the modules' names as they are, the
    file's own names "V", numbers "N", strings "S"; [] when it does not parse."""
    try:
        text, bound = normalised(source, entries)
        found = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except Exception:                   # any file at all: the flag is never why a class run stops
        return []
    words, previous = [], ""
    for t in found:
        if t.type in SKIP:
            continue
        if t.type == tokenize.NAME and not keyword.iskeyword(t.string) and t.string in bound and previous != ".":
            words.append("V")
        else:
            words.append({tokenize.NUMBER: "N", tokenize.STRING: "S"}.get(t.type, t.string))
        previous = t.string
    return words


def fingerprints(source, entries=()) -> frozenset:
    """The winnowed hashes of ``source``'s K-token runs (empty when it does not parse)."""
    words = tokens(source, entries)
    hashes = [int.from_bytes(hashlib.blake2b(" ".join(words[i:i + K]).encode(), digest_size=8).digest(), "big")
              for i in range(len(words) - K + 1)]
    return frozenset(min(hashes[i:i + WINDOW]) for i in range(max(1, len(hashes) - WINDOW + 1))) if hashes \
        else frozenset()


@lru_cache(maxsize=None)
def reference_fingerprints(modules: tuple) -> frozenset:
    """The fingerprints of the package modules ``modules`` ("numpy_mamba.gradients", ...)."""
    return frozenset().union(*[fingerprints(inspect.getsource(importlib.import_module(m))) for m in modules])


def _share(mine: frozenset, other: frozenset) -> float:
    return len(mine & other) / len(mine) if mine else 0.0


def flags(subs) -> dict:
    """{submission path: what it is similar to, with the share} for the submissions flagged."""
    groups = {}
    for s in subs:
        if s.graded and s.source:
            groups.setdefault(s.graded[0].exercise.name, (s.graded[0].exercise, []))[1].append(s)
    found = {}
    for exercise, members in groups.values():
        sets = [fingerprints(s.source, exercise.entries) for s in members]
        if len(members) >= 4:                       # the hand-out's own code: in most of the class
            common = {w for w in set().union(*sets) if sum(w in ws for ws in sets) * 2 > len(members)}
            sets = [ws - common for ws in sets]
        reference = reference_fingerprints(tuple(exercise.sources)) if exercise.sources else frozenset()
        for i, (s, mine) in enumerate(zip(members, sets)):
            notes = []
            if reference and _share(mine, reference) >= REFERENCE_FLAG:
                notes.append(f"the package's {', '.join(exercise.sources)} {_share(mine, reference):.2f}")
            for j, other in enumerate(sets):
                smaller = mine if len(mine) <= len(other) else other
                if j != i and smaller and len(mine & other) / len(smaller) >= PAIR_FLAG:
                    notes.append(f"{shown(members[j].path.name)} {len(mine & other) / len(smaller):.2f}")
            if notes:
                found[s.path] = "; ".join(notes)
    return found

"""The similarity flag: submissions whose code is the package's own reference, or another
submission's, beyond a stated share (for the instructor to read; never a score).

Code is compared on its tokens, as MOSS and Gradescope's code similarity do, not on its text:
comments and docstrings are dropped, every name the file binds itself (its variables,
parameters and functions) becomes one placeholder, numbers and strings theirs, so renaming and
reformatting change nothing.  A file is the set of its WINDOW-token windows.  A submission's
similarity to a text is the share of its windows found there: REFERENCE_FLAG or more of them in
the package's source its exercise's answers come from (``Exercise.sources``), or PAIR_FLAG or
more shared with another submission of the same exercise (the share of the smaller file's
windows), raises the flag.  Windows found in more than half of a class of four or more (the
hand-out's own code) are left out first, as MOSS leaves out what every program shares.
"""
from __future__ import annotations

import ast
import importlib
import inspect
import io
import keyword
import tokenize
from functools import lru_cache

from .sandbox import shown
from .syntax import parse

WINDOW = 16                     # tokens per window
REFERENCE_FLAG = 0.5            # share of a submission's windows found in the package's reference
PAIR_FLAG = 0.8                 # share of the smaller file's windows two submissions have in common
SKIP = (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING,
        tokenize.ENDMARKER)


def _bound_names(tree: ast.AST) -> set:
    """Names the file binds itself: assigned, parameters, its own functions and classes."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            found.add(node.id)
        elif isinstance(node, ast.arg):
            found.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(node.name)
    return found


def _docstring_lines(tree: ast.AST) -> set:
    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                lines.update(range(first.lineno, first.end_lineno + 1))
    return lines


def windows(source: str) -> frozenset:
    """The hashed WINDOW-token windows of ``source`` (empty when it does not parse)."""
    try:
        tree = parse(source)
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (SyntaxError, tokenize.TokenError, ValueError, RecursionError):
        return frozenset()
    bound, docstrings = _bound_names(tree), _docstring_lines(tree)
    words, previous = [], ""
    for t in tokens:
        if t.type in SKIP or (t.type == tokenize.STRING and t.start[0] in docstrings):
            continue
        if t.type == tokenize.NAME and not keyword.iskeyword(t.string) and t.string in bound and previous != ".":
            words.append("V")
        else:
            words.append({tokenize.NUMBER: "N", tokenize.STRING: "S"}.get(t.type, t.string))
        previous = t.string
    return frozenset(hash(tuple(words[i:i + WINDOW])) for i in range(len(words) - WINDOW + 1))


@lru_cache(maxsize=None)
def reference_windows(modules: tuple) -> frozenset:
    """The windows of the package modules ``modules`` ("numpy_mamba.gradients", ...)."""
    return frozenset().union(*[windows(inspect.getsource(importlib.import_module(m))) for m in modules])


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
        sets = [windows(s.source.decode("utf-8", "replace")) for s in members]
        if len(members) >= 4:                       # the hand-out's own code: in most of the class
            common = {w for w in set().union(*sets) if sum(w in ws for ws in sets) * 2 > len(members)}
            sets = [ws - common for ws in sets]
        reference = reference_windows(tuple(exercise.sources)) if exercise.sources else frozenset()
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

"""``parse``: ``ast.parse`` for the grader's threads.

CPython 3.11 keeps the counter that checks the AST converter's recursion in state shared by every
thread of the interpreter.  When the collector runs Python code in the middle of a conversion and
another thread starts parsing, the first parse fails with "SystemError: AST constructor recursion
depth mismatch" (seen in a class run graded with ``--jobs 2``: every later file of the exercise
failed to prepare).  Every parse of the grader goes through one lock.

A student's file may warn as it is parsed ("invalid escape sequence"): the warning belongs to the
child that runs the file, whose output the report shows, not to the grader's own output.
"""
from __future__ import annotations

import ast
import threading
import warnings

_LOCK = threading.Lock()


def parse(source: str, filename: str = "<unknown>") -> ast.Module:
    """``ast.parse(source, filename)``, one thread at a time, without the source's warnings."""
    with _LOCK, warnings.catch_warnings():
        warnings.simplefilter("ignore", (SyntaxWarning, DeprecationWarning))
        return ast.parse(source, filename=filename)

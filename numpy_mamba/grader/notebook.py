"""A notebook submission: the Python of an .ipynb's code cells, read with the standard library.

``python_source(data)`` returns the code cells, in order, as one percent-format Python file
(each cell after a ``# %% notebook cell N`` line), which is then graded exactly as a .py file.
Markdown and raw cells are left out.  A code cell that is not Python because of IPython syntax
(a magic ``%...`` or ``%%...``, a shell line ``!...``, help ``x?``) is refused with a message
naming the cell, its first line and the line at fault: the grader runs plain Python.  Anything
that is not a notebook of format 4 (not JSON, JSON nested without bound, cells that are not
objects, a source that is a number) is a ``NotebookError`` saying what was found: no shape of
file raises anything else.
"""
from __future__ import annotations

import json
import re

from .syntax import parse

IPYTHON = re.compile(r"^\s*(%|!)|\?\s*$")
CELL = re.compile(r"^# %% notebook cell (\d+)$")


class NotebookError(ValueError):
    """The file is not a notebook the grader can read, or a code cell is IPython, not Python."""


def _cells(data: bytes) -> list:
    try:
        notebook = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise NotebookError(f"not a Jupyter notebook (expected JSON, {exc})") from None
    except (RecursionError, MemoryError):
        raise NotebookError("not a Jupyter notebook (JSON nested too deeply to read)") from None
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    if not isinstance(cells, list) or not all(isinstance(c, dict) for c in cells):
        raise NotebookError("not a Jupyter notebook of format 4 (no list of cells); save it again from Jupyter")
    return cells


def _kind(value) -> str:
    """What a JSON value is, in words."""
    if value is None:
        return "null"
    return {bool: "a boolean", int: "a number", float: "a number", dict: "an object", list: "a list"}.get(
        type(value), type(value).__name__)


def _text(number: int, source) -> str:
    """A code cell's source: a string, or a list of strings (its lines, as Jupyter saves them)."""
    if isinstance(source, str):
        return source
    if isinstance(source, list) and all(isinstance(line, str) for line in source):
        return "".join(source)
    found = _kind(source) if not isinstance(source, list) else "a list holding " + " and ".join(
        sorted({_kind(line) for line in source if not isinstance(line, str)}))
    raise NotebookError(f"cell {number}: its source is {found}, not text; save the notebook again from Jupyter")


def _not_python(number: int, source: str) -> str:
    """Why code cell ``number`` is refused ("" when it is Python, or fails as Python would)."""
    try:
        parse(source)
        return ""
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        pass
    bad = next((line for line in source.splitlines() if IPYTHON.search(line)), None)
    if bad is None:
        return ""
    first = next((line.strip() for line in source.splitlines() if line.strip()), "")
    return (f"cell {number} (starting {first[:60]!r}) holds IPython syntax, not Python: {bad.strip()[:80]!r}; "
            "remove that line (the grader runs plain Python)")


def python_source(data: bytes) -> str:
    """The code cells of the notebook ``data`` (its bytes) as one Python file; NotebookError when
    it is not a notebook or a code cell holds IPython syntax."""
    parts = []
    for number, cell in enumerate(_cells(data), start=1):
        if cell.get("cell_type") != "code":
            continue
        source = _text(number, cell.get("source", ""))
        why = _not_python(number, source)
        if why:
            raise NotebookError(why)
        parts.append(f"# %% notebook cell {number}\n{source.rstrip()}\n")
    return "\n\n".join(parts)


def cell_of(source: str, lineno: int) -> str:
    """Where line ``lineno`` of ``python_source``'s text comes from ("cell 3, line 2"), or ""."""
    lines = source.splitlines()[:max(0, lineno - 1)]
    for k in range(len(lines) - 1, -1, -1):
        found = CELL.match(lines[k])
        if found:
            return f"cell {found.group(1)}, line {lineno - k - 1}"
    return ""

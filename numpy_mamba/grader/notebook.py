"""A notebook submission: the Python of an .ipynb's code cells, read with the standard library.

``python_source(data)`` returns the code cells, in order, as one percent-format Python file
(each cell after a ``# %% notebook cell N`` line), which is then graded exactly as a .py file.
Markdown and raw cells are left out.  A code cell that is not Python because of IPython syntax
(a magic ``%...`` or ``%%...``, a shell line ``!...``, help ``x?``) is refused with a message
naming the cell, its first line and the line at fault: the grader runs plain Python.
"""
from __future__ import annotations

import json
import re

from .syntax import parse

IPYTHON = re.compile(r"^\s*(%|!)|\?\s*$")


class NotebookError(ValueError):
    """The file is not a notebook the grader can read, or a code cell is IPython, not Python."""


def _cells(data: bytes) -> list:
    try:
        notebook = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise NotebookError(f"not a Jupyter notebook (expected JSON, {exc})") from None
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    if not isinstance(cells, list) or not all(isinstance(c, dict) for c in cells):
        raise NotebookError("not a Jupyter notebook of format 4 (no list of cells); save it again from Jupyter")
    return cells


def python_source(data: bytes) -> str:
    """The code cells of the notebook ``data`` (its bytes) as one Python file; NotebookError when
    it is not a notebook or a code cell holds IPython syntax."""
    parts = []
    for number, cell in enumerate(_cells(data), start=1):
        if cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else str(source)
        try:
            parse(source)
        except SyntaxError:
            bad = next((line for line in source.splitlines() if IPYTHON.search(line)), None)
            if bad is not None:
                first = next((line.strip() for line in source.splitlines() if line.strip()), "")
                raise NotebookError(f"cell {number} (starting {first[:60]!r}) holds IPython syntax, not Python: "
                                    f"{bad.strip()[:80]!r}; remove that line (the grader runs plain Python)") from None
        parts.append(f"# %% notebook cell {number}\n{source.rstrip()}\n")
    return "\n\n".join(parts)

"""What is graded: the submissions among the files and folders an instructor names, each one's
source (a .py file, or a notebook's code cells) and the helper modules it may import.

    collect(paths)          the submissions (files defining an exercise function, or that will not
                            parse), the folder each was found in, whether it shares that folder
                            with other submissions, and the files skipped as helpers
    source_of(path)         the Python of a .py file or of a notebook's code cells, measured first
    helpers_of(path, shared) the helper modules next to a submission it may import

A helper is a .py file whose name starts with "_", or that binds no exercise function (a
classmate's submission binds one, so it is never a helper).  In a folder several submissions
share (an LMS's flat "download all"), a helper reaches only the submission it is named after
(``_alice_core.py`` or ``alice_core.py`` for ``alice.py``): no classmate can import it, and no
pile of other files can push it out.
"""
from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

from .notebook import NotebookError, python_source
from .registry import identify, top_level_names
from .sandbox import StagingError, read_source, shown

SUFFIXES = (".py", ".ipynb")


def inside(path: Path, folder: Path) -> bool:
    try:
        return os.path.commonpath([os.path.realpath(path), os.path.realpath(folder)]) == os.path.realpath(folder)
    except ValueError:
        return False


def source_of(path: Path) -> bytes:
    """The Python source of ``path``: a .py file's bytes, or a notebook's code cells (``notebook.py``);
    StagingError with a message when it cannot be read or is not Python."""
    if path.suffix not in SUFFIXES:
        raise StagingError(f"{shown(path)} is not a Python file or notebook (expected .py or .ipynb)")
    data = read_source(path)
    if path.suffix == ".ipynb":
        try:
            return python_source(data).encode()
        except NotebookError as exc:
            raise StagingError(f"could not read the notebook {shown(path.name)}: {exc}") from None
    return data


@lru_cache(maxsize=4096)
def _binds_an_exercise(path: str, mtime_ns: int, size: int) -> bool:
    """Parsed once per file version (a class folder is scanned once per submission in it); a
    file that cannot be read or parsed counts as a submission, so that it gets its row."""
    try:
        return bool(identify(top_level_names(source_of(Path(path)), Path(path)), Path(path).stem))
    except (StagingError, SyntaxError, ValueError, RecursionError, MemoryError):
        return True


def _is_submission(path: Path) -> bool:
    try:
        info = path.stat()
    except OSError:
        return True
    return _binds_an_exercise(str(path), info.st_mtime_ns, info.st_size)


def helpers_of(path: Path, shared: bool = False) -> list:
    """The helper modules ``path`` may import (see the module docstring); ``shared``: its folder
    holds other submissions too."""
    found = []
    for other in sorted(path.parent.glob("*.py")):
        if other.name == path.name or not other.is_file():
            continue
        if shared and not other.name.lstrip("_").startswith(path.stem + "_"):
            continue
        if other.name.startswith("_") or not _is_submission(other):
            found.append(other)
    return found


def collect(paths) -> tuple[list, list, list, list]:
    """(submissions, the folder each was found in, whether it shares its folder with another
    submission, skipped files) from files and folders, in a stable order.  A symlink found in a
    folder is kept (and refused when graded if it leaves the folder)."""
    files, folders, skipped = [], [], []
    for path in map(Path, paths):
        if not path.is_dir():
            files.append(path)
            folders.append(path.absolute().parent)
            continue
        for found in sorted(p for p in path.rglob("*") if p.suffix in SUFFIXES):
            parts = found.relative_to(path).parts
            if any(p.startswith((".", "_")) for p in parts) or found.is_dir():
                continue
            if (found.is_symlink() and not inside(found, path)) or _is_submission(found):
                files.append(found)
                folders.append(path.absolute())
            else:
                skipped.append(found)
    per_folder = {}
    for f in files:
        per_folder[f.absolute().parent] = per_folder.get(f.absolute().parent, 0) + 1
    shared = [per_folder[f.absolute().parent] > 1 for f in files]
    return files, folders, shared, skipped

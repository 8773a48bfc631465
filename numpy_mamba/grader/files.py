"""What is graded: the submissions among the files and folders an instructor names, each one's
source (a .py file, or a notebook's code cells) and the helper modules it may import.

    collect(paths)          the submissions (files defining an exercise function, or that will not
                            parse), the folder each was found in, whether it shares that folder
                            with other submissions, and the files skipped as helpers
    source_of(path, folder) the Python of a .py file or of a notebook's code cells, read safely
    helpers_of(path, shared) the helper modules next to a submission it may import

A helper is a .py file whose name starts with "_", or that binds no exercise function (a
classmate's submission binds one, so it is never a helper).  A submission and its helpers are
read alike: a regular file of the student's own (no link of either kind, no FIFO or device),
opened without following a link, at most 1 MB, UTF-8 (``sandbox.read_source``, ``_utf8``);
anything else refuses the submission with a row saying why.  In a folder several submissions
share (an LMS's flat "download all"), a helper reaches only the submission it is named after
(``_alice_core.py`` or ``alice_core.py`` for ``alice.py``): no classmate can import it, and no
pile of other files can push it out.
"""
from __future__ import annotations

import io
import os
import tokenize
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


def _utf8(path: Path, source: bytes) -> bytes:
    """``source`` if Python reads it as UTF-8 (its coding cookie or BOM says so, and it is);
    StagingError otherwise (a ``coding: unicode_escape`` header, say, or Latin-1 bytes)."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(source).readline)
    except SyntaxError as exc:
        raise StagingError(f"{shown(path)}: {exc.msg}: only UTF-8 source is graded") from None
    if encoding not in ("utf-8", "utf-8-sig"):
        raise StagingError(f"{shown(path)} declares the encoding {encoding!r}: only UTF-8 source is graded")
    try:
        source.decode(encoding)
    except UnicodeDecodeError as exc:
        raise StagingError(f"{shown(path)} is not UTF-8 (byte {exc.start}): only UTF-8 source is graded") from None
    return source


def source_of(path: Path, folder=None) -> bytes:
    """The Python source of ``path``: a .py file's bytes, or a notebook's code cells (``notebook.py``),
    UTF-8; the file read as ``sandbox.read_source`` reads it (no link, inside ``folder``, default
    its own); StagingError with a message when it cannot be read or is not Python."""
    if path.suffix not in SUFFIXES:
        raise StagingError(f"{shown(path)} is not a Python file or notebook (expected .py or .ipynb)")
    data = read_source(path, folder=folder)
    if path.suffix == ".ipynb":
        try:
            data = python_source(data).encode()
        except NotebookError as exc:
            raise StagingError(f"could not read the notebook {shown(path.name)}: {exc}") from None
    return _utf8(path, data)


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
        info = path.lstat()
    except OSError:
        return True
    return _binds_an_exercise(str(path), info.st_mtime_ns, info.st_size)


def helpers_of(path: Path, shared: bool = False) -> list:
    """The helper modules ``path`` may import (see the module docstring); ``shared``: its folder
    holds other submissions too."""
    found = []
    for other in sorted(path.parent.glob("*.py")):
        if other.name == path.name or (other.is_dir() and not other.is_symlink()):
            continue
        if shared and not other.name.lstrip("_").startswith(path.stem + "_"):
            continue
        if other.name.startswith("_") or not _is_submission(other):
            found.append(other)
    return found


def collect(paths) -> tuple[list, list, list, list]:
    """(submissions, the folder each was found in, whether it shares its folder with another
    submission, skipped files) from files and folders, in a stable order.  A symbolic link, or
    any file that cannot be read, is a submission: it gets its row (refused when graded)."""
    files, folders, skipped = [], [], []
    for path in map(Path, paths):
        if not path.is_dir():
            files.append(path)
            folders.append(path.absolute().parent)
            continue
        for found in sorted(p for p in path.rglob("*") if p.suffix in SUFFIXES):
            parts = found.relative_to(path).parts
            if any(p.startswith((".", "_")) for p in parts) or (found.is_dir() and not found.is_symlink()):
                continue
            if _is_submission(found):
                files.append(found)
                folders.append(path.absolute())
            else:
                skipped.append(found)
    per_folder = {}
    for f in files:
        per_folder[f.absolute().parent] = per_folder.get(f.absolute().parent, 0) + 1
    shared = [per_folder[f.absolute().parent] > 1 for f in files]
    return files, folders, shared, skipped

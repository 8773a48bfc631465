"""The folders of one submission: the copy a child reads, and the cleanup of what it leaves.

``stage`` copies the submission and its helper modules (a .py file next to it whose name
starts with "_", or that binds no exercise function: a classmate's submission binds one, so it
is never copied) into a fresh folder; the child reads that copy only (``kernel.py``), never the
student's folder.  ``remove_tree`` deletes a folder whatever a child left in it (thousands of
nested folders, read-only files and folders, symlinks, which it never follows) and never raises.
"""
from __future__ import annotations

import os
import stat
from functools import lru_cache
from pathlib import Path

from .registry import identify, top_level_names

MAX_SOURCE = 2**20              # a helper larger than this (1 MB) is not copied
MAX_HELPERS = 20                # helper modules copied next to a submission, at most


def remove_tree(root) -> None:
    """Delete ``root`` and everything in it; never raises, never follows a symlink, and needs no
    recursion (a child may leave thousands of nested folders, read-only files and folders):
    each round empties the top folder's subfolders and moves their own subfolders up."""
    try:
        os.chmod(root, 0o700)
        top = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return
    hoisted = 0
    try:
        for _ in range(1_000_000):
            names = os.listdir(top)
            if not names:
                break
            for name in names:
                try:
                    if not stat.S_ISDIR(os.stat(name, dir_fd=top, follow_symlinks=False).st_mode):
                        os.unlink(name, dir_fd=top)
                        continue
                    sub = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=top)
                    try:
                        os.chmod(sub, 0o700)
                        for inner in os.listdir(sub):
                            if stat.S_ISDIR(os.stat(inner, dir_fd=sub, follow_symlinks=False).st_mode):
                                hoisted += 1
                                os.rename(inner, f".up{hoisted}", src_dir_fd=sub, dst_dir_fd=top)
                            else:
                                os.unlink(inner, dir_fd=sub)
                    finally:
                        os.close(sub)
                    os.rmdir(name, dir_fd=top)
                except OSError:
                    continue
    except OSError:
        pass
    finally:
        os.close(top)
    try:
        os.rmdir(root)
    except OSError:
        pass


def inside(path: Path, folder: Path) -> bool:
    try:
        return os.path.commonpath([os.path.realpath(path), os.path.realpath(folder)]) == os.path.realpath(folder)
    except ValueError:
        return False


def _is_helper(path: Path) -> bool:
    """A module a submission may import: a .py file whose name starts with "_", or that binds no
    exercise function (a classmate's submission binds one, so it is never a helper)."""
    if path.name.startswith("_"):
        return True
    try:
        found = path.stat()
    except OSError:
        return False
    return _binds_no_exercise(str(path), found.st_mtime_ns, found.st_size)


@lru_cache(maxsize=4096)
def _binds_no_exercise(path: str, mtime_ns: int, size: int) -> bool:
    """Parsed once per file version: a class folder is scanned once per submission in it."""
    try:
        return not identify(top_level_names(Path(path).read_bytes()[:MAX_SOURCE], Path(path)), Path(path).stem)
    except (SyntaxError, ValueError, OSError, RecursionError, MemoryError):
        return False


def stage(path: Path, base: Path) -> Path:
    """Copy the submission and its helper modules (``_is_helper``) into ``base``/src; returns
    the copy's path.  Symlinks leaving the submission's folder are not copied."""
    src = base / "src"
    src.mkdir()
    folder = path.parent
    helpers = [p for p in sorted(folder.glob("*.py")) if p != path and p.is_file() and inside(p, folder)
               and p.stat().st_size <= MAX_SOURCE and _is_helper(p)][:MAX_HELPERS]
    for p in [path] + helpers:
        (src / p.name).write_bytes(p.read_bytes())
    return src / path.name

"""The user tier's precondition: what a sandbox user (an unprivileged uid that owns nothing) can read.

Without Landlock a root grader runs each child as its own user, and the files are confined by
their permission bits alone.  That is enough only when the image is laid out for it, which
``problems`` checks at the start of a run and ``prepare`` arranges (the Gradescope zip's
setup.sh runs it, as root, when the image is built):

  * readable by others (the child imports them): the standard library, numpy and scipy;
  * NOT readable by others: this package's source, and every copy of it the interpreter can
    name: the checkout it sits in or was installed from (pip's direct_url.json, editable or not;
    an .egg-link), with its tests/solutions and .git; a copy on sys.path; every other
    package next to numpy and scipy (an autodiff library, a copy of this one); and the folders
    and files the caller names private (the autograder's folder, a class's files, the secret
    seed's file);
  * searchable by others: the temporary folder, where each child's folder is made.

"Readable by others" is judged on the permission bits a user who owns nothing and is in no
group gets: a folder is open when it and every folder above it are searchable by others.
"""
from __future__ import annotations

import glob
import json
import os
import site
import stat
import sys
import sysconfig
import tempfile
from pathlib import Path
from urllib.parse import unquote, urlparse

PACKAGE = Path(__file__).resolve().parents[2]            # numpy_mamba/
ALLOWED = ("numpy", "scipy", "numpy.libs", "scipy.libs", "pyseccomp.py", "__pycache__")
HARMLESS_SUFFIXES = (".dist-info", ".egg-info", ".pth", ".txt")
MAX_FILES = 20000               # files checked under one needed tree (numpy and scipy: a few thousand)


def _others(path: str, bit: int) -> bool:
    try:
        return bool(os.stat(path).st_mode & bit)
    except OSError:
        return False


def _reachable(path: str) -> bool:
    """Every folder from / down to ``path`` (itself included, if a folder) searchable by others."""
    path = os.path.realpath(path)
    folders = [path] if os.path.isdir(path) else []
    parent = os.path.dirname(path)
    while True:
        folders.append(parent)
        if parent == os.path.dirname(parent):
            break
        parent = os.path.dirname(parent)
    return all(_others(f, stat.S_IXOTH) for f in folders)


def _open_to_others(path: str) -> bool:
    """Whether a sandbox user can read ``path`` (a file) or what is beneath it (a folder)."""
    if os.path.isdir(path):
        return _reachable(path)
    return _reachable(path) and _others(path, stat.S_IROTH)


def _needed() -> list:
    import numpy
    import scipy
    paths = [sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib")]
    return list(dict.fromkeys(paths + [os.path.dirname(os.path.realpath(m.__file__)) for m in (numpy, scipy)]))


def _unreadable_in(tree: str) -> str:
    """The first folder or file under ``tree`` a sandbox user cannot read ("" when none)."""
    if not _reachable(tree) or not _others(tree, stat.S_IROTH):
        return tree
    seen = 0
    for folder, folders, files in os.walk(tree):
        folders[:] = [f for f in folders if f not in ("site-packages", "dist-packages")]
        for name in folders + files:
            path = os.path.join(folder, name)
            mode = os.lstat(path).st_mode
            need = stat.S_IROTH | (stat.S_IXOTH if stat.S_ISDIR(mode) else 0)
            if not stat.S_ISLNK(mode) and mode & need != need:
                return path
            seen += 1
            if seen > MAX_FILES:
                return ""
    return ""


def _folders() -> tuple:
    """(the site folders, where every entry is a package; sys.path's other folders)."""
    packages = [f for f in dict.fromkeys(site.getsitepackages() + [site.getusersitepackages()]) if os.path.isdir(f)]
    others = [f for f in dict.fromkeys(p for p in sys.path if os.path.isabs(p)) if os.path.isdir(f)]
    return packages, [f for f in others if f not in packages]


def _copy(folder: str) -> list:
    """The copy of numpy_mamba in ``folder`` and, when ``folder`` is a checkout, the checkout."""
    found = [os.path.join(folder, "numpy_mamba")] if os.path.isdir(os.path.join(folder, "numpy_mamba")) else []
    checkout = found and any(os.path.isfile(os.path.join(folder, n)) for n in ("setup.cfg", "pyproject.toml"))
    return found + [folder] * bool(checkout)


def _checkouts(folders) -> list:
    """The folders an installed numpy_mamba was installed from: pip's direct_url.json (editable or
    not, ``pip install .``) and setuptools' .egg-link (``setup.py develop``)."""
    found = []
    for folder in folders:
        for record in glob.glob(os.path.join(folder, "numpy_mamba-*.dist-info", "direct_url.json")):
            try:
                with open(record) as f:
                    url = json.load(f).get("url", "")
            except (OSError, ValueError, AttributeError):
                continue
            if url.startswith("file://"):
                found.append(unquote(urlparse(url).path))
        for link in glob.glob(os.path.join(folder, "numpy_mamba*.egg-link")):
            try:
                with open(link) as f:
                    found.append(f.readline().strip())
            except OSError:
                continue
    return [c for c in found if os.path.isabs(c)]


def private_paths(extra=()) -> list:
    """What a sandbox user must not read: this package and every other copy of it the interpreter
    can name (a checkout it sits in or was installed from, with its tests/solutions; a copy on
    sys.path), every other package beside numpy and scipy, and ``extra``."""
    packages, others = _folders()
    found = [str(PACKAGE)] + _copy(str(PACKAGE.parent)) + _checkouts(packages + others)
    for folder in packages:
        found += [os.path.join(folder, name) for name in sorted(os.listdir(folder))
                  if name not in ALLOWED and not name.endswith(HARMLESS_SUFFIXES)]
    for folder in others:
        found += _copy(folder)
    return list(dict.fromkeys(found + [os.path.abspath(p) for p in extra]))


def problems(extra=()) -> list:
    """What breaks the user tier here, one line each (empty: it holds)."""
    found = [f"{path} is readable by the sandbox user (chmod o-rwx it)"
             for path in private_paths(extra) if os.path.exists(path) and _open_to_others(path)]
    for tree in _needed():
        missing = _unreadable_in(tree)
        if missing:
            found.append(f"{missing} is not readable by the sandbox user, who imports from {tree} (chmod o+rX)")
    temporary = tempfile.gettempdir()
    if not _reachable(temporary):
        found.append(f"{temporary}, where each child's folder is made, is not searchable by the sandbox user "
                     "(chmod o+x, or set TMPDIR)")
    return found


def prepare(extra=()) -> list:
    """Make what the sandbox user must not read unreadable to it (chmod o-rwx; run as root when
    the image is built); returns the paths changed."""
    changed = []
    for path in private_paths(extra):
        if os.path.exists(path) and _open_to_others(path) and not os.path.islink(path):
            os.chmod(path, stat.S_IMODE(os.stat(path).st_mode) & ~0o007)
            changed.append(path)
    return changed

"""The files of one submission: measured before they are read, copied where only its children can
read them, and removed afterwards whatever a child left.

``read_source(path, folder)``: the bytes of a regular file of the student's own, at most
MAX_SOURCE, opened from the folder it was found in one name at a time without following a link
(``O_NOFOLLOW`` at each name, as openat2's RESOLVE_NO_SYMLINKS would, on any kernel), then checked
on the descriptor: a symbolic link anywhere below the folder, a path leaving it, a hard link (a
second name of any file), a FIFO, a device, a file too large or one that grows while it is read
is refused with a message, never read.
``Folder``: a folder of one submission holding ``src/`` (the copy of the submission and its
helpers, which is all of the student's that a child reads) and one working directory per child.
For a root grader it lies in the grader's place (``users.PLACE`` in the temporary folder, root's,
mode 0711: others may enter it and list nothing), is root's with mode 0711 itself, and ``src/``,
its files and each working directory are the submission's own sandbox user's
(``users.take_user``) and readable by it alone.  Each is made with that owner and mode before a
byte is written into it, so no other user can open it at any moment; a classmate's child, another
user, can open none of them.  The folder is recorded under the sandbox user's lease before it is
made, and what an earlier run holding that user left (killed before it could remove it) is
removed first: what its record names, wherever the temporary folder was, and the folders of
that user in this place (named after it), should the records be gone (/run cleared by a reboot).
``remove_tree`` deletes a folder whatever a child left in it (thousands of nested folders,
read-only files, symlinks, which it never follows) and never raises.
"""
from __future__ import annotations

import errno
import os
import secrets
import stat
import sys
import tempfile
from pathlib import Path

from . import users

MAX_SOURCE = 2**20              # a submission or helper larger than this (1 MB) is not graded
MAX_HELPERS = 20                # helper modules of one submission, at most
DISK_LIMIT = 64 * 2**20         # a working directory larger than this stops its child
DISK_ENTRIES = 10000            # ... and so does one holding more entries than this


class StagingError(Exception):
    """A submission's files could not be read or copied: the message says which and why."""


def shown(path) -> str:
    """A path as text any terminal and file can take: bytes that are not UTF-8 as \\xNN, control
    characters as \\x.. escapes (no escape sequence reaches a terminal)."""
    text = os.fsencode(str(path)).decode("utf-8", "backslashreplace")
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" if ord(c) < 256 else f"\\u{ord(c):04x}"
                   for c in text)


def _open_beneath(path: Path, folder: Path) -> int:
    """A read-only descriptor of ``path``, opened from ``folder`` (as named) one name at a time,
    following no symbolic link; StagingError for a link, or a path that leaves the folder."""
    parts = Path(os.path.relpath(os.path.abspath(path), os.path.abspath(folder))).parts
    if not parts or parts[0] == "..":
        raise StagingError(f"{shown(path)} is not inside {shown(folder)}: not graded")
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for k, name in enumerate(parts):
            mode = os.O_NONBLOCK | os.O_NOCTTY if k == len(parts) - 1 else os.O_DIRECTORY
            inner = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | mode, dir_fd=fd)
            os.close(fd)
            fd = inner
        return fd
    except OSError as exc:
        os.close(fd)
        if exc.errno == errno.ELOOP:
            raise StagingError(f"{shown(path)} is a symbolic link, or inside one: only the submission's own "
                               "regular files are graded") from None
        raise


def read_source(path, limit: int = MAX_SOURCE, folder=None) -> bytes:
    """The bytes of ``path``, a regular file of its own inside ``folder`` (default: its own folder),
    opened without following a link and measured before it is read; StagingError otherwise."""
    path = Path(path)
    try:
        fd = _open_beneath(path, Path(folder) if folder is not None else path.parent)
    except OSError as exc:
        raise StagingError(f"could not read {shown(path)}: {exc.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise StagingError(f"{shown(path)} is not a regular file")
        if info.st_nlink > 1:
            raise StagingError(f"{shown(path)} has {info.st_nlink} names (hard links to one file): only a file of "
                               "its own is graded; copy it instead")
        if info.st_size > limit:
            raise StagingError(f"{shown(path)} is larger than {limit // 2**20} MB ({info.st_size} bytes): not graded")
        data = os.read(fd, limit + 1)
        if len(data) > limit:
            raise StagingError(f"{shown(path)} grew beyond {limit // 2**20} MB while it was read: not graded")
        return data
    except OSError as exc:
        raise StagingError(f"could not read {shown(path)}: {exc.strerror}") from None
    finally:
        os.close(fd)


def _place() -> Path:
    """The root grader's place in the temporary folder (made if missing: 0700, then 0711, by this
    run or one beside it); OSError if it is anything else (a link, another user's, one others may
    list or write)."""
    path = Path(tempfile.gettempdir()) / users.PLACE
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != 0 or stat.S_IMODE(info.st_mode) not in (0o700, 0o711):
        raise OSError(errno.EPERM, f"{path} must be a folder of root's with mode 0711 (remove it): it holds the "
                      "sandbox users' folders")
    if stat.S_IMODE(info.st_mode) != 0o711:
        os.chmod(path, 0o711)
    return path


class Folder:
    """The folder of one submission (see the module docstring); a context manager that removes
    it, and gives back its sandbox user, on exit.  ``uid``: its sandbox user (a root grader on
    Linux, whatever the tier), else None; ``landlock``: its children run under Landlock, which
    decides what they read (else the user must own nothing anywhere others may reach)."""

    def __init__(self, landlock: bool = False):
        self.uid, self._lock, self.base, self._made = None, None, None, 0
        try:
            if sys.platform.startswith("linux") and os.geteuid() == 0:
                self.uid, self._lock = users.take_user(everywhere=not landlock)
                place = _place()
                for left in users.recorded(self._lock) + [str(p) for p in place.glob(f"{self.uid}-*")]:
                    remove_tree(left)                            # a killed run's (its record lost, or not)
                    if os.path.lexists(left):
                        raise OSError(errno.ENOTEMPTY, f"could not remove {shown(left)}, left by an earlier run")
                self.base = place / f"{self.uid}-{secrets.token_hex(8)}"
                users.record(self._lock, self.base)
                os.mkdir(self.base, 0o700)
                os.chmod(self.base, 0o711)
            else:
                self.base = Path(tempfile.mkdtemp(prefix="numpy_mamba_grade_"))
            self.src = self.base / "src"
            self._folder(self.src, 0o500)
        except OSError as exc:
            self.close()
            raise StagingError(f"could not make a folder to grade in: {exc.strerror}") from None

    def _folder(self, path: Path, mode: int) -> None:
        """A new folder: the sandbox user's with ``mode`` before anything is in it (else the grader's
        alone, 0700)."""
        os.mkdir(path, 0o700)
        if self.uid is not None:
            os.chown(path, self.uid, self.uid)
        os.chmod(path, mode if self.uid is not None else 0o700)

    def stage(self, name: str, source: bytes, helpers: dict) -> Path:
        """Write the submission (as ``name``) and ``helpers`` {file name: bytes} into src/, each file
        the sandbox user's with mode 0400 before its first byte."""
        try:
            for file_name, data in [(name, source)] + sorted(helpers.items()):
                fd = os.open(self.src / file_name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                             0o400)
                try:
                    if self.uid is not None:
                        os.fchown(fd, self.uid, self.uid)
                    os.fchmod(fd, 0o400)
                    view = memoryview(data)
                    while view:
                        view = view[os.write(fd, view):]
                finally:
                    os.close(fd)
        except OSError as exc:
            raise StagingError(f"could not copy the submission to grade it: {exc.strerror}") from None
        return self.src / name

    def workdir(self) -> str:
        """A fresh working directory for one child."""
        self._made += 1
        path = self.base / f"work{self._made}"
        try:
            self._folder(path, 0o700)
        except OSError as exc:
            raise StagingError(f"could not make a working directory: {exc.strerror}") from None
        return str(path)

    def close(self) -> None:
        if self.base is not None:
            remove_tree(self.base)
            self.base = None
        if self._lock is not None:
            if not any(os.path.lexists(left) for left in users.recorded(self._lock)):   # else the next run's
                users.record(self._lock, None)
            os.close(self._lock)
            self.uid, self._lock = None, None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def disk_usage(folder: str) -> int:
    """Bytes under ``folder`` (symlinks not followed), or DISK_LIMIT + 1 past DISK_ENTRIES entries."""
    total, entries, stack = 0, 0, [folder]
    while stack:
        try:
            with os.scandir(stack.pop()) as it:
                for entry in it:
                    entries += 1
                    if entries > DISK_ENTRIES:
                        return DISK_LIMIT + 1
                    info = entry.stat(follow_symlinks=False)
                    total += info.st_blocks * 512 if hasattr(info, "st_blocks") else info.st_size
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
        except OSError:                                  # a path too deep or gone: what was counted stands
            continue
    return total


def remove_tree(root) -> None:
    """Delete ``root`` and everything in it; never raises, never follows a symlink, and needs no
    recursion: each round empties the top folder's subfolders and moves their own subfolders up."""
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
                hoisted = _empty_one(top, name, hoisted)
    except OSError:
        pass
    finally:
        os.close(top)
    try:
        os.rmdir(root)
    except OSError:
        pass


def _empty_one(top: int, name: str, hoisted: int) -> int:
    """Remove entry ``name`` of folder ``top``: a file at once; a folder after its files are removed
    and its subfolders moved up into ``top`` (numbered from ``hoisted``)."""
    try:
        if not stat.S_ISDIR(os.stat(name, dir_fd=top, follow_symlinks=False).st_mode):
            os.unlink(name, dir_fd=top)
            return hoisted
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
        pass
    return hoisted

"""The sandbox users of a root grader: one unprivileged uid per submission, which no one else has.

``take_user()`` returns a uid from ``kernel.SANDBOX_UID`` up and a descriptor holding its lock
(flock on a file of its own in /run/numpy_mamba-sandbox-users, root's alone): no other grader on
the machine takes that uid until the descriptor is closed, whatever runs at the same time
(OSError when none is free).  A uid
is skipped when a user or group of the system's databases (a directory service's too) has it, a
running process has it, or a file has it that a child reaches first: the files every child
reads, the temporary and home folders, and what an earlier grader left in them.
"""
from __future__ import annotations

import errno
import fcntl
import glob
import grp
import os
import pwd
import tempfile
from functools import lru_cache

from .kernel import SANDBOX_UID, readable_paths

USERS = 184                     # SANDBOX_UID .. +183: below systemd's dynamic users (61184-65519)


def _lock_folder() -> int:
    """The folder of the sandbox users' lock files, root's alone (made if missing): its descriptor."""
    path = os.path.join("/run" if os.path.isdir("/run") else "/tmp", "numpy_mamba-sandbox-users")
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    info = os.fstat(fd)
    if info.st_uid != 0 or info.st_mode & 0o077:
        os.close(fd)
        raise OSError(errno.EPERM, f"{path} must be a folder only root can use (remove it): it holds the sandbox "
                      "users' locks")
    return fd


def _owners(paths) -> set:
    """The owners and groups of ``paths`` (symbolic links not followed)."""
    found = set()
    for path in paths:
        try:
            info = os.lstat(path)
        except OSError:
            continue
        found |= {info.st_uid, info.st_gid}
    return found


def _entries(folder: str) -> list:
    try:
        return [os.path.join(folder, name) for name in os.listdir(folder)]
    except OSError:
        return []


@lru_cache(maxsize=1)
def _owners_of_readable() -> frozenset:
    """The owners and groups of every file every child reads (the standard library, numpy, scipy)."""
    readable, _ = readable_paths()
    return frozenset(_owners(list(readable) + [os.path.join(folder, name) for tree in readable
                                               for folder, folders, files in os.walk(tree) for name in folders + files]))


def _in_use() -> set:
    """The ids a sandbox user must not take: those of users, groups and running processes, and of
    the owners of what a child reaches: the files it reads, the temporary and home folders, and
    what an earlier grader left there."""
    used = {u.pw_uid for u in pwd.getpwall()} | {g.gr_gid for g in grp.getgrall()} | _owners_of_readable()
    for status in glob.glob("/proc/[0-9]*/status"):
        try:
            with open(status) as f:
                used |= {int(x) for line in f if line.startswith(("Uid:", "Gid:")) for x in line.split()[1:]}
        except (OSError, ValueError):
            continue
    for place in dict.fromkeys([tempfile.gettempdir(), "/tmp", "/var/tmp", "/dev/shm", "/home"]):
        left = [path for folder in glob.glob(os.path.join(place, "numpy_mamba_grade_*")) for path in _entries(folder)]
        used |= _owners(_entries(place) + left)
    return used


def _known(uid: int) -> bool:
    """A user or a group of the system's databases (a directory service's too) has this id."""
    for lookup in (pwd.getpwuid, grp.getgrgid):
        try:
            lookup(uid)
            return True
        except KeyError:
            pass
    return False


def take_user() -> tuple:
    """(uid, the descriptor holding its lock): a sandbox user no other grader on this machine holds
    until the descriptor is closed, and that no user, group, process or file reached has (root only)."""
    folder = _lock_folder()
    try:
        used = _in_use()
        for uid in range(SANDBOX_UID, SANDBOX_UID + USERS):
            if uid in used or _known(uid):
                continue
            fd = os.open(str(uid), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=folder)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return uid, fd
            except BlockingIOError:
                os.close(fd)
    finally:
        os.close(folder)
    raise OSError(errno.EUSERS, f"every sandbox user (uid {SANDBOX_UID} to {SANDBOX_UID + USERS - 1}) is in use")

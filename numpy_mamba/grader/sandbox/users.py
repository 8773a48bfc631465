"""The sandbox users of a root grader: one unprivileged uid per submission, which no one else has.

``take_user(everywhere)`` returns a uid from ``kernel.SANDBOX_UID`` up and a descriptor holding
its lock (flock on a file of its own in /run/numpy_mamba-sandbox-users, root's alone): no other
grader on the machine takes that uid until the descriptor is closed, whatever runs at the same
time (OSError when none is free).  A uid is skipped when a user or group of the system's databases
(a directory service's too) has it, a running process has it, or a file has it that its children
could reach: with ``everywhere`` (the user tier, no Landlock) any file in a folder other users may
enter, found by listing every such folder from / once per process; else (under Landlock, which
decides what they read) the files every child reads.

The lock file also records the folder its holder makes for the uid (``record``), before it is
made, so that a run killed before it could remove it leaves a record: the next run that takes the
uid removes what is recorded first (``recorded``), wherever the temporary folder was.  The
folders of the grader's own place (``PLACE``, root's, mode 0711) belong to these leases and are
not walked.
"""
from __future__ import annotations

import errno
import fcntl
import glob
import grp
import os
import pwd
import stat
import threading
from functools import lru_cache

from .kernel import SANDBOX_UID, readable_paths

USERS = 184                     # SANDBOX_UID .. +183: below systemd's dynamic users (61184-65519)
PLACE = "numpy_mamba-grader"    # a root grader's folder in the temporary folder: root's, mode 0711
PSEUDO = ("/proc", "/sys")      # processes are looked at live; /sys is the kernel's, all root's
LOCKS = os.path.join("/run" if os.path.isdir("/run") else "/tmp", "numpy_mamba-sandbox-users")   # one per machine
_WALK = threading.Lock()        # a class run's threads start at once: the filesystem is walked once


def _lock_folder() -> int:
    """The folder of the sandbox users' lock files, root's alone (made if missing): its descriptor."""
    path = LOCKS
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


def is_place(info: os.stat_result) -> bool:
    """Whether a folder's lstat is that of a grader's place: a folder of root's, mode 0711."""
    return stat.S_ISDIR(info.st_mode) and info.st_uid == 0 and stat.S_IMODE(info.st_mode) == 0o711


def _sandbox_ids(info: os.stat_result) -> set:
    return {i for i in (info.st_uid, info.st_gid) if SANDBOX_UID <= i < SANDBOX_UID + USERS}


@lru_cache(maxsize=1)
def _owners_of_readable() -> frozenset:
    """The sandbox ids owning a file every child reads (the standard library, numpy, scipy)."""
    readable, _ = readable_paths()
    paths = list(readable) + [os.path.join(folder, name) for tree in readable
                              for folder, folders, files in os.walk(tree) for name in folders + files]
    found = set()
    for path in paths:
        try:
            found |= _sandbox_ids(os.lstat(path))
        except OSError:
            continue
    return frozenset(found)


@lru_cache(maxsize=1)
def _owners_anywhere() -> frozenset:
    """The sandbox ids owning a file a user who owns nothing could reach: every folder from / that
    other users may enter is listed, but /proc, /sys and the grader's places (module docstring).
    Once per process: no one but a grader run makes files of these ids."""
    found, seen, todo = set(), set(), ["/"]
    while todo:
        try:
            with os.scandir(todo.pop()) as entries:
                for entry in entries:
                    try:
                        info = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    found |= _sandbox_ids(info)
                    enter = stat.S_ISDIR(info.st_mode) and info.st_mode & stat.S_IXOTH
                    if enter and entry.path not in PSEUDO and not (entry.name == PLACE and is_place(info)) \
                            and (info.st_dev, info.st_ino) not in seen:
                        seen.add((info.st_dev, info.st_ino))           # a bind mount met twice: once
                        todo.append(entry.path)
        except OSError:                                  # gone, or not a folder after all
            continue
    return frozenset(found)


def _in_use(everywhere: bool) -> set:
    """The ids a sandbox user must not take: those of users, groups and running processes, and of
    the owners of what a child reaches (module docstring)."""
    used = {u.pw_uid for u in pwd.getpwall()} | {g.gr_gid for g in grp.getgrall()}
    used |= _owners_anywhere() if everywhere else _owners_of_readable()
    for status in glob.glob("/proc/[0-9]*/status"):
        try:
            with open(status) as f:
                used |= {int(x) for line in f if line.startswith(("Uid:", "Gid:")) for x in line.split()[1:]}
        except (OSError, ValueError):
            continue
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


def take_user(everywhere: bool = True) -> tuple:
    """(uid, the descriptor holding its lock): a sandbox user no other grader on this machine holds
    until the descriptor is closed, and that no user, group, process or file its children could
    reach has (root only; ``everywhere``: the children read what others may, no Landlock)."""
    folder = _lock_folder()
    try:
        with _WALK:
            used = _in_use(everywhere)
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


def recorded(lock: int) -> list:
    """The folders recorded under a lease (``lock``): made by an earlier holder and not removed."""
    data = os.pread(lock, 1 << 16, 0)
    return [os.fsdecode(line) for line in data.split(b"\0") if line]


def record(lock: int, folder) -> None:
    """Record ``folder`` (None: nothing) as the one its holder makes under the lease ``lock``."""
    os.ftruncate(lock, 0)
    if folder is not None:
        os.pwrite(lock, os.fsencode(str(folder)) + b"\0", 0)

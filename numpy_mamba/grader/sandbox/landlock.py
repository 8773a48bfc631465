"""Landlock (Linux >= 5.13): a process restricts, for good, which files it and its future children
may read and write, standard library only (include/uapi/linux/landlock.h).

``restrict(libc, abi, readable, writable, listable)``: every filesystem right the kernel of ABI
``abi`` knows is refused unless a rule grants it: ``readable`` paths are read (a folder: all
beneath it), ``listable`` folders listed only, ``writable`` read and written; nothing is
executed.  From ABI 4 TCP bind and connect are refused too (seccomp refuses sockets anyway); from
ABI 6 signals to, and abstract unix sockets with, processes outside the sandbox (below ABI 6
seccomp refuses what would reach them: ``seccomp.py``).  ``abi(libc)``: what this kernel offers.
"""
from __future__ import annotations

import ctypes
import os
import struct

SYSCALLS = (444, 445, 446)      # create_ruleset, add_rule, restrict_self: x86_64 and aarch64 alike
CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH = 1
FS_EXECUTE, FS_WRITE_FILE, FS_READ_FILE, FS_READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
FS_REMOVE_DIR, FS_REMOVE_FILE, FS_MAKE_DIR, FS_MAKE_REG = 1 << 4, 1 << 5, 1 << 7, 1 << 8
FS_REFER, FS_TRUNCATE, FS_IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1
FILE_RIGHTS = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV   # valid on a file
READ = FS_READ_FILE | FS_READ_DIR
WRITE = (READ | FS_WRITE_FILE | FS_REMOVE_DIR | FS_REMOVE_FILE | FS_MAKE_DIR | FS_MAKE_REG
         | FS_REFER | FS_TRUNCATE)


def handled_fs(abi: int) -> int:
    """Every filesystem right the kernel of Landlock ABI ``abi`` knows (all refused unless granted)."""
    rights = (1 << 13) - 1                                     # ABI 1: EXECUTE .. MAKE_SYM
    for since, right in ((2, FS_REFER), (3, FS_TRUNCATE), (5, FS_IOCTL_DEV)):
        rights |= right if abi >= since else 0
    return rights


def abi(libc) -> int:
    """The Landlock ABI version this kernel offers (0: none, or no C library)."""
    if libc is None:
        return 0
    version = libc.syscall(SYSCALLS[0], None, ctypes.c_size_t(0), ctypes.c_uint32(CREATE_RULESET_VERSION))
    return max(0, int(version))


def _add_rule(libc, ruleset: int, path: str, rights: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return                                                 # a path that does not exist grants nothing
    try:
        if not os.path.isdir(f"/proc/self/fd/{fd}"):
            rights &= FILE_RIGHTS
        rule = ctypes.create_string_buffer(struct.pack("=Qi", rights, fd), 12)
        if libc.syscall(SYSCALLS[1], ctypes.c_int(ruleset), ctypes.c_int(RULE_PATH_BENEATH), rule,
                        ctypes.c_uint32(0)) < 0:
            raise OSError(ctypes.get_errno(), f"landlock_add_rule failed for {path}")
    finally:
        os.close(fd)


def restrict(libc, abi: int, readable, writable, listable) -> None:
    """Restrict this process (and what it starts) to the rules above, at Landlock ABI ``abi``."""
    handled = handled_fs(abi)
    attr = struct.pack("=QQQ", handled, NET_BIND_TCP | NET_CONNECT_TCP if abi >= 4 else 0,
                       SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0)
    size = 8 if abi < 4 else 16 if abi < 6 else 24
    ruleset = libc.syscall(SYSCALLS[0], ctypes.create_string_buffer(attr[:size], size), ctypes.c_size_t(size),
                           ctypes.c_uint32(0))
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset failed")
    try:
        for paths, rights in ((listable, FS_READ_DIR), (readable, READ), (writable, WRITE)):
            for path in paths:
                _add_rule(libc, ruleset, path, rights & handled)
        if libc.syscall(SYSCALLS[2], ctypes.c_int(ruleset), ctypes.c_uint32(0)) < 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self failed")
    finally:
        os.close(ruleset)

"""The child's seccomp filter: an allowlist of the system calls computing an answer needs; every
other call answers EPERM, so a submission sees an ordinary ``PermissionError``.

The list was measured: every honest file of tests/student_files/ and tests/solutions/ (and a
file that imports widely, times itself, draws random numbers and writes a scratch file:
tests/test_grader_privilege.py) graded under ``strace -f``, keeping what each child called after
its filter was loaded; then the older names the C library uses for the same thing (``open`` for
``openat``, ``stat`` for ``newfstatat``, ...).  Every name is a call Linux 4.14 has (Gradescope's
kernel), so no honest file needs a newer one.  What computing does not need is refused by not
being named: processes and threads, exec, ptrace, sockets, signals to others, chmod, chown,
utime, extended attributes, truncate, links and renames, mounts, namespaces, keyrings, IPC,
memfd, prctl, scheduling, limits, identities.

Some calls are allowed with some arguments only (``rules``): ``kill``/``tgkill`` at itself;
``fcntl`` and ``ioctl`` commands that touch only the descriptor (no ``O_ASYNC``, ``F_SETOWN`` or
``FIOSETOWN``, which make the kernel signal another process); ``sched_getaffinity`` of itself.
Opening a file depends on what confines the files (``install``'s ``landlock_abi``):

  * 0 (no Landlock): read only; nothing is written, created or removed;
  * 1 and 2: Landlock keeps writes in the working directory, where files and folders may be
    made and removed; below ABI 3 it does not govern truncation, and sees ``O_TRUNC`` with a
    read-only (or no) access mode as a read: ``O_TRUNC`` only with ``O_WRONLY`` or ``O_RDWR``;
  * 3 and up: any flags.

A few calls newer than 4.14 are tried first by the C library, which falls back to an older one
when the kernel lacks them (``ENOSYS``): they answer ENOSYS here as 4.14 does.  A foreign ABI's
calls are refused: x32's numbers match no rule, and another architecture (i386's on x86_64)
ends the process at libseccomp's check of the architecture.

Built with libseccomp through pyseccomp, a pure-Python (ctypes) binding (setup.cfg's ``grader``
extra, Linux only), rather than hand-assembled BPF: libseccomp knows each architecture's call
numbers (an allowlist here names no number), checks the architecture first, and compiles argument
rules.  Where either is missing (``available()`` is False) there is no seccomp, the tier is weak,
and ``MISSING`` says what to install.
"""
from __future__ import annotations

import errno
import fcntl
import os

try:
    import pyseccomp
    MISSING = ""
except ImportError:                                     # installed without the grader extra
    pyseccomp, MISSING = None, 'pip install "numpy_mamba[grader]" adds it'
except (RuntimeError, OSError):                         # not Linux, or no libseccomp
    pyseccomp, MISSING = None, "install libseccomp2 (Debian, Ubuntu) or libseccomp (Fedora, Alpine) to have it"

ALLOWED = (
    "brk mmap munmap mremap mprotect madvise "                                   # memory
    "read readv pread64 lseek close fstat newfstatat stat lstat getdents64 getdents "   # reading
    "readlink readlinkat access faccessat getcwd dup dup2 dup3 write writev "     # ... and what is open
    "clock_gettime clock_getres gettimeofday time nanosleep clock_nanosleep "     # time
    "getpid gettid getppid getuid geteuid getgid getegid getresuid getresgid getgroups uname "   # itself
    "getrandom getrusage times sysinfo sched_yield futex "
    "rt_sigaction rt_sigprocmask rt_sigreturn sigaltstack restart_syscall exit exit_group").split()
WORKDIR = "mkdir mkdirat unlink unlinkat rmdir".split()     # with Landlock: in the working directory only
NEWER = ("clone3", "faccessat2", "openat2")                # the C library falls back when they are missing
O_TMPFILE = 0o20000000                                     # __O_TMPFILE: without O_DIRECTORY's bit
WRITING = os.O_ACCMODE | os.O_CREAT | os.O_TRUNC | O_TMPFILE
FCNTL = (fcntl.F_DUPFD, fcntl.F_GETFD, fcntl.F_SETFD, fcntl.F_GETFL, 1030)   # 1030: F_DUPFD_CLOEXEC
IOCTL = (0x5401, 0x5451, 0x5450)          # Linux's TCGETS (isatty), FIOCLEX, FIONCLEX (close-on-exec)


def available() -> bool:
    """Whether this machine can build the filter (Linux with libseccomp)."""
    return pyseccomp is not None


def rules(pid: int, landlock_abi: int) -> list:
    """[(call, *conditions)]: the calls allowed with some arguments only (see the module docstring)."""
    A, EQ, MASKED = pyseccomp.Arg, pyseccomp.EQ, pyseccomp.MASKED_EQ
    flags = [(WRITING, 0)] if landlock_abi < 1 else [(0, 0)] if landlock_abi >= 3 else \
        [(os.O_TRUNC, 0), (os.O_ACCMODE, os.O_WRONLY), (os.O_ACCMODE, os.O_RDWR)]   # any one (mask, value)
    opening = [(call, A(index, MASKED, mask, value)) for call, index in (("openat", 2), ("open", 1))
               for mask, value in flags]
    return opening + [("kill", A(0, EQ, pid)), ("tgkill", A(0, EQ, pid)), ("sched_getaffinity", A(0, EQ, 0)),
                      ("fcntl", A(1, EQ, fcntl.F_SETFL), A(2, MASKED, fcntl.FASYNC, 0)),
                      *[("fcntl", A(1, EQ, command)) for command in FCNTL],
                      *[("ioctl", A(1, EQ, request)) for request in IOCTL]]


def install(landlock_abi: int, pid: int) -> None:
    """Load the filter into this process for good (no-new-privs must be set already); ``pid``:
    this process, the only one it may signal; ``landlock_abi``: what confines its files."""
    f = pyseccomp.SyscallFilter(pyseccomp.ERRNO(errno.EPERM))
    for call in ALLOWED + (WORKDIR if landlock_abi >= 1 else []):
        f.add_rule(pyseccomp.ALLOW, call)
    for call in NEWER:
        f.add_rule(pyseccomp.ERRNO(errno.ENOSYS), call)
    for call, *conditions in rules(pid, landlock_abi):
        f.add_rule(pyseccomp.ALLOW, call, *conditions)
    f.load()

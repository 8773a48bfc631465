"""What confines a child, and the one line saying so: ``probe`` (in the grader), ``confine`` (in the
child, before the submission's first line; nothing it sets up can be undone afterwards).

``confine`` applies the tier the grader chose (``Isolation``):

  * its own session; first in line for the OOM killer (oom_score_adj 1000), so a child that takes
    too much memory is killed before the grader;
  * hard resource limits: address space, CPU time (a backstop: the grader judges the time limit
    on the child's CPU time, ``parent.py``), file size, open files, no core files;
  * no-new-privs, and Landlock at the tier's ABI (``landlock.py``);
  * for a root grader, at every tier: the child's own unprivileged user and group (allocated
    by ``staging.py``), no supplementary group, no capability but, under Landlock,
    CAP_DAC_READ_SEARCH: Landlock, not the permission bits, decides what it reads there (the
    interpreter may live where only root reads, as pyenv's under /root);
  * PR_SET_PDEATHSIG (the child dies with the grader) and the seccomp allowlist (``seccomp.py``).

``NUMPY_MAMBA_SANDBOX_MAX_ABI`` caps the Landlock ABI the grader uses (0: act as if the kernel had
no Landlock), so that every tier can be tried on one machine.
"""
from __future__ import annotations

import ctypes
import errno
import os
import platform
import resource
import signal
import struct
import sys
import sysconfig
from dataclasses import dataclass, replace
from functools import lru_cache

try:                                                   # in the grader: a package
    from . import landlock, seccomp
except ImportError:                                    # in the child: loaded by path (child.py)
    landlock, seccomp = sys.modules["_sandbox_landlock"], sys.modules["_sandbox_seccomp"]

FILE_LIMIT = 64 * 2**20         # RLIMIT_FSIZE: no file written by a submission grows beyond this
OPEN_FILES = 64                 # RLIMIT_NOFILE: descriptors (and so pipes) a child may hold
SANDBOX_UID = 61000             # a root grader's children run as SANDBOX_UID + k (and that group)
MAX_ABI = "NUMPY_MAMBA_SANDBOX_MAX_ABI"
PACKAGES_DIRS = ("site-packages", "dist-packages")
PR_SET_PDEATHSIG, PR_SET_KEEPCAPS, PR_SET_NO_NEW_PRIVS = 1, 8, 38
CAP_DAC_READ_SEARCH = 2


@dataclass(frozen=True)
class Isolation:
    """What the children of this grader get: Landlock at ``landlock_abi`` (0: none), seccomp, and
    for a root grader without Landlock the sandbox user, valid when the image check found
    nothing (``image``: what it found, ``image.py``).  ``offered``: the kernel's own ABI;
    ``missing``: what to install for seccomp, when there is none."""

    landlock_abi: int = 0
    seccomp: bool = False
    root: bool = False
    image: tuple = ()
    system: str = ""
    offered: int = 0
    missing: str = ""

    @property
    def tier(self) -> str:
        """"landlock", "user" (root, no Landlock: a sandbox user per child) or "weak"."""
        if self.seccomp and self.landlock_abi >= 1:
            return "landlock"
        return "user" if self.seccomp and self.root else "weak"

    @property
    def complete(self) -> bool:
        """Complete for the threat model (tutorials/INSTRUCTORS.md): every tier but "weak", the
        user tier only where the image check holds."""
        return self.tier == "landlock" or (self.tier == "user" and not self.image)

    @property
    def line(self) -> str:
        """One line for the terminal, the report and the instructor's output."""
        calls = ("seccomp allowlist (computing only: no processes or threads, exec, signals to others, sockets, "
                 "chmod, utime, xattrs, truncate, links)")
        cap = f" (capped by {MAX_ABI}; the kernel offers {self.offered})" if self.offered > self.landlock_abi else ""
        if self.tier == "landlock":
            scope = "scoped by Landlock" if self.landlock_abi >= 6 else "refused by seccomp"
            files = (f"Landlock ABI {self.landlock_abi}{cap} (files: read an allowlist, write the working "
                     f"directory only; signals and abstract sockets {scope})")
            return f"isolation: kernel sandbox: {files}, {calls}; {self.system}"
        if self.tier == "user":
            user = (f"no Landlock{cap}; each child its own user (uid {SANDBOX_UID}+), reading only what others "
                    f"may read, opening files read-only")
            if self.complete:
                return f"isolation: sandbox user: {user} (image checked), {calls}; {self.system}"
            shown = [*self.image[:3], *[f"and {len(self.image) - 3} more"] * (len(self.image) > 3)]
            return (f"isolation: WEAK: {user}, but the image check failed: {'; '.join(shown)} (in a container image, "
                    f"`python -m numpy_mamba.grader.gradescope prepare FOLDER` makes these unreadable); {self.system}")
        if self.landlock_abi:
            files = f"Landlock ABI {self.landlock_abi}{cap} (files: read an allowlist, write the working directory only)"
        else:
            files = f"no Landlock{cap}{'' if self.root else ' and not root'} (files NOT confined: a submission reads " \
                    f"{'what you can' if self.seccomp else 'and writes what you can'})"
        calls = calls + ", files opened read-only" if self.seccomp else \
            f"no seccomp ({self.missing or 'not offered here'}): processes, signals and sockets NOT confined"
        return f"isolation: WEAK: {files}, {calls}; {self.system}"


def _libc():
    """The C library with syscall and prctl (Linux), else None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        libc.prctl.restype = ctypes.c_int
        return libc
    except (OSError, AttributeError):
        return None


def abi_cap(environ=os.environ) -> int | None:
    """The cap ``NUMPY_MAMBA_SANDBOX_MAX_ABI`` sets (None: unset); ValueError if it is not an integer >= 0."""
    text = environ.get(MAX_ABI, "").strip()
    if not text:
        return None
    if not text.isdigit():
        raise ValueError(f"{MAX_ABI} must be an integer >= 0 (0: no Landlock), got {text!r}")
    return int(text)


def probe(image=lambda: ()) -> Isolation:
    """The best tier this machine offers (nothing is changed in this process); ``image()`` lists
    what breaks the user tier (called only when that tier is the one chosen)."""
    system = f"{platform.system()} {platform.release()} {platform.machine()}"
    libc = _libc()
    seccomp_ok, missing = libc is not None and seccomp.available(), seccomp.MISSING if libc else "not Linux"
    if seccomp_ok:
        with open("/proc/self/status") as f:
            seccomp_ok = any(line.startswith("Seccomp:") for line in f)
        missing = "" if seccomp_ok else "this kernel has none"
    offered = landlock.abi(libc)
    cap = abi_cap()
    used = offered if cap is None else min(cap, offered)
    root = hasattr(os, "geteuid") and os.geteuid() == 0
    found = Isolation(used, seccomp_ok, root, (), system, offered, missing)
    return replace(found, image=tuple(image())) if found.tier == "user" else found


def die_with_parent() -> None:
    """PR_SET_PDEATHSIG: this process gets SIGKILL when its parent ends (Linux; elsewhere nothing)."""
    libc = _libc()
    if libc is not None:
        libc.prctl(PR_SET_PDEATHSIG, ctypes.c_ulong(signal.SIGKILL), 0, 0, 0)


def limit(memory_bytes: int, cpu_seconds: int) -> None:
    """Hard limits: address space = what the process maps now + ``memory_bytes``; CPU seconds;
    file size; open files; no core files.  A too-large write fails (SIGXFSZ ignored)."""
    try:
        with open("/proc/self/status") as f:
            vm = next((int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:")), 0)
    except OSError:                                  # no /proc (macOS): no memory limit
        vm = 0
    limits = [(resource.RLIMIT_FSIZE, FILE_LIMIT), (resource.RLIMIT_CORE, 0), (resource.RLIMIT_NOFILE, OPEN_FILES),
              (resource.RLIMIT_CPU, int(cpu_seconds))] + ([(resource.RLIMIT_AS, vm + int(memory_bytes))] if vm else [])
    for which, value in limits:
        try:
            resource.setrlimit(which, (value, value))
        except (ValueError, OSError):                # e.g. RLIMIT_AS on macOS
            pass
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)


def _become(libc, uid: int, read_all: bool) -> None:
    """Switch to user and group ``uid`` for good (Linux), with no supplementary group and no
    capability but CAP_DAC_READ_SEARCH when ``read_all``."""
    caps = 1 << CAP_DAC_READ_SEARCH if read_all else 0
    libc.prctl(PR_SET_KEEPCAPS, ctypes.c_ulong(int(read_all)), 0, 0, 0)
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    header = ctypes.create_string_buffer(struct.pack("=Ii", 0x20080522, 0), 8)    # _LINUX_CAPABILITY_VERSION_3
    if libc.capset(header, ctypes.create_string_buffer(struct.pack("=6I", caps, caps, 0, 0, 0, 0), 24)) != 0:
        raise OSError(ctypes.get_errno(), "capset failed")
    libc.prctl(PR_SET_KEEPCAPS, ctypes.c_ulong(0), 0, 0, 0)
    if os.getresuid() != (uid,) * 3 or os.getresgid() != (uid,) * 3 or os.getgroups():
        raise OSError(errno.EPERM, f"could not become user {uid}")


@lru_cache(maxsize=1)
def readable_paths() -> tuple:
    """(readable, listable): what every child may read, and folders it may only list."""
    import numpy
    import scipy
    readable, listable = ["/dev/null", "/dev/urandom", "/etc/ld.so.cache"], []
    for key in ("stdlib", "platstdlib"):
        std = sysconfig.get_paths()[key]
        if not os.path.isdir(std) or std in listable:
            continue
        entries = os.listdir(std)
        if any(e in PACKAGES_DIRS for e in entries):     # the standard library without its packages
            listable.append(std)
            readable += [os.path.join(std, e) for e in entries if e not in PACKAGES_DIRS]
        else:
            readable.append(std)
    readable.append(os.path.join(sys.base_prefix, "lib", f"python{sys.version_info[0]}{sys.version_info[1]}.zip"))
    for module in (numpy, scipy):
        folder = os.path.dirname(os.path.realpath(module.__file__))
        listable.append(os.path.dirname(folder))         # the import system lists site-packages
        readable += [folder] + ([folder + ".libs"] if os.path.isdir(folder + ".libs") else [])
    return tuple(dict.fromkeys(readable)), tuple(dict.fromkeys(listable))


def mapped_files() -> list:
    """The files mapped into this process now (the interpreter, its libraries, numpy's and
    scipy's extension modules): they stay readable, so a library loaded later finds them."""
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split(None, 5)[5].strip() for line in f if len(line.split(None, 5)) == 6}
    except OSError:
        return []
    return sorted(p for p in paths if p.startswith("/") and os.path.isfile(p))


def confine(tier: dict, readable, writable, listable, memory_bytes: int, cpu_seconds: int, parent: int) -> None:
    """Confine this process for good (see the module docstring) as ``tier`` says: {"landlock_abi",
    "seccomp", "uid" (None: stay)}.  ``parent``: the process to die with; if it is gone, exit.
    Raises OSError when the kernel refuses a protection the tier asks for (never silently weaker)."""
    libc = _libc()
    try:
        with open("/proc/self/oom_score_adj", "w") as f:
            f.write("1000")
    except OSError:
        pass
    limit(memory_bytes, cpu_seconds)
    abi = int(tier["landlock_abi"])
    if libc is not None and libc.prctl(PR_SET_NO_NEW_PRIVS, ctypes.c_ulong(1), 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    if abi:
        landlock.restrict(libc, abi, list(readable) + mapped_files(), writable, listable)
    if tier.get("uid") is not None:
        _become(libc, int(tier["uid"]), read_all=abi >= 1)
    elif os.geteuid() == 0:
        raise OSError(errno.EPERM, "a root grader's child must run as a sandbox user of its own")
    die_with_parent()                                # after the user switch, which clears it
    if os.getppid() != parent:
        os._exit(75)
    if tier["seccomp"]:
        seccomp.install(abi, os.getpid())

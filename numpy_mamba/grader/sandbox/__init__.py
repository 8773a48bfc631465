"""The sandbox: one submission's code runs in a child process that holds no answer and can harm no one.

Its interface is four names: ``isolation(private)`` (the tier this machine offers and its one
line), ``Folder`` (a submission's files, copied where only its children read them),
``Job`` (what one child is asked) and ``run(job, folder, isolation, limits) -> ChildRun``.  It
knows nothing of exercises: the grader hands it the kit, the calls and their arguments as arrays,
and judges what comes back.

    kernel.py    the tiers, ``probe`` and ``confine`` (limits, the sandbox user, capabilities)
    landlock.py  Landlock: files read from an allowlist, written in the working directory only
    seccomp.py   the system calls a child may make (an allowlist)
    image.py     the user tier's precondition: what an unprivileged user can read, checked and arranged
    staging.py   a submission's files: opened without links, measured, copied, removed
    users.py     a root grader's sandbox users: a uid per submission, which no one else has
    parent.py    the grader's side of a child: start, feed, read, judge on its own CPU time, kill
    child.py     what runs in the child (and the clean fork server it comes from)
    protocol.py  the frames between the two, parsed strictly

The threat model.  A student's file may do anything Python can: read files, open sockets, start
processes, signal or ptrace other processes, take memory, disk, threads and CPU, write escape
sequences, send forged messages, exit at any moment, or never return.  Against that:

  * no answer in the child: it never imports numpy_mamba; it gets the problems as arrays and,
    of the package, the source of what its hand-out allows (the kit); the references,
    tolerances and scores exist only in the grader;
  * every tier: a fresh interpreter (``python -I``, a clean environment), a session of its own,
    hard limits on address space, file size and open files, first in line for the OOM killer,
    dead with the grader (PDEATHSIG), no-new-privs, and the seccomp allowlist: the system calls
    computing needs and nothing else (no process or thread, exec, ptrace, signal to another
    process, socket, chmod, chown, utime, xattr, truncate, link, IPC, memfd, prctl, ...);
  * every tier, for a root grader: its own unprivileged user and group, which no other grader
    run, user, process or file it reaches has, no supplementary group, no capability (under
    Landlock: CAP_DAC_READ_SEARCH alone, as Landlock decides what it reads); its copy and
    working directory are that user's alone;
  * tier "landlock" (Landlock of any ABI >= 1): files read from an allowlist (the standard
    library, numpy, scipy, its own copy), written in its working directory only;
  * tier "user" (root without Landlock): reading what others may read (``image.py`` checks at
    start that this excludes every copy of the package and its solutions, every other package
    and the folders named private), files opened read-only;
  * tier "weak" (not root, no Landlock: a laptop's macOS, WSL2, an old Linux): said in one line;
    a class run refuses it unless told otherwise;
  * judged on what the kernel counts for it alone: its CPU time over all its threads (a busy
    machine slows it without costing it its limit), a wall-clock backstop, its output and the
    size of its working directory; SIGKILL at the first limit passed;
  * nothing it sends is trusted: frames are parsed strictly and carry numbers only; a child that
    breaks the protocol, or a fork that fails, fails that submission alone.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from . import image, kernel
from .kernel import Isolation, readable_paths
from .parent import Limits, run_child
from .protocol import Call, ChildRun, Items, Other, arguments
from .staging import MAX_HELPERS, MAX_SOURCE, Folder, StagingError, read_source, remove_tree, shown

__all__ = ["Call", "ChildRun", "Folder", "Isolation", "Items", "Job", "Limits", "MAX_HELPERS", "MAX_SOURCE",
           "Other", "StagingError", "arguments", "isolation", "read_source", "remove_tree", "run", "shown"]


@lru_cache(maxsize=8)
def _image_problems(private: tuple) -> tuple:
    return tuple(image.problems(private))


def isolation(private=()) -> Isolation:
    """The best tier this machine offers (``NUMPY_MAMBA_SANDBOX_MAX_ABI`` caps Landlock); in the
    user tier, checked against the image with ``private`` folders that no child may read."""
    return kernel.probe(lambda: _image_problems(tuple(str(p) for p in private)))


@dataclass(frozen=True)
class Job:
    """One child's task: import ``submission`` (staged in its Folder) as a module, serve ``kit``
    (source) as the ``modules`` of numpy_mamba it may import, and call each of ``functions`` on
    each argument list of ``calls[function]`` (trees of ``protocol.arguments`` into ``arrays``)."""

    submission: Path
    exercise: str
    allowed: str
    kit: str
    modules: dict
    functions: tuple
    calls: dict
    arrays: list


def run(job: Job, folder: Folder, found: Isolation, limits: Limits) -> ChildRun:
    """Run one child on ``job`` at tier ``found`` within ``limits``; never raises for anything
    the child does (StagingError if its working directory cannot be made)."""
    workdir = folder.workdir()
    readable, listable = readable_paths()
    tier = {"landlock_abi": found.landlock_abi, "seccomp": found.seccomp, "uid": folder.uid}
    request = {"submission": str(job.submission), "src": str(folder.src), "workdir": workdir,
               "module_name": f"submission_{job.submission.stem}", "exercise": job.exercise,
               "allowed": job.allowed, "kit": job.kit, "modules": job.modules, "functions": list(job.functions),
               "calls": job.calls, "readable": list(readable) + [str(folder.src)], "listable": list(listable),
               "writable": [workdir], "tier": tier, "memory_bytes": limits.memory_mb * 2**20,
               "cpu_seconds": limits.kernel_cpu}
    try:
        return run_child(request, job.arrays, limits)
    finally:
        remove_tree(workdir)

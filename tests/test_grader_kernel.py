"""The kernel's refusals, seen directly: a process confined by ``sandbox.kernel.confine`` at each
tier (as the grader's children are) tries what a submission might, and the kernel says no.
Then the kit: walking every function of the package shows that a submission reaches exactly
what its exercise hands out.

A failure here means that at some tier a submission can read or write outside its box, start a
process or a thread, signal or reschedule the grader (the SIGIO path included), take memory the
address-space limit does not count, undo its confinement, or call a package function that
computes its answer.  CI is this Linux machine, as root, whose kernel offers Landlock ABI 7 and
seccomp; the test of ``probe`` says so first.
"""
import inspect
import json
import os
import pkgutil
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy
import pytest

import numpy_mamba
from numpy_mamba.grader import sandbox
from numpy_mamba.grader.grade import Limits, Session, grade_submission
from numpy_mamba.grader.kit import build
from numpy_mamba.grader.registry import all_exercises
from numpy_mamba.grader.sandbox import kernel, seccomp
from numpy_mamba.grader.sandbox.kernel import readable_paths

ROOT = Path(__file__).resolve().parent.parent
CHILD = ROOT / "numpy_mamba" / "grader" / "sandbox" / "child.py"

# Runs in a fresh interpreter: loads the sandbox's modules by path as a child does, optionally
# becomes user 65534 (nobody), confines itself at the tier given, then tries each attack.
PROBE = r'''
import ctypes, errno, fcntl, importlib.util, json, os, signal, socket, struct, sys, threading, resource
spec = importlib.util.spec_from_file_location("child", sys.argv[1])
child = importlib.util.module_from_spec(spec); spec.loader.exec_module(child)
_, kernel = child._siblings()
work, outside, secret_dir, readable, listable, unprivileged, allowed_file, tier = json.loads(sys.argv[2])
os.setsid()
if unprivileged:
    os.setgroups([]); os.setgid(65534); os.setuid(65534)
kernel.confine(tier, readable, [work], listable, 2**30, 60, os.getppid())
out, libc, ppid = {}, ctypes.CDLL(None, use_errno=True), os.getppid()
def attempt(name, action):
    try:
        action()
        out[name] = "allowed"
    except OSError as exc:
        out[name] = errno.errorcode.get(exc.errno, str(exc.errno))
    except (RuntimeError, ValueError) as exc:
        out[name] = f"refused: {exc}"
def c_call(result):
    if result == -1:
        raise OSError(ctypes.get_errno(), "refused")
def read_through_dir_fd():
    folder = os.open(secret_dir, os.O_PATH)
    os.close(os.open("secret.py", os.O_RDONLY, dir_fd=folder))
def write(path):
    with open(path, "w") as f:
        f.write("x")
def thread():
    t = threading.Thread(target=lambda: None); t.start(); t.join()
fd = os.open("/dev/null", os.O_RDONLY)
attempt("read outside through a dir_fd", read_through_dir_fd)
attempt("read /etc/passwd", lambda: open("/etc/passwd").read())
attempt("read an allowlisted file", lambda: open(allowed_file).read())
attempt("write outside", lambda: write(outside))
attempt("write the working directory", lambda: write(os.path.join(work, "mine")))
attempt("fork", lambda: os._exit(0) if os.fork() == 0 else None)
attempt("start a thread", thread)
attempt("exec", lambda: os.execv("/bin/true", ["true"]))
attempt("signal the parent", lambda: os.kill(ppid, 0))
attempt("signal itself", lambda: os.kill(os.getpid(), 0))
attempt("open a socket", lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM).close())
attempt("open a unix socket", lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).close())
attempt("pidfd_open the parent", lambda: os.close(os.pidfd_open(ppid)))
attempt("read the parent's memory", lambda: open(f"/proc/{ppid}/mem", "rb").close())
attempt("open the terminal", lambda: open("/dev/tty", "w").close())
attempt("ptrace the parent", lambda: c_call(libc.ptrace(16, ppid, None, None)))
attempt("raise a hard limit", lambda: resource.prlimit(0, resource.RLIMIT_CPU, (10**6, 10**6)))
attempt("memfd_create", lambda: os.close(os.memfd_create("x")))
attempt("System V shared memory", lambda: c_call(libc.shmget(0, 1 << 20, 0o1600)))
attempt("System V message queue", lambda: c_call(libc.msgget(0, 0o1600)))
attempt("System V semaphores", lambda: c_call(libc.semget(0, 1, 0o1600)))
attempt("POSIX message queue", lambda: c_call(libc.mq_open(b"/numpy_mamba_q", os.O_CREAT | os.O_RDWR, 0o600, None)))
attempt("prctl: no parent-death signal", lambda: c_call(libc.prctl(1, 0, 0, 0, 0)))
attempt("renice the parent", lambda: os.setpriority(os.PRIO_PROCESS, ppid, 19))
attempt("pin the parent to one CPU", lambda: os.sched_setaffinity(ppid, {0}))
attempt("the parent at SCHED_IDLE", lambda: os.sched_setscheduler(ppid, os.SCHED_IDLE, os.sched_param(0)))
attempt("fcntl F_SETOWN", lambda: fcntl.fcntl(fd, fcntl.F_SETOWN, ppid))
attempt("fcntl F_SETOWN_EX", lambda: fcntl.fcntl(fd, 15, struct.pack("ii", 1, ppid)))
attempt("fcntl F_SETSIG", lambda: fcntl.fcntl(fd, 10, signal.SIGKILL))
attempt("fcntl O_ASYNC", lambda: fcntl.fcntl(fd, fcntl.F_SETFL, os.O_ASYNC))
attempt("ioctl FIOASYNC", lambda: fcntl.ioctl(fd, 0x5452, struct.pack("i", 1)))
attempt("ioctl FIOSETOWN", lambda: fcntl.ioctl(fd, 0x8901, struct.pack("i", ppid)))
attempt("fcntl O_NONBLOCK", lambda: fcntl.fcntl(fd, fcntl.F_SETFL, os.O_NONBLOCK))
print(json.dumps(out))
'''

EVERY_TIER = {
    "fork": "EPERM", "start a thread": "refused: can't start new thread", "exec": "EPERM",
    "signal the parent": "EPERM", "open a socket": "EPERM", "open a unix socket": "EPERM",
    "pidfd_open the parent": "EPERM", "ptrace the parent": "EPERM", "raise a hard limit": "EPERM",
    "memfd_create": "EPERM", "System V shared memory": "EPERM", "System V message queue": "EPERM",
    "System V semaphores": "EPERM", "POSIX message queue": "EPERM", "prctl: no parent-death signal": "EPERM",
    "renice the parent": "EPERM", "pin the parent to one CPU": "EPERM", "the parent at SCHED_IDLE": "EPERM",
    "fcntl F_SETOWN": "EPERM", "fcntl F_SETOWN_EX": "EPERM", "fcntl F_SETSIG": "EPERM", "fcntl O_ASYNC": "EPERM",
    "ioctl FIOASYNC": "EPERM", "ioctl FIOSETOWN": "EPERM", "read the parent's memory": "EACCES",
    "read outside through a dir_fd": "EACCES", "read an allowlisted file": "allowed", "signal itself": "allowed",
    "fcntl O_NONBLOCK": "allowed"}
LANDLOCK = dict(EVERY_TIER, **{"read /etc/passwd": "EACCES", "write outside": "EACCES",
                               "write the working directory": "allowed", "open the terminal": "EACCES"})
# The user tier: files are confined by permission bits (what others may read) and nothing is created.
USER = dict(EVERY_TIER, **{"read /etc/passwd": "allowed", "write outside": "EPERM",
                           "write the working directory": "EPERM", "open the terminal": "EPERM"})


def _confined(tier: dict, unprivileged: bool = False) -> dict:
    """Run PROBE confined at ``tier``; the secret folder is 700, so no sandbox user reads it."""
    folder = Path(tempfile.mkdtemp(prefix="numpy_mamba_kernel_test_"))     # pytest's tmp_path is root's (700)
    try:
        work, outside, secret = folder / "work", folder / "outside.txt", folder / "secret"
        work.mkdir()
        secret.mkdir(mode=0o700)
        (secret / "secret.py").write_text("ANSWER = 42\n")
        uid = tier.get("uid") or (65534 if unprivileged else None)
        if uid is not None:                           # the working directory is the child's own
            os.chown(work, uid, uid)
            os.chmod(folder, 0o755)
        readable, listable = readable_paths()
        args = [str(work), str(outside), str(secret), list(readable), list(listable), unprivileged, numpy.__file__,
                tier]
        done = subprocess.run([sys.executable, "-I", "-c", PROBE, str(CHILD), json.dumps(args)], capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert not outside.exists(), "a confined process wrote outside its working directory"
        return json.loads(done.stdout)
    finally:
        shutil.rmtree(folder)


def test_this_kernel_offers_the_whole_sandbox():
    """CI's kernel: Landlock with scoped signals (ABI >= 6) and seccomp; the line says so."""
    found = kernel.probe()
    assert found.landlock_abi >= 6 and found.seccomp and found.complete and found.tier == "landlock"
    assert found.line.startswith("isolation: kernel sandbox: Landlock ABI")


def test_the_abi_cap_chooses_the_tier(monkeypatch):
    """NUMPY_MAMBA_SANDBOX_MAX_ABI caps Landlock; 0 as root is the user tier, its image checked;
    anything but an integer >= 0 is refused with what was expected."""
    for cap, tier in (("1", "landlock"), ("5", "landlock"), ("0", "user")):
        monkeypatch.setenv(kernel.MAX_ABI, cap)
        found = kernel.probe(lambda: ["/x is readable by the sandbox user"])
        assert found.tier == tier and found.landlock_abi == int(cap) and f"the kernel offers {found.offered}" in found.line
        assert found.complete == (tier == "landlock")
    assert "image check failed: /x is readable" in found.line
    many = kernel.probe(lambda: [f"/p{k} is readable by the sandbox user" for k in range(40)])
    assert "/p2 is readable" in many.line and "/p3 " not in many.line and "and 37 more" in many.line, (
        "a failed image check must name a few paths and count the rest, not fill the terminal")
    assert "gradescope prepare" in many.line, "a failed image check must say how to fix it"
    assert kernel.probe(lambda: []).complete
    monkeypatch.setenv(kernel.MAX_ABI, "six")
    with pytest.raises(ValueError, match="must be an integer >= 0 .*got 'six'"):
        kernel.probe()


def test_weak_isolation_is_named_in_its_line():
    assert kernel.Isolation(0, False, system="Darwin").line.startswith("isolation: WEAK: no Landlock and not root")
    assert kernel.Isolation(0, True, root=False).tier == "weak"
    assert kernel.Isolation(1, True).complete and kernel.Isolation(0, True, root=True).complete


@pytest.mark.parametrize("abi", [7, 5, 1])
def test_every_landlock_tier_refuses_every_escape_as_root(abi):
    """Landlock of any ABI plus seccomp, for a root grader (Gradescope's): every capability
    dropped; below ABI 6 seccomp refuses what would signal outside (the SIGIO path too)."""
    seen = _confined({"landlock_abi": abi, "seccomp": True, "uid": None})
    assert {k: seen[k] for k in LANDLOCK} == LANDLOCK


def test_the_user_tier_refuses_every_escape():
    """Root without Landlock: the child's own user, no group, seccomp, no file created; it reads
    only what others may read (the secret folder is 700)."""
    seen = _confined({"landlock_abi": 0, "seccomp": True, "uid": kernel.SANDBOX_UID})
    assert {k: seen[k] for k in USER} == USER


def test_the_landlock_tier_refuses_every_escape_as_an_unprivileged_user():
    """The same as user 65534: Landlock and seccomp need no privilege (no-new-privs).  (The process
    becomes that user after starting: this machine's interpreter lives under /root, mode 700.)"""
    seen = _confined({"landlock_abi": 7, "seccomp": True, "uid": None}, unprivileged=True)
    assert {k: seen[k] for k in LANDLOCK} == LANDLOCK


def test_the_filter_checks_the_architecture_first_and_has_a_number_for_every_call():
    """The BPF program's first instructions load the arch and kill any other ABI; every call it
    names has its number on each machine (a missing one would go unrefused)."""
    for machine, (audit_arch, numbers) in seccomp.ARCHES.items():
        for create in (True, False):
            program = seccomp.program(machine, 1234, create)
            assert len(program) % 8 == 0 and len(program) // 8 < 4096
            assert program[:8] == seccomp._insn(seccomp.LD_W_ABS, 0, 0, 4)
            assert program[8:16] == seccomp._insn(seccomp.JEQ_K, 1, 0, audit_arch)
            assert program[16:24] == seccomp._insn(seccomp.RET_K, 0, 0, seccomp.RET_KILL_PROCESS)
        absent = {"fork", "vfork", "iopl", "ioperm", "mknod", "creat", "mkdir", "link", "symlink", "rename", "open"}
        named = set(seccomp.REFUSED + seccomp.NO_CREATE + list(seccomp.ENOSYS) + ["kill", "tgkill", "fcntl", "ioctl"])
        assert named - set(numbers) <= (absent if machine == "aarch64" else set()), machine


# ---- the kit: what of numpy_mamba a submission reaches -------------------------------------------

def _package_functions() -> list:
    """Every function and class defined in numpy_mamba (the grader and the command line aside),
    as "module:name"."""
    found = []
    for info in pkgutil.walk_packages(numpy_mamba.__path__, "numpy_mamba."):
        if info.name.startswith(("numpy_mamba.grader", "numpy_mamba.cli")) or info.name.endswith("__main__"):
            continue
        module = __import__(info.name, fromlist=["x"])
        for name, obj in vars(module).items():
            if (inspect.isfunction(obj) or inspect.isclass(obj)) and getattr(obj, "__module__", "") == info.name:
                found.append(f"{info.name}:{name}")
    return sorted(set(found))


WALKER = '''
import importlib
import numpy as np

CANDIDATES = {candidates!r}


def {function}(*args):
    reached = []
    for entry in CANDIDATES:
        module, name = entry.split(":")
        for path in (module, "numpy_mamba"):
            try:
                getattr(importlib.import_module(path), name)
            except ImportError:
                continue
            reached.append(entry if path == module else "numpy_mamba:" + name)
    raise RuntimeError("REACHED[" + " ".join(sorted(set(reached))) + "]")
'''


def test_a_submission_reaches_only_its_exercises_allowlist(tmp_path, monkeypatch):
    """Every function and class of the package, looked up by its module and from the top
    package (and the allowlists' re-exports), in each exercise's child: exactly the allowlisted
    ones are reached.  A function added to the package later (here: model.added_later) is
    reached by no exercise."""
    monkeypatch.setattr(numpy_mamba.model, "added_later", lambda *a: 0.0, raising=False)
    candidates = _package_functions() + ["numpy_mamba.model:added_later"]
    candidates += [e for ex in all_exercises().values() for e in ex.imports]    # re-exports too
    assert len(candidates) > 100 and "numpy_mamba.gradients:gradients" in candidates
    session = Session(0, Limits(20.0, 1024))
    for name, exercise in all_exercises().items():
        path = tmp_path / f"{name}.py"
        path.write_text(WALKER.format(candidates=candidates, function=exercise.entries[0]))
        sub = grade_submission(path, session)
        hint = next(r.hint for r in sub.results if r.name in exercise.function_names and r.hint)
        reached = set(hint.split("REACHED[", 1)[1].split("]", 1)[0].split())
        assert reached == set(exercise.imports), (name, reached ^ set(exercise.imports))


def test_the_kit_copies_only_forward_code():
    """The closure of each allowlist (what an allowlisted function calls) holds no backward
    pass, no gradient and no finite difference: nothing that computes an exercise's answer."""
    for exercise in all_exercises().values():
        needed = {name for _, name in build(exercise.imports).needed}
        assert not any(word in n.lower() for n in needed for word in ("backward", "gradient", "numerical")), needed
    assert build(all_exercises()["gating"].imports).needed == frozenset()


def test_the_sandbox_interface_is_narrow():
    """The grader reaches the sandbox through its package's names only, and the sandbox imports
    nothing of numpy_mamba outside itself (it knows no exercise)."""
    assert {"isolation", "Folder", "Job", "run"} <= set(sandbox.__all__)
    for path in (ROOT / "numpy_mamba" / "grader" / "sandbox").glob("*.py"):
        text = path.read_text()
        assert "from .." not in text and "import numpy_mamba" not in text, path.name


def test_the_image_check_names_what_others_can_read_and_prepare_closes_it(monkeypatch):
    """The user tier's precondition on a layout of its own: this package, a package next to numpy
    (torch) and the autograder's folder, readable by others, are each named, numpy and its
    metadata are not; ``prepare`` takes others' rights from those three alone, and the check holds."""
    from numpy_mamba.grader.sandbox import image
    top = Path(tempfile.mkdtemp(prefix="numpy_mamba_image_check_"))
    try:
        os.chmod(top, 0o755)
        site, package, root = top / "site", top / "checkout" / "numpy_mamba", top / "autograder"
        for folder in (site / "torch", site / "numpy", site / "numpy-2.0.dist-info", package, root):
            folder.mkdir(parents=True, mode=0o755)
        monkeypatch.setattr(image, "PACKAGE", package)
        monkeypatch.setattr(image.site, "getsitepackages", lambda: [str(site)])
        monkeypatch.setattr(image, "_needed", lambda: [str(site / "numpy")])
        found = image.problems([root])
        named = {line.split(" is readable")[0] for line in found}
        assert named == {str(package), str(site / "torch"), str(root)}, found
        assert sorted(image.prepare([root])) == sorted(named)
        assert image.problems([root]) == [] and (site / "numpy").stat().st_mode & 0o005 == 0o005
    finally:
        shutil.rmtree(top)

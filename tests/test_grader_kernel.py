"""The kernel's refusals, seen directly: a process confined by ``grader.kernel.confine`` (as the
grader's children are) tries what a submission might, and the kernel says no.  Then the kit:
walking every function of the package shows that a submission reaches exactly what its
exercise hands out.

A failure here means a submission can read or write outside its box, start a process, signal
the grader, or call a package function that computes its answer.  CI is this Linux machine,
whose kernel offers Landlock ABI 7 and seccomp; the test of ``probe`` says so first.
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

import numpy_mamba
from numpy_mamba.grader import kernel
from numpy_mamba.grader.grade import Limits, Session, grade_submission
from numpy_mamba.grader.kit import build
from numpy_mamba.grader.registry import all_exercises
from numpy_mamba.grader.sandbox import readable_paths

ROOT = Path(__file__).resolve().parent.parent
KERNEL = ROOT / "numpy_mamba" / "grader" / "kernel.py"

# Runs in a fresh interpreter: loads kernel.py by path, optionally becomes user 65534 (nobody),
# confines itself as a grader child is confined, then tries each attack and prints what happened.
PROBE = r'''
import ctypes, errno, importlib.util, json, os, signal, socket, sys, threading
spec = importlib.util.spec_from_file_location("kernel", sys.argv[1])
kernel = importlib.util.module_from_spec(spec); sys.modules["kernel"] = kernel; spec.loader.exec_module(kernel)
work, outside, secret_dir, readable, listable, unprivileged, allowed_file = json.loads(sys.argv[2])
if unprivileged:
    os.setgroups([]); os.setgid(65534); os.setuid(65534)
kernel.confine(readable, [work], 2**30, 60, os.getppid(), listable)
out = {}
def attempt(name, action):
    try:
        action()
        out[name] = "allowed"
    except OSError as exc:
        out[name] = errno.errorcode.get(exc.errno, str(exc.errno))
    except ValueError as exc:
        out[name] = f"refused: {exc}"
def read_through_dir_fd():
    folder = os.open(secret_dir, os.O_PATH)
    os.close(os.open("gradients.py", os.O_RDONLY, dir_fd=folder))
def write(path):
    with open(path, "w") as f:
        f.write("x")
attempt("read outside through a dir_fd", read_through_dir_fd)
attempt("read /etc/passwd", lambda: open("/etc/passwd").read())
attempt("read an allowlisted file", lambda: open(allowed_file).read())
attempt("write outside", lambda: write(outside))
attempt("write the working directory", lambda: write(os.path.join(work, "mine")))
attempt("fork", lambda: os._exit(0) if os.fork() == 0 else None)
attempt("exec", lambda: os.execv("/bin/true", ["true"]))
attempt("signal the parent", lambda: os.kill(os.getppid(), 0))
attempt("signal itself", lambda: os.kill(os.getpid(), 0))
attempt("open a socket", lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM).close())
attempt("open a unix socket", lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).close())
attempt("pidfd_open the parent", lambda: os.close(os.pidfd_open(os.getppid())))
attempt("read the parent's memory", lambda: open(f"/proc/{os.getppid()}/mem", "rb").close())
attempt("open the terminal", lambda: open("/dev/tty", "w").close())
libc = ctypes.CDLL(None, use_errno=True)
def ptrace():
    if libc.ptrace(16, os.getppid(), None, None) != 0:              # PTRACE_ATTACH
        raise OSError(ctypes.get_errno(), "ptrace")
attempt("ptrace the parent", ptrace)
import resource
attempt("raise a hard limit", lambda: resource.setrlimit(resource.RLIMIT_CPU, (10**6, 10**6)))
thread = threading.Thread(target=lambda: out.setdefault("a thread", "allowed"))
thread.start(); thread.join()
print(json.dumps(out))
'''


def _confined(tmp_path, unprivileged=False) -> dict:
    work, outside = tmp_path / "work", tmp_path / "outside.txt"
    work.mkdir()
    if unprivileged:                                  # the working directory is the child's own
        os.chown(work, 65534, 65534)
        os.chmod(tmp_path, 0o755)
    readable, listable = readable_paths()
    allowed_file = numpy.__file__                     # world-readable here; the stdlib under /root is not
    args = [str(work), str(outside), str(ROOT / "numpy_mamba"), list(readable), list(listable), unprivileged,
            allowed_file]
    done = subprocess.run([sys.executable, "-I", "-c", PROBE, str(KERNEL), json.dumps(args)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert not outside.exists(), "a confined process wrote outside its working directory"
    return json.loads(done.stdout)


REFUSED = {"read outside through a dir_fd": "EACCES", "read /etc/passwd": "EACCES", "write outside": "EACCES",
           "fork": "EPERM", "exec": "EPERM", "signal the parent": "EPERM", "open a socket": "EPERM",
           "open a unix socket": "EPERM", "pidfd_open the parent": "EPERM", "read the parent's memory": "EACCES",
           "open the terminal": "EACCES", "ptrace the parent": "EPERM"}
ALLOWED = ("read an allowlisted file", "write the working directory", "signal itself", "a thread")


def test_this_kernel_offers_the_whole_sandbox():
    """CI's kernel: Landlock with scoped signals (ABI >= 6) and seccomp; the line says so."""
    found = kernel.probe()
    assert found.landlock_abi >= 6 and found.seccomp and found.complete
    assert found.line.startswith("isolation: kernel sandbox: Landlock ABI")


def test_weak_isolation_is_named_in_its_line():
    assert kernel.Isolation(0, False, "Darwin").line.startswith("isolation: WEAK: no Landlock")
    assert "no seccomp" in kernel.Isolation(5, False, "Linux").line
    assert not kernel.Isolation(5, True, "Linux").complete          # no scoped signals before ABI 6


def test_the_kernel_refuses_every_escape_as_root(tmp_path):
    """The grader may run as root (Gradescope does): every capability is dropped, and Landlock
    and seccomp hold for root too."""
    seen = _confined(tmp_path)
    assert {k: seen[k] for k in REFUSED} == REFUSED
    assert all(seen[k] == "allowed" for k in ALLOWED), seen
    assert seen["raise a hard limit"] != "allowed"


def test_the_kernel_refuses_every_escape_as_an_unprivileged_user():
    """The same as user 65534: Landlock and seccomp need no privilege (no-new-privs), and what a
    child must read (numpy, its working directory) is readable by that user.  (The process
    becomes that user after starting: this machine's interpreter lives under /root, mode 700.)"""
    folder = Path(tempfile.mkdtemp(prefix="numpy_mamba_kernel_test_"))     # pytest's tmp_path is root's (700)
    try:
        seen = _confined(folder, unprivileged=True)
    finally:
        shutil.rmtree(folder)
    assert {k: seen[k] for k in REFUSED} == REFUSED
    assert all(seen[k] == "allowed" for k in ALLOWED), seen


def test_the_filter_checks_the_architecture_first():
    """The BPF program's first instructions load the arch and kill any other ABI."""
    for machine, (audit_arch, _) in kernel.ARCHES.items():
        program = kernel.bpf_program(machine, 1234)
        assert len(program) % 8 == 0 and len(program) // 8 < 4096
        assert program[:8] == kernel._insn(kernel.BPF_LD_W_ABS, 0, 0, 4)
        assert program[8:16] == kernel._insn(kernel.BPF_JEQ_K, 1, 0, audit_arch)
        assert program[16:24] == kernel._insn(kernel.BPF_RET_K, 0, 0, kernel.RET_KILL_PROCESS)


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
    ones are reached.  A function
    added to the package later (here: model.added_later) is reached by no exercise."""
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

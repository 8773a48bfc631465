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

import pytest

import numpy_mamba
from numpy_mamba.grader import sandbox
from numpy_mamba.grader.grade import Limits, Session, grade_submission
from numpy_mamba.grader.kit import build
from numpy_mamba.grader.registry import all_exercises
from numpy_mamba.grader.sandbox import kernel, seccomp
from numpy_mamba.grader.sandbox.kernel import readable_paths
from test_grader_attacks import image_umask  # noqa: F401 (an autouse fixture)

ROOT = Path(__file__).resolve().parent.parent
CHILD = ROOT / "numpy_mamba" / "grader" / "sandbox" / "child.py"
SANDBOX_USER = kernel.SANDBOX_UID + 99        # not one a grader run beside this test holds

# Runs in a fresh interpreter: loads the sandbox's modules by path as a child does, optionally
# becomes user 65534 (nobody), confines itself at the tier given, then tries each attack.
PROBE = r'''
import ctypes, errno, fcntl, importlib.util, json, os, signal, socket, struct, sys, threading, resource
spec = importlib.util.spec_from_file_location("child", sys.argv[1])
child = importlib.util.module_from_spec(spec); spec.loader.exec_module(child)
_, kernel = child._siblings()
work, outside, secret_dir, readable, listable, unprivileged, allowed_file, victim, tier = json.loads(sys.argv[2])
os.setsid()
if unprivileged:
    os.setgroups([]); os.setgid(65534); os.setuid(65534)
kernel.confine(tier, readable, [work], listable, 2**30, 60, os.getppid())
out, libc, ppid = {}, ctypes.CDLL(None, use_errno=True), os.getppid()
out["ids"] = [os.getresuid(), os.getresgid(), os.getgroups()]
def attempt(name, action):
    try:
        action()
        out[name] = "allowed"
    except OSError as exc:
        out[name] = errno.errorcode.get(exc.errno, str(exc.errno))
    except (RuntimeError, ValueError, ImportError) as exc:
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
mine = os.open(victim, os.O_RDONLY)
attempt("chmod a file outside", lambda: os.chmod(victim, 0o4777))
attempt("chmod through a descriptor", lambda: os.chmod(mine, 0o4777))
attempt("chown a file outside", lambda: os.chown(victim, os.getuid(), os.getgid()))
attempt("set its times", lambda: os.utime(victim, (0, 0)))
attempt("set its times through a descriptor", lambda: os.utime(mine, (0, 0)))
attempt("set an extended attribute", lambda: os.setxattr(victim, "user.mark", b"x"))
attempt("remove an extended attribute", lambda: os.removexattr(victim, "user.kept"))
attempt("truncate a path", lambda: os.truncate(victim, 0))
attempt("truncate a descriptor", lambda: os.ftruncate(mine, 0))
attempt("open it read-only with O_TRUNC", lambda: os.close(os.open(victim, os.O_RDONLY | os.O_TRUNC)))
attempt("open it with no access mode and O_TRUNC", lambda: os.close(os.open(victim, 3 | os.O_TRUNC)))
attempt("hard link it into the working directory", lambda: os.link(victim, os.path.join(work, "link")))
attempt("symlink in the working directory", lambda: os.symlink(victim, os.path.join(work, "symlink")))
attempt("rename out of the working directory", lambda: os.rename(os.path.join(work, "mine"), outside))
attempt("make a FIFO", lambda: os.mkfifo(os.path.join(work, "fifo")))
attempt("import a module not yet loaded", lambda: __import__("xml.dom.minidom"))
print(json.dumps(out))
'''

ESCAPES = ("chmod a file outside", "chmod through a descriptor", "chown a file outside", "set its times",
           "set its times through a descriptor", "set an extended attribute", "remove an extended attribute",
           "truncate a path", "truncate a descriptor", "hard link it into the working directory",
           "symlink in the working directory", "rename out of the working directory", "make a FIFO")
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
    "fcntl O_NONBLOCK": "allowed", **dict.fromkeys(ESCAPES, "EPERM")}
# Landlock: from ABI 3 it refuses truncation outside; below, seccomp refuses O_TRUNC without write access.
LANDLOCK = dict(EVERY_TIER, **{"read /etc/passwd": "EACCES", "write outside": "EACCES",
                               "write the working directory": "allowed", "open the terminal": "EACCES"})
TRUNCATING = ("open it read-only with O_TRUNC", "open it with no access mode and O_TRUNC")
# The user tier: files are confined by permission bits (what others may read) and are opened read-only.
USER = dict(EVERY_TIER, **{"read /etc/passwd": "allowed", "write outside": "EPERM",
                           "write the working directory": "EPERM", "open the terminal": "EPERM",
                           **dict.fromkeys(TRUNCATING, "EPERM")})


def _landlock(abi: int) -> dict:
    return dict(LANDLOCK, **dict.fromkeys(TRUNCATING, "EACCES" if abi >= 3 else "EPERM"))


CAPABILITIES = r'''
import ctypes, importlib.util, json, os, struct, sys
spec = importlib.util.spec_from_file_location("child", sys.argv[1])
child = importlib.util.module_from_spec(spec); spec.loader.exec_module(child)
_, kernel = child._siblings()
readable, listable = kernel.readable_paths()
kernel.confine(json.loads(sys.argv[2]), readable, [], listable, 2**30, 60, os.getppid())
header, data = ctypes.create_string_buffer(struct.pack("=Ii", 0x20080522, 0), 8), ctypes.create_string_buffer(24)
assert ctypes.CDLL(None).capget(header, data) == 0
print(json.dumps(struct.unpack("=6I", data.raw)))
'''


@pytest.mark.parametrize("abi", [7, 0])
def test_a_root_childs_one_capability_is_reading_what_landlock_allows(abi):
    """Seen without seccomp (which refuses capget): under Landlock the sandbox user keeps
    CAP_DAC_READ_SEARCH alone (effective and permitted; the interpreter may live where only
    root reads), and nothing without it."""
    done = subprocess.run([sys.executable, "-I", "-c", CAPABILITIES, str(CHILD),
                           json.dumps({"landlock_abi": abi, "seccomp": False, "uid": SANDBOX_USER})],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    reading = 1 << 2 if abi else 0
    assert json.loads(done.stdout) == [reading, reading, 0, 0, 0, 0]


def _state(path: Path) -> tuple:
    """What harm would change: mode, owner, contents, xattrs, and the times (ctime: any change of these)."""
    info = path.stat()
    return info.st_mode, info.st_uid, info.st_mtime_ns, info.st_ctime_ns, path.read_bytes(), os.listxattr(path)


def _confined(tier: dict, unprivileged: bool = False) -> dict:
    """Run PROBE confined at ``tier``; the secret folder is 700, so no sandbox user reads it; the
    victim is the grader's (root's, or user 65534's when ``unprivileged``), mode 644 with an
    extended attribute, and must come out as it went in."""
    folder = Path(tempfile.mkdtemp(prefix="numpy_mamba_kernel_test_"))     # pytest's tmp_path is root's (700)
    try:
        work, outside, secret, victim = folder / "work", folder / "outside.txt", folder / "secret", folder / "victim"
        work.mkdir()
        secret.mkdir(mode=0o700)
        (secret / "secret.py").write_text("ANSWER = 42\n")
        victim.write_text("the instructor's key\n")
        (folder / "allowed.py").write_text("ALLOWED = 1\n")                  # readable by all, and allowlisted
        os.chmod(folder / "allowed.py", 0o644)
        os.setxattr(victim, "user.kept", b"1")
        os.chmod(victim, 0o644)
        os.chown(victim, *(2 * [65534 if unprivileged else 0]))
        uid = tier.get("uid") or (65534 if unprivileged else None)
        if uid is not None:                           # the working directory is the child's own
            os.chown(work, uid, uid)
            os.chmod(folder, 0o755)
        before = _state(victim)
        readable, listable = readable_paths()
        args = [str(work), str(outside), str(secret), list(readable) + [str(victim), str(folder / "allowed.py")],
                list(listable), unprivileged, str(folder / "allowed.py"), str(victim), tier]
        done = subprocess.run([sys.executable, "-I", "-c", PROBE, str(CHILD), json.dumps(args)], capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert not outside.exists(), "a confined process wrote outside its working directory"
        assert _state(victim) == before, "a confined process changed the victim's mode, times, contents or xattrs"
        assert sorted(p.name for p in work.iterdir()) in ([], ["mine"]), "a link or FIFO was made"
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


def test_without_pyseccomp_a_students_grading_works_and_the_line_says_what_to_install(tmp_path):
    """pyseccomp is the grader extra's, not a run-time requirement: installed without it, a
    student's own run grades at the weak tier, whose one line says what to install (and that
    Landlock, which needs nothing installed, still confines the files); a class run refuses."""
    import configparser
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    assert "pyseccomp" not in config["options"]["install_requires"]
    assert all("pyseccomp" in config["options.extras_require"][extra] for extra in ("grader", "test"))
    shutil.copy(ROOT / "tests" / "solutions" / "gradients_solution.py", tmp_path / "gradients.py")
    blocked = ("import sys; sys.modules['pyseccomp'] = None; from numpy_mamba.grader.run import main; "
               "sys.exit(main(sys.argv[1:]))")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    one = subprocess.run([sys.executable, "-c", blocked, str(tmp_path / "gradients.py")], env=env, capture_output=True,
                         text=True, timeout=300)
    line = next((x for x in one.stdout.splitlines() if x.startswith("isolation:")), one.stdout + one.stderr)
    assert one.returncode == 0 and "points: 7.5 / 7.5" in one.stdout, one.stdout + one.stderr
    assert line.startswith("isolation: WEAK: Landlock ABI") and 'no seccomp (pip install "numpy_mamba[grader]"' in line
    refused = subprocess.run([sys.executable, "-c", blocked, str(tmp_path)], env=env, capture_output=True, text=True,
                             timeout=300)
    assert refused.returncode == 2 and "--allow-weak-isolation" in refused.stderr, refused.stderr


@pytest.mark.parametrize("abi", [7, 5, 1])
def test_every_landlock_tier_refuses_every_escape_as_root(abi):
    """Landlock of any ABI plus seccomp, for a root grader (Gradescope's): the child is its own
    user with no group and one capability (CAP_DAC_READ_SEARCH: Landlock decides what it reads);
    below ABI 6 seccomp refuses what would signal outside (the SIGIO path too), below ABI 3 the
    truncation Landlock does not see; chmod, utime, xattrs at every ABI."""
    seen = _confined({"landlock_abi": abi, "seccomp": True, "uid": SANDBOX_USER})
    assert {k: seen[k] for k in _landlock(abi)} == _landlock(abi)
    assert seen["ids"] == [[SANDBOX_USER] * 3, [SANDBOX_USER] * 3, []]
    assert seen["import a module not yet loaded"] == "allowed"


def test_the_user_tier_refuses_every_escape():
    """Root without Landlock: the child's own user, no group, no capability, seccomp, files opened
    read-only; it reads only what others may read (the secret folder is 700)."""
    seen = _confined({"landlock_abi": 0, "seccomp": True, "uid": SANDBOX_USER})
    assert {k: seen[k] for k in USER} == USER
    assert seen["ids"] == [[SANDBOX_USER] * 3, [SANDBOX_USER] * 3, []]


@pytest.mark.parametrize("abi", [7, 1])
def test_the_landlock_tier_refuses_every_escape_as_an_unprivileged_user(abi):
    """The same as user 65534, an instructor's account, whose own file is the victim: Landlock does
    not govern chmod, utime or xattrs (nor truncation below ABI 3): the allowlist refuses them.
    (The process becomes that user after starting: this machine's interpreter lives under /root.)"""
    seen = _confined({"landlock_abi": abi, "seccomp": True, "uid": None}, unprivileged=True)
    assert {k: seen[k] for k in _landlock(abi)} == _landlock(abi)
    assert seen["ids"] == [[65534] * 3, [65534] * 3, []]


def test_a_root_child_never_keeps_the_graders_identity():
    """Asked to confine a root process without a sandbox user, ``confine`` refuses (never root)."""
    with pytest.raises(AssertionError, match="must run as a sandbox user of its own"):
        _confined({"landlock_abi": 7, "seccomp": True, "uid": None})


# Linux 4.14 (Gradescope's kernel) numbers its x86_64 calls up to 332 (statx).
LAST_CALL_OF_4_14 = 332


def test_the_allowlist_names_only_calls_linux_4_14_has():
    """Every call the filter allows, at every tier, exists on 4.14 (the newer ones the C library
    tries first answer ENOSYS, so it falls back), and libseccomp knows each name."""
    import pyseccomp
    for abi in (0, 1, 3, 7):
        named = set(seccomp.ALLOWED + seccomp.WORKDIR) | {call for call, *_ in seccomp.rules(1234, abi)}
        numbers = {call: pyseccomp.resolve_syscall(pyseccomp.Arch.X86_64, call) for call in named}
        assert all(0 <= n <= LAST_CALL_OF_4_14 for n in numbers.values()), numbers
    newer = {call: pyseccomp.resolve_syscall(pyseccomp.Arch.X86_64, call) for call in seccomp.NEWER}
    assert all(n > LAST_CALL_OF_4_14 for n in newer.values()), newer


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
    """The user tier's precondition on a layout of its own: this package, every other copy of it
    the interpreter can name (the checkout pip installed it from, with its solutions, by
    direct_url.json; one by an .egg-link; a copy on sys.path; one in the user's site folder), a
    package next to numpy (torch) and the autograder's folder, readable by others, are each
    named, numpy and its metadata are not; ``prepare`` takes others' rights from those alone, and
    the check holds."""
    from numpy_mamba.grader.sandbox import image
    top = Path(tempfile.mkdtemp(prefix="numpy_mamba_image_check_"))
    try:
        os.chmod(top, 0o755)
        site, user, package, root = top / "site", top / "user", top / "checkout" / "numpy_mamba", top / "autograder"
        installed_from, developed, on_path = top / "installed from", top / "developed", top / "pythonpath"
        record = site / "numpy_mamba-0.1.0.dist-info"
        for folder in (site / "torch", site / "numpy", site / "numpy-2.0.dist-info", record, user / "numpy_mamba",
                       package, root, installed_from / "tests" / "solutions", developed, on_path / "numpy_mamba"):
            folder.mkdir(parents=True, mode=0o755)
        (installed_from / "setup.cfg").write_text("[metadata]\n")
        (installed_from / "tests" / "solutions" / "gradients_solution.py").write_text("ANSWER = 1\n")
        (record / "direct_url.json").write_text(json.dumps({"url": installed_from.as_uri(), "dir_info": {}}))
        (site / "numpy_mamba.egg-link").write_text(f"{developed}\n.\n")
        monkeypatch.setattr(image, "PACKAGE", package)
        monkeypatch.setattr(image, "_folders", lambda: ([str(site), str(user)], [str(on_path)]))
        monkeypatch.setattr(image, "_needed", lambda: [str(site / "numpy")])
        found = image.problems([root])
        named = {line.split(" is readable")[0] for line in found}
        assert named == {str(p) for p in (package, site / "torch", site / "numpy_mamba.egg-link", user / "numpy_mamba",
                                          root, installed_from, developed, on_path / "numpy_mamba")}, found
        assert sorted(image.prepare([root])) == sorted(named)
        assert image.problems([root]) == [] and (site / "numpy").stat().st_mode & 0o005 == 0o005
    finally:
        shutil.rmtree(top)

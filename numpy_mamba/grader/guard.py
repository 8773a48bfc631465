"""The fence the child (``child.py``) puts up before it imports a submission.

``forbid`` swaps the code of every forbidden entry point (``numpy_mamba.gradients.gradients``,
...) for a stub raising PermissionError("... is not allowed in this exercise"): every name bound
to that function, however and wherever it was imported, now runs the stub, and the original
code object is gone from the process.  ``limit`` caps memory (RLIMIT_AS), file size and CPU
time, hard limits included, so the submission cannot raise them again.  ``audit_hook`` returns
the hook ``sys.addaudithook`` installs (it cannot be removed); it refuses to

  * import the grader, or read the forbidden modules' source or cached files (in any copy of
    numpy_mamba), the grader's files, tutorials/solutions/ or another process's /proc entry;
  * write, rename or delete outside the child's working directory;
  * start processes, send signals to other processes, open sockets, load C functions (ctypes),
    or change its resource limits.

Paths are resolved with C functions captured here, so a submission that patches os.lstat or
os.path cannot change what the hook sees.  This stops a submission from grading itself; it is
not a security boundary against a determined attacker (see tutorials/README.md).
"""
from __future__ import annotations

import builtins
import importlib
import os
import posix
import resource
import signal
import stat
import sys
import types

FILE_LIMIT = 64 * 2**20         # RLIMIT_FSIZE: no file written by the submission grows beyond this
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
DENIED = (("subprocess.Popen", "start a process"), ("os.system", "start a process"),
          ("os.exec", "start a process"), ("os.posix_spawn", "start a process"),
          ("os.fork", "start a process"), ("os.forkpty", "start a process"),
          ("os.killpg", "send signals"), ("socket.__new__", "open a socket"),
          ("ctypes.dlopen", "load C functions"), ("ctypes.dlsym", "load C functions"),
          ("resource.setrlimit", "change its limits"), ("resource.prlimit", "change its limits"),
          ("gc.get_objects", "search the interpreter's objects"),
          ("gc.get_referrers", "search the interpreter's objects"),
          ("gc.get_referents", "search the interpreter's objects"))
PATH_EVENTS = (("os.remove", (0,)), ("os.rmdir", (0,)), ("os.mkdir", (0,)), ("os.chmod", (0,)),
               ("os.chown", (0,)), ("os.truncate", (0,)), ("os.utime", (0,)), ("os.rename", (0, 1)),
               ("os.link", (1,)), ("os.symlink", (1,)), ("os.mkfifo", (0,)), ("os.mknod", (0,)),
               ("os.setxattr", (0,)), ("os.removexattr", (0,)))


def _resolver():
    """A realpath built only from C functions captured now: patching os.lstat, os.path or a
    builtin later changes nothing in it, and it reads no global at call time."""
    lstat, readlink, getcwd, is_link_mode, OSError_ = posix.lstat, posix.readlink, posix.getcwd, stat.S_ISLNK, OSError

    def realpath(path: str) -> str:
        parts = (path if path.startswith("/") else getcwd() + "/" + path).split("/")
        resolved, hops = [], 0
        while parts:
            part = parts.pop(0)
            if part == "" or part == ".":
                continue
            if part == "..":
                resolved = resolved[:-1]
                continue
            candidate = "/" + "/".join(resolved + [part])
            try:
                is_link = is_link_mode(lstat(candidate).st_mode)
            except OSError_:
                is_link = False
            if is_link and hops < 40:
                hops += 1
                target = readlink(candidate)
                parts = target.split("/") + parts
                if target.startswith("/"):
                    resolved = []
                continue
            resolved.append(part)
        return "/" + "/".join(resolved)
    return realpath


realpath = _resolver()


def _stub_code(name: str, message: str):
    namespace = {}
    exec(compile(f"def {name}(*args, **kwargs):\n    raise PermissionError({message!r})\n",
                 "<not allowed in this exercise>", "exec"), namespace)
    return namespace[name].__code__


def forbid(entries, exercise: str, allowed: str, package_dir: str) -> set:
    """Replace each "module:function" by a stub; returns the package-relative paths of their
    modules ("gradients.py", "gates/attention.py", ...) for ``audit_hook``."""
    root = realpath(package_dir)
    blocked = set()
    for entry in entries:
        module_name, name = entry.split(":")
        module = importlib.import_module(module_name)
        target = getattr(module, name)
        message = (f"{module_name}.{name} is not allowed in this exercise ({exercise}): the grader "
                   f"compares your own code with it. The hand-out allows {allowed}.")
        code = _stub_code(name, message)
        if isinstance(target, types.FunctionType) and not target.__closure__:
            target.__code__ = code                      # every reference now runs the stub
        else:
            stub = types.FunctionType(code, {"__builtins__": builtins}, name)
            for loaded in list(sys.modules.values()):
                if getattr(loaded, "__name__", "").startswith("numpy_mamba") and getattr(loaded, name, None) is target:
                    setattr(loaded, name, stub)
        blocked.add(realpath(module.__file__)[len(root) + 1:])
    return frozenset(blocked)


def limit(memory_bytes: int, cpu_seconds: int) -> None:
    """Hard limits: address space = what the process uses now + ``memory_bytes``; CPU; files."""
    try:
        with open("/proc/self/status") as f:
            vm = next((int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:")), 0)
    except OSError:                                  # no /proc (macOS): no memory limit
        vm = 0
    limits = [(resource.RLIMIT_FSIZE, FILE_LIMIT), (resource.RLIMIT_CORE, 0),
              (resource.RLIMIT_CPU, int(cpu_seconds))]
    if vm:
        limits.append((resource.RLIMIT_AS, vm + int(memory_bytes)))
    for which, value in limits:
        try:
            resource.setrlimit(which, (value, value))
        except (ValueError, OSError):                # e.g. RLIMIT_AS on macOS
            pass
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)    # a too-large file write fails, not kills


def audit_hook(workdir: str, submission: str, blocked: frozenset):
    """The hook (see the module docstring); PermissionError or ImportError say why.

    It is a closure over immutable values and functions captured here, and looks up no global
    or builtin when it runs: a submission that rewrites this module, ``builtins`` or ``os``
    cannot change it, and with gc's searches refused it cannot reach the hook's cells.
    A path argument must be a str, bytes or an unmodified pathlib path."""
    import pathlib
    resolve, own, denied, path_events = _resolver(), posix.getpid(), dict(DENIED), dict(PATH_EVENTS)
    denied_names, path_names = frozenset(denied), frozenset(path_events)
    denied_texts, path_args = tuple(DENIED), tuple(PATH_EVENTS)
    posix_path, fspath, to_str = pathlib.PosixPath, pathlib.PurePath.__fspath__, pathlib.PurePath.__str__
    write_flags, str_, bytes_, int_, type_, range_, len_ = WRITE_FLAGS, str, bytes, int, type, range, len
    PermissionError_, ImportError_ = PermissionError, ImportError
    own_text = str(own)

    def plain(path) -> str:
        if type_(path) is str_:
            return path
        if type_(path) is bytes_:
            return path.decode("utf-8", "surrogateescape")
        if type_(path) is posix_path and type_(path).__fspath__ is fspath and type_(path).__str__ is to_str:
            return to_str(path)
        raise PermissionError_("the grader accepts only str, bytes or pathlib paths here.")

    def read_refusal(path: str) -> str:
        if path == submission:
            return ""
        parts = path.split("/")
        for i in range_(len_(parts) - 1):
            if parts[i] == "tutorials" and parts[i + 1] == "solutions":
                return "the solutions (tutorials/solutions/)"
        if len_(parts) > 2 and parts[1] == "proc" and parts[2].isdigit() and parts[2] != own_text:
            return "another process"
        if "numpy_mamba" in parts:
            rel = parts[len_(parts) - parts[::-1].index("numpy_mamba"):]
            if rel[:1] == ["grader"]:
                return "the grader's files"
            if len_(rel) >= 2 and rel[-2] == "__pycache__":
                rel = rel[:-2] + [rel[-1].split(".")[0] + ".py"]
            if "/".join(rel) in blocked:
                return "numpy_mamba/" + "/".join(rel) + " (it holds an entry point this exercise forbids)"
        return ""

    def inside(path: str) -> bool:
        return path == workdir or path.startswith(workdir + "/") or path == "/dev/null"

    def hook(event, args):
        if event in denied_names:
            for name, text in denied_texts:
                if name == event:
                    raise PermissionError_(f"the grader does not let a submission {text} ({event}).")
        if event == "import" and type_(args[0]) is str_ and args[0].startswith("numpy_mamba.grader"):
            raise ImportError_(f"{args[0]} is not available to a submission: the grader is not part of the hand-out.")
        if event == "os.kill" and args[0] != own:
            raise PermissionError_("the grader does not let a submission send signals to another process.")
        if event == "open" and type_(args[0]) is not int_:
            path = resolve(plain(args[0]))
            why = read_refusal(path)
            if why:
                raise PermissionError_(f"not allowed in this exercise: reading {why}.")
            mode = args[1] if type_(args[1]) is str_ else ""
            writing = (args[2] if type_(args[2]) is int_ else 0) & write_flags or \
                "w" in mode or "a" in mode or "x" in mode or "+" in mode
            if writing and not inside(path):
                raise PermissionError_(f"the grader does not let a submission write outside its working "
                                       f"directory ({path}).")
        if event in path_names:
            for name, indices in path_args:
                if name != event:
                    continue
                for i in indices:
                    if type_(args[i]) is not int_ and not inside(resolve(plain(args[i]))):
                        raise PermissionError_(f"the grader does not let a submission change files outside "
                                               f"its working directory ({event}).")
            if event == "os.link" and read_refusal(resolve(plain(args[0]))):
                raise PermissionError_("not allowed in this exercise: linking to a forbidden file.")

    del denied, path_events
    return hook

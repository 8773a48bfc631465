"""The child's kernel sandbox: Landlock, seccomp-BPF and resource limits, standard library only.

``confine`` runs in the child (``child.py``) before the submission's first line, and nothing it
sets up can be undone by the process afterwards:

  * PR_SET_PDEATHSIG: the child is killed when the grader dies;
  * resource limits, hard limits included (memory, CPU, file size, no core files);
  * no-new-privs, then every capability dropped (a grader run as root, as on Gradescope);
  * Landlock (Linux >= 5.13): read only the ``readable`` paths (the Python standard library,
    numpy and scipy, the submission's copy), write only ``writable`` (the fresh working
    directory), execute nothing; from ABI 4 no TCP bind/connect; from ABI 6 no signals to and
    no abstract unix sockets with processes outside the sandbox;
  * seccomp-BPF: no new processes (threads stay allowed: clone with CLONE_THREAD), no exec,
    no ptrace / process_vm_* / pidfd_*, no signals except to itself, no sockets, no io_uring,
    no raising limits, no namespaces, mounts, keyrings, modules.  Refused calls return EPERM
    (clone3 returns ENOSYS, so the C library falls back to clone, which the filter can read).

``probe()`` says what this kernel offers; ``Isolation.line`` is the one line every run prints.
The syscall numbers are those of x86_64 and aarch64; elsewhere (or on macOS, Windows, an old
kernel) ``confine`` applies what it can and ``Isolation`` says what is missing.
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
from dataclasses import dataclass

FILE_LIMIT = 64 * 2**20         # RLIMIT_FSIZE: no file written by a submission grows beyond this

# ---- Landlock (include/uapi/linux/landlock.h) --------------------------------------------------
LANDLOCK_SYSCALLS = (444, 445, 446)              # create_ruleset, add_rule, restrict_self: both arches
CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH = 1
FS_EXECUTE, FS_WRITE_FILE, FS_READ_FILE, FS_READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
FS_REMOVE_DIR, FS_REMOVE_FILE, FS_MAKE_CHAR, FS_MAKE_DIR = 1 << 4, 1 << 5, 1 << 6, 1 << 7
FS_MAKE_REG, FS_MAKE_SOCK, FS_MAKE_FIFO, FS_MAKE_BLOCK = 1 << 8, 1 << 9, 1 << 10, 1 << 11
FS_MAKE_SYM, FS_REFER, FS_TRUNCATE, FS_IOCTL_DEV = 1 << 12, 1 << 13, 1 << 14, 1 << 15
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1
FILE_RIGHTS = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV   # valid on a file
READ = FS_READ_FILE | FS_READ_DIR
WRITE = (READ | FS_WRITE_FILE | FS_REMOVE_DIR | FS_REMOVE_FILE | FS_MAKE_DIR | FS_MAKE_REG
         | FS_REFER | FS_TRUNCATE)


def handled_fs(abi: int) -> int:
    """Every filesystem right the kernel of Landlock ABI ``abi`` knows (all of them are refused
    unless a rule grants them)."""
    rights = (1 << 13) - 1                                     # ABI 1: EXECUTE .. MAKE_SYM
    if abi >= 2:
        rights |= FS_REFER
    if abi >= 3:
        rights |= FS_TRUNCATE
    if abi >= 5:
        rights |= FS_IOCTL_DEV
    return rights


# ---- seccomp (include/uapi/linux/seccomp.h, filter.h, audit.h) ---------------------------------
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, PR_CAPBSET_DROP = 1, 38, 22, 24
SECCOMP_MODE_FILTER = 2
RET_ALLOW, RET_ERRNO, RET_KILL_PROCESS = 0x7FFF0000, 0x00050000, 0x80000000
BPF_LD_W_ABS, BPF_JEQ_K, BPF_JSET_K, BPF_JGE_K, BPF_RET_K = 0x20, 0x15, 0x45, 0x35, 0x06
CLONE_THREAD = 0x00010000
ARCHES = {  # machine -> (AUDIT_ARCH_*, {syscall name: number})
    "x86_64": (0xC000003E, dict(
        fork=57, vfork=58, clone=56, clone3=435, execve=59, execveat=322, ptrace=101,
        process_vm_readv=310, process_vm_writev=311, pidfd_open=434, pidfd_send_signal=424,
        pidfd_getfd=438, kill=62, tkill=200, tgkill=234, rt_sigqueueinfo=129, rt_tgsigqueueinfo=297,
        socket=41, socketpair=53, setrlimit=160, prlimit64=302, io_uring_setup=425, io_uring_enter=426,
        io_uring_register=427, kcmp=312, perf_event_open=298, bpf=321, userfaultfd=323, mount=165,
        umount2=166, unshare=272, setns=308, chroot=161, pivot_root=155, init_module=175,
        finit_module=313, delete_module=176, reboot=169, iopl=172, ioperm=173, keyctl=250, add_key=248,
        request_key=249, setuid=105, setgid=106, setreuid=113, setregid=114, setresuid=117,
        setresgid=119, setgroups=116, capset=126, personality=135, mknod=133, mknodat=259,
        kexec_load=246, kexec_file_load=320, swapon=167, swapoff=168, acct=163, settimeofday=164,
        clock_settime=227, adjtimex=159, sethostname=170, setdomainname=171, open_by_handle_at=304,
        name_to_handle_at=303, setpgid=109, setsid=112, syslog=103, vmsplice=278, fanotify_init=300,
        open_tree=428, move_mount=429, fsopen=430, fsmount=432, mount_setattr=442, process_madvise=440,
        memfd_secret=447, landlock_create_ruleset=444)),
    "aarch64": (0xC00000B7, dict(
        clone=220, clone3=435, execve=221, execveat=281, ptrace=117, process_vm_readv=270,
        process_vm_writev=271, pidfd_open=434, pidfd_send_signal=424, pidfd_getfd=438, kill=129,
        tkill=130, tgkill=131, rt_sigqueueinfo=138, rt_tgsigqueueinfo=240, socket=198, socketpair=199,
        setrlimit=164, prlimit64=261, io_uring_setup=425, io_uring_enter=426, io_uring_register=427,
        kcmp=272, perf_event_open=241, bpf=280, userfaultfd=282, mount=40, umount2=39, unshare=97,
        setns=268, chroot=51, pivot_root=41, init_module=105, finit_module=273, delete_module=106,
        reboot=142, keyctl=219, add_key=217, request_key=218, setuid=146, setgid=144, setreuid=145,
        setregid=143, setresuid=147, setresgid=149, setgroups=159, capset=91, personality=92,
        mknodat=33, kexec_load=104, kexec_file_load=294, swapon=224, swapoff=225, acct=89,
        settimeofday=170, clock_settime=112, adjtimex=171, sethostname=161, setdomainname=162,
        open_by_handle_at=265, name_to_handle_at=264, setpgid=154, setsid=157, syslog=116, vmsplice=75,
        fanotify_init=262, open_tree=428, move_mount=429, fsopen=430, fsmount=432, mount_setattr=442,
        process_madvise=440, memfd_secret=447, landlock_create_ruleset=444)),
}
# Checked by argument (below), or refused with ENOSYS; every other call of ARCHES is refused.
SPECIAL = ("clone", "clone3", "kill", "tgkill", "prlimit64", "landlock_create_ruleset")


@dataclass(frozen=True)
class Isolation:
    """What the kernel sandbox enforces on this machine (``probe``) or in one child."""

    landlock_abi: int = 0           # 0: no Landlock (an old kernel, not Linux, or disabled)
    seccomp: bool = False
    system: str = ""

    @property
    def complete(self) -> bool:
        """Files, processes, signals and sockets all enforced by the kernel."""
        return self.landlock_abi >= 6 and self.seccomp

    @property
    def line(self) -> str:
        """One line for the terminal, the report and results.json."""
        parts = []
        if self.landlock_abi:
            scope = "; signals and abstract sockets scoped" if self.landlock_abi >= 6 else ""
            parts.append(f"Landlock ABI {self.landlock_abi} (files: read an allowlist, write the working "
                         f"directory only{scope})")
        else:
            parts.append("no Landlock (files NOT confined by the kernel)")
        parts.append("seccomp (no processes, exec, ptrace, signals to others, sockets)" if self.seccomp
                     else "no seccomp (processes, signals and sockets NOT confined by the kernel)")
        head = "isolation: kernel sandbox" if self.complete else "isolation: WEAK"
        return f"{head}: {', '.join(parts)}; {self.system}"


def _libc():
    """The C library with syscall and prctl (Linux), else None."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        libc.prctl.restype = ctypes.c_int
        return libc
    except (OSError, AttributeError):                 # macOS: no prctl
        return None


def landlock_abi(libc=None) -> int:
    """The Landlock ABI version this kernel offers (0: none)."""
    libc = libc or _libc()
    if libc is None or not sys.platform.startswith("linux"):
        return 0
    version = libc.syscall(LANDLOCK_SYSCALLS[0], None, ctypes.c_size_t(0), ctypes.c_uint32(CREATE_RULESET_VERSION))
    return max(0, int(version))


def die_with_parent() -> None:
    """PR_SET_PDEATHSIG: this process gets SIGKILL when its parent ends (Linux; elsewhere nothing)."""
    libc = _libc()
    if libc is not None and sys.platform.startswith("linux"):
        libc.prctl(PR_SET_PDEATHSIG, ctypes.c_ulong(signal.SIGKILL), 0, 0, 0)


def probe() -> Isolation:
    """What ``confine`` can enforce here (nothing is changed in this process)."""
    system = f"{platform.system()} {platform.release()} {platform.machine()}"
    if not sys.platform.startswith("linux"):
        return Isolation(0, False, system)
    seccomp = platform.machine() in ARCHES and os.path.exists("/proc/self/status")
    if seccomp:
        with open("/proc/self/status") as f:
            seccomp = any(line.startswith("Seccomp:") for line in f)
    return Isolation(landlock_abi(), seccomp, system)


# ---- limits -----------------------------------------------------------------------------------

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


# ---- Landlock ---------------------------------------------------------------------------------

def _landlock(libc, abi: int, readable, writable, listable) -> None:
    attr = struct.pack("=QQQ", handled_fs(abi), NET_BIND_TCP | NET_CONNECT_TCP if abi >= 4 else 0,
                       SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0)
    size = 8 if abi < 4 else 16 if abi < 6 else 24
    buffer = ctypes.create_string_buffer(attr[:size], size)
    ruleset = libc.syscall(LANDLOCK_SYSCALLS[0], buffer, ctypes.c_size_t(size), ctypes.c_uint32(0))
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset failed")
    try:
        handled = handled_fs(abi)
        for paths, rights in ((listable, FS_READ_DIR), (readable, READ), (writable, WRITE)):
            for path in paths:
                try:
                    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
                except OSError:
                    continue                            # a path that does not exist grants nothing
                try:
                    allowed = rights & handled
                    if not os.path.isdir(f"/proc/self/fd/{fd}"):
                        allowed &= FILE_RIGHTS
                    rule = ctypes.create_string_buffer(struct.pack("=Qi", allowed, fd), 12)
                    if libc.syscall(LANDLOCK_SYSCALLS[1], ctypes.c_int(ruleset), ctypes.c_int(RULE_PATH_BENEATH),
                                    rule, ctypes.c_uint32(0)) < 0:
                        raise OSError(ctypes.get_errno(), f"landlock_add_rule failed for {path}")
                finally:
                    os.close(fd)
        if libc.syscall(LANDLOCK_SYSCALLS[2], ctypes.c_int(ruleset), ctypes.c_uint32(0)) < 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self failed")
    finally:
        os.close(ruleset)


# ---- seccomp ----------------------------------------------------------------------------------

def _insn(code, jt, jf, k) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k & 0xFFFFFFFF)


def bpf_program(machine: str, pid: int) -> bytes:
    """The seccomp filter for ``machine``: refuse the calls of ARCHES, check the SPECIAL ones by
    argument.  ``pid``: the one process kill/tgkill may signal (the child itself)."""
    audit_arch, numbers = ARCHES[machine]
    eperm, enosys = RET_ERRNO | errno.EPERM, RET_ERRNO | errno.ENOSYS
    arg = [16 + 8 * i for i in range(6)]           # low 32 bits of args[i] (little-endian)
    denied = [n for name, n in numbers.items() if name not in SPECIAL]
    out = [_insn(BPF_LD_W_ABS, 0, 0, 4),            # seccomp_data.arch
           _insn(BPF_JEQ_K, 1, 0, audit_arch),
           _insn(BPF_RET_K, 0, 0, RET_KILL_PROCESS),
           _insn(BPF_LD_W_ABS, 0, 0, 0)]            # seccomp_data.nr
    if machine == "x86_64":                         # the x32 ABI: its own numbers, refused whole
        out += [_insn(BPF_JGE_K, 0, 1, 0x40000000), _insn(BPF_RET_K, 0, 0, eperm)]
    for n in denied:
        out += [_insn(BPF_JEQ_K, 0, 1, n), _insn(BPF_RET_K, 0, 0, eperm)]
    for name in ("clone3", "landlock_create_ruleset"):   # ENOSYS: callers fall back or give up
        out += [_insn(BPF_JEQ_K, 0, 1, numbers[name]), _insn(BPF_RET_K, 0, 0, enosys)]
    # clone: a thread (CLONE_THREAD in flags = args[0]) is allowed, a process is not
    out += [_insn(BPF_JEQ_K, 0, 4, numbers["clone"]), _insn(BPF_LD_W_ABS, 0, 0, arg[0]),
            _insn(BPF_JSET_K, 0, 1, CLONE_THREAD), _insn(BPF_RET_K, 0, 0, RET_ALLOW),
            _insn(BPF_RET_K, 0, 0, eperm)]
    # kill(pid, sig) and tgkill(tgid, tid, sig): only to this process (both words of args[0])
    for name in ("kill", "tgkill"):
        out += [_insn(BPF_JEQ_K, 0, 6, numbers[name]), _insn(BPF_LD_W_ABS, 0, 0, arg[0]),
                _insn(BPF_JEQ_K, 0, 3, pid), _insn(BPF_LD_W_ABS, 0, 0, arg[0] + 4),
                _insn(BPF_JEQ_K, 0, 1, 0), _insn(BPF_RET_K, 0, 0, RET_ALLOW), _insn(BPF_RET_K, 0, 0, eperm)]
    # prlimit64(pid, resource, new, old): reading a limit (new == NULL) only
    out += [_insn(BPF_JEQ_K, 0, 6, numbers["prlimit64"]), _insn(BPF_LD_W_ABS, 0, 0, arg[2]),
            _insn(BPF_JEQ_K, 0, 3, 0), _insn(BPF_LD_W_ABS, 0, 0, arg[2] + 4),
            _insn(BPF_JEQ_K, 0, 1, 0), _insn(BPF_RET_K, 0, 0, RET_ALLOW), _insn(BPF_RET_K, 0, 0, eperm)]
    out.append(_insn(BPF_RET_K, 0, 0, RET_ALLOW))
    return b"".join(out)


def _seccomp(libc, machine: str) -> None:
    program = bpf_program(machine, os.getpid())
    n = len(program) // 8
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = struct.pack("=H6xQ", n, ctypes.addressof(buffer))
    fprog_buffer = ctypes.create_string_buffer(fprog, len(fprog))
    if libc.prctl(PR_SET_SECCOMP, ctypes.c_ulong(SECCOMP_MODE_FILTER), fprog_buffer, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP) failed")


def _drop_capabilities(libc) -> None:
    """Empty the bounding set and the effective, permitted and inheritable sets (a root grader)."""
    for cap in range(64):
        if libc.prctl(PR_CAPBSET_DROP, ctypes.c_ulong(cap), 0, 0, 0) != 0 and ctypes.get_errno() == errno.EINVAL:
            break
    header = ctypes.create_string_buffer(struct.pack("=Ii", 0x20080522, 0), 8)   # _LINUX_CAPABILITY_VERSION_3
    data = ctypes.create_string_buffer(bytes(24), 24)
    if libc.syscall(ARCHES[platform.machine()][1]["capset"], header, data) != 0:
        raise OSError(ctypes.get_errno(), "capset failed")


def mapped_files() -> list:
    """The files mapped into this process now (the interpreter, its libraries, numpy's and
    scipy's extension modules): they stay readable, so a library loaded later finds them."""
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split(None, 5)[5].strip() for line in f if len(line.split(None, 5)) == 6}
    except OSError:
        return []
    return sorted(p for p in paths if p.startswith("/") and os.path.isfile(p))


def confine(readable, writable, memory_bytes: int, cpu_seconds: int, parent: int | None = None,
            listable=()) -> Isolation:
    """Confine this process for good (see the module docstring); returns what is in force.

    ``readable``/``writable``: paths (directories grant everything beneath them); ``listable``:
    directories whose entries may be listed (their files stay unreadable unless ``readable``).
    ``parent``: the process this one dies with (its monitor); if it is already gone, exit at
    once.  Raises OSError when the kernel offers a protection and refuses to apply it (never
    silently weaker than ``probe``).
    """
    libc = _libc()
    found = probe()
    die_with_parent()
    if parent is not None and os.getppid() != parent:
        os._exit(75)
    limit(memory_bytes, cpu_seconds)
    if libc is None or not sys.platform.startswith("linux"):
        return found
    if libc.prctl(PR_SET_NO_NEW_PRIVS, ctypes.c_ulong(1), 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    if os.geteuid() == 0 and found.seccomp:
        _drop_capabilities(libc)
    if found.landlock_abi:
        _landlock(libc, found.landlock_abi, list(readable) + mapped_files(), writable, listable)
    if found.seccomp:
        _seccomp(libc, platform.machine())
    return found

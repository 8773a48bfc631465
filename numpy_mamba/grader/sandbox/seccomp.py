"""The child's seccomp-BPF filter: the system calls a submission may not make, standard library only.

Refused with EPERM (the submission sees an ordinary Python error):

  * processes and threads: fork, vfork, clone (clone3 answers ENOSYS, so the C library falls
    back to clone), exec, ptrace, process_vm_readv/writev, pidfd_*, kcmp, io_uring;
  * signals to anyone but itself: kill and tgkill are checked by argument (the child's own pid),
    tkill and sigqueue are refused; the SIGIO path too, where a file descriptor makes the kernel
    signal its owner: fcntl F_SETOWN, F_SETOWN_EX, F_SETSIG, F_SETLEASE, F_NOTIFY, F_SETFL with
    O_ASYNC, and ioctl FIOASYNC, FIOSETOWN, SIOCSPGRP;
  * sockets of every family (abstract unix sockets included);
  * memory the address-space limit does not count: memfd_create, System V shared memory,
    semaphores and message queues, POSIX message queues;
  * prctl (after this filter: no undoing PDEATHSIG, no renaming, no new seccomp mode);
  * scheduling and memory policy of other processes: setpriority, sched_set*, ioprio_set,
    migrate_pages, move_pages;
  * raising a limit (prlimit64 may only read), identities, capabilities, namespaces, mounts,
    keyrings, modules, clocks, reboot, BPF, perf, userfaultfd, handles, fanotify;
  * with ``create=False`` (no Landlock to keep writes in the working directory): creating any
    file, folder or link (open with O_CREAT or O_TMPFILE, creat, mkdir, link, symlink, rename).

An architecture other than the one the filter was built for kills the process (x32 on x86_64
is refused whole).  ``program(machine, pid, create)`` is the filter; ``install`` loads it.
"""
from __future__ import annotations

import ctypes
import errno
import struct

RET_ALLOW, RET_ERRNO, RET_KILL_PROCESS = 0x7FFF0000, 0x00050000, 0x80000000
LD_W_ABS, JEQ_K, JSET_K, JGE_K, RET_K = 0x20, 0x15, 0x45, 0x35, 0x06
PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
F_SETFL, F_SETOWN, F_SETSIG, F_SETOWN_EX, F_SETLEASE, F_NOTIFY = 4, 8, 10, 15, 1024, 1026
O_ASYNC, O_CREAT, O_TMPFILE = 0o20000, 0o100, 0o20000000
FIOASYNC, FIOSETOWN, SIOCSPGRP = 0x5452, 0x8901, 0x8902

# Refused on every machine that has them; each machine's numbers below.
REFUSED = (
    "fork vfork clone execve execveat ptrace process_vm_readv process_vm_writev pidfd_open "
    "pidfd_send_signal pidfd_getfd tkill rt_sigqueueinfo rt_tgsigqueueinfo socket socketpair setrlimit "
    "io_uring_setup io_uring_enter io_uring_register kcmp perf_event_open bpf userfaultfd mount umount2 "
    "unshare setns chroot pivot_root init_module finit_module delete_module reboot iopl ioperm keyctl "
    "add_key request_key setuid setgid setreuid setregid setresuid setresgid setgroups capset personality "
    "mknod mknodat kexec_load kexec_file_load swapon swapoff acct settimeofday clock_settime adjtimex "
    "sethostname setdomainname open_by_handle_at name_to_handle_at setpgid setsid syslog vmsplice "
    "fanotify_init open_tree move_mount fsopen fsconfig fsmount fspick mount_setattr process_madvise "
    "process_mrelease memfd_secret memfd_create shmget shmat shmctl shmdt semget semop semctl semtimedop "
    "msgget msgsnd msgrcv msgctl mq_open mq_unlink mq_timedsend mq_timedreceive mq_notify mq_getsetattr "
    "prctl setpriority sched_setparam sched_setscheduler sched_setaffinity sched_setattr ioprio_set "
    "migrate_pages move_pages").split()
NO_CREATE = "creat mkdir mkdirat link linkat symlink symlinkat rename renameat renameat2".split()
ENOSYS = ("clone3", "landlock_create_ruleset", "openat2")      # callers fall back or give up

ARCHES = {  # machine -> (AUDIT_ARCH_*, {system call: number})
    "x86_64": (0xC000003E, dict(zip(
        "fork vfork clone clone3 execve execveat ptrace process_vm_readv process_vm_writev pidfd_open "
        "pidfd_send_signal pidfd_getfd kill tkill tgkill rt_sigqueueinfo rt_tgsigqueueinfo socket "
        "socketpair setrlimit prlimit64 io_uring_setup io_uring_enter io_uring_register kcmp "
        "perf_event_open bpf userfaultfd mount umount2 unshare setns chroot pivot_root init_module "
        "finit_module delete_module reboot iopl ioperm keyctl add_key request_key setuid setgid setreuid "
        "setregid setresuid setresgid setgroups capset personality mknod mknodat kexec_load "
        "kexec_file_load swapon swapoff acct settimeofday clock_settime adjtimex sethostname "
        "setdomainname open_by_handle_at name_to_handle_at setpgid setsid syslog vmsplice fanotify_init "
        "open_tree move_mount fsopen fsconfig fsmount fspick mount_setattr process_madvise "
        "process_mrelease memfd_secret memfd_create landlock_create_ruleset shmget shmat shmctl shmdt "
        "semget semop semctl semtimedop msgget msgsnd msgrcv msgctl mq_open mq_unlink mq_timedsend "
        "mq_timedreceive mq_notify mq_getsetattr prctl setpriority sched_setparam sched_setscheduler "
        "sched_setaffinity sched_setattr ioprio_set migrate_pages move_pages fcntl ioctl open openat "
        "openat2 creat mkdir mkdirat link linkat symlink symlinkat rename renameat renameat2".split(),
        (57, 58, 56, 435, 59, 322, 101, 310, 311, 434, 424, 438, 62, 200, 234, 129, 297, 41, 53, 160,
         302, 425, 426, 427, 312, 298, 321, 323, 165, 166, 272, 308, 161, 155, 175, 313, 176, 169, 172,
         173, 250, 248, 249, 105, 106, 113, 114, 117, 119, 116, 126, 135, 133, 259, 246, 320, 167, 168,
         163, 164, 227, 159, 170, 171, 304, 303, 109, 112, 103, 278, 300, 428, 429, 430, 431, 432, 433,
         442, 440, 448, 447, 319, 444, 29, 30, 31, 67, 64, 65, 66, 220, 68, 69, 70, 71, 240, 241, 242,
         243, 244, 245, 157, 141, 142, 144, 203, 314, 251, 256, 279, 72, 16, 2, 257, 437, 85, 83, 258,
         86, 265, 88, 266, 82, 264, 316)))),
    "aarch64": (0xC00000B7, dict(zip(
        "clone clone3 execve execveat ptrace process_vm_readv process_vm_writev pidfd_open "
        "pidfd_send_signal pidfd_getfd kill tkill tgkill rt_sigqueueinfo rt_tgsigqueueinfo socket "
        "socketpair setrlimit prlimit64 io_uring_setup io_uring_enter io_uring_register kcmp "
        "perf_event_open bpf userfaultfd mount umount2 unshare setns chroot pivot_root init_module "
        "finit_module delete_module reboot keyctl add_key request_key setuid setgid setreuid setregid "
        "setresuid setresgid setgroups capset personality mknodat kexec_load kexec_file_load swapon "
        "swapoff acct settimeofday clock_settime adjtimex sethostname setdomainname open_by_handle_at "
        "name_to_handle_at setpgid setsid syslog vmsplice fanotify_init open_tree move_mount fsopen "
        "fsconfig fsmount fspick mount_setattr process_madvise process_mrelease memfd_secret memfd_create "
        "landlock_create_ruleset msgget msgctl msgrcv msgsnd semget semctl semtimedop semop shmget shmctl "
        "shmat shmdt mq_open mq_unlink mq_timedsend mq_timedreceive mq_notify mq_getsetattr prctl "
        "setpriority sched_setparam sched_setscheduler sched_setaffinity sched_setattr ioprio_set "
        "migrate_pages move_pages fcntl ioctl openat openat2 mkdirat linkat symlinkat renameat "
        "renameat2".split(),
        (220, 435, 221, 281, 117, 270, 271, 434, 424, 438, 129, 130, 131, 138, 240, 198, 199, 164, 261,
         425, 426, 427, 272, 241, 280, 282, 40, 39, 97, 268, 51, 41, 105, 273, 106, 142, 219, 217, 218,
         146, 144, 145, 143, 147, 149, 159, 91, 92, 33, 104, 294, 224, 225, 89, 170, 112, 171, 161, 162,
         265, 264, 154, 157, 116, 75, 262, 428, 429, 430, 431, 432, 433, 442, 440, 448, 447, 279, 444,
         186, 187, 188, 189, 190, 191, 192, 193, 194, 195, 196, 197, 180, 181, 182, 183, 184, 185, 167,
         140, 118, 119, 122, 274, 30, 238, 239, 25, 29, 56, 437, 34, 37, 36, 38, 276)))),
}


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k & 0xFFFFFFFF)


def _arg(i: int) -> bytes:
    """Load the low 32 bits of args[i] (seccomp_data, little-endian)."""
    return _insn(LD_W_ABS, 0, 0, 16 + 8 * i)


def _when(nr: int, body: list) -> list:
    """``if syscall == nr: body`` (the body ends in a return); the accumulator holds nr after."""
    return [_insn(JEQ_K, 0, len(body), nr)] + body


def _refuse_values(values, ret: int) -> list:
    """Return ``ret`` when the accumulator equals one of ``values``, else fall through."""
    out = []
    for v in values:
        out += [_insn(JEQ_K, 0, 1, v), _insn(RET_K, 0, 0, ret)]
    return out


def _self_only(nr: int, pid: int, eperm: int) -> list:
    """kill(pid, sig) / tgkill(tgid, tid, sig): allowed only at this process (both words of args[0])."""
    return _when(nr, [_arg(0), _insn(JEQ_K, 0, 3, pid), _insn(LD_W_ABS, 0, 0, 20), _insn(JEQ_K, 0, 1, 0),
                      _insn(RET_K, 0, 0, RET_ALLOW), _insn(RET_K, 0, 0, eperm)])


def _no_flags(nr: int, index: int, flags: int, eperm: int) -> list:
    """Refuse the call when args[index] has any of ``flags``."""
    return _when(nr, [_arg(index), _insn(JSET_K, 0, 1, flags), _insn(RET_K, 0, 0, eperm),
                      _insn(RET_K, 0, 0, RET_ALLOW)])


def program(machine: str, pid: int, create: bool = True) -> bytes:
    """The filter for ``machine`` (see the module docstring); ``pid``: the child itself;
    ``create``: whether files may be created (Landlock keeps them in the working directory)."""
    audit_arch, numbers = ARCHES[machine]
    eperm, enosys = RET_ERRNO | errno.EPERM, RET_ERRNO | errno.ENOSYS
    refused = REFUSED + ([] if create else NO_CREATE)
    out = [_insn(LD_W_ABS, 0, 0, 4), _insn(JEQ_K, 1, 0, audit_arch), _insn(RET_K, 0, 0, RET_KILL_PROCESS),
           _insn(LD_W_ABS, 0, 0, 0)]
    if machine == "x86_64":                         # the x32 ABI: its own numbers, refused whole
        out += [_insn(JGE_K, 0, 1, 0x40000000), _insn(RET_K, 0, 0, eperm)]
    out += _refuse_values([numbers[n] for n in refused if n in numbers], eperm)
    out += _refuse_values([numbers[n] for n in ENOSYS], enosys)
    out += _self_only(numbers["kill"], pid, eperm) + _self_only(numbers["tgkill"], pid, eperm)
    # prlimit64(pid, resource, new, old): reading a limit (new == NULL) only
    out += _when(numbers["prlimit64"], [_arg(2), _insn(JEQ_K, 0, 3, 0), _insn(LD_W_ABS, 0, 0, 36),
                                        _insn(JEQ_K, 0, 1, 0), _insn(RET_K, 0, 0, RET_ALLOW),
                                        _insn(RET_K, 0, 0, eperm)])
    out += _when(numbers["fcntl"], [_arg(1)] + _refuse_values((F_SETOWN, F_SETOWN_EX, F_SETSIG, F_SETLEASE,
                                                                F_NOTIFY), eperm)
                 + [_insn(JEQ_K, 0, 3, F_SETFL), _arg(2), _insn(JSET_K, 0, 1, O_ASYNC),
                    _insn(RET_K, 0, 0, eperm), _insn(RET_K, 0, 0, RET_ALLOW)])
    out += _when(numbers["ioctl"], [_arg(1)] + _refuse_values((FIOASYNC, FIOSETOWN, SIOCSPGRP), eperm)
                 + [_insn(RET_K, 0, 0, RET_ALLOW)])
    if not create:
        out += _no_flags(numbers["openat"], 2, O_CREAT | O_TMPFILE, eperm)
        if "open" in numbers:
            out += _no_flags(numbers["open"], 1, O_CREAT | O_TMPFILE, eperm)
    out.append(_insn(RET_K, 0, 0, RET_ALLOW))
    return b"".join(out)


def install(libc, machine: str, pid: int, create: bool = True) -> None:
    """Load ``program`` into this process for good (no-new-privs must be set already)."""
    code = program(machine, pid, create)
    buffer = ctypes.create_string_buffer(code, len(code))
    fprog = ctypes.create_string_buffer(struct.pack("=H6xQ", len(code) // 8, ctypes.addressof(buffer)), 16)
    if libc.prctl(PR_SET_SECCOMP, ctypes.c_ulong(SECCOMP_MODE_FILTER), fprog, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP) failed")

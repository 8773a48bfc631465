"""The secret seed of a course's grading problems: made once, kept in a file only the instructor
(or, on Gradescope, root) can read, never a number on a command line or in an environment
variable, where any process on the machine could read it.

``secret_seed(path)`` makes the file with Python's ``secrets`` module the first time (mode 0600,
never through a link) and reads it afterwards: a regular file of the user who runs the grader,
made readable by that user only if others could read it.  A class run keeps it next to its CSV
(``SECRET_NAME``), the Gradescope zip carries it as ``secret.seed``, and ``--secret FILE`` names
it for both, so that a local regrade grades the autograder's problems.
"""
from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path

from .sandbox import shown

SECRET_NAME = "numpy_mamba_secret.seed"
SECRET_HEADER = "# numpy_mamba grader: the secret seed of a course's grading problems; keep it readable by you only\n"


class SecretError(ValueError):
    """A secret seed file that cannot be used: the message says why and what to do."""


def secret_seed(path: Path, make: bool = True) -> tuple:
    """(the seed kept in ``path``, what was done, for the instructor): made now with the secrets
    module when the file does not exist and ``make`` (mode 0600, never through a link), else
    read: a regular file you own, made readable by you only if others could read it."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600) if make else None
    except FileExistsError:
        fd = None
    except OSError as exc:
        raise SecretError(f"cannot make the secret seed file {shown(path)}: {exc.strerror}") from None
    if fd is not None:
        seed = secrets.randbelow(2**63)
        with os.fdopen(fd, "w") as f:
            f.write(f"{SECRET_HEADER}{seed}\n")
        return seed, (f"made a new secret seed in {shown(path)} (readable by you only): keep it to grade again on "
                      "these problems")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise SecretError(f"cannot read the secret seed file {shown(path)}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as f:
        info, note = os.fstat(fd), f"problems drawn from the secret seed in {shown(path)}"
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
            raise SecretError(f"the secret seed file {shown(path)} is not a regular file of yours")
        if info.st_mode & 0o077:
            os.fchmod(fd, 0o600)
            note += f" (it was mode {info.st_mode & 0o777:o}: made readable by you only)"
        lines = [line.strip() for line in f.read(4096).decode("ascii", "replace").splitlines()]
    numbers = [line for line in lines if line and not line.startswith("#")]
    if len(numbers) != 1 or not numbers[0].isdigit() or int(numbers[0]) >= 2**63:
        raise SecretError(f"{shown(path)} does not hold a secret seed (one integer from 0 to 2**63 - 1)")
    return int(numbers[0]), note

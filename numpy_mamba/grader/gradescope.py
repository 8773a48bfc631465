"""python -m numpy_mamba gradescope EXERCISE --out autograder.zip: a Gradescope autograder.

The zip holds, at its top level,

    setup.sh         run once when Gradescope builds the image: installs the wheel below and its
                     grader extra (numpy, scipy, pyseccomp) with python3 -m pip, makes secret.seed
                     readable by root only, then, in Gradescope's image only, makes what a submission
                     must not read unreadable to other users (the package, every other package,
                     /autograder)
    run_autograder   run for every submission: python3 -m numpy_mamba.grader.gradescope run,
                     which grades /autograder/submission into /autograder/results/results.json
                     (when setup.sh has not run, it writes a results.json saying so)
    autograder.json  the exercise and the instructor's settings: points, limits, hidden problems
                     and their visibility
    secret.seed      the seed of the problems, which no student sees (mode 0600): the one kept in
                     --secret FILE (default numpy_mamba_secret.seed next to the zip, made on first
                     use), so that grade --secret FILE grades on the same problems
    numpy_mamba-VERSION-py3-none-any.whl   this package, exactly this version

The zip is built from the package that runs this command (a checkout or an installation): its
files, their metadata and a RECORD of hashes, with the standard library (build_wheel).
AUTOGRADER_ROOT (default /autograder) moves the whole layout, so that it can be tried locally;
without it, outside a Gradescope image, run_autograder says so and writes nothing.
AUTOGRADER_PYTHON (default python3) and AUTOGRADER_PIP_ARGS choose the interpreter and pip's
options.  results.json is always written: no file, several none of which is named after the
exercise, a file that cannot be read or does not import: every test at 0 of its points, saying
why; a grader failure: 0, saying so.  The container is the instructor's boundary: the best tier
the kernel offers is used, never refused, and the isolation line goes to run_autograder's
stdout, which only instructors see.
"""
from __future__ import annotations

import argparse
import base64
import configparser
import hashlib
import io
import json
import os
import stat
import sys
import traceback
import zipfile
from pathlib import Path

from . import sandbox
from .files import SUFFIXES
from .report import VISIBILITY, block, clean
from .sandbox import shown
from .seed import SECRET_HEADER, SECRET_NAME, SecretError, secret_seed

DEFAULT_ROOT = Path("/autograder")
GRADER_EXTRA = 'extra == "grader"'            # the marker of the grader extra's requirements

SETUP_SH = """#!/usr/bin/env bash
# Gradescope runs this once, when it builds the autograder's image: install numpy_mamba (this
# exact version, from the wheel next to this file) and with it numpy, scipy and pyseccomp; then, in
# Gradescope's image only, make what a submission must not read unreadable to the sandbox user
# (this package, every other package, /autograder), which the grader checks before every submission.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
PYTHON="${AUTOGRADER_PYTHON:-python3}"
if ! "$PYTHON" -m pip --version >/dev/null 2>&1; then
    apt-get update && apt-get install -y python3 python3-pip
fi
WHEEL="$(ls "$HERE"/numpy_mamba-*.whl)"
"$PYTHON" -m pip install ${AUTOGRADER_PIP_ARGS:-} "$WHEEL[grader]"      # the grader extra: the sandbox's seccomp
chmod 600 "$HERE/secret.seed"
if [ "$HERE" = /autograder/source ] && [ -z "${AUTOGRADER_ROOT:-}" ]; then
    "$PYTHON" -m numpy_mamba.grader.gradescope prepare /autograder
else
    echo "setup.sh: not Gradescope's /autograder/source: this machine's permissions are left as they are"
fi
"""

RUN_AUTOGRADER = """#!/usr/bin/env bash
# Gradescope runs this for every submission: it grades $AUTOGRADER_ROOT/submission (default
# /autograder/submission) into $AUTOGRADER_ROOT/results/results.json.  Outside a Gradescope image
# (no /autograder/source/autograder.json) it says so and writes nothing unless AUTOGRADER_ROOT is set.
# It runs from /: `python -m` imports from the current folder first, which may hold a submission.
case "${AUTOGRADER_ROOT:-}" in ""|/*) ;; *) export AUTOGRADER_ROOT="$PWD/$AUTOGRADER_ROOT" ;; esac
HERE="$(cd "$(dirname "$0")" && pwd)"
PYTHON="${AUTOGRADER_PYTHON:-python3}"
cd /
if ! "$PYTHON" -c "import importlib.util as u, sys; sys.exit(u.find_spec('numpy_mamba') is None)" 2>/dev/null; then
    ROOT="${AUTOGRADER_ROOT:-/autograder}"
    SAY="numpy_mamba is not installed for $PYTHON: the autograder's setup.sh has not run. Run: bash $HERE/setup.sh"
    echo "run_autograder: $SAY" >&2
    if [ -n "${AUTOGRADER_ROOT:-}" ] || [ -f /autograder/source/autograder.json ]; then
        mkdir -p "$ROOT/results"
        printf '{"score": 0.0, "output": "The autograder is not set up (not your fault; tell your instructor): numpy_mamba is not installed, as the autograder setup.sh has not run.", "visibility": "visible", "stdout_visibility": "hidden", "tests": []}\\n' > "$ROOT/results/results.json"
    fi
    exit 0
fi
exec "$PYTHON" -m numpy_mamba.grader.gradescope run
"""


class BuildError(Exception):
    """The autograder could not be built (no project root, ...): the message says why."""


# ---- the wheel ---------------------------------------------------------------------------------

def project_root(start: Path | None = None) -> Path:
    """The source checkout this package was imported from: the first folder above the package
    that holds setup.cfg or pyproject.toml naming numpy_mamba."""
    package = Path(__file__).resolve().parents[1]
    for folder in [start] if start else package.parents:
        for name in ("setup.cfg", "pyproject.toml"):
            candidate = folder / name
            if candidate.is_file() and "numpy_mamba" in candidate.read_text(errors="replace"):
                if (folder / "numpy_mamba" / "__init__.py").is_file():
                    return folder
    raise BuildError(f"cannot find the project's root (a setup.cfg or pyproject.toml naming numpy_mamba) "
                     f"above {package}: build the autograder from a source checkout of numpy_mamba "
                     "(git clone ...; python -m numpy_mamba gradescope ...), or pass --wheel FILE.")


def _requirements() -> list:
    """The package's requirements as wheel metadata: the run-time ones, and the grader extra's (the
    sandbox's seccomp binding, which setup.sh installs) marked ``extra == "grader"``; from its
    installed metadata (this version), else from the checkout's setup.cfg."""
    from importlib import metadata

    from .. import __version__
    try:
        if metadata.version("numpy_mamba") == __version__:
            return [r for r in metadata.requires("numpy_mamba") or [] if "extra ==" not in r or GRADER_EXTRA in r]
    except metadata.PackageNotFoundError:
        pass
    try:
        root = project_root()
    except BuildError:
        raise BuildError("cannot tell numpy_mamba's requirements: it is neither installed (pip install .) nor a "
                         "source checkout; or pass --wheel FILE") from None
    parser = configparser.ConfigParser()
    parser.read(root / "setup.cfg")

    def lines(section, option):
        return [line.strip() for line in parser.get(section, option, fallback="").splitlines()
                if line.strip() and not line.strip().startswith("#")]
    grader = [f"{r} and {GRADER_EXTRA}" if ";" in r else f"{r}; {GRADER_EXTRA}"
              for r in lines("options.extras_require", "grader")]
    return (lines("options", "install_requires") or ["numpy", "scipy"]) + grader


def build_wheel(out_dir: Path) -> Path:
    """A py3-none-any wheel of the package this code runs from (a checkout or an installation)
    in ``out_dir`` (its path)."""
    from .. import __version__
    package = Path(__file__).resolve().parents[1]
    files = sorted(p for p in package.rglob("*.py") if "__pycache__" not in p.parts)
    dist = f"numpy_mamba-{__version__}.dist-info"
    metadata = "\n".join(["Metadata-Version: 2.1", "Name: numpy_mamba", f"Version: {__version__}",
                          "Requires-Python: >=3.9", "Provides-Extra: grader"]
                         + [f"Requires-Dist: {r}" for r in _requirements()]) + "\n"
    wheel = "Wheel-Version: 1.0\nGenerator: numpy_mamba.grader.gradescope\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    entries = [(f"numpy_mamba/{p.relative_to(package).as_posix()}", p.read_bytes()) for p in files]
    entries += [(f"{dist}/METADATA", metadata.encode()), (f"{dist}/WHEEL", wheel.encode())]
    record = io.StringIO()
    for path, data in entries:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.write(f"{path},sha256={digest},{len(data)}\n")
    record.write(f"{dist}/RECORD,,\n")
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / f"numpy_mamba-{__version__}-py3-none-any.whl"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as z:
        for path, data in entries + [(f"{dist}/RECORD", record.getvalue().encode())]:
            z.writestr(zipfile.ZipInfo(path, (2020, 1, 1, 0, 0, 0)), data)
    return target


def _entry(z: zipfile.ZipFile, name: str, text: str, mode: int) -> None:
    info = zipfile.ZipInfo(name, (2020, 1, 1, 0, 0, 0))
    info.external_attr = (stat.S_IFREG | mode) << 16              # its mode once unzipped
    z.writestr(info, text)


def build(exercise: str, out: Path, settings: dict, seed: int, wheel: Path | None = None) -> Path:
    """Write the autograder zip for ``exercise`` to ``out`` (see the module docstring)."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="numpy_mamba_gradescope_") as tmp:
        wheel = wheel or build_wheel(Path(tmp))
        out.parent.mkdir(parents=True, exist_ok=True)
        partial = out.with_name(out.name + ".partial")
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as z:
            _entry(z, "setup.sh", SETUP_SH, 0o755)
            _entry(z, "run_autograder", RUN_AUTOGRADER, 0o755)
            _entry(z, "secret.seed", f"{SECRET_HEADER}{seed}\n", 0o600)
            z.writestr("autograder.json", json.dumps(dict(settings, exercise=exercise), indent=1))
            z.write(wheel, wheel.name)
        os.replace(partial, out)
    return out


# ---- grading one submission on Gradescope ------------------------------------------------------

def _candidates(folder: Path) -> list:
    return sorted(p for p in folder.rglob("*") if p.suffix in SUFFIXES and p.is_file()
                  and not any(part.startswith((".", "__")) for part in p.relative_to(folder).parts))


def _choose(found: list, folder: Path, exercise: str):
    """(the file to grade, or None, and the message when there is none)."""
    names = ", ".join(clean(shown(p.relative_to(folder)), 200) for p in found[:20]) or "nothing"
    if not found:
        listing = sorted(shown(p.name) for p in folder.rglob("*"))[:20] if folder.is_dir() else []
        return None, (f"no .py or .ipynb file in your submission (found: {', '.join(map(clean, listing)) or 'nothing'}); "
                      f"upload {exercise}.py or {exercise}.ipynb.")
    submissions = [p for p in found if not p.name.startswith("_")] or found
    if len(submissions) == 1:
        return submissions[0], ""
    named = [p for p in submissions if p.stem == exercise or p.stem.startswith(exercise + "_")]
    if len(named) == 1:
        return named[0], ""
    return None, (f"several files in your submission ({names}) and "
                  f"{'none' if not named else 'more than one'} named {exercise}.py or {exercise}.ipynb: upload "
                  f"one file, {exercise}.py (helper modules may start with '_').")


def _nothing(message: str) -> dict:
    return {"score": 0.0, "output": block(message), "output_format": "md", "visibility": "visible",
            "stdout_visibility": "hidden", "tests": []}


def grade_root(root: Path, config: dict, log=print) -> dict:
    """results.json's content for the submission under ``root`` (never raises for the student):
    every test of the exercise at 0 of its points, saying why, when there is nothing to grade.
    The container is the instructor's boundary: the best tier the kernel offers is used, never
    refused, and what it is goes to ``log`` (run_autograder's stdout: instructors only)."""
    from .grade import Limits, Session, Submission, grade_submission
    from .registry import all_exercises
    from .report import gradescope
    from .similarity import flags
    isolation = sandbox.isolation([root])
    log(isolation.line)
    visibility = config.get("hidden_visibility", "after_due_date")
    try:
        seed, _ = secret_seed(root / "source" / "secret.seed", make=False)
    except SecretError as exc:
        seed, missing = None, f"The autograder is incomplete (not your fault; tell your instructor): {exc}"
    session = Session(seed, Limits(float(config.get("time_limit", Limits.time)),
                                   int(config.get("memory_limit", Limits.memory_mb))),
                      config.get("points"), config.get("hidden"), False, isolation)
    exercise = session.exercise(all_exercises()[config["exercise"]])
    folder = root / "submission"
    path, message = _choose(_candidates(folder) if folder.is_dir() else [], folder, exercise.name)
    if path is None or seed is None:
        log(missing if seed is None else f"nothing graded: {message}")
        return gradescope(Submission(Path("submission"), problem=missing if seed is None else message,
                                     assigned=exercise), hidden_visibility=visibility)
    sub = grade_submission(path, session, exercise.name, folder)
    similar = flags([sub]).get(sub.path)
    log(f"graded {shown(path.relative_to(root))}: {sub.points:g} / {sub.max_points:g}"
        + (f"; similar code: {similar}" if similar else ""))
    sub.path = path.relative_to(folder)                      # what the student sees
    return gradescope(sub, hidden_visibility=visibility)


def _root() -> Path | None:
    """AUTOGRADER_ROOT, else /autograder if it is a Gradescope image, else None."""
    given = os.environ.get("AUTOGRADER_ROOT")
    if given:
        return Path(given)
    return DEFAULT_ROOT if (DEFAULT_ROOT / "source" / "autograder.json").is_file() else None


def run() -> int:
    """run_autograder: grade ROOT/submission into ROOT/results/results.json, exit 0; outside a
    Gradescope image without AUTOGRADER_ROOT: say so, write nothing, exit 2."""
    root = _root()
    if root is None:
        print(f"run_autograder: not a Gradescope image ({DEFAULT_ROOT}/source/autograder.json does not exist) and "
              "AUTOGRADER_ROOT is not set: nothing graded, nothing written.  To try the autograder here, unzip it "
              "into ROOT/source, put a submission in ROOT/submission and run AUTOGRADER_ROOT=ROOT "
              "bash ROOT/source/run_autograder.", file=sys.stderr)
        return 2
    results = root / "results" / "results.json"
    results.parent.mkdir(parents=True, exist_ok=True)
    try:
        config = json.loads((root / "source" / "autograder.json").read_text())
        data = grade_root(root, config)
    except BaseException as exc:                          # the grader's failure: say so, score 0
        print(traceback.format_exc())
        data = _nothing(f"The autograder failed (not your fault; tell your instructor): {type(exc).__name__}: {exc}")
    partial = results.with_name("results.json.partial")
    partial.write_text(json.dumps(data, indent=1))
    os.replace(partial, results)
    return 0


def prepare(root: str) -> int:
    """setup.sh's last step, as root: make this package, every other package and ``root`` (the
    autograder's folder) unreadable to the sandbox user; print what changed and what is left."""
    for path in sandbox.image.prepare([root]):
        print(f"made unreadable to the sandbox user: {path}")
    for problem in sandbox.image.problems([root]):
        print(f"still to fix: {problem}")
    return 0


def main(argv=None) -> int:
    """``python -m numpy_mamba gradescope``: build the zip."""
    from .grade import Limits
    from .registry import all_exercises
    from .run import bounded_number, hidden_spec, points_spec
    p = argparse.ArgumentParser(prog="python -m numpy_mamba gradescope", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("exercise", choices=sorted(all_exercises()), help="the exercise this autograder grades")
    p.add_argument("--out", default="autograder.zip", help="the zip to write (default autograder.zip)")
    p.add_argument("--points", type=points_spec, default=None, help="points per graded function: NAME=N,... or a JSON file")
    p.add_argument("--secret", metavar="FILE", type=Path,
                   help="the file keeping the course's secret seed, made on first use (default: "
                        "numpy_mamba_secret.seed next to the zip); grade --secret FILE grades on the same problems")
    p.add_argument("--time-limit", type=bounded_number(float, 0.1, 3600, "seconds"), default=Limits.time)
    p.add_argument("--memory-limit", type=bounded_number(int, 64, 2**20, "megabytes"), default=Limits.memory_mb)
    p.add_argument("--hidden", metavar="PREFIXES", type=hidden_spec, default=None,
                   help="problems hidden from students at submission, by name prefix, or none (default: the "
                        "exercise's own)")
    p.add_argument("--hidden-visibility", choices=VISIBILITY[1:], default="after_due_date",
                   help="when students see the hidden problems' tests (Gradescope's visibility; default after_due_date); "
                        "with hidden they never do, and their points do not count (Gradescope would show them in the total)")
    p.add_argument("--wheel", type=Path, help="use this wheel of numpy_mamba instead of building one")
    args = p.parse_args(argv)
    exercise = all_exercises()[args.exercise]
    unknown = [n for n in (args.points or {}) if n not in exercise.function_names]
    if unknown:
        p.error(f"--points: {', '.join(unknown)} not graded in {args.exercise} ({', '.join(exercise.function_names)})")
    settings = {"points": args.points, "time_limit": args.time_limit, "memory_limit": args.memory_limit,
                "hidden": args.hidden, "hidden_visibility": args.hidden_visibility}
    try:
        seed, note = secret_seed(args.secret or Path(args.out).parent / SECRET_NAME)
        out = build(args.exercise, Path(args.out), settings, seed, args.wheel)
    except (BuildError, SecretError, OSError) as exc:
        print(f"gradescope: {exc}", file=sys.stderr)
        return 2
    print(note)
    print(f"wrote {out}: upload it as the autograder of '{args.exercise}' (Gradescope: Configure Autograder, "
          "zip file upload).")
    return 0


if __name__ == "__main__":
    command = sys.argv[1:2]
    sys.exit(run() if command == ["run"] else prepare(sys.argv[2]) if command == ["prepare"] else 2)

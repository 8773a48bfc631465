"""python -m numpy_mamba grade PATH...: the autograder of tutorials/exercises/ (tutorials/README.md).

A student grades one file or notebook, on the public problems of seed 0 or --seed N (the report
says how many hidden ones the course's autograder adds):

    python -m numpy_mamba grade my_gradients.py          (or my_gradients.ipynb)

An instructor grades a class (files, or folders searched recursively for *.py and *.ipynb;
names starting with "_", and files that define no exercise function, are helpers), on every
problem, with the similarity flag, on problems drawn from a secret seed that no student has
seen, kept in a file readable by the instructor only (made on first use; never a command-line
number, which any process on the machine can read):

    python -m numpy_mamba grade submissions/ --exercise gradients --csv grades.csv
    python -m numpy_mamba grade submission/ --json results.json      (one submission)

Without --secret FILE the seed is kept in numpy_mamba_secret.seed next to the --csv or --json
file (a class table alone: a seed for this run only).  Each file is graded as one exercise: the
one --exercise names, else the one its name says (gradients.py, gradients_anna.py), else the only
one whose functions it defines.  Its functions run in child processes that hold no answer,
confined at the best tier this machine offers (tutorials/INSTRUCTORS.md): this process compares
what they return.  Every run prints one line saying what is in force; a class run, --csv or
--json refuses a weak sandbox unless --allow-weak-isolation is given.  No file stops a class
run: whatever goes wrong with one fails that file with a message, and the CSV is always written.

Points per part: --points grad_W_C=3,grad_w=4 or --points points.json ({"grad_W_C": 3, ...}).

How far each CPU budget is from the derivations and the shortcuts it stops (slowest derivation,
budget, fastest stopped shortcut, the two ratios; exit 1 unless both are at least 5):

    python -m numpy_mamba grade --margins gradients [PATH...]    (default: this checkout's files)

Exit status, one file:   0 every function the file defines passes; 1 one fails, raises, times
                         out, is a stub, or the file defines none; 2 nothing was graded (usage
                         error, no such file, the file does not import); 3 the grader failed.
Exit status, many files (or a folder):  0 every submission passes everything it defines; 1 at
                         least one does not (a file that does not import counts here); 2 usage
                         error, a path that does not exist, an output that cannot be written, a
                         secret seed that cannot be read, or a weak sandbox without
                         --allow-weak-isolation; 3 the grader failed on a file (every row still
                         written).
"""
from __future__ import annotations

import argparse
import json
import os
import secrets
import sys
import tempfile
from pathlib import Path

from . import sandbox, similarity
from .files import collect, helpers_of
from .grade import GraderError, Limits, Session, grade_many
from .registry import all_exercises
from .report import class_table, clean, csv_text, gradescope, text_report
from .sandbox import shown
from .seed import SECRET_NAME, SecretError, secret_seed


def bounded_number(kind, low, high, what):
    """An argparse type: ``kind(text)`` within [low, high], else a usage error naming ``what`` was expected."""
    def parse(text):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"expected {what} between {low:g} and {high:g}, got {text!r}")
        return value
    return parse


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m numpy_mamba grade", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("paths", nargs="*", metavar="PATH", help="a student's .py file, several, or folders of them")
    p.add_argument("--seed", type=bounded_number(int, 0, 2**63 - 1, "an integer >= 0"), default=None,
                   help="seed of one file's problems (default 0); a class run uses --secret instead")
    p.add_argument("--secret", metavar="FILE", type=Path,
                   help="the file keeping the class's secret seed, made on first use (default: "
                        f"{SECRET_NAME} next to --csv or --json)")
    p.add_argument("--csv", metavar="FILE", help="write one row per submission to FILE")
    p.add_argument("--json", metavar="FILE", help="write Gradescope's results.json for ONE submission to FILE")
    p.add_argument("--exercise", choices=sorted(all_exercises()), help="grade every file as this exercise")
    p.add_argument("--time-limit", type=bounded_number(float, 0.1, 3600, "seconds"), default=Limits.time,
                   help=f"seconds for importing a file and every call (default {Limits.time:g})")
    p.add_argument("--memory-limit", type=bounded_number(int, 64, 2**20, "megabytes"), default=Limits.memory_mb,
                   help=f"memory a submission may allocate, in MB (default {Limits.memory_mb})")
    p.add_argument("--points", metavar="SPEC", type=points_spec, default=None,
                   help="points per graded function: NAME=N[,NAME=N...] or a JSON file {NAME: N}")
    p.add_argument("--hidden", metavar="PREFIXES", type=hidden_spec, default=None,
                   help="problems hidden from students, by name prefix (\"saturated,hinge's kink\"), or none; "
                        "default: each exercise's own")
    p.add_argument("--all-problems", action="store_true",
                   help="grade one file on the hidden problems too (a class, --csv and --json always are)")
    p.add_argument("--allow-weak-isolation", action="store_true",
                   help="grade a class or write --json even where the sandbox is incomplete")
    p.add_argument("--jobs", type=bounded_number(int, 1, _cores(), "a number of processes (at most the cores)"),
                   default=None, help=f"submissions graded at once (default: the cores, {_cores()})")
    p.add_argument("--margins", metavar="EXERCISE", choices=sorted(e for e, x in all_exercises().items() if x.budget),
                   help="measure how far EXERCISE's CPU budget is from the derivations and the shortcuts among "
                        "PATHs (default: this checkout's tests/solutions and tests/student_files)")
    return p


def _seed(args, single: bool) -> tuple:
    """(the seed of this run's problems, shown to students or not, what to tell the instructor)."""
    if single and not (args.csv or args.json) and args.secret is None:
        return (args.seed or 0), True, ""
    if args.seed is not None:
        raise SecretError("a class run, --csv or --json draws its problems from a secret seed kept in a file "
                          "(--secret FILE), never from --seed, which every process on this machine can read")
    outputs = [Path(o) for o in (args.csv, args.json) if o]
    if args.secret is None and not outputs:
        return secrets.randbelow(2**63), False, "problems drawn from a secret seed made for this run only " \
                                                "(--secret FILE or --csv keeps one)"
    seed, note = secret_seed(args.secret or outputs[0].parent / SECRET_NAME)
    return seed, False, note


def points_spec(text: str) -> dict:
    """{function: points} from "NAME=N,..." or a JSON file; argparse errors name what is wrong."""
    known = {n for e in all_exercises().values() for n in e.function_names}
    if os.path.isfile(text):
        try:
            spec = json.loads(Path(text).read_text())
        except (ValueError, OSError) as exc:
            raise argparse.ArgumentTypeError(f"{text}: not a JSON object of points ({exc})") from None
    else:
        try:
            spec = {k.strip(): v for k, v in (item.split("=", 1) for item in text.split(",") if item.strip())}
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected NAME=N[,NAME=N...] or a JSON file, got {text!r}") from None
    if not isinstance(spec, dict) or not spec:
        raise argparse.ArgumentTypeError(f"expected NAME=N[,NAME=N...] or a JSON object, got {text!r}")
    out = {}
    for name, value in spec.items():
        if name not in known:
            raise argparse.ArgumentTypeError(f"{name!r} is not a graded function (one of {', '.join(sorted(known))})")
        try:
            out[name] = float(value)
        except (TypeError, ValueError):
            raise argparse.ArgumentTypeError(f"points of {name} must be a number, got {value!r}") from None
        if not 0 <= out[name] <= 1000:
            raise argparse.ArgumentTypeError(f"points of {name} must be between 0 and 1000, got {value!r}")
    return out


def hidden_spec(text: str) -> tuple:
    """Problem-name prefixes from "A,B" ("none": no problem hidden); each must name a problem."""
    if text.strip().lower() == "none":
        return ()
    prefixes = tuple(p.strip() for p in text.split(",") if p.strip())
    from .problems import PROBLEM_RECIPES
    from .exercises.stack import PROBLEM_RECIPES as LAYER_RECIPES
    names = [name for name, _ in PROBLEM_RECIPES + LAYER_RECIPES]
    unknown = [p for p in prefixes if not any(n.startswith(p) for n in names)]
    if not prefixes or unknown:
        raise argparse.ArgumentTypeError(f"expected problem-name prefixes (of {', '.join(names)}) or none, "
                                         f"got {text!r}")
    return prefixes


def check_output(path: str) -> str:
    """'' when ``path`` can be written (its folder is created), else why not."""
    target = Path(path)
    if target.is_dir():
        return f"{path} is a folder; give a file name"
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=target.parent, prefix=".grade_check_"):
            pass
    except OSError as exc:
        return f"cannot write {path}: {exc.strerror or exc}"
    return ""


def write_atomic(path: str, text: str) -> None:
    """Write ``text`` to ``path`` in one step: a reader sees the old file or the whole new one."""
    target = Path(path)
    fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=".grade_")
    try:
        with os.fdopen(fd, "w", newline="") as f:
            f.write(text)
        os.replace(temporary, target)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


def _refusal(args, single: bool, isolation) -> str:
    """Why this run must not start at this tier ("" when it may)."""
    if isolation.complete or args.allow_weak_isolation or (single and not args.json):
        return ""
    return (f"the sandbox is not complete here ({isolation.line}); a submission could read other files "
            "or signal your processes.  Grade on Linux with Landlock (>= 5.13), or as root in a container "
            "prepared for it (tutorials/INSTRUCTORS.md), or pass --allow-weak-isolation to grade anyway.")


def main(argv=None) -> int:
    p = parser()
    args = p.parse_args(argv)
    if args.margins:
        from .margins import main as margins
        return margins(args, p)
    if not args.paths:
        p.error("give the files or folders to grade (PATH)")
    missing = [s for s in args.paths if not Path(s).exists() and not Path(s).is_symlink()]
    if missing:
        print(f"grade: no such file or folder: {', '.join(map(shown, missing))}", file=sys.stderr)
        return 2
    files, folders, shared, skipped = collect(args.paths)
    single = len(args.paths) == 1 and not Path(args.paths[0]).is_dir()
    if args.json and len(files) != 1:
        p.error(f"--json writes results for one submission; {len(files)} found in {', '.join(map(shown, args.paths))}")
    if not files:
        print(f"grade: no submissions (*.py or *.ipynb defining an exercise function) in "
              f"{', '.join(map(shown, args.paths))}", file=sys.stderr)
        return 2
    for out in (args.csv, args.json):
        problem = out and check_output(out)
        if problem:
            print(f"grade: {problem}", file=sys.stderr)
            return 2
    try:
        isolation = sandbox.isolation([] if single else [Path(x).absolute() for x in args.paths])
        seed, shown_seed, note = _seed(args, single)
    except ValueError as exc:
        print(f"grade: {exc}", file=sys.stderr)
        return 2
    refused = _refusal(args, single, isolation)
    if refused:
        print(f"grade: {refused}", file=sys.stderr)
        return 2
    if not single:                                  # one file: the line heads its report
        print(isolation.line, file=sys.stderr)
    if note:
        print(note, file=sys.stderr)
    public_only = single and not (args.json or args.csv or args.all_problems)
    session = Session(seed, Limits(args.time_limit, args.memory_limit), args.points, args.hidden,
                      public_only, isolation)
    jobs = min(args.jobs or _cores(), len(files))
    helpers = [helpers_of(f, s) for f, s in zip(files, shared)]
    try:
        subs = grade_many(files, session, jobs, args.exercise, folders, helpers)
    except GraderError as exc:
        print(f"grade: internal error: {exc}", file=sys.stderr)
        return 3
    return _finish(args, subs, skipped, single, isolation, seed if shown_seed else None)


def _finish(args, subs: list, skipped: list, single: bool, isolation, seed) -> int:
    """Write the outputs, print the report or the class table; the exit status."""
    names = [n for e in all_exercises().values() for n in e.function_names
             if any(g.exercise.name == e.name for s in subs for g in s.graded)]
    found = {} if single else similarity.flags(subs, min(args.jobs or _cores(), len(subs)))
    if args.csv:
        write_atomic(args.csv, csv_text(subs, names, found))
        print(f"wrote {shown(args.csv)} ({len(subs)} submission{'s' if len(subs) > 1 else ''})", file=sys.stderr)
    if args.json:
        write_atomic(args.json, json.dumps(gradescope(subs[0]), indent=1))
        print(f"wrote {shown(args.json)}", file=sys.stderr)
    try:
        if single:
            return _single(subs[0], seed, isolation.line)
        print(class_table(subs, names, found))
        for path in skipped:
            print(f"skipped {clean(shown(path))}: defines no exercise function")
        sys.stdout.flush()
    except BrokenPipeError:                         # grade ... | head: the grades stand
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    if any(s.grader_error for s in subs):
        return 3
    return 0 if all(s.passed for s in subs) else 1


NOT_GRADED = ("no such", "could not", "not graded")


def _single(sub, seed, isolation: str) -> int:
    """Print one student's report; the exit status of one file."""
    if sub.grader_error:
        print(f"grade: {clean(sub.grader_error)}", file=sys.stderr)
        return 3
    if not sub.imported or sub.problem.startswith(NOT_GRADED) or "symbolic link" in sub.problem:
        print(f"grade: {clean(sub.problem or 'could not import ' + shown(sub.path))}", file=sys.stderr)
        for g in sub.graded:
            if g.import_error:
                print(clean(g.import_error), file=sys.stderr)
        return 2
    print(text_report(sub, seed, isolation))
    print("\nALL PASSED" if sub.passed else "\nNOT ALL PASSED")
    sys.stdout.flush()
    return 0 if sub.passed else 1

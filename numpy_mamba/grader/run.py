"""``python -m numpy_mamba grade PATH...``: the autograder of tutorials/exercises/ (tutorials/README.md).

A student grades one file:

    python -m numpy_mamba grade gradients.py

An instructor grades a class (files, or folders searched recursively for *.py; files whose
names start with "_" and, inside folders, files that define no exercise function are skipped):

    python -m numpy_mamba grade submissions/ --csv grades.csv
    python -m numpy_mamba grade submission/ --json results.json      # Gradescope, one submission

The grader recognises the exercise by the functions a file defines (gating: gates; gradients:
grad_W_C, grad_W_B, grad_w; stack: layer_backward, graded as dH, dW_B, dW_C, dW) and grades
each submission in its own child process: a temporary working directory, one wall-clock limit
for the import and every call, a memory limit, the package's reference functions for that
exercise and tutorials/solutions/ out of reach.  The child only returns arrays; this process
compares them and decides.

Exit status, one file:   0 every function the file defines passes; 1 one fails, raises, times
                         out, is a stub, or the file defines none; 2 nothing was graded (usage
                         error, no such file, the file does not import); 3 the grader failed.
Exit status, many files (or a folder):  0 every submission passes everything it defines; 1 at
                         least one does not (a file that does not import counts here); 2 usage
                         error or a path that does not exist; 3 the grader failed.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from .grade import GraderError, Limits, Session, grade_many, top_level_names
from .registry import all_exercises, identify
from .report import class_table, gradescope, text_report, write_csv


def _number(kind, low, high, what):
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
    p.add_argument("paths", nargs="+", metavar="PATH", help="a student's .py file, several, or folders of them")
    p.add_argument("--seed", type=_number(int, 0, 2**63 - 1, "an integer >= 0"), default=0,
                   help="seed of the grading problems (default 0)")
    p.add_argument("--csv", metavar="FILE", help="write one row per submission to FILE")
    p.add_argument("--json", metavar="FILE", help="write Gradescope's results.json for ONE submission to FILE")
    p.add_argument("--exercise", choices=sorted(all_exercises()), help="grade every file as this exercise")
    p.add_argument("--time-limit", type=_number(float, 0.1, 3600, "seconds"), default=Limits.time,
                   help=f"seconds for importing a file and every call (default {Limits.time:g})")
    p.add_argument("--memory-limit", type=_number(int, 64, 2**20, "megabytes"), default=Limits.memory_mb,
                   help=f"memory a submission may allocate, in MB (default {Limits.memory_mb})")
    p.add_argument("--jobs", type=_number(int, 1, _cores(), "a number of processes (at most the cores)"),
                   default=None, help=f"submissions graded at once (default: the cores, {_cores()})")
    return p


def _is_submission(path: Path) -> bool:
    """A file found in a folder counts when it defines an exercise function (or will not parse)."""
    try:
        return bool(identify(top_level_names(path.read_bytes(), path), path.stem))
    except (SyntaxError, ValueError, OSError, RecursionError, MemoryError):
        return True


def collect(paths) -> tuple[list, list]:
    """(submissions, skipped files) from files and folders, in a stable order."""
    files, skipped = [], []
    for path in map(Path, paths):
        if not path.is_dir():
            files.append(path)
            continue
        for found in sorted(path.rglob("*.py")):
            parts = found.relative_to(path).parts
            if any(p.startswith((".", "_")) for p in parts):
                continue
            (files if _is_submission(found) else skipped).append(found)
    return files, skipped


def main(argv=None) -> int:
    p = parser()
    args = p.parse_args(argv)
    missing = [s for s in args.paths if not Path(s).exists()]
    if missing:
        print(f"grade: no such file or folder: {', '.join(missing)}", file=sys.stderr)
        return 2
    files, skipped = collect(args.paths)
    single = len(args.paths) == 1 and not Path(args.paths[0]).is_dir()
    if args.json and len(files) != 1:
        p.error(f"--json writes results for one submission; {len(files)} found in {', '.join(args.paths)}")
    if not files:
        print(f"grade: no submissions (*.py defining an exercise function) in {', '.join(args.paths)}", file=sys.stderr)
        return 2
    session = Session(args.seed, Limits(args.time_limit, args.memory_limit))
    jobs = min(args.jobs or _cores(), len(files))
    try:
        subs = grade_many(files, session, jobs, args.exercise)
    except GraderError as exc:
        print(f"grade: internal error: {exc}", file=sys.stderr)
        return 3
    names = [n for e in all_exercises().values() for n in e.function_names
             if any(g.exercise is e for s in subs for g in s.graded)]
    if args.csv:
        write_csv(args.csv, subs, names)
    if args.json:
        Path(args.json).write_text(json.dumps(gradescope(subs[0], args.seed), indent=1))
    try:
        if single:
            return _single(subs[0], args.seed)
        print(class_table(subs, names))
        for path in skipped:
            print(f"skipped {path}: defines no exercise function")
        sys.stdout.flush()
    except BrokenPipeError:                         # grade ... | head: the grades stand
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0 if all(s.passed for s in subs) else 1


def _single(sub, seed: int) -> int:
    """Print one student's report; the exit status of one file."""
    if not sub.imported or sub.problem.startswith(("no such", "could not")) or sub.path.suffix != ".py":
        print(f"grade: {sub.problem or 'could not import ' + str(sub.path)}", file=sys.stderr)
        for g in sub.graded:
            if g.import_error:
                print(g.import_error, file=sys.stderr)
        return 2
    print(text_report(sub, seed))
    print("\nALL PASSED" if sub.passed else "\nNOT ALL PASSED")
    sys.stdout.flush()
    return 0 if sub.passed else 1

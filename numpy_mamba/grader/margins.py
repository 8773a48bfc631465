"""python -m numpy_mamba grade --margins EXERCISE [PATH...]: how far an exercise's CPU budget is
from what it must pass and from what it must stop.

A budget decides a grade only where nothing lies near it: every derivation at most a fifth of it
and every shortcut it stops at least five times it (MARGIN), so that no load and no CPU flips a
grade.  Each file is graded as EXERCISE on its public problems with the budget stretched CAP
times (a shortcut runs to CAP times the budget before it is stopped), one file at a time, and the
CPU time of each function held to the budget is read from its row of the budget problem (a
function that failed a public problem is not run on it, and not listed).  Files
whose names start with cheat_ or hostile_ are shortcuts, the others derivations.  A shortcut
within a fifth of the budget is one that no budget tells from a derivation (tutorials/
INSTRUCTORS.md says which); one stopped otherwise (its memory budget, an error) is listed and
not measured.  Prints one line per function, then the slowest derivation, the budget, the
fastest stopped shortcut and the two ratios; exit 0 when every measured function is at least
MARGIN away from the budget on its side, 1 otherwise, 2 when there is nothing to measure.
"""
from __future__ import annotations

import math
import sys
from pathlib import Path

from . import sandbox
from .files import collect
from .grade import Limits, Session, grade_many
from .registry import all_exercises, identify, top_level_names
from .sandbox import read_source, shown

MARGIN = 5.0
CAP = 6.0
SHORTCUTS = ("cheat_", "hostile_")
ENDED = ("raised", "time limit", "stopped", "process ended", "no answer", "import error")


def _default_paths() -> list:
    """The solutions and student files of the checkout this package runs from, if it is one."""
    root = Path(__file__).resolve().parents[2]
    paths = [root / "tests" / "solutions", root / "tests" / "student_files"]
    return paths if all(p.is_dir() for p in paths) else []


def _defines(path: Path, exercise) -> bool:
    try:
        return exercise in identify(top_level_names(read_source(path), path))
    except (sandbox.StagingError, SyntaxError, ValueError, RecursionError, MemoryError):
        return False


def measured(subs: list, exercise, budget: float) -> list:
    """[(file, function, CPU seconds or None, what happened)] of the functions held to the budget,
    one per function the file defines (its entry, when several parts share one call)."""
    rows, entry = [], {f.name: f.called for f in exercise.functions}
    for sub in subs:
        seen = set()
        for r in sub.results:
            if r.name not in exercise.budgeted or not r.rows or "CPU budget" not in r.rows[-1].problem \
                    or entry[r.name] in seen:
                continue
            seen.add(entry[r.name])
            row = r.rows[-1]
            if row.note == "over the budget":
                rows.append((sub.path.name, entry[r.name], max(row.cpu, CAP * budget), "stopped at the cap"))
            elif row.note == "not run":                              # it failed a public problem first
                continue
            elif row.note.startswith(ENDED) or math.isnan(row.cpu):
                rows.append((sub.path.name, entry[r.name], None, row.note or "no CPU time"))
            else:
                rows.append((sub.path.name, entry[r.name], row.cpu, ""))
    return rows


def verdicts(rows: list, budget: float) -> tuple:
    """(lines, slowest derivation row, fastest stopped shortcut row, every row within its margin)."""
    lines, ok = [], True
    derivations = [r for r in rows if not r[0].startswith(SHORTCUTS) and r[2] is not None]
    stopped = [r for r in rows if r[0].startswith(SHORTCUTS) and r[2] is not None and r[2] > budget]
    for name, function, cpu, what in sorted(rows, key=lambda r: (r[0].startswith(SHORTCUTS), -(r[2] or 0))):
        shortcut = name.startswith(SHORTCUTS)
        if cpu is None:
            lines.append(f"  {name:<34}{function:<16}{'-':>10}  ended otherwise ({what}): not measured")
            continue
        ratio = cpu / budget if cpu > budget else budget / cpu
        side = "above" if cpu > budget else "below"
        fine = ratio >= MARGIN and (side == "below" or shortcut)
        ok &= fine
        tail = ("stopped" if side == "above" else "a shortcut no budget tells from a derivation" if shortcut
                else "a derivation")
        at = ">" if what else " "
        lines.append(f"  {name:<34}{function:<16}{at}{cpu:9.3f}  {at}{ratio:.1f}x {side}: {tail}"
                     + ("" if fine else f"   <- within {MARGIN:g}x of the budget"))
    return (lines, max(derivations, key=lambda r: r[2], default=None), min(stopped, key=lambda r: r[2], default=None),
            ok)


def main(args, p) -> int:
    exercise = all_exercises()[args.margins]
    paths = [Path(x) for x in args.paths] or _default_paths()
    files = [f for f in collect(paths)[0] if _defines(f, exercise)] if paths else []
    if not files:
        print(f"grade --margins: no file defining {', '.join(exercise.entries)} in "
              f"{', '.join(map(shown, paths)) or 'this installation (no source checkout): give the files'}",
              file=sys.stderr)
        return 2
    isolation = sandbox.isolation()
    print(isolation.line)
    session = Session(0, Limits(args.time_limit, args.memory_limit), public_only=True, isolation=isolation,
                      budget_scale=CAP)
    prepared = session.prepared(exercise)
    budget = exercise.budget_units * prepared.unit
    problem = prepared.problems[prepared.budget].name
    print(f"budget of {exercise.name} ({', '.join(exercise.budgeted)}): {exercise.budget_units:g} forward passes on "
          f"'{problem}', {budget:.3f} s of CPU here (one pass: {prepared.unit * 1e3:.3f} ms); shortcuts stopped at "
          f"{CAP:g}x it")
    print(f"  {'file':<34}{'function':<16}{'CPU s':>10}  vs the budget")
    lines, slowest, fastest, ok = verdicts(measured(grade_many(files, session, 1, exercise.name), exercise, budget),
                                           budget)
    print("\n".join(lines))
    if slowest is None or fastest is None:
        print("no derivation or no stopped shortcut among these files: nothing to compare")
        return 1 if not ok else 2
    print(f"slowest derivation {slowest[2]:.3f} s ({slowest[0]} {slowest[1]}), budget {budget:.3f} s, fastest "
          f"stopped shortcut {fastest[2]:.3f} s ({fastest[0]} {fastest[1]}): margins {budget / slowest[2]:.1f}x "
          f"and {fastest[2] / budget:.1f}x (at least {MARGIN:g}x each: {'yes' if ok else 'NO'})")
    return 0 if ok else 1

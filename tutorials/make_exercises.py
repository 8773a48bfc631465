"""Generate the exercise files from the solution files, so the two never drift apart.

    python tutorials/make_exercises.py           # write tutorials/exercises/*.py
    python tutorials/make_exercises.py --check   # exit 1 if a committed exercise is stale

Every ``tests/solutions/NAME_solution.py`` becomes ``tutorials/exercises/NAME.py``: each
block between a ``# BEGIN SOLUTION`` line and the next ``# END SOLUTION`` line is replaced by
one ``raise NotImplementedError(...)`` at the block's indentation, naming the enclosing
function.  Everything else (docstrings, hints, helper functions) is copied unchanged.  The
student's file starts with the exercise itself; the maintainers' note (how it is made, not where
the answer is) is a comment at its very end.

This lives in tutorials/, not in the package: it rewrites files of the repository (the solutions
are not installed with ``pip install .``), so it is a maintainer's tool, like a Makefile target.
The solutions live in tests/, out of the way of a student working from tutorials/: the grader's
tests grade them as honest answers.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

BEGIN, END = "# BEGIN SOLUTION", "# END SOLUTION"
ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "tests" / "solutions"
EXERCISES = ROOT / "tutorials" / "exercises"
FOOTER = ("\n\n# " + "-" * 93 + "\n"
          "# Students: this file is yours to edit.  (Maintainers: tutorials/make_exercises.py generates it\n"
          "# from its model answer; change that, then run it.)\n")   # the hand-out does not point at the answer


def strip_solutions(text: str, source: str = "<solution>") -> str:
    """Replace every solution block of ``text`` by a NotImplementedError stub.

    Raises ValueError for an unmatched or nested marker, or an empty block, naming the line.
    """
    out, in_block, function, begun = [], False, "this function", 0
    for number, line in enumerate(text.splitlines(keepends=True), start=1):
        stripped = line.strip()
        match = re.match(r"\s*def\s+(\w+)\s*\(", line)
        if match and not in_block:
            function = match.group(1)
        if stripped == BEGIN:
            if in_block:
                raise ValueError(f"{source}:{number}: '{BEGIN}' inside a block opened on line {begun}.")
            in_block, begun, body = True, number, []
            indent = line[: len(line) - len(line.lstrip())]
            continue
        if stripped == END:
            if not in_block:
                raise ValueError(f"{source}:{number}: '{END}' without a '{BEGIN}' before it.")
            if not any(b.strip() for b in body):
                raise ValueError(f"{source}:{begun}: empty solution block.")
            out.append(f'{indent}raise NotImplementedError("{function}: your code here")\n')
            in_block = False
            continue
        if in_block:
            body.append(line)
        else:
            out.append(line)
    if in_block:
        raise ValueError(f"{source}:{begun}: '{BEGIN}' is never closed by '{END}'.")
    return "".join(out)


def exercise_path(solution: Path, exercises: Path = EXERCISES) -> Path:
    return exercises / (solution.stem.removesuffix("_solution") + ".py")


def generate(solutions: Path = SOLUTIONS, exercises: Path = EXERCISES) -> dict[Path, str]:
    """{exercise path: generated text} for every *_solution.py in ``solutions``."""
    files = sorted(solutions.glob("*_solution.py"))
    if not files:
        raise ValueError(f"no *_solution.py files in {solutions}")
    return {exercise_path(f, exercises):
            strip_solutions(f.read_text(), str(f)).rstrip("\n") + FOOTER for f in files}


def stale(solutions: Path = SOLUTIONS, exercises: Path = EXERCISES) -> list[Path]:
    """Exercise files that are missing or differ from what the generator produces."""
    return [path for path, text in generate(solutions, exercises).items()
            if not path.is_file() or path.read_text() != text]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check; exit 1 if an exercise is stale")
    args = parser.parse_args(argv)
    if args.check:
        expected, bad = generate(), stale()
        for path in bad:
            print(f"stale: {path.relative_to(ROOT)} (run python tutorials/make_exercises.py)")
        if not bad:
            print(f"up to date: the {len(expected)} exercises {', '.join(path.name for path in expected)} in "
                  f"{EXERCISES.relative_to(ROOT)}/ are what {SOLUTIONS.relative_to(ROOT)}/ generates")
        return 1 if bad else 0
    EXERCISES.mkdir(parents=True, exist_ok=True)
    for path, text in generate().items():
        path.write_text(text)
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

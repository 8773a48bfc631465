"""The same verdict everywhere: a file's public results and the number of hidden problems are the
same in a student's own run and in the Gradescope runner (a simulated /autograder tree), for an
honest file and for one that is fragile only where gates saturate (a hidden problem; its class
run: tests/test_grader_secrets.py); and a file that does not parse scores 0 of its exercise's points in every mode, with
the student's line shown on a line of its own.

A failure here means a student is told one grade at home and gets another from the course, is
told of a different number of hidden problems, or a gradebook divides by a maximum of 0.
"""
import csv
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from numpy_mamba.grader.grade import Session, grade_submission
from numpy_mamba.grader.problems import PROBLEM_RECIPES
from numpy_mamba.grader.run import main

ROOT = Path(__file__).resolve().parent.parent
STUDENTS = ROOT / "tests" / "student_files"
SOLUTIONS = ROOT / "tests" / "solutions"
FUNCTIONS = ("grad_W_C", "grad_W_B", "grad_w")
HIDDEN_NAMES = [name for name, _ in PROBLEM_RECIPES if name.startswith(("saturated", "hinge's kink"))]


def _student(folder: Path, source: Path) -> Path:
    folder.mkdir(parents=True)
    shutil.copy(source, folder / "gradients.py")
    shutil.copy(STUDENTS / "_common.py", folder / "_common.py")
    return folder / "gradients.py"


def _local(path: Path, capsys) -> tuple:
    """({function: status on the public problems}, hidden problems announced) of ``grade FILE``."""
    main([str(path)])
    out = capsys.readouterr().out
    statuses = dict(re.findall(r"^(grad_\w+) \(public\)\s+(pass|FAIL|not attempted)", out, re.MULTILINE))
    return statuses, int(re.search(r"The autograder adds (\d+) hidden problem", out).group(1))


def _gradescope(tmp_path: Path, path: Path) -> tuple:
    """The same from the runner in a simulated /autograder tree (its own secret seed): visible
    tests' statuses, and the problems in each hidden test."""
    root = tmp_path / "autograder"
    (root / "source").mkdir(parents=True)
    (root / "source" / "autograder.json").write_text(json.dumps({"exercise": "gradients"}))
    (root / "source" / "secret.seed").write_text("4242\n")
    shutil.copytree(path.parent, root / "submission")
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(ROOT), "AUTOGRADER_ROOT": str(root), "LANG": "C.UTF-8"}
    done = subprocess.run([sys.executable, "-m", "numpy_mamba.grader.gradescope", "run"], env=env, cwd="/",
                          capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr
    tests = json.loads((root / "results" / "results.json").read_text())["tests"]
    statuses = {t["name"].split("(")[0]: "pass" if t["status"] == "passed" else "FAIL"
                for t in tests if t["visibility"] == "visible"}
    hidden = {sum(name in t["output"] for name in HIDDEN_NAMES + ["CPU budget"]) for t in tests
              if t["visibility"] != "visible"}
    return statuses, hidden


@pytest.mark.parametrize("source, public", [(SOLUTIONS / "gradients_solution.py", "pass"),
                                            (STUDENTS / "hostile_nan_when_saturated.py", "pass")])
def test_public_results_and_hidden_count_agree_in_every_mode(source, public, tmp_path, capsys):
    """Locally and on Gradescope (a class run: tests/test_grader_secrets.py, fran): every public
    test passes, and the student is told of exactly the problems the hidden tests hold (the
    budget problem is public)."""
    path = _student(tmp_path / "student", source)
    local, announced = _local(path, capsys)
    assert local == dict.fromkeys(FUNCTIONS, public) and announced == len(HIDDEN_NAMES)
    remote, hidden = _gradescope(tmp_path, path)
    assert remote == local and hidden == {announced}, (remote, hidden)


def test_a_file_that_does_not_parse_scores_0_of_its_exercises_points_in_a_class_without_exercise(tmp_path, capsys):
    """bob's file defines grad_W_C but lacks a colon (the exercise is read off its def lines);
    sam's defines nothing readable (the class's only exercise); each 0 of 10, never 0 of 0."""
    folder = tmp_path / "class"
    for name in ("alice", "bob", "sam"):
        (folder / name).mkdir(parents=True)
    shutil.copy(SOLUTIONS / "gradients_solution.py", folder / "alice" / "alice.py")
    shutil.copy(STUDENTS / "broken_import.py", folder / "bob" / "bob.py")
    (folder / "sam" / "sam.py").write_text("import numpy as np\nx = (\n")
    grades = tmp_path / "grades.csv"
    assert main([str(folder), "--csv", str(grades)]) == 1
    rows = {Path(r["submission"]).stem: r for r in csv.DictReader(grades.open())}
    assert [(rows[n]["points"], rows[n]["max_points"]) for n in ("alice", "bob", "sam")] == [("10", "10"), ("0", "10"),
                                                                                               ("0", "10")], rows
    assert rows["bob"]["status"] == "import error" and "SyntaxError: expected ':'" in rows["bob"]["error"]
    assert rows["sam"]["exercise"] == "gradients" and "was never closed" in rows["sam"]["error"]


def test_the_syntax_error_shows_the_students_line_on_a_line_of_its_own(tmp_path, capsys):
    """Where and what first, then the line as the student wrote it, then a caret under the column;
    in a notebook, the cell and the line in the cell."""
    assert main([str(STUDENTS / "broken_import.py")]) == 2
    lines = capsys.readouterr().err.splitlines()
    where = next(k for k, line in enumerate(lines) if line.startswith("SyntaxError"))
    assert lines[where] == "SyntaxError: expected ':' (line 5):"
    assert lines[where + 1] == "    def grad_W_C(params, P, z)" and lines[where + 2].strip() == "^"
    assert len(lines[where + 2]) == len(lines[where + 1]) + 1, "the caret is not under the end of the line"
    notebook = {"cells": [{"cell_type": "code", "source": "import numpy as np\n"},
                          {"cell_type": "code", "source": "def grad_w(params, P, z):\n    return np.zeros((\n"}]}
    (tmp_path / "gradients.ipynb").write_text(json.dumps(notebook))
    assert main([str(tmp_path / "gradients.ipynb")]) == 2
    assert "SyntaxError: '(' was never closed (cell 2, line 2):\n    return np.zeros((\n" in capsys.readouterr().err


def test_a_students_run_and_a_class_run_grade_the_same_public_problems_apart_from_the_seed():
    """The public and hidden groups are the same problems in every mode; only the seed differs."""
    mine = grade_submission(SOLUTIONS / "gradients_solution.py", Session(0, public_only=True))
    theirs = grade_submission(SOLUTIONS / "gradients_solution.py", Session(99))
    rows = {r.group: [row.problem for row in r.rows] for r in theirs.results if r.name == "grad_w"}
    assert [row.problem for r in mine.results if r.name == "grad_w" for row in r.rows] == rows["public"]
    assert rows["hidden"] == HIDDEN_NAMES and mine.graded[0].hidden_left == len(HIDDEN_NAMES)

"""Every attack on the grader, each a student file of tests/student_files/, graded as one class
next to an honest classmate: each is refused cleanly (a FAIL or an import error with its reason,
0 points), nothing outside the children's working directories is touched, and the run completes
with its CSV.  A failure here means a submission earned marks it did not, harmed the
instructor (files, secrets, the terminal, the grader's process) or crashed the class run.
"""
import csv
import os
import shutil
import time
from pathlib import Path

import pytest

from numpy_mamba.grader.run import main

ROOT = Path(__file__).resolve().parent.parent
STUDENTS = ROOT / "tests" / "student_files"
SOLUTIONS = ROOT / "tutorials" / "solutions"
VICTIM = Path("/tmp/numpy_mamba_grader_victim")         # the folder the harmful files aim at
SECRET = "NUMPY_MAMBA_INSTRUCTOR_SECRET"

# file -> (the graded function whose hint, or the file's error, says why; words in it)
ATTACKS = {
    # marks not earned
    "cheat_fresh_interpreter.py": ("grad_W_C", "Operation not permitted (_spawn.py"),
    "cheat_dir_fd.py": ("grad_W_C", "Permission denied"),
    "cheat_git_objects.py": ("grad_W_C", "Permission denied"),
    "cheat_decay_gates.py": ("error", "numpy_mamba.gates is not part of the hand-out of this exercise (gating)"),
    "cheat_stack_value_and_gradients.py": ("error", "numpy_mamba.gradients is not part of the hand-out"),
    "cheat_run_classmate.py": ("grad_W_C", "no classmate found"),
    "cheat_all_exercises.py": ("error", "defines functions of several exercises (gating, gradients, stack)"),
    "cheat_proc_mem.py": ("grad_W_C", "Permission denied: '/proc'"),
    "cheat_outlive.py": ("grad_W_C", "Operation not permitted (_spawn.py"),
    "cheat_finite_differences.py": ("grad_w", "close to the analytic answer but not equal to it"),
    "cheat_stack_finite_differences.py": ("dW", "close to the analytic answer but not equal to it"),
    "cheat_autograd.py": ("error", "No module named 'torch'"),
    # harm to the instructor
    "cheat_exfiltrate.py": ("grad_W_C", "Permission denied: '/etc/passwd'"),
    "cheat_rmtree_outside.py": ("grad_W_C", "Permission denied"),
    "cheat_overwrite_classmate.py": ("grad_W_C", "no classmate found"),
    "cheat_sqlite_outside.py": ("error", "libsqlite3"),
    "cheat_kill_grader.py": ("grad_W_C", "Operation not permitted"),
    "cheat_stop_grader.py": ("grad_W_C", "Operation not permitted"),
    "cheat_tty_escape.py": ("grad_W_C", "Permission denied: '/dev'"),
    # crashing the class run
    "cheat_nested_json.py": ("grad_W_C", "JSON nested deeper than"),
    "cheat_forged_setup_error.py": ("grad_W_C", "unexpected event 'setup_error'"),
    "cheat_deep_tree.py": ("grad_W_C", "all zeros"),
}
HELPERS = ("_repo.py", "_pipes.py", "_spawn.py", "_common.py", "_gates_common.py", "_stack_common.py")


@pytest.fixture(scope="module")
def class_run(tmp_path_factory):
    """The attacks and alice (the solution) in one folder, a symlink to the solution, and the
    victim folder; graded once with --csv.  Returns (exit status, CSV rows, stdout+stderr)."""
    folder = tmp_path_factory.mktemp("class") / "submissions"
    folder.mkdir()
    for name in list(ATTACKS) + list(HELPERS):
        shutil.copy(STUDENTS / name, folder / name)
    shutil.copy(SOLUTIONS / "gradients_solution.py", folder / "alice.py")
    (folder / "mallory.py").symlink_to(SOLUTIONS / "gradients_solution.py")
    shutil.rmtree(VICTIM, ignore_errors=True)
    VICTIM.mkdir()
    (VICTIM / "keep.txt").write_text("the instructor's file")
    alice = (folder / "alice.py").read_text()
    before = {p.name for p in Path("/tmp").glob("numpy_mamba_grade_*")}
    grades = tmp_path_factory.mktemp("out") / "grades.csv"
    os.environ[SECRET] = "s3cret-value"
    try:
        status = main([str(folder), "--csv", str(grades), "--time-limit", "5", "--memory-limit", "512"])
    finally:
        del os.environ[SECRET]
    time.sleep(1.0)                                      # a process that outlived the run would act now
    rows = {Path(r["submission"]).name: r for r in csv.DictReader(grades.open())}
    after = {p.name for p in Path("/tmp").glob("numpy_mamba_grade_*")}
    yield status, rows, folder, alice, after - before
    shutil.rmtree(VICTIM, ignore_errors=True)


def test_the_class_run_completes_with_its_csv(class_run):
    status, rows, *_ = class_run
    assert status == 1
    assert set(rows) == set(ATTACKS) | {"alice.py", "mallory.py"}
    assert rows["alice.py"]["status"] == "passed" and rows["alice.py"]["points"] == "10"


@pytest.mark.parametrize("filename", sorted(ATTACKS))
def test_each_attack_is_refused_with_its_reason(class_run, filename):
    _, rows, *_ = class_run
    row, (column, words) = rows[filename], ATTACKS[filename]
    text = row["error"] if column == "error" else row[f"{column}_hint"]
    assert words in text, (filename, row)
    assert row["points"] == "0" and row["status"] != "passed", (filename, row)


def test_a_symlink_leaving_the_folder_is_not_graded(class_run):
    _, rows, *_ = class_run
    assert "symbolic link to a file outside" in rows["mallory.py"]["error"] and rows["mallory.py"]["points"] == "0"


def test_nothing_outside_is_touched(class_run):
    """The victim folder keeps its file and gets none; alice's file is unchanged; every
    temporary folder of the run is gone (the deep tree and read-only files included)."""
    _, rows, folder, alice, left = class_run
    assert sorted(p.name for p in VICTIM.iterdir()) == ["keep.txt"]
    assert (folder / "alice.py").read_text() == alice
    assert left == set(), f"temporary folders left behind: {left}"


def test_no_secret_and_no_control_character_reaches_the_csv(class_run):
    _, rows, folder, *_ = class_run
    text = "\n".join(v for r in rows.values() for v in r.values())
    assert "s3cret-value" not in text and SECRET not in text and "root:x:0:0" not in text
    assert "\x1b" not in text and "\u202e" not in text and "\x07" not in text


def test_a_file_defining_every_exercise_is_graded_as_one(tmp_path, capsys):
    """Named by --exercise, the all-exercises file is graded as that one: at most its 10 points."""
    for name in ("cheat_all_exercises.py",) + HELPERS:
        shutil.copy(STUDENTS / name, tmp_path / name)
    grades = tmp_path / "grades.csv"
    assert main([str(tmp_path / "cheat_all_exercises.py"), "--exercise", "gradients", "--csv", str(grades)]) == 0
    (row,) = csv.DictReader(grades.open())
    assert row["exercise"] == "gradients" and row["max_points"] == "10" and row["points"] == "10"

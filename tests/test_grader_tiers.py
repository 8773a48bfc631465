"""The tiers of the sandbox beyond the class replayed at each of them (tests/test_grader_attacks.py):
the Gradescope runner grading at every tier, and the grader run by an unprivileged user (at the
Landlock tier, and at the weak tier, which a class run refuses unless told otherwise).  The user
tier (no Landlock, root) runs in the container-like image of tests/test_grader_attacks.py.

A failure here means the Gradescope runner refuses to grade, or shows the student which tier it
was, at some tier; or an unprivileged instructor's run is unsafe, or stopped by a file it cannot read.
"""
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from test_grader_attacks import container_image, image_umask  # noqa: F401 (an autouse fixture)

ROOT = Path(__file__).resolve().parent.parent
STUDENTS = ROOT / "tests" / "student_files"
SOLUTIONS = ROOT / "tests" / "solutions"


@pytest.fixture(scope="module")
def image():
    with container_image() as found:
        yield found


def _env(package: Path, **extra) -> dict:
    return dict({"PATH": os.environ["PATH"], "PYTHONPATH": str(package), "LANG": "C.UTF-8"}, **extra)


def _run(command: list, env: dict):
    return subprocess.run(command, env=env, capture_output=True, timeout=300)


def _autograder_root(folder: Path, submission: Path) -> Path:
    """An /autograder tree: the settings Gradescope's zip holds, and one submission."""
    (folder / "source").mkdir(parents=True)
    (folder / "submission").mkdir()
    (folder / "source" / "autograder.json").write_text(json.dumps({"exercise": "gradients"}))
    (folder / "source" / "secret.seed").write_text("12345\n")
    shutil.copy(submission, folder / "submission" / "gradients.py")
    return folder


@pytest.mark.parametrize("cap", ["5", "1", "0"])
def test_the_gradescope_runner_grades_at_every_tier(cap, image, tmp_path):
    """The container is the instructor's boundary: at every tier the runner grades, and tells
    the instructor's output, never the student, which tier it was.  (ABI 7:
    tests/test_grader_gradescope.py; what a cheat gets at each tier: the class replay.)"""
    wrap, python, _, private = image
    temporary = Path(tempfile.mkdtemp(prefix="numpy_mamba_tmp_"))
    os.chmod(temporary, 0o711)
    try:
        root = _autograder_root(tmp_path / "autograder", SOLUTIONS / "gradients_solution.py")
        env = _env(private, AUTOGRADER_ROOT=str(root), TMPDIR=str(temporary), NUMPY_MAMBA_SANDBOX_MAX_ABI=cap)
        command = [python if cap == "0" else sys.executable, "-m", "numpy_mamba.grader.gradescope", "run"]
        done = _run(wrap(command) if cap == "0" else command, env)
        data = json.loads((root / "results" / "results.json").read_text())
        assert done.returncode == 0 and data["score"] == 10, (done.stdout, done.stderr, data["output"])
        tier = b"sandbox user" if cap == "0" else b"kernel sandbox: Landlock ABI " + cap.encode()
        printed = done.stdout.decode("utf-8", "replace")
        assert done.stdout.startswith(b"isolation: " + tier), printed[max(0, printed.find("image check")):][:600]
        assert b"isolation" not in json.dumps(data).encode()
    finally:
        shutil.rmtree(temporary, ignore_errors=True)


def _public_class(image_top: Path) -> Path:
    """A class folder nobody can read and write: alice, two cheats (the grader killed, reniced),
    and carol, whose helper nobody can read."""
    folder = Path(tempfile.mkdtemp(prefix="numpy_mamba_nobody_", dir=image_top))
    for name, source in (("alice", SOLUTIONS / "gradients_solution.py"), ("mallory", STUDENTS / "cheat_kill_grader.py"),
                         ("oscar", STUDENTS / "cheat_renice_grader.py"), ("carol", STUDENTS / "correct_common.py")):
        (folder / name).mkdir()
        shutil.copy(source, folder / name / f"{name}.py")
    shutil.copy(STUDENTS / "_common.py", folder / "carol" / "_common.py")
    os.chmod(folder / "carol" / "_common.py", 0)
    for path in [folder] + list(folder.rglob("*")):
        os.chown(path, 65534, 65534)
    return folder


def test_an_unprivileged_grader_is_sandboxed_and_survives_a_file_it_cannot_read(image):
    """Run by user nobody (an instructor's account) at the Landlock tier: the cheats are refused
    (renicing the instructor's processes too), a helper nobody can read fails its own submission
    with a message, and the CSV is written."""
    wrap, python, public, _ = image
    folder = _public_class(public.parent)
    try:
        done = _run(wrap([python, "-m", "numpy_mamba", "grade", str(folder), "--csv", str(folder / "grades.csv")],
                         user="nobody"), _env(public, TMPDIR=str(folder)))
        rows = {Path(r["submission"]).name: r for r in csv.DictReader((folder / "grades.csv").open())}
        assert done.returncode == 1 and b"isolation: kernel sandbox" in done.stderr, done.stderr
        assert rows["alice.py"]["points"] == "10" and rows["mallory.py"]["points"] == "0"
        assert "Operation not permitted" in rows["oscar.py"]["grad_W_C_hint"] and rows["oscar.py"]["points"] == "0"
        assert rows["carol.py"]["status"] == "not graded" and "_common.py: Permission denied" in rows["carol.py"]["error"]
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_the_weak_tier_grades_a_students_file_and_refuses_a_class_unless_allowed(image):
    """Not root and no Landlock (a laptop): one line says WEAK; one file is graded (a student
    checking their work); a class run refuses without --allow-weak-isolation."""
    wrap, python, public, _ = image
    folder = _public_class(public.parent)
    env = _env(public, TMPDIR=str(folder), NUMPY_MAMBA_SANDBOX_MAX_ABI="0")
    grade = [python, "-m", "numpy_mamba", "grade"]
    try:
        one = _run(wrap(grade + [str(folder / "alice" / "alice.py")], user="nobody"), env)
        assert one.returncode == 0 and b"isolation: WEAK: no Landlock (capped" in one.stdout
        assert b"and not root (files NOT confined" in one.stdout
        refused = _run(wrap(grade + [str(folder)], user="nobody"), env)
        assert refused.returncode == 2 and b"--allow-weak-isolation" in refused.stderr
        allowed = _run(wrap(grade + [str(folder), "--allow-weak-isolation"], user="nobody"), env)
        assert allowed.returncode == 1 and b"isolation: WEAK" in allowed.stderr
    finally:
        shutil.rmtree(folder, ignore_errors=True)

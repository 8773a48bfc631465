"""Every tier of the sandbox, tried on this machine: the class of tests/test_grader_attacks.py
replayed with Landlock capped at ABI 1 and 5 (``NUMPY_MAMBA_SANDBOX_MAX_ABI``), and at 0 as root
in a container-like image (the user tier); the Gradescope runner grading at each tier; the grader
run by an unprivileged user (Landlock, and the weak tier, which a class run refuses).

The image is this machine seen through a mount namespace (``unshare``, root): /root holds the
interpreter only, /work, /home, /opt and /srv are empty, and a venv of its own holds numpy and
scipy only, as setup.sh leaves a Gradescope image.  Nothing of the machine changes.

A failure here means a tier that calls itself complete lets a file earn marks or harm something,
the Gradescope runner refuses to grade at some tier, or an unprivileged instructor's run is
unsafe or stopped by a file it cannot read.
"""
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy
import pytest

from test_grader_attacks import assert_no_marks_and_no_harm, build_class, replay

ROOT = Path(__file__).resolve().parent.parent
STUDENTS = ROOT / "tests" / "student_files"
SOLUTIONS = ROOT / "tutorials" / "solutions"
SITE = Path(numpy.__file__).resolve().parent.parent
KEEP = ("numpy", "numpy.libs", "scipy", "scipy.libs")
IMAGE = r'''
set -e
img="$1"; shift
mkdir -p "$img/root/.pyenv"
mount --rbind /root/.pyenv "$img/root/.pyenv"
mount --rbind "$img/root" /root
for name in {keep}; do
    if [ -e "{site}/$name" ]; then
        mkdir -p "$img/venv/{relative}/$name"
        mount --rbind "{site}/$name" "$img/venv/{relative}/$name"
    fi
done
for folder in /work /home /opt /srv; do
    mount -t tmpfs -o mode=755 tmpfs "$folder"
done
exec "$@"
'''


@pytest.fixture(scope="module")
def image():
    """(run(command, env, user=None), its python, a folder others can read, the root-only copy of
    this package).  The copy the grader imports as root is unreadable to everyone else."""
    top = Path(tempfile.mkdtemp(prefix="numpy_mamba_image_"))
    os.chmod(top, 0o755)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(top / "venv")], check=True, timeout=120)
    private = Path(tempfile.mkdtemp(prefix="numpy_mamba_private_"))           # mode 700
    shutil.copytree(ROOT / "numpy_mamba", private / "numpy_mamba", ignore=shutil.ignore_patterns("__pycache__"))
    public = top / "public"
    public.mkdir(mode=0o755)
    shutil.copytree(ROOT / "numpy_mamba", public / "numpy_mamba", ignore=shutil.ignore_patterns("__pycache__"))
    script = IMAGE.format(keep=" ".join(KEEP), site=SITE,
                          relative=SITE.relative_to(Path(sys.prefix).resolve()) if SITE.is_relative_to(
                              Path(sys.prefix).resolve()) else "lib/python3/site-packages")

    def run(command, env, user=None, timeout=900):
        inner = (["runuser", "-u", user, "--"] if user else []) + command
        return subprocess.run(["unshare", "--mount", "--propagation", "private", "bash", "-c", script, "image",
                               str(top)] + inner, env=env, capture_output=True, timeout=timeout)
    try:
        yield run, str(top / "venv" / "bin" / "python"), public, private
    finally:
        shutil.rmtree(top, ignore_errors=True)
        shutil.rmtree(private, ignore_errors=True)


def _env(package: Path, **extra) -> dict:
    return dict({"PATH": os.environ["PATH"], "PYTHONPATH": str(package), "LANG": "C.UTF-8"}, **extra)


@pytest.mark.parametrize("cap", ["1", "5"])
def test_no_marks_and_no_harm_with_landlock_capped(cap, tmp_path):
    """Landlock ABI 1 (Linux 5.13) and 5 (RHEL 9.6): no signal scoping, which seccomp makes up for."""
    folder = tmp_path / "class"
    folder.mkdir()
    build_class(folder)
    run = replay(folder, tmp_path / "out", [sys.executable, "-m", "numpy_mamba", "grade"],
                 dict(os.environ, PYTHONPATH=str(ROOT), NUMPY_MAMBA_SANDBOX_MAX_ABI=cap))
    assert f"Landlock ABI {cap} (capped".encode() in run["printed"]
    assert_no_marks_and_no_harm(run)


def test_no_marks_and_no_harm_in_the_user_tier(image, tmp_path):
    """No Landlock, root, a prepared image: each child its own user; the check at start holds."""
    run_in, python, _, private = image
    folder, out = tmp_path / "class", Path(tempfile.mkdtemp(prefix="numpy_mamba_out_"))
    folder.mkdir()
    build_class(folder)
    try:
        run = replay(folder, out, [python, "-m", "numpy_mamba", "grade"],
                     _env(private, NUMPY_MAMBA_SANDBOX_MAX_ABI="0"), runner=run_in)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    assert b"isolation: sandbox user: no Landlock (capped" in run["printed"] and b"(image checked)" in run["printed"]
    assert_no_marks_and_no_harm(run)


def _autograder_root(folder: Path, submission: Path) -> Path:
    """An /autograder tree: the settings Gradescope's zip holds, and one submission."""
    (folder / "source").mkdir(parents=True)
    (folder / "submission").mkdir()
    (folder / "source" / "autograder.json").write_text(json.dumps({"exercise": "gradients", "seed": 12345}))
    shutil.copy(submission, folder / "submission" / "gradients.py")
    return folder


@pytest.mark.parametrize("cap", [None, "5", "1", "0"])
def test_the_gradescope_runner_grades_at_every_tier(cap, image, tmp_path):
    """The container is the instructor's boundary: at every tier the runner grades (a solution
    10, a cheat 0) and tells the instructor's output, never the student, which tier it was."""
    run_in, python, _, private = image
    temporary = Path(tempfile.mkdtemp(prefix="numpy_mamba_tmp_"))
    os.chmod(temporary, 0o711)
    try:
        for source, score in ((SOLUTIONS / "gradients_solution.py", 10), (STUDENTS / "cheat_exfiltrate.py", 0)):
            root = _autograder_root(tmp_path / source.stem, source)
            env = _env(private, AUTOGRADER_ROOT=str(root), TMPDIR=str(temporary),
                       **({"NUMPY_MAMBA_SANDBOX_MAX_ABI": cap} if cap is not None else {}))
            command = [python if cap == "0" else sys.executable, "-m", "numpy_mamba.grader.gradescope", "run"]
            done = run_in(command, env) if cap == "0" else subprocess.run(command, env=env, capture_output=True,
                                                                          timeout=300)
            data = json.loads((root / "results" / "results.json").read_text())
            assert done.returncode == 0 and data["score"] == score, (done.stdout, done.stderr, data["output"])
            tier = b"sandbox user" if cap == "0" else b"kernel sandbox: Landlock ABI " + (cap or "7").encode()
            assert done.stdout.startswith(b"isolation: " + tier) and b"isolation" not in json.dumps(data).encode()
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
    run_in, python, public, _ = image
    folder = _public_class(public.parent)
    try:
        done = run_in([python, "-m", "numpy_mamba", "grade", str(folder), "--csv", str(folder / "grades.csv")],
                      _env(public, TMPDIR=str(folder)), user="nobody")
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
    run_in, python, public, _ = image
    folder = _public_class(public.parent)
    env = _env(public, TMPDIR=str(folder), NUMPY_MAMBA_SANDBOX_MAX_ABI="0")
    try:
        one = run_in([python, "-m", "numpy_mamba", "grade", str(folder / "alice" / "alice.py")], env, user="nobody")
        assert one.returncode == 0 and b"isolation: WEAK: no Landlock and not root" in one.stdout
        refused = run_in([python, "-m", "numpy_mamba", "grade", str(folder)], env, user="nobody")
        assert refused.returncode == 2 and b"--allow-weak-isolation" in refused.stderr
        allowed = run_in([python, "-m", "numpy_mamba", "grade", str(folder), "--allow-weak-isolation"], env,
                         user="nobody")
        assert allowed.returncode == 1 and b"isolation: WEAK" in allowed.stderr
    finally:
        shutil.rmtree(folder, ignore_errors=True)

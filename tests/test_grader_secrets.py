"""Secrets out of reach: a class run and the Gradescope zip draw their problems from a seed kept in
a file only the instructor reads, never seed 0 or a number on a command line; hidden problems run
in children of their own after the public ones, so nothing a child saw of them reaches a public
result, hint, output or CSV column.  Then the hostile files of this half of the grader (a table of
answers to the students' problems, a child showing what it saw, a file that is fragile only on
hidden problems, a forged result frame, notebooks of the wrong shape, a file that does not parse,
a per-coordinate shortcut that fits in memory) graded as one class at every tier this machine
simulates: Landlock ABI 7, capped at 5 and 1, 0 as root in a container-like image, and as an
unprivileged user; no marks, nothing hidden shown, the CSV always written.

A failure here means a student can score without code by replaying the problems they see, read
the hidden problems off their own report, or stop a class run; or an instructor's seed is lost,
readable by others, or typed where every process can read it.
"""
import base64
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

from numpy_mamba.gradients import gradients
from numpy_mamba.grader.registry import all_exercises, prepare
from numpy_mamba.grader.run import main
from numpy_mamba.grader.seed import SECRET_NAME, SecretError, secret_seed
from test_grader_attacks import container_image, image_umask, replay, tier_runs  # noqa: F401 (an autouse fixture)

ROOT = Path(__file__).resolve().parent.parent
STUDENTS = ROOT / "tests" / "student_files"
SOLUTIONS = ROOT / "tests" / "solutions"


def _load(path: Path, name: str):
    import importlib.util
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def answer_table(folder: Path) -> None:
    """hostile_answer_table.py and its _answer_table.py: the package's answers to every gradients
    problem of seed 0 (hidden and budget problems included), keyed as the file keys its calls."""
    shutil.copy(STUDENTS / "hostile_answer_table.py", folder / "hostile_answer_table.py")
    (folder / "_answer_table.py").write_text("TABLE = {}\n")
    sys.path.insert(0, str(folder))
    try:
        key = _load(folder / "hostile_answer_table.py", "answer_table_probe").key
    finally:
        sys.path.remove(str(folder))
    table = {}
    for pb in prepare(all_exercises()["gradients"], 0).problems:
        grads = gradients(pb.params, pb.P, pb.z)
        table[key(pb.params, pb.P, pb.z)] = {f: base64.b64encode(np.ascontiguousarray(getattr(grads, f))).decode()
                                             for f in ("W_B", "W_C", "w")}
    (folder / "_answer_table.py").write_text(f"TABLE = {table!r}\n")


def hidden_fingerprints(seed: int) -> list:
    """What hostile_hidden_leak.py prints for each hidden problem of the gradients at ``seed``."""
    fingerprint = _load(STUDENTS / "hostile_hidden_leak.py", "hidden_leak_probe").fingerprint
    prepared = prepare(all_exercises()["gradients"], seed)
    return [fingerprint(pb.P) for pb, hidden in zip(prepared.problems, prepared.hidden) if hidden]


def _autograder(folder: Path, files: dict, seed: int = 12345) -> dict:
    """results.json of run_autograder on ``files`` ({name: path}) in a simulated /autograder tree."""
    (folder / "source").mkdir(parents=True)
    (folder / "submission").mkdir()
    (folder / "source" / "autograder.json").write_text(json.dumps({"exercise": "gradients"}))
    (folder / "source" / "secret.seed").write_text(f"{seed}\n")
    for name, path in files.items():
        shutil.copy(path, folder / "submission" / name)
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(ROOT), "AUTOGRADER_ROOT": str(folder), "LANG": "C.UTF-8"}
    done = subprocess.run([sys.executable, "-m", "numpy_mamba.grader.gradescope", "run"], env=env,
                          capture_output=True, timeout=300, cwd="/")
    assert done.returncode == 0, done.stderr
    return json.loads((folder / "results" / "results.json").read_text())


def test_the_secret_seed_is_made_once_and_kept_readable_by_the_instructor_only(tmp_path):
    """Made with the secrets module, mode 0600, read back the same; a file others could read
    is made private (and says so); a link, a file of another user or a file without one
    integer is refused with a message."""
    path = tmp_path / "course.seed"
    seed, note = secret_seed(path)
    assert path.stat().st_mode & 0o777 == 0o600 and "made a new secret seed" in note and seed > 2**20
    assert secret_seed(path)[0] == seed and secret_seed(tmp_path / "other.seed")[0] != seed
    path.chmod(0o644)
    assert secret_seed(path)[0] == seed and path.stat().st_mode & 0o777 == 0o600
    (tmp_path / "link.seed").symlink_to(path)
    with pytest.raises(SecretError, match="cannot read"):
        secret_seed(tmp_path / "link.seed")
    (tmp_path / "bad.seed").write_text("# a comment\nnot a number\n")
    with pytest.raises(SecretError, match="does not hold a secret seed"):
        secret_seed(tmp_path / "bad.seed")
    with pytest.raises(SecretError, match="cannot read"):
        secret_seed(tmp_path / "missing.seed", make=False)
    os.chown(path, 65534, 65534)
    with pytest.raises(SecretError, match="not a regular file of yours"):
        secret_seed(path)


def test_a_class_run_takes_no_seed_from_the_command_line(tmp_path, capsys):
    """--seed with --csv, --json or a folder is refused (a command line is readable by every
    process); the seed kept next to the CSV is reused, so a second run grades the same problems."""
    shutil.copy(SOLUTIONS / "gradients_solution.py", tmp_path / "gradients.py")
    grades = tmp_path / "out" / "grades.csv"
    assert main([str(tmp_path), "--csv", str(grades), "--seed", "0"]) == 2
    assert "never from --seed" in capsys.readouterr().err and not grades.exists()
    assert main([str(tmp_path / "gradients.py"), "--csv", str(grades)]) == 0
    first = (grades.parent / SECRET_NAME).read_text()
    assert main([str(tmp_path / "gradients.py"), "--csv", str(grades)]) == 0
    assert (grades.parent / SECRET_NAME).read_text() == first and "secret seed in" in capsys.readouterr().err


def test_a_table_of_the_students_answers_scores_in_their_run_and_nothing_in_a_class_or_on_gradescope(tmp_path,
                                                                                                      capsys):
    """The table replays seed 0, which any student can grade locally, perfectly (the attack is
    real); the autograder draws other problems and it earns nothing (a class run: mallory, below)."""
    folder = tmp_path / "mallory"
    folder.mkdir()
    answer_table(folder)
    target = folder / "hostile_answer_table.py"
    assert main([str(target), "--all-problems"]) == 0 and "points: 10 / 10" in capsys.readouterr().out
    data = _autograder(tmp_path / "autograder", {"gradients.py": target, "_answer_table.py": folder / "_answer_table.py"})
    assert data["score"] == 0 and sum(t["max_score"] for t in data["tests"]) == 10


def test_nothing_of_a_hidden_problem_reaches_a_public_result(tmp_path, capsys):
    """A child that prints and raises everything it saw: the student's own run and everything
    Gradescope shows at once hold no hidden problem of the seed they graded (the hidden tests,
    shown after the due date, may; the class's public CSV columns: hugo, below)."""
    shutil.copy(STUDENTS / "hostile_hidden_leak.py", tmp_path / "gradients.py")
    assert main([str(tmp_path / "gradients.py")]) == 1
    out = capsys.readouterr().out
    assert "seen:" in out and not [f for f in hidden_fingerprints(0) if f in out], out
    data = _autograder(tmp_path / "autograder", {"gradients.py": STUDENTS / "hostile_hidden_leak.py"}, seed=777)
    shown = data["output"] + " ".join(t["output"] for t in data["tests"] if t["visibility"] == "visible")
    assert "seen:" in shown and not [f for f in hidden_fingerprints(777) if f in shown]


def seen_before_release(data: dict) -> dict:
    """What a student sees of results.json before the instructor's chosen time, as Gradescope's
    autograder specification (docs/specs.md, "Controlling Test Case Visibility") says: the
    top-level output and the tests marked visible; no test marked hidden, after_due_date or
    after_published; and the total score unless a test is after_due_date or after_published
    ("If test cases are hidden, students will not be able to see their total score. Test cases
    with visibility set to hidden don't affect this")."""
    later = any(t["visibility"] in ("after_due_date", "after_published") for t in data["tests"])
    return {"score": None if later else data["score"], "output": data["output"],
            "tests": [t for t in data["tests"] if t["visibility"] == "visible"]}


@pytest.mark.parametrize("visibility", ["hidden", "after_due_date", "after_published"])
def test_nothing_a_student_sees_changes_with_a_hidden_problems_outcome(visibility):
    """A file graded on every problem, and the same file had it failed every hidden problem:
    what a student sees before the instructor's chosen time (the total, the output, the visible
    tests) is the same, at every visibility of the hidden tests; the instructor sees the two apart."""
    from dataclasses import replace
    from numpy_mamba.grader.grade import Session, grade_submission
    from numpy_mamba.grader.report import gradescope
    passed = grade_submission(SOLUTIONS / "gradients_solution.py", Session(99))
    failed = replace(passed, graded=[replace(g, results=[replace(r, status="FAIL", points=0.0, hint="wrong sign")
                                                         if r.group == "hidden" else r for r in g.results])
                                     for g in passed.graded])
    shown = [gradescope(sub, hidden_visibility=visibility) for sub in (passed, failed)]
    assert seen_before_release(shown[0]) == seen_before_release(shown[1]), [d["score"] for d in shown]
    assert shown[0]["tests"] != shown[1]["tests"], "the instructor must see the hidden outcome"


# ---- the hostile class at every tier -----------------------------------------------------------

def _notebook(cells) -> str:
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


def hostile_class(folder: Path) -> None:
    """Each student in a folder of their own: alice (correct), and the hostile files of this
    half of the grader with the helpers they use."""
    homes = {name: folder / name for name in ("alice", "mallory", "hugo", "fran", "forger", "nina", "nora",
                                              "sam", "chuck")}
    for home in homes.values():
        home.mkdir(parents=True)
    shutil.copy(SOLUTIONS / "gradients_solution.py", homes["alice"] / "alice.py")
    answer_table(homes["mallory"])
    shutil.copy(STUDENTS / "hostile_hidden_leak.py", homes["hugo"] / "hugo.py")
    for helper in ("_common.py", "_pipes.py"):
        shutil.copy(STUDENTS / helper, homes["fran"] / helper)
        shutil.copy(STUDENTS / helper, homes["forger"] / helper)
    shutil.copy(STUDENTS / "hostile_nan_when_saturated.py", homes["fran"] / "fran.py")
    shutil.copy(STUDENTS / "hostile_forged_problem.py", homes["forger"] / "forger.py")
    (homes["nina"] / "gradients.ipynb").write_text(_notebook([{"cell_type": "code", "source": ["import numpy\n", 7]}]))
    (homes["nora"] / "gradients.ipynb").write_text('{"cells": ' + "[" * 50_000 + "]" * 50_000 + "}")
    (homes["sam"] / "sam.py").write_text("import numpy as np\n\n\ndef grad_W_C(params, P, z)\n    return 0\n")
    shutil.copy(STUDENTS / "hostile_chunked_differences.py", homes["chuck"] / "chuck.py")


# folder -> (points, what its row must say); fran keeps her public shares: 2.25 + 2.25 + 3
EXPECTED = {"alice": ("10", ""), "mallory": ("0", ""), "hugo": ("0", "seen:"), "fran": ("7.5", ""),
            "forger": ("0", "not asked"), "nina": ("0", "its source is a list holding a number"),
            "nora": ("0", "nested too deeply"), "sam": ("0", "SyntaxError: expected ':'"),
            "chuck": ("0", "used more than its CPU budget")}


def assert_no_marks_and_no_secret(status: int, grades: Path, seed_file: Path, printed: bytes) -> None:
    rows = {Path(r["submission"]).parent.name: r for r in csv.DictReader(grades.open())}
    assert status == 1 and sorted(rows) == sorted(EXPECTED), printed[-3000:]
    (seed,) = [int(line) for line in seed_file.read_text().splitlines() if not line.startswith("#")]
    hidden = hidden_fingerprints(seed)
    for name, (points, words) in EXPECTED.items():
        row = rows[name]
        assert row["points"] == points and row["max_points"] == "10" and row["status"] != "grader error", row
        assert words in " ".join(row.values()), (name, row)
        public = " ".join(v for k, v in row.items() if "_hidden_" not in k)
        assert not [f for f in hidden if f in public], (name, row)
    fran = rows["fran"]
    assert [fran[f"{n}_status"] for n in ("grad_W_C", "grad_W_B", "grad_w")] == ["pass"] * 3
    assert fran["grad_w_hidden_status"] == "FAIL" and "FloatingPointError" in fran["grad_w_hidden_hint"]


TIERS = {"7": "Landlock ABI 7", "5": "Landlock ABI 5 (capped", "1": "Landlock ABI 1 (capped",
         "0": "isolation: sandbox user: no Landlock (capped"}


@pytest.fixture(scope="module")
def hostile_replays(tmp_path_factory):
    """The hostile class graded at Landlock ABI 7, 5 and 1 and, as root in a container-like
    image, at 0 (the user tier), all at once."""
    folder = Path(tempfile.mkdtemp(prefix="numpy_mamba_hostile_"))         # mode 700: the class is private
    victim = Path(tempfile.mkdtemp(prefix="numpy_mamba_victim_")) / "instructor"
    os.chmod(victim.parent, 0o755)
    outs = {cap: Path(tempfile.mkdtemp(prefix=f"numpy_mamba_out{cap}_")) for cap in TIERS}
    try:
        hostile_class(folder / "class")
        with container_image() as (wrap, python, public, private):
            yield replay(folder / "class", victim, tier_runs(wrap, python, private, outs)), outs, (wrap, python, public)
    finally:
        for made in list(outs.values()) + [victim.parent, folder]:
            shutil.rmtree(made, ignore_errors=True)


@pytest.mark.parametrize("cap", sorted(TIERS))
def test_the_hostile_class_earns_nothing_and_sees_nothing_hidden_at_every_tier(hostile_replays, cap):
    runs, outs, _ = hostile_replays
    run = runs[cap]
    assert TIERS[cap].encode() in run["printed"], run["printed"][:1500].decode()
    assert_no_marks_and_no_secret(run["status"], run["grades"], outs[cap] / SECRET_NAME, run["printed"])


def test_the_hostile_class_graded_by_an_unprivileged_user(hostile_replays):
    """Run by user nobody (an instructor's account) at the Landlock tier, in a folder nobody owns."""
    _, _, (wrap, python, public) = hostile_replays
    folder = Path(tempfile.mkdtemp(prefix="numpy_mamba_nobody_", dir=public.parent))
    try:
        hostile_class(folder / "class")
        for path in [folder] + list(folder.rglob("*")):
            os.chown(path, 65534, 65534)
        grades = folder / "grades.csv"
        done = subprocess.run(wrap([python, "-m", "numpy_mamba", "grade", str(folder / "class"), "--csv", str(grades)],
                                   user="nobody"),
                              env={"PATH": os.environ["PATH"], "PYTHONPATH": str(public), "LANG": "C.UTF-8",
                                   "TMPDIR": str(folder)}, capture_output=True, timeout=600)
        assert b"isolation: kernel sandbox" in done.stderr, done.stderr
        assert_no_marks_and_no_secret(done.returncode, grades, folder / SECRET_NAME, done.stderr)
        assert (folder / SECRET_NAME).stat().st_uid == 65534 and (folder / SECRET_NAME).stat().st_mode & 0o777 == 0o600
    finally:
        shutil.rmtree(folder, ignore_errors=True)

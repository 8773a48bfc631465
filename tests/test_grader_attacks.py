"""A class of honest submissions with every cheat file of tests/student_files/ among them, graded
as one run (each student in a folder of their own, as an LMS exports a class): every honest file
gets the grade it gets alone, every attack earns no marks and is refused with its reason, nothing
outside the children's working directories is touched, and the run ends with its CSV.  The same
replay runs at every tier in tests/test_grader_tiers.py.  Then the attacks that need a file made
here: a flat class folder, and results.json of a submission that writes Markdown.

A failure here means a submission earned marks it did not, harmed the instructor (files,
secrets, memory, the terminal, the spreadsheet, the grader's processes) or a classmate, or
stopped the class run.
"""
import csv
import ctypes
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from numpy_mamba.grader.run import main

ROOT = Path(__file__).resolve().parent.parent
STUDENTS = ROOT / "tests" / "student_files"
SOLUTIONS = ROOT / "tutorials" / "solutions"
VICTIM = Path("/tmp/numpy_mamba_grader_victim")         # the folder the harmful files aim at
SECRET = "NUMPY_MAMBA_INSTRUCTOR_SECRET"
HELPERS = ("_repo.py", "_pipes.py", "_spawn.py", "_common.py", "_gates_common.py", "_stack_common.py")
ESCAPED_NAME = "\x1b[2J\x1b]0;pwned\x07report.py"          # a name that would clear the screen and retitle it
LATIN1_NAME = b"ren\xe9e.py"                              # not UTF-8

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
    "cheat_stack_complex_step.py": ("dH", "used more than its CPU budget on the paper-size problem"),
    "cheat_autograd.py": ("error", "torch"),
    # harm to the instructor
    "cheat_exfiltrate.py": ("grad_W_C", "Permission denied: '/etc/passwd'"),
    "cheat_rmtree_outside.py": ("grad_W_C", "Permission denied"),
    "cheat_overwrite_classmate.py": ("grad_W_C", "no classmate found"),
    "cheat_sqlite_outside.py": ("error", "libsqlite3"),
    "cheat_kill_grader.py": ("grad_W_C", "Operation not permitted"),
    "cheat_stop_grader.py": ("grad_W_C", "Operation not permitted"),
    "cheat_tty_escape.py": ("grad_W_C", "Permission denied: '/dev'"),
    "cheat_memfd.py": ("grad_W_C", "PermissionError: [Errno 1] Operation not permitted"),
    "cheat_shm.py": ("grad_W_C", "System V shared memory refused"),
    "cheat_threads.py": ("grad_W_C", "can't start new thread"),
    "cheat_keep_alive.py": ("grad_W_C", "prctl refused"),
    "cheat_renice_grader.py": ("grad_W_C", "PermissionError: [Errno 1] Operation not permitted"),
    "cheat_csv_formula.py": ("error", "'=HYPERLINK("),
    "cheat_fill_disk.py": ("grad_W_C", "it passed its disk limit"),
    "cheat_flood_output.py": ("grad_W_C", "it passed its output limit"),
    # crashing the class run
    "cheat_nested_json.py": ("grad_W_C", "JSON nested deeper than"),
    "cheat_forged_setup_error.py": ("grad_W_C", "unexpected event 'setup_error'"),
    "cheat_deep_tree.py": ("grad_W_C", "all zeros"),
}
# file (graded under another name when given) -> (status, points): what it gets alone
HONEST = {
    "alice.py": ("gradients_solution.py", "passed", "10"), "gina.py": ("gating_solution.py", "passed", "10"),
    "erin.py": ("stack_solution.py", "passed", "10"), "correct_common.py": (None, "passed", "10"),
    "correct_from_the_paper.py": (None, "passed", "10"), "correct_stack.py": (None, "passed", "10"),
    "correct_gates_log_space.py": (None, "passed", "10"), "broken_sign.py": (None, "failed", "0"),
    "broken_no_suffix.py": (None, "failed", "0"), "broken_stack_residual.py": (None, "failed", "6"),
}


# every cheat file earns 0, but for what the grader cannot tell from a derivation
# (tutorials/INSTRUCTORS.md): cheat_exit_call's grad_W_B, which is honest; complex step on w's 31
# coordinates; differences over every coordinate at once, vectorised, within the budget
UNSTOPPED = {"cheat_exit_call.py": "3", "cheat_complex_step.py": "4", "cheat_vectorized_differences.py": "6"}
CHEATS = sorted(p.name for p in STUDENTS.glob("cheat_*.py"))
SPECIAL = 4                                              # a symlink out, a 3 GB file, two hostile names


def _student(folder: Path, name: str, source: Path) -> None:
    """A student's folder holding ``source`` as ``name`` (a symlink stays one), with every helper a
    student file uses."""
    home = folder / Path(name).stem
    home.mkdir()
    shutil.copy(source, home / name, follow_symlinks=False)
    for helper in HELPERS:
        shutil.copy(STUDENTS / helper, home / helper)


def build_class(folder: Path) -> None:
    """Every cheat file, the honest files, a symlink to the solution, a 3 GB file and two hostile
    names, each student in a folder of their own under ``folder``."""
    for name in CHEATS:
        _student(folder, name, STUDENTS / name)
    for name, (source, _, _) in HONEST.items():
        _student(folder, name, (SOLUTIONS / source) if source else STUDENTS / name)
    (folder / "mallory").mkdir()
    (folder / "mallory" / "mallory.py").symlink_to(SOLUTIONS / "gradients_solution.py")
    (folder / "huge").mkdir()
    with open(folder / "huge" / "gradients.py", "wb") as f:       # 3 GB, sparse: never read whole
        f.truncate(3 * 2**30)
    (folder / "ines").mkdir()
    shutil.copy(SOLUTIONS / "gradients_solution.py", folder / "ines" / ESCAPED_NAME)
    os.mkdir(os.fsencode(folder) + b"/rene")
    shutil.copy(SOLUTIONS / "gradients_solution.py", os.fsencode(folder) + b"/rene/" + LATIN1_NAME)


def _shm_segments() -> set:
    with open("/proc/sysvipc/shm") as f:
        return {line.split()[1] for line in f.readlines()[1:]}


def _run(command: list, env: dict):
    return subprocess.run(command, capture_output=True, timeout=900, env=env)


def replay(folder: Path, out: Path, command: list, env: dict, runner=_run) -> dict:
    """Grade ``folder`` with ``command`` (the grade command up to its paths) into out/grades.csv,
    TMPDIR out/tmp, next to a victim folder and a System V segment of the grader's user holding a
    value; ``runner(command, env)`` runs it.  Returns what the run did and what it left."""
    grades, temporary = out / "grades.csv", out / "tmp"
    temporary.mkdir(parents=True)
    for reached in (out, temporary):                             # the sandbox user reaches its folder there
        os.chmod(reached, 0o711)
    shutil.rmtree(VICTIM, ignore_errors=True)
    VICTIM.mkdir()
    (VICTIM / "keep.txt").write_text("the instructor's file")
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmat.restype = ctypes.c_void_p
    segment = libc.shmget(0, 4096, 0o1600)                       # the grader's user keeps something here
    address = libc.shmat(segment, None, 0)
    ctypes.memmove(address, b"kept", 4)
    segments, nice = _shm_segments(), os.getpriority(os.PRIO_PROCESS, 0)
    try:
        done = runner(command + [str(folder), "--csv", str(grades), "--time-limit", "5", "--memory-limit", "512"],
                      dict(env, TMPDIR=str(temporary), **{SECRET: "s3cret-value"}))
        time.sleep(1.0)                                  # a process that outlived the run would act now
        kept = ctypes.string_at(address, 4)
        victim = sorted(p.name for p in VICTIM.iterdir())
    finally:
        libc.shmdt(ctypes.c_void_p(address))
        libc.shmctl(segment, 0, None)                            # IPC_RMID
        shutil.rmtree(VICTIM, ignore_errors=True)
    rows = {Path(r["submission"]).name: r for r in csv.DictReader(grades.open())} if grades.exists() else {}
    return dict(status=done.returncode, rows=rows, grades=grades, left=list(temporary.iterdir()),
                text=grades.read_text() if grades.exists() else "", printed=done.stdout + done.stderr,
                kept=kept, segments=_shm_segments() - segments, nice=(nice, os.getpriority(os.PRIO_PROCESS, 0)),
                victim=victim)


def assert_no_marks_and_no_harm(run: dict) -> None:
    """The replay's verdict at any tier: the run ended with every row; each honest file has its
    grade, each cheat file no marks; nothing outside was touched; no secret, control character or
    formula reached the CSV or the terminal."""
    rows, text, printed = run["rows"], run["text"], run["printed"]
    assert run["status"] == 1 and len(rows) == len(CHEATS) + len(HONEST) + SPECIAL, printed[-3000:]
    for name, (_, status, points) in HONEST.items():
        assert (rows[name]["status"], rows[name]["points"]) == (status, points), rows[name]
    for name in CHEATS:
        assert rows[name]["points"] == UNSTOPPED.get(name, "0"), rows[name]
        assert rows[name]["status"] != "passed" or name in UNSTOPPED, rows[name]
    assert run["victim"] == ["keep.txt"] and run["left"] == [] and run["kept"] == b"kept" and not run["segments"]
    assert run["nice"][0] == run["nice"][1]
    assert "s3cret-value" not in text and SECRET not in text
    for character in ("\x1b", "\u202e", "\x07"):
        assert character not in text and character.encode() not in printed, character
    cells = [cell for row in csv.reader(text.splitlines()) for cell in row]
    assert not [c for c in cells if c[:1] in ("=", "+", "-", "@", "\t", "\r")], "a formula reached the CSV"


@pytest.fixture(scope="module")
def class_run(tmp_path_factory):
    """The class, graded once at this machine's full tier (Landlock ABI 7, root)."""
    folder = tmp_path_factory.mktemp("class") / "submissions"
    folder.mkdir()
    build_class(folder)
    return replay(folder, tmp_path_factory.mktemp("out"), [sys.executable, "-m", "numpy_mamba", "grade"],
                  dict(os.environ, PYTHONPATH=str(ROOT)))


def test_no_marks_and_no_harm_at_the_full_tier(class_run):
    assert_no_marks_and_no_harm(class_run)
    assert "root:x:0:0" not in class_run["text"]                # Landlock: not even /etc/passwd


def test_the_class_run_says_where_it_wrote(class_run):
    assert f"wrote {class_run['grades']} ({len(class_run['rows'])} submissions)".encode() in class_run["printed"]


@pytest.mark.parametrize("filename", sorted(HONEST))
def test_every_honest_file_gets_its_own_grade(class_run, filename):
    """What it gets graded alone (its status and points), whatever its classmates did."""
    _, status, points = HONEST[filename]
    row = class_run["rows"][filename]
    assert (row["status"], row["points"]) == (status, points), row


@pytest.mark.parametrize("filename", sorted(ATTACKS))
def test_each_attack_is_refused_with_its_reason(class_run, filename):
    row, (column, words) = class_run["rows"][filename], ATTACKS[filename]
    text = row["error"] if column == "error" else row[f"{column}_hint"]
    assert words in text, (filename, row)
    assert row["points"] == "0" and row["status"] != "passed", (filename, row)


def test_complex_step_is_stopped_by_the_budget_where_a_budget_can_stop_it(class_run):
    """Exact to rounding, so only the budget stops it: on W_B and W_C (961 coordinates at the
    paper's size); w has 31 coordinates, which no budget tells from a derivation
    (tutorials/INSTRUCTORS.md): its 4 points stand."""
    row = class_run["rows"]["cheat_complex_step.py"]
    for name in ("grad_W_C", "grad_W_B"):
        assert row[f"{name}_status"] == "FAIL" and "used more than its CPU budget" in row[f"{name}_hint"], row
    assert row["grad_w_status"] == "pass" and row["points"] == "4"


def test_files_the_parent_cannot_read_or_name_each_get_a_row(class_run):
    """A symlink out, a 3 GB file (measured, never read), a name with escape sequences and one
    that is not UTF-8: each its row, the last two graded as any other file."""
    rows = class_run["rows"]
    assert "symbolic link to a file outside" in rows["mallory.py"]["error"] and rows["mallory.py"]["points"] == "0"
    assert rows["gradients.py"]["status"] == "not graded" and "larger than 1 MB" in rows["gradients.py"]["error"]
    escaped = [r for name, r in rows.items() if "report.py" in name]
    assert len(escaped) == 1 and escaped[0]["points"] == "10" and "\\x1b[2J" in escaped[0]["submission"]
    latin = [r for name, r in rows.items() if name == "ren\\xe9e.py"]
    assert len(latin) == 1 and latin[0]["points"] == "10" and "ren\\xe9e.py" in latin[0]["submission"]


def test_a_flat_class_folder_gives_each_helper_to_its_own_submission_only(tmp_path):
    """alice's _alice_core.py, mallory importing it, and 20 junk helpers: alice passes, mallory
    cannot import it."""
    for name in ("alice.py", "_alice_core.py", "mallory.py"):
        shutil.copy(STUDENTS / "flat" / name, tmp_path / name)
    for k in range(20):
        (tmp_path / f"_junk{k:02d}.py").write_text("X = 1\n")
    grades = tmp_path / "out" / "grades.csv"
    assert main([str(tmp_path), "--csv", str(grades)]) == 1
    rows = {Path(r["submission"]).name: r for r in csv.DictReader(grades.open())}
    assert rows["alice.py"]["points"] == "10"
    assert rows["mallory.py"]["points"] == "0" and "No module named '_alice_core'" in rows["mallory.py"]["error"]


def test_results_json_keeps_a_submissions_markdown_inert(tmp_path, capsys):
    """A message that closes the code block and writes a fake "All tests passed", a link and an
    image stays inside a code block longer than any run of backticks in it."""
    shutil.copy(STUDENTS / "cheat_markdown.py", tmp_path / "gradients.py")
    results = tmp_path / "results.json"
    assert main([str(tmp_path / "gradients.py"), "--json", str(results)]) == 1
    for text in [t["output"] for t in json.loads(results.read_text())["tests"]]:
        fence = text.split("\n", 1)[0]
        assert set(fence) == {"`"} and text.endswith("\n" + fence) and text.count(fence) == 2
        assert all(len(run) < len(fence) for run in text[len(fence):-len(fence)].split("\n") if set(run) == {"`"})


def test_a_file_defining_every_exercise_is_graded_as_one(tmp_path, capsys):
    """Named by --exercise, the all-exercises file is graded as that one: at most its 10 points."""
    for name in ("cheat_all_exercises.py",) + HELPERS:
        shutil.copy(STUDENTS / name, tmp_path / name)
    grades = tmp_path / "grades.csv"
    assert main([str(tmp_path / "cheat_all_exercises.py"), "--exercise", "gradients", "--csv", str(grades)]) == 0
    (row,) = csv.DictReader(grades.open())
    assert row["exercise"] == "gradients" and row["max_points"] == "10" and row["points"] == "10"

"""The parent cannot be broken by what a child sends or leaves, and an instructor's run checks
its inputs and outputs before grading: the result channel's parser, the cleanup, atomic
outputs, the instructor's points, import errors scored 0 of the exercise's points, folder mode.

A failure here means one submission (or one typo in a command) could take a class run down,
leave it half-written, or record a grade out of the wrong maximum.
"""
import csv
import json
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from numpy_mamba.grader.sandbox import remove_tree
from numpy_mamba.grader.sandbox.protocol import MAX_DEPTH, MAX_FRAME, ChildRun, Malformed, Reader
from numpy_mamba.grader.report import clean
from numpy_mamba.grader.run import main, points_spec

ROOT = Path(__file__).resolve().parent.parent
STUDENTS = ROOT / "tests" / "student_files"
SOLUTIONS = ROOT / "tests" / "solutions"


def _frame(payload: bytes, tag: bytes = b"J") -> bytes:
    return tag + struct.pack(">I", len(payload)) + payload


def _feed(*messages) -> ChildRun:
    run = ChildRun()
    reader = Reader(run)
    for m in messages:
        reader.feed(_frame(json.dumps(m).encode()) if isinstance(m, dict) else m)
    return run


READY = {"event": "ready", "isolation": "x"}
IMPORTED = {"event": "imported", "defined": {"grad_w": "function"}}


@pytest.mark.parametrize("messages, words", [
    ([READY, _frame(b"[" * 10_000 + b"]" * 10_000)], f"nested deeper than {MAX_DEPTH}"),
    ([READY, {"event": "setup_error", "error": "forged"}], "unexpected event 'setup_error'"),
    ([READY, READY], "unexpected event 'ready'"),
    ([READY, IMPORTED, IMPORTED], "unexpected event 'imported'"),
    ([READY, IMPORTED, {"event": "result", "function": "grad_w", "problem": 0, "answer": {"none": True},
                        "arrays": 0}], "unexpected event 'result'"),
    ([READY, IMPORTED, {"event": "start", "function": "grad_w", "problem": 0},
      {"event": "start", "function": "grad_w", "problem": 1}], "unexpected event 'start'"),
    ([READY, b"X" + struct.pack(">I", 3) + b"abc"], "not a frame"),
    ([READY, b"J" + struct.pack(">I", MAX_FRAME + 1)], "not a frame"),
    ([READY, _frame(b"\xff\xfe")], "not JSON"),
    ([READY, _frame(b"[1, 2]")], "not an event"),
])
def test_the_channel_accepts_each_message_only_in_its_state(messages, words):
    with pytest.raises(Malformed, match=words.replace("(", r"\(").replace(")", r"\)")):
        _feed(*messages)


def test_a_well_formed_exchange_is_read():
    run = _feed(READY, IMPORTED, {"event": "start", "function": "grad_w", "problem": 0},
                {"event": "raised", "function": "grad_w", "problem": 0, "error": "ValueError: x", "stub": False},
                {"event": "done"})
    assert run.ready and run.imported and run.done and run.calls[("grad_w", 0)].error == "ValueError: x"


def test_cleanup_removes_deep_trees_and_read_only_files_without_raising(tmp_path):
    """1500 nested folders (deeper than the recursion limit), read-only files and folders, a
    symlink out (not followed), then a path that does not exist: nothing raises."""
    root, outside = tmp_path / "work", tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("x")
    root.mkdir()
    (root / "link").symlink_to(outside)
    fd = os.open(root, os.O_RDONLY)
    for _ in range(1500):                               # by file descriptor: no path is that long
        os.mkdir("d", dir_fd=fd)
        inner = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = inner
    os.close(os.open("read_only", os.O_CREAT | os.O_WRONLY, 0o400, dir_fd=fd))
    os.fchmod(fd, 0o500)
    os.close(fd)
    (root / "d").chmod(0o500)
    remove_tree(root)
    assert not root.exists() and (outside / "keep").exists()
    remove_tree(root)


def test_student_text_is_stripped_of_control_characters_and_trimmed():
    text = clean("a\x1b[2Jb\x07c\u202ed\u2066e\r" + "x" * 5000, 100)
    assert not any(c in text for c in "\x1b\x07\u202e\u2066\r") and text.startswith("a?[2Jb?c?d?e?")
    assert "more characters not shown" in text and len(text) < 200


def test_outputs_are_checked_before_grading(tmp_path, capsys):
    """A missing folder is created; a path that cannot be written stops the run before any
    grading, with exit 2 (a usage error, not 'a student failed')."""
    grades = tmp_path / "new" / "folder" / "grades.csv"
    assert main([str(SOLUTIONS / "gradients_solution.py"), "--csv", str(grades)]) == 0
    assert grades.is_file()
    blocked = tmp_path / "file"
    blocked.write_text("x")
    capsys.readouterr()
    assert main([str(STUDENTS / "broken_sign.py"), "--csv", str(blocked / "grades.csv")]) == 2
    captured = capsys.readouterr()
    assert "cannot write" in captured.err and "grading" not in captured.out
    assert main([str(STUDENTS / "broken_sign.py"), "--json", str(tmp_path)]) == 2
    assert "is a folder" in capsys.readouterr().err


def test_points_per_part_from_a_flag_or_a_file(tmp_path, capsys):
    grades = tmp_path / "grades.csv"
    assert main([str(SOLUTIONS / "gradients_solution.py"), "--points", "grad_W_C=1,grad_w=6",
                 "--csv", str(grades)]) == 0
    (row,) = csv.DictReader(grades.open())
    assert (row["points"], row["max_points"]) == ("10", "10")
    assert [float(row[f"grad_W_C{group}_points"]) for group in ("", "_hidden")] == [0.75, 0.25]   # 6 and 2 problems
    assert [float(row[f"grad_w{group}_points"]) for group in ("", "_hidden")] == [4.5, 1.5]
    config = tmp_path / "points.json"
    config.write_text(json.dumps({"dH": 1, "dW": 5}))
    assert main([str(SOLUTIONS / "stack_solution.py"), "--points", str(config), "--csv", str(grades)]) == 0
    (row,) = csv.DictReader(grades.open())
    assert row["max_points"] == "10" and float(row["dW_points"]) + float(row["dW_hidden_points"]) == 5
    for bad in ("grad_W_C=x", "nope=3", "grad_w=-1", "grad_w"):
        with pytest.raises(Exception):
            points_spec(bad)


def test_an_import_error_scores_0_of_the_exercises_points_with_an_error_column(tmp_path, capsys):
    """A syntax error in a file named after its exercise, and a failing import: each 0 of 10,
    the error in the CSV's error column and in every part's row."""
    folder = tmp_path / "class"
    folder.mkdir()
    (folder / "gradients.py").write_text("def grad_W_C(params, P, z)\n    return 0\n")
    shutil.copy(STUDENTS / "broken_import.py", folder / "bob.py")
    (folder / "carol.py").write_text("import numpy_mamba.sgd\n\n\ndef grad_w(params, P, z):\n    return 0\n")
    grades = tmp_path / "grades.csv"
    assert main([str(folder), "--exercise", "gradients", "--csv", str(grades)]) == 1
    rows = {Path(r["submission"]).name: r for r in csv.DictReader(grades.open())}
    for name, words in (("gradients.py", "SyntaxError"), ("bob.py", "SyntaxError"),
                        ("carol.py", "numpy_mamba.sgd is not part of the hand-out")):
        row = rows[name]
        assert row["points"] == "0" and row["max_points"] == "10" and words in row["error"], row
        assert row["status"] == "import error" and row["grad_w_status"] == "import error"


def test_folder_mode_grades_each_file_as_one_exercise(tmp_path, capsys):
    """A file named after one exercise is graded as it, even when it defines another's function
    too; a file defining two exercises' functions and named after neither is refused."""
    folder = tmp_path / "class"
    folder.mkdir()
    shutil.copy(STUDENTS / "correct_naive.py", folder / "gating.py")
    shutil.copy(STUDENTS / "correct_naive.py", folder / "both.py")
    grades = tmp_path / "grades.csv"
    assert main([str(folder), "--csv", str(grades)]) == 1
    rows = {Path(r["submission"]).name: r for r in csv.DictReader(grades.open())}
    assert rows["gating.py"]["exercise"] == "gating" and rows["gating.py"]["points"] == "10"
    assert "several exercises (gating, gradients)" in rows["both.py"]["error"]


def test_weak_isolation_refuses_a_class_run_unless_the_instructor_says_so(tmp_path, monkeypatch, capsys):
    """Where the sandbox is weak (macOS, WSL2, an old Linux, not root): one file is still graded
    (a student checking their work), a folder or --json needs --allow-weak-isolation, every run
    says which protections are in force, and the Gradescope runner grades anyway, telling the
    instructor's output only.  (The weak tier for real, unprivileged: tests/test_grader_tiers.py.)"""
    from numpy_mamba.grader import gradescope, run, sandbox
    weak = sandbox.Isolation(landlock_abi=0, seccomp=False, root=False, system="Darwin 23.0 arm64")
    monkeypatch.setattr(sandbox, "isolation", lambda private=(): weak)
    folder = tmp_path / "class"
    folder.mkdir()
    shutil.copy(SOLUTIONS / "gradients_solution.py", folder / "alice.py")
    assert main([str(folder)]) == 2
    assert "isolation: WEAK" in capsys.readouterr().err
    assert main([str(folder / "alice.py"), "--json", str(tmp_path / "r.json")]) == 2
    capsys.readouterr()
    assert main([str(folder / "alice.py")]) == 0
    assert "isolation: WEAK: no Landlock and not root" in capsys.readouterr().out
    assert main([str(folder), "--allow-weak-isolation", "--csv", str(tmp_path / "g.csv")]) == 0
    (tmp_path / "submission").mkdir()
    (tmp_path / "source").mkdir()
    (tmp_path / "source" / "secret.seed").write_text("2024\n")
    shutil.copy(SOLUTIONS / "gradients_solution.py", tmp_path / "submission" / "gradients.py")
    said = []
    data = gradescope.grade_root(tmp_path, {"exercise": "gradients"}, log=said.append)
    assert data["score"] == 10 and said[0].startswith("isolation: WEAK")
    assert "WEAK" not in json.dumps(data) and "Landlock" not in json.dumps(data)


def test_a_dead_fork_server_is_replaced():
    """The clean fork server killed between two submissions (out of memory, an administrator):
    the next submission starts another and is graded as usual."""
    from numpy_mamba.grader.grade import Limits, Session, grade_submission
    from numpy_mamba.grader.sandbox.parent import SERVER
    session = Session(0, Limits(5.0, 512))
    assert grade_submission(SOLUTIONS / "gating_solution.py", session).passed
    SERVER.process.kill()
    SERVER.process.wait()
    assert grade_submission(SOLUTIONS / "gating_solution.py", session).passed


def test_a_fork_that_fails_fails_one_submission_and_keeps_the_server():
    """The fork server's next fork refused (a pids cgroup of one process: EAGAIN, as under a
    thread or process limit): that submission fails as the grader's error, and the next one is
    graded by the same server, which was not reset."""
    from numpy_mamba.grader.grade import Limits, Session, grade_submission
    from numpy_mamba.grader.sandbox.parent import SERVER
    session = Session(0, Limits(5.0, 512))
    assert grade_submission(SOLUTIONS / "gating_solution.py", session).passed
    server, pids = SERVER.process.pid, Path("/sys/fs/cgroup/pids")
    group = pids / f"numpy_mamba_test_{os.getpid()}"
    group.mkdir()
    try:
        (group / "cgroup.procs").write_text(str(server))
        (group / "pids.max").write_text("1")
        refused = grade_submission(SOLUTIONS / "gating_solution.py", session)
        assert "could not start a process for this submission: Resource temporarily unavailable" in refused.grader_error
        assert refused.points == 0 and not refused.passed
        (group / "pids.max").write_text("max")
        assert grade_submission(SOLUTIONS / "gating_solution.py", session).passed and SERVER.process.pid == server
    finally:
        (pids / "cgroup.procs").write_text(str(server))
        group.rmdir()


def test_a_full_disk_fails_the_submission_it_stops_and_the_class_goes_on(tmp_path):
    """The temporary folders on a 512 KB file system (a mount namespace: nothing else sees it):
    a 700 KB submission cannot be copied and fails with the reason; its classmate is graded; the
    CSV is written."""
    folder = tmp_path / "class"
    for name in ("alice", "bloated"):
        (folder / name).mkdir(parents=True)
    shutil.copy(SOLUTIONS / "gradients_solution.py", folder / "alice" / "alice.py")
    padding = "# " + "x" * 98 + "\n"
    (folder / "bloated" / "bloated.py").write_text((SOLUTIONS / "gradients_solution.py").read_text() + padding * 7000)
    small = tmp_path / "small"
    small.mkdir()
    script = 'mount -t tmpfs -o size=512k tmpfs "$1" && shift && exec "$@"'
    done = subprocess.run(["unshare", "--mount", "--propagation", "private", "bash", "-c", script, "x", str(small),
                           sys.executable, "-m", "numpy_mamba", "grade", str(folder), "--jobs", "1", "--csv",
                           str(tmp_path / "grades.csv")], capture_output=True, timeout=300,
                          env=dict(os.environ, PYTHONPATH=str(ROOT), TMPDIR=str(small)))
    rows = {Path(r["submission"]).name: r for r in csv.DictReader((tmp_path / "grades.csv").open())}
    assert done.returncode == 1, done.stderr
    assert rows["alice.py"]["points"] == "10"
    assert rows["bloated.py"]["status"] == "not graded" and "No space left on device" in rows["bloated.py"]["error"]


def test_a_child_gone_before_its_ready_frame_is_read_still_has_its_cpu_time():
    """On a loaded machine a child can send "ready", finish and be reaped before the grader reads
    the frame; its CPU time at "ready" is then the last reading before it, never NaN (a NaN CPU
    time failed the budget check of a correct submission in a loaded run)."""
    from numpy_mamba.grader.sandbox.parent import Limits, _conclude, _Watch
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()                                            # reaped: /proc/PID no longer exists
    run = ChildRun(pid=gone.pid)
    watch = _Watch(run, None, Limits(cpu=10.0, memory_mb=512, wall=60.0), ".")
    watch.before_ready = 0.25
    run.ready = True
    watch.became_ready()
    watch.total_cpu, watch.exited, run.exitcode = 1.0, True, 0
    _conclude(watch)
    assert run.cpu == pytest.approx(0.75) and run.ended == "exited with status 0"


def test_the_graders_parse_is_safe_in_threads():
    """A class run with --jobs 2 failed every later file of an exercise with "SystemError: AST
    constructor recursion depth mismatch": CPython 3.11 shares the AST converter's recursion check
    between threads, and the collector can run Python code mid-conversion.  Here the collector gives
    the GIL away in the middle of parses in three threads (ast.parse fails so within seconds);
    the grader's parse takes one thread at a time."""
    import gc
    import threading
    import time
    from numpy_mamba.grader.syntax import parse

    class Yield:
        def __init__(self):
            self.me = self                        # a cycle: freed by the collector, in __del__

        def __del__(self):
            time.sleep(0)                         # gives the GIL away during a parse

    source, errors, stop = (ROOT / "numpy_mamba" / "model.py").read_text(), [], threading.Event()

    def work():
        while not stop.is_set():
            Yield(), Yield()
            try:
                parse(source)
            except SystemError as exc:
                errors.append(str(exc))
                stop.set()

    thresholds = gc.get_threshold()
    gc.set_threshold(50, 1, 1)
    try:
        threads = [threading.Thread(target=work) for _ in range(3)]
        for t in threads:
            t.start()
        stop.wait(3.0)
        stop.set()
        for t in threads:
            t.join()
    finally:
        gc.set_threshold(*thresholds)
    assert not errors, errors[:1]

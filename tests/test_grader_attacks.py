"""A class of honest submissions with every cheat file of tests/student_files/ among them, graded
as one run (each student in a folder of their own, as an LMS exports a class): every honest file
gets the grade it gets alone, every attack earns no marks and is refused with its reason, nothing
outside the children's working directories is touched, and the run ends with its CSV; at every
tier of the sandbox (Landlock ABI 7, capped at 5 and 1, and 0 as root in a container-like image),
the four runs at once.  Then the attacks that need a file made here: a flat class folder, and
results.json of a submission that writes Markdown.

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
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import numpy
import pytest

from numpy_mamba.grader.run import main
from numpy_mamba.grader.sandbox.users import PLACE

ROOT = Path(__file__).resolve().parent.parent
STUDENTS = ROOT / "tests" / "student_files"
SOLUTIONS = ROOT / "tests" / "solutions"
SECRET = "NUMPY_MAMBA_INSTRUCTOR_SECRET"
HELPERS = ("_repo.py", "_pipes.py", "_spawn.py", "_common.py", "_gates_common.py", "_stack_common.py", "_victim.py")
ESCAPED_NAME = "\x1b[2J\x1b]0;pwned\x07report.py"          # a name that would clear the screen and retitle it
LATIN1_NAME = b"ren\xe9e.py"                              # not UTF-8

# (file, the graded function whose hint, or the file's error, says why it was refused, words in it)
REFUSALS = [
    # marks not earned
    ("cheat_fresh_interpreter.py", "grad_W_C", "Operation not permitted (_spawn.py"),
    ("cheat_dir_fd.py", "grad_W_C", "Permission denied"),
    ("cheat_git_objects.py", "grad_W_C", "Permission denied"),
    ("cheat_exec_solution.py", "grad_W_C", "PermissionError: [Errno 13] Permission denied"),
    ("cheat_import_solution.py", "grad_W_B", "PermissionError: [Errno 13] Permission denied"),
    ("cheat_disable_guard.py", "grad_W_C", "PermissionError: [Errno 13] Permission denied"),
    ("cheat_stack_solution.py", "dH", "PermissionError: [Errno 13] Permission denied"),
    ("cheat_reload_module.py", "grad_W_B", "PermissionError: [Errno 13] Permission denied"),
    ("cheat_reload_module.py", "grad_w", "KeyError: 'numpy_mamba.gradients'"),
    ("cheat_importlib_split.py", "grad_W_C", "numpy_mamba.gradients is not part of the hand-out of this exercise"),
    ("cheat_patch_grader.py", "error", "numpy_mamba.grader is not part of the hand-out of this exercise (gradients)"),
    ("cheat_value_and_gradients.py", "error", "numpy_mamba.fused is not part of the hand-out of this exercise"),
    ("cheat_one_layer_stack.py", "error", "numpy_mamba.layer is not part of the hand-out of this exercise (gradients)"),
    ("cheat_forward_terms.py", "error", "numpy_mamba.model is not part of the hand-out of this exercise (gating)"),
    ("cheat_layer_gates.py", "error", "numpy_mamba.layer is not part of the hand-out of this exercise (gating)"),
    ("cheat_decay_gates.py", "error", "numpy_mamba.gates is not part of the hand-out of this exercise (gating)"),
    ("cheat_stack_gradients.py", "error", "numpy_mamba.stack.gradients is not part of the hand-out of this exercise"),
    ("cheat_stack_layer_backward.py", "error", "numpy_mamba.layer.layer_backward is not part of the hand-out"),
    ("cheat_stack_value_and_gradients.py", "error", "numpy_mamba.fused is not part of the hand-out"),
    ("cheat_stack_factored.py", "dW_C", "numpy_mamba.stack.layer_backward_factored is not part of the hand-out"),
    ("cheat_run_classmate.py", "grad_W_C", "no classmate found"),
    ("cheat_all_exercises.py", "error", "defines functions of several exercises (gating, gradients, stack)"),
    ("cheat_proc_mem.py", "grad_W_C", "Permission denied: '/proc'"),
    ("cheat_outlive.py", "grad_W_C", "Operation not permitted (_spawn.py"),
    ("cheat_exit_import.py", "error", "the process ended while importing the file (exited with status 0)"),
    ("cheat_exit_call.py", "grad_W_C", "the process ended while running it (exited with status 0)"),
    ("cheat_atexit.py", "grad_W_C", "matches no known mistake"),
    ("cheat_stack_frames.py", "grad_W_C", "all zeros"),
    ("cheat_monkeypatch.py", "grad_W_C", "all zeros"),
    ("cheat_monkeypatch.py", "grad_w", "all zeros"),
    ("cheat_complex.py", "grad_W_C", "complex dtype"),
    ("cheat_finite_differences.py", "grad_W_C", "close to the analytic answer but not equal to it"),
    ("cheat_finite_differences.py", "grad_w_hidden", "On 'hinge's kink, |1 - zF| = 1e-11': the hinge"),
    ("cheat_stack_finite_differences.py", "dH", "close to the analytic answer but not equal to it"),
    ("cheat_stack_finite_differences.py", "dW", "A finite difference"),
    ("cheat_stack_complex_step.py", "dH", "used more than its CPU budget on the largest problem"),
    ("cheat_linear_differences.py", "grad_W_C", "used more than its CPU budget on the largest problem"),
    ("cheat_dual_numbers.py", "grad_W_B", "used more than its CPU budget on the largest problem"),
    ("cheat_vectorized_differences.py", "grad_W_C", "a submission may allocate at most 256 MB"),
    ("cheat_autograd.py", "error", "torch"),
    # harm to the instructor
    ("cheat_exfiltrate.py", "grad_W_C", "Permission denied: '/etc/passwd'"),
    ("cheat_rmtree_outside.py", "grad_W_C", "Permission denied"),
    ("cheat_overwrite_classmate.py", "grad_W_C", "no classmate found"),
    ("cheat_sqlite_outside.py", "error", "libsqlite3"),
    ("cheat_write_files.py", "grad_W_C", "PermissionError: [Errno 13] Permission denied"),
    ("cheat_write_files.py", "grad_W_B", "PermissionError: [Errno 1] Operation not permitted"),
    ("cheat_kill_grader.py", "grad_W_C", "Operation not permitted"),
    ("cheat_stop_grader.py", "grad_W_C", "Operation not permitted"),
    ("cheat_tty_escape.py", "grad_W_C", "Permission denied: '/dev'"),
    ("cheat_memfd.py", "grad_W_C", "PermissionError: [Errno 1] Operation not permitted"),
    ("cheat_shm.py", "grad_W_C", "System V shared memory refused"),
    ("cheat_threads.py", "grad_W_C", "can't start new thread"),
    ("cheat_keep_alive.py", "grad_W_C", "prctl refused"),
    ("cheat_renice_grader.py", "grad_W_C", "PermissionError: [Errno 1] Operation not permitted"),
    ("cheat_csv_formula.py", "error", "'=HYPERLINK("),
    ("cheat_fill_disk.py", "grad_W_C", "it passed its disk limit"),
    ("cheat_flood_output.py", "grad_W_C", "it passed its output limit"),
    ("cheat_markdown.py", "grad_W_C", "All tests passed"),
    # crashing the class run
    ("cheat_nested_json.py", "grad_W_C", "JSON nested deeper than"),
    ("cheat_forged_setup_error.py", "grad_W_C", "unexpected event 'setup_error'"),
    ("cheat_deep_tree.py", "grad_W_C", "Operation not permitted (cheat_deep_tree.py, line 17: os.fchmod"),
]
# file (graded under another name when given) -> (status, points): what it gets alone
HONEST = {
    "alice.py": ("gradients_solution.py", "passed", "10"), "gina.py": ("gating_solution.py", "passed", "10"),
    "erin.py": ("stack_solution.py", "passed", "10"), "correct_common.py": (None, "passed", "10"),
    "correct_from_the_paper.py": (None, "passed", "10"), "correct_stack.py": (None, "passed", "10"),
    "correct_gates_log_space.py": (None, "passed", "10"), "broken_sign.py": (None, "failed", "0"),
    "broken_no_suffix.py": (None, "failed", "0"), "broken_stack_residual.py": (None, "failed", "6"),
}


# every cheat file earns 0, but for what the grader cannot tell from a derivation
# (tutorials/INSTRUCTORS.md): cheat_exit_call's grad_W_B, which is honest; complex step on w's
# coordinates, as cheap as a derivation
UNSTOPPED = {"cheat_exit_call.py": "3", "cheat_complex_step.py": "4"}
CHEATS = sorted(p.name for p in STUDENTS.glob("cheat_*.py"))
SPECIAL = 4                                              # a symlink out, a 3 GB file, two hostile names


def _student(folder: Path, name: str, source: Path, victim: Path) -> None:
    """A student's folder holding ``source`` as ``name`` (a symlink stays one), with every helper a
    student file uses; _victim.py names ``victim``, the folder the harmful files aim at."""
    home = folder / Path(name).stem
    home.mkdir()
    shutil.copy(source, home / name, follow_symlinks=False)
    for helper in HELPERS:
        shutil.copy(STUDENTS / helper, home / helper)
    (home / "_victim.py").write_text(f"VICTIM = {str(victim)!r}\n")


def build_class(folder: Path, victim: Path) -> None:
    """Every cheat file, the honest files, a symlink to the solution, a 3 GB file and two hostile
    names, each student in a folder of their own under ``folder``; the harmful files aim at ``victim``."""
    for name in CHEATS:
        _student(folder, name, STUDENTS / name, victim)
    for name, (source, _, _) in HONEST.items():
        _student(folder, name, (SOLUTIONS / source) if source else STUDENTS / name, victim)
    (folder / "mallory").mkdir()
    (folder / "mallory" / "mallory.py").symlink_to(SOLUTIONS / "gradients_solution.py")
    (folder / "huge").mkdir()
    with open(folder / "huge" / "gradients.py", "wb") as f:       # 3 GB, sparse: never read whole
        f.truncate(3 * 2**30)
    (folder / "ines").mkdir()
    shutil.copy(SOLUTIONS / "gradients_solution.py", folder / "ines" / ESCAPED_NAME)
    os.mkdir(os.fsencode(folder) + b"/rene")
    shutil.copy(SOLUTIONS / "gradients_solution.py", os.fsencode(folder) + b"/rene/" + LATIN1_NAME)


IMAGE = r"""
set -e
umask 022                                           # as an image build: what root makes, others read
img="$1"; shift
if [ -n "{pyhome}" ]; then                        # the interpreter lives in a folder only root may enter
    mkdir -p "$img/home/{pyhome}"
    mount --rbind "{home}/{pyhome}" "$img/home/{pyhome}"
    mount --rbind "$img/home" "{home}"
fi
for name in {packages}; do
    if [ -d "{site}/$name" ]; then mkdir -p "$img/venv/{relative}/$name"; fi
    if [ -f "{site}/$name" ]; then touch "$img/venv/{relative}/$name"; fi
    if [ -e "{site}/$name" ]; then mount --rbind "{site}/$name" "$img/venv/{relative}/$name"; fi
done
for folder in /work /home /opt /srv /var/tmp; do
    mount -t tmpfs -o mode=755 tmpfs "$folder"
done
mount -t tmpfs tmpfs /mnt                       # /tmp: the test's own folders only, not what others left
for entry in /tmp/numpy_mamba_* /tmp/pytest-of-*; do
    [ -e "$entry" ] || continue
    name="${{entry#/tmp/}}"
    if [ -d "$entry" ]; then mkdir "/mnt/$name"; else touch "/mnt/$name"; fi
    mount --rbind "$entry" "/mnt/$name" 2>/dev/null || true     # gone meanwhile: another program's
done
mount -t tmpfs -o mode=1777 tmpfs /tmp
for entry in /mnt/*; do
    [ -e "$entry" ] || continue
    name="${{entry#/mnt/}}"
    if [ -d "$entry" ]; then mkdir "/tmp/$name"; else touch "/tmp/$name"; fi
    mount --rbind "$entry" "/tmp/$name" 2>/dev/null || true
done
cd /                                # not the caller's folder: `python -m` imports from the current folder
exec "$@"
"""


PACKAGES = ("numpy", "numpy.libs", "scipy", "scipy.libs", "pyseccomp.py")     # what the image's venv holds


def readable_copy(source: Path, target: Path, ignore=shutil.ignore_patterns("__pycache__")) -> None:
    """``source`` copied to ``target`` with the modes an image build gives (folders 0755, files 0644),
    not the clone's: a clone made with a umask of 027 has folders of 0750, which no other user enters."""
    if source.is_file():
        shutil.copyfile(source, target)
    else:
        shutil.copytree(source, target, ignore=ignore, copy_function=shutil.copyfile)
    for path in [target, *target.rglob("*")]:
        os.chmod(path, 0o755 if path.is_dir() else 0o644)


def _readable_by_others(tree: Path) -> bool:
    """Every folder of ``tree`` listed and entered, every file read, by a user who owns nothing."""
    need = {True: 0o005, False: 0o004}
    return all(p.stat().st_mode & need[p.is_dir()] == need[p.is_dir()] for p in [tree, *tree.rglob("*")])


@pytest.fixture(autouse=True, scope="module")
def image_umask():
    """What these tests make for a sandbox user to read (victims, classes, a checkout) is made as an
    image build makes it (umask 022), whatever the umask of the run (027 on hardened machines)."""
    caller = os.umask(0o022)
    yield
    os.umask(caller)


@contextmanager
def container_image():
    """This machine as a container prepared like a Gradescope image, seen through a mount
    namespace (``unshare``, root; nothing of the machine changes): the interpreter's home holds the
    interpreter only, /work, /home, /opt, /srv and /var/tmp are empty, /tmp holds the test's own
    folders only (not what other programs left there: a copy of this repository, say), and a venv
    of its own holds numpy, scipy and pyseccomp only.  Yields (wrap(command, user=None, prelude="") -> the
    command run in the image (as ``user``, after the shell commands ``prelude``), its python, a
    folder others can read, a root-only copy of this package (what the grader imports as root))."""
    top = Path(tempfile.mkdtemp(prefix="numpy_mamba_image_"))
    os.chmod(top, 0o755)
    private = Path(tempfile.mkdtemp(prefix="numpy_mamba_private_"))           # mode 700
    caller = os.umask(0o022)            # built as an image is, whatever the umask of the run
    try:
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(top / "venv")], check=True, timeout=120)
        public = top / "public"
        for folder in (private, public):
            readable_copy(ROOT / "numpy_mamba", folder / "numpy_mamba")
        os.chmod(public, 0o755)
        site, prefix, base = Path(numpy.__file__).resolve().parents[1], Path(sys.prefix).resolve(), Path(sys.base_prefix)
        home, pyhome = (Path("/root"), base.relative_to("/root").parts[0]) if base.is_relative_to("/root") else ("", "")
        installed = [site / name for name in PACKAGES if (site / name).exists()]
        if not all(_readable_by_others(tree) for tree in installed):     # a venv installed under umask 027
            (top / "packages").mkdir()
            for tree in installed:
                readable_copy(tree, top / "packages" / tree.name, ignore=None)
        script = IMAGE.format(home=home, pyhome=pyhome, site=top / "packages" if (top / "packages").exists() else site,
                              relative=site.relative_to(prefix), packages=" ".join(PACKAGES))

        def wrap(command, user=None, prelude=""):
            return (["unshare", "--mount", "--propagation", "private", "bash", "-c",
                     script.replace("\ncd /", f"\n{prelude}\ncd /", 1), "image", str(top)]
                    + (["runuser", "-u", user, "--"] if user else []) + list(command))
        os.umask(caller)
        yield wrap, str(top / "venv" / "bin" / "python"), public, private
    finally:
        os.umask(caller)
        shutil.rmtree(top, ignore_errors=True)
        shutil.rmtree(private, ignore_errors=True)


def tier_runs(wrap, python, private, outs: dict) -> dict:
    """The grade commands of ``replay`` at every tier: Landlock capped at ABI 7, 5 and 1 on this
    machine, and 0 as root in the ``container_image`` (its python, the root-only ``private`` copy
    of the package); ``outs``: {tier: out folder}."""
    runs = {cap: ([sys.executable, "-m", "numpy_mamba", "grade"],
                  dict(os.environ, PYTHONPATH=str(ROOT), NUMPY_MAMBA_SANDBOX_MAX_ABI=cap), outs[cap])
            for cap in ("7", "5", "1")}
    runs["0"] = (wrap([python, "-m", "numpy_mamba", "grade"]),
                 {"PATH": os.environ["PATH"], "LANG": "C.UTF-8", "PYTHONPATH": str(private),
                  "NUMPY_MAMBA_SANDBOX_MAX_ABI": "0"}, outs["0"])
    return runs


def _shm_segments() -> dict:
    """{shmid: the pid that created it} for every System V segment of the machine."""
    with open("/proc/sysvipc/shm") as f:
        return {int(fields[1]): int(fields[4]) for fields in (line.split() for line in f.readlines()[1:])}


def _running() -> set:
    """The pids of the processes running now."""
    return {int(name) for name in os.listdir("/proc") if name.isdigit()}


def segments_since(before: tuple) -> set:
    """The System V segments made since ``before`` = (_shm_segments(), _running()) by a process that
    was not running then: a run's leak, not a segment of a program that was already running (the
    other test process's replay, a desktop's X clients), whose segments come and go beside us."""
    segments, running = before
    return {shmid for shmid, creator in _shm_segments().items() if shmid not in segments and creator not in running}


def left_in(temporary: Path) -> list:
    """What a grader run left in its temporary folder: anything but a root grader's place, and
    anything in that place (the place stays, empty, for the next run)."""
    place = temporary / PLACE
    return [p for p in temporary.iterdir() if p != place] + (list(place.iterdir()) if place.is_dir() else [])


def replay(folder: Path, victim: Path, runs: dict) -> dict:
    """Grade ``folder`` with each of ``runs`` {name: (command up to its paths, env, out folder)}
    at once, into out/grades.csv with TMPDIR out/tmp, next to the ``victim`` folder (made here,
    root's, mode 755) and a System V segment of the grader's user holding a value.  Returns
    {name: what the run did and left}."""
    victim.mkdir(mode=0o755)
    (victim / "keep.txt").write_text("the instructor's file")
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmat.restype = ctypes.c_void_p
    segment = libc.shmget(0, 4096, 0o1600)                       # the grader's user keeps something here
    address = libc.shmat(segment, None, 0)
    ctypes.memmove(address, b"kept", 4)
    before, nice, started = (_shm_segments(), _running()), os.getpriority(os.PRIO_PROCESS, 0), {}
    try:
        for name, (command, env, out) in runs.items():
            (out / "tmp").mkdir(parents=True)
            for reached in (out, out / "tmp"):                   # the sandbox user reaches its folder there
                os.chmod(reached, 0o711)
            started[name] = subprocess.Popen(command + [str(folder), "--csv", str(out / "grades.csv"), "--time-limit",
                                                        "5", "--memory-limit", "512"], stdout=subprocess.PIPE,
                                             stderr=subprocess.STDOUT,
                                             env=dict(env, TMPDIR=str(out / "tmp"), **{SECRET: "s3cret-value"}))
        printed = {name: process.communicate(timeout=900)[0] for name, process in started.items()}
        time.sleep(1.0)                                  # a process that outlived the run would act now
        kept, left_in_victim = ctypes.string_at(address, 4), sorted(p.name for p in victim.iterdir())
    finally:
        libc.shmdt(ctypes.c_void_p(address))
        libc.shmctl(segment, 0, None)                            # IPC_RMID
        shutil.rmtree(victim, ignore_errors=True)
    found = {}
    for name, (_, _, out) in runs.items():
        grades = out / "grades.csv"
        found[name] = dict(status=started[name].returncode, grades=grades, left=left_in(out / "tmp"),
                           rows={Path(r["submission"]).name: r for r in csv.DictReader(grades.open())}
                           if grades.exists() else {}, text=grades.read_text() if grades.exists() else "",
                           printed=printed[name], kept=kept, segments=segments_since(before),
                           nice=(nice, os.getpriority(os.PRIO_PROCESS, 0)), victim=left_in_victim)
    return found


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


TIERS = {"7": "isolation: kernel sandbox: Landlock ABI 7", "5": "Landlock ABI 5 (capped",
         "1": "Landlock ABI 1 (capped", "0": "isolation: sandbox user: no Landlock (capped"}


@pytest.fixture(scope="module")
def replays(tmp_path_factory):
    """The class graded at every tier, all at once: Landlock ABI 7 (this machine's), capped at 5
    (RHEL 9.6) and 1 (Linux 5.13), and at 0 as root in a container-like image (the user tier)."""
    folder = tmp_path_factory.mktemp("class") / "submissions"
    folder.mkdir()
    victim = Path(tempfile.mkdtemp(prefix="numpy_mamba_victim_")) / "instructor"   # its own: runs at once never meet
    os.chmod(victim.parent, 0o755)
    build_class(folder, victim)
    outs = {cap: Path(tempfile.mkdtemp(prefix=f"numpy_mamba_out{cap}_")) for cap in TIERS}
    try:
        with container_image() as (wrap, python, _, private):
            yield replay(folder, victim, tier_runs(wrap, python, private, outs))
    finally:
        for made in list(outs.values()) + [victim.parent]:
            shutil.rmtree(made, ignore_errors=True)


@pytest.fixture(scope="module")
def class_run(replays):
    """The class at this machine's full tier (Landlock ABI 7, root)."""
    return replays["7"]


@pytest.mark.parametrize("cap", sorted(TIERS))
def test_no_marks_and_no_harm_at_every_tier(replays, cap):
    """Every tier that calls itself complete: ABI 7, 5 and 1 (below 6 seccomp does what Landlock's
    signal scoping does), and the user tier, whose start-up check of the image holds."""
    run = replays[cap]
    printed = run["printed"].decode("utf-8", "replace")
    why = printed[max(0, printed.find("image check")):][:600]
    assert TIERS[cap] in printed and (cap != "0" or "(image checked)" in printed), why
    assert_no_marks_and_no_harm(run)
    if cap != "0":
        assert "root:x:0:0" not in run["text"]                  # Landlock: not even /etc/passwd


def test_the_class_run_says_where_it_wrote(class_run):
    assert f"wrote {class_run['grades']} ({len(class_run['rows'])} submissions)".encode() in class_run["printed"]


@pytest.mark.parametrize("filename", sorted(HONEST))
def test_every_honest_file_gets_its_own_grade(class_run, filename):
    """What it gets graded alone (its status and points), whatever its classmates did."""
    _, status, points = HONEST[filename]
    row = class_run["rows"][filename]
    assert (row["status"], row["points"]) == (status, points), row


@pytest.mark.parametrize("filename, column, words", REFUSALS, ids=[f"{f}-{c}" for f, c, _ in REFUSALS])
def test_each_attack_is_refused_with_its_reason(class_run, filename, column, words):
    """At the full tier; a file stopped at import scores 0 of its exercise's 10 points."""
    row = class_run["rows"][filename]
    text = row["error"] if column == "error" else row[f"{column}_hint"]
    assert words in text, (filename, row)
    assert row["points"] == UNSTOPPED.get(filename, "0"), (filename, row)
    assert row["status"] != "import error" or row["max_points"] == "10", (filename, row)


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


def test_a_segment_of_a_program_already_running_is_not_counted_as_the_runs():
    """A run's leak is a segment made by a process born during the run; the other test process's
    replay keeps its own segment meanwhile (CI of stop 37 counted one at tiers 0 and 1 when the
    two test processes each replayed the class).  A neighbour that was running before makes one,
    a process started after makes one and ends: only the second is the run's."""
    make = "import ctypes, sys; print(ctypes.CDLL(None).shmget(0, 4096, 0o1600), flush=True)"
    neighbour = subprocess.Popen([sys.executable, "-c", f"import sys; sys.stdin.readline(); {make}; sys.stdin.read()"],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    made = []
    try:
        before = (_shm_segments(), _running())
        neighbour.stdin.write("go\n")
        neighbour.stdin.flush()
        made.append(int(neighbour.stdout.readline()))
        made.append(int(subprocess.run([sys.executable, "-c", make], capture_output=True, text=True,
                                       check=True).stdout))
        assert min(made) >= 0 and segments_since(before) == {made[1]}
    finally:
        neighbour.communicate("")
        libc = ctypes.CDLL(None)
        for shmid in made:
            libc.shmctl(shmid, 0, None)                          # IPC_RMID


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

"""Least privilege, replayed: every attack_*.py of tests/student_files/ graded next to an honest
file at every tier this machine can simulate (Landlock uncapped, capped at 5 and 1, and at 0: the
user tier, in a container-like image; all as root; and uncapped as an unprivileged user, an
instructor's account), all runs at once.  Links the students made next to their files (to the
solution, to the grader's environment, to root-only keys, hard links) are part of the class.
Then the user tier's own attacks in the situations that make them dangerous: a real user whose
uid a sandbox user could take, another grader run at the same time, a readable checkout named by
the installed package's direct_url.json.

A failure here means a submission earned marks, showed a secret, or changed a file it does not
own (its mode, times, extended attributes, contents or size), or a run ended without its CSV.
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

from numpy_mamba.grader.seed import SECRET_HEADER

from numpy_mamba.grader import sandbox
from test_grader_attacks import HELPERS, SECRET, container_image, image_umask  # noqa: F401 (an autouse fixture)

ROOT = Path(__file__).resolve().parent.parent
STUDENTS = ROOT / "tests" / "student_files"
SOLUTIONS = ROOT / "tests" / "solutions"
ATTACKS = sorted(p.name for p in STUDENTS.glob("attack_*.py"))
HARD = "attack_linked_solution_hard.py"            # attack_linked_solution.py with a hard link, not a symlink
RUNS = {"7": (None, "root"), "5": ("5", "root"), "1": ("1", "root"), "0": ("0", "root"), "nobody": (None, "nobody")}
NOBODY = 65534
TOKEN, KEY = "s3cret-token-8d2f", "KEY-5b1e9a"            # in the grader's environment; in its root-only files


def _state(path: Path) -> tuple:
    """What harm would change: mode, owner, contents, size, xattrs, and the times (ctime: any change)."""
    info = path.lstat()
    return (info.st_mode, info.st_uid, info.st_mtime_ns, info.st_ctime_ns, info.st_size,
            path.read_bytes() if path.is_file() else b"", os.listxattr(path, follow_symlinks=False))


def _victim(folder: Path) -> None:
    """A folder of the grader's holding keep.txt, mode 644, with an extended attribute."""
    folder.mkdir(parents=True)
    (folder / "keep.txt").write_text("the instructor's file\n")
    os.setxattr(folder / "keep.txt", "user.kept", b"1")


def _class(top: Path, owner: int) -> Path:
    """A class under ``top``, all of it ``owner``'s: alice (the solution) and every attack file in
    a folder of its own, each aiming at a victim folder of its own (top/victims/NAME), with the
    links they need to files only ``owner`` reads.  Returns the class folder."""
    folder, secrets = top / "class", top / "secrets"
    for made in (folder, secrets):
        made.mkdir(parents=True)
    shutil.copy(SOLUTIONS / "gradients_solution.py", secrets / "solution.py")
    shutil.copy(SOLUTIONS / "gradients_solution.py", secrets / "solution_hard.py")
    for name in ("key.txt", "key_hard.txt"):
        (secrets / name).write_text(f"{KEY}-{name}\n")
    for name, source in [(a, STUDENTS / a) for a in ATTACKS] + [(HARD, STUDENTS / "attack_linked_solution.py"),
                                                                ("alice.py", SOLUTIONS / "gradients_solution.py")]:
        home = folder / Path(name).stem
        home.mkdir()
        shutil.copy(source, home / name)
        for helper in HELPERS:
            shutil.copy(STUDENTS / helper, home / helper)
        _victim(top / "victims" / Path(name).stem)
        (home / "_victim.py").write_text(f"VICTIM = {str(top / 'victims' / Path(name).stem)!r}\n")
    (folder / "attack_linked_solution" / "_solution.py").symlink_to(secrets / "solution.py")
    os.link(secrets / "solution_hard.py", folder / Path(HARD).stem / "_solution.py")
    leaks = folder / "attack_linked_secrets"
    (leaks / "_leak_environ.py").symlink_to("/proc/self/environ")
    (leaks / "_leak_key.py").symlink_to(secrets / "key.txt")
    os.link(secrets / "key_hard.txt", leaks / "_leak_hard.py")
    for path in [top] + list(top.rglob("*")):
        os.chown(path, owner, owner, follow_symlinks=False)
    for path in secrets.iterdir():
        os.chmod(path, 0o600)
    os.chmod(top, 0o755)
    os.chmod(secrets, 0o700)
    os.chmod(folder, 0o700)                              # the class: the grader's alone (the user tier checks)
    return folder


def _victims(top: Path) -> dict:
    """{student: the states of their victim folder and its file}."""
    return {folder.name: [_state(folder), _state(folder / "keep.txt")] for folder in (top / "victims").iterdir()}


def _grade(command: list, folder: Path, out: Path) -> list:
    return command + [str(folder), "--csv", str(out / "grades.csv"), "--time-limit", "5", "--memory-limit", "512"]


@pytest.fixture(scope="module")
def replays():
    """The class graded at every tier at once; {run: its rows, CSV text, output, and the victims'
    states before and after}."""
    tops = {run: Path(tempfile.mkdtemp(prefix=f"numpy_mamba_privilege_{run}_")) for run in RUNS}
    try:
        with container_image() as (wrap, python, public, private):
            started, before = {}, {}
            for run, (cap, user) in RUNS.items():
                owner = NOBODY if user == "nobody" else 0
                folder, out = _class(tops[run], owner), tops[run] / "out"
                (out / "tmp").mkdir(parents=True)
                for made in (out, out / "tmp"):
                    os.chown(made, owner, owner)
                    os.chmod(made, 0o711)
                env = {"PATH": os.environ["PATH"], "LANG": "C.UTF-8", SECRET: TOKEN, "TMPDIR": str(out / "tmp")}
                env.update({sandbox.kernel.MAX_ABI: cap} if cap else {})
                if run in ("7", "5", "1"):
                    command, env["PYTHONPATH"] = [sys.executable, "-m", "numpy_mamba", "grade"], str(ROOT)
                else:
                    command = wrap([python, "-m", "numpy_mamba", "grade"], user=None if user == "root" else user)
                    env["PYTHONPATH"] = str(private if user == "root" else public)
                before[run] = _victims(tops[run])
                started[run] = subprocess.Popen(command + [str(folder), "--csv", str(out / "grades.csv"),
                                                           "--time-limit", "5", "--memory-limit", "512"],
                                                env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            printed = {run: process.communicate(timeout=600)[0] for run, process in started.items()}
            found = {}
            for run in RUNS:
                grades = tops[run] / "out" / "grades.csv"
                text = grades.read_text() if grades.exists() else ""
                found[run] = dict(rows={Path(r["submission"]).name: r for r in csv.DictReader(text.splitlines())},
                                  text=text, printed=printed[run].decode("utf-8", "replace"), before=before[run],
                                  after=_victims(tops[run]))
            yield found
    finally:
        for top in tops.values():
            shutil.rmtree(top, ignore_errors=True)


@pytest.mark.parametrize("run", sorted(RUNS))
def test_every_tier_grades_the_class_and_says_which_it_is(replays, run):
    """Every row written, alice's 10 points; the tier the run says it had."""
    found = replays[run]
    assert set(found["rows"]) == set(ATTACKS) | {HARD, "alice.py"}, found["printed"][-3000:]
    assert found["rows"]["alice.py"]["points"] == "10", found["rows"]["alice.py"]
    said = "isolation: sandbox user" if run == "0" else "isolation: kernel sandbox: Landlock ABI"
    assert said in found["printed"], found["printed"][:2000]


@pytest.mark.parametrize("name", ATTACKS + [HARD])
@pytest.mark.parametrize("run", sorted(RUNS))
def test_no_marks_no_secret_no_harm(replays, run, name):
    """Each attack at each tier: no points; its victim folder and file (mode, owner, times,
    xattrs, contents, size) as they were; no token of the grader's environment and no key of its
    files in its row."""
    found = replays[run]
    row = found["rows"].get(name)
    assert row is not None, found["printed"][-3000:]
    assert row["points"] == "0" and row["status"] != "passed", row
    assert found["after"][Path(name).stem] == found["before"][Path(name).stem], "it changed the grader's file"
    cells = json.dumps(row)
    assert TOKEN not in cells and KEY not in cells, row


@pytest.mark.parametrize("run", sorted(RUNS))
def test_links_next_to_a_submission_are_refused_with_a_row_that_says_so(replays, run):
    """A helper that is a symbolic link (to the solution, /proc/self/environ, a key) or a hard
    link (to a copy of the solution, to a key) refuses its submission, which is not graded."""
    rows = replays[run]["rows"]
    assert "is a symbolic link" in rows["attack_linked_solution.py"]["error"]
    assert "hard links to one file" in rows[HARD]["error"]
    assert rows["attack_linked_secrets.py"]["status"] == "not graded"
    assert "_leak_" in rows["attack_linked_secrets.py"]["error"]


def test_the_gradescope_runner_refuses_links_to_its_own_files(tmp_path):
    """On Gradescope the submission folder sits next to source/secret.seed (the secret seed),
    source/autograder.json and submission_metadata.json: helpers linking to them refuse the
    submission, and results.json shows none of them."""
    from numpy_mamba.grader import gradescope
    root = tmp_path / "autograder"
    (root / "source").mkdir(parents=True)
    (root / "submission").mkdir()
    (root / "source" / "autograder.json").write_text(json.dumps({"exercise": "gradients"}))
    (root / "source" / "secret.seed").write_text(f"{SECRET_HEADER}918273645\n")
    (root / "source" / "secret.seed").chmod(0o600)
    (root / "submission_metadata.json").write_text(json.dumps({"previous_submissions": ["SCORE-77"]}))
    shutil.copy(STUDENTS / "attack_linked_secrets.py", root / "submission" / "gradients.py")
    (root / "submission" / "_leak_seed.py").symlink_to("../source/secret.seed")
    (root / "submission" / "_leak_settings.py").symlink_to("../source/autograder.json")
    (root / "submission" / "_leak_metadata.py").symlink_to("../submission_metadata.json")
    data = gradescope.grade_root(root, json.loads((root / "source" / "autograder.json").read_text()),
                                 log=lambda line: None)
    shown = json.dumps(data)
    assert data["score"] == 0 and "918273645" not in shown and "SCORE-77" not in shown
    assert "is a symbolic link" in shown


def test_only_utf8_source_is_graded(tmp_path):
    """A coding cookie Python would honour (unicode_escape hides a pasted reference from the
    similarity flag) and Latin-1 bytes: each refused with a row naming why, the submission and a
    helper alike."""
    from numpy_mamba.grader.grade import Session, grade_submission
    solution = (SOLUTIONS / "gradients_solution.py").read_bytes()
    cases = {"cookie": (b"# -*- coding: unicode_escape -*-\n" + solution, "declares the encoding 'unicode_escape'"),
             "latin": (solution + b"\n# caf\xe9\n", "is not UTF-8")}
    session = Session()
    for name, (source, words) in cases.items():
        alone, helped = tmp_path / name / "alone", tmp_path / name / "helped"
        for folder in (alone, helped):
            folder.mkdir(parents=True)
        (alone / "gradients.py").write_bytes(source)
        shutil.copy(STUDENTS / "correct_common.py", helped / "gradients.py")
        (helped / "_common.py").write_bytes(source)
        for path in (alone / "gradients.py", helped / "gradients.py"):
            sub = grade_submission(path, session)
            assert sub.points == 0 and words in sub.problem, (name, path, sub.problem)


USER_TIER = ("attack_real_user.py", "attack_classmate_by_uid.py", "attack_direct_url.py", "alice.py")
ALUMNUS, CLASSMATE = "ALUMNUS-PRIVATE-4c7e", "CLASSMATE-SOURCE-91d3"


def _user_tier_world(top: Path, site: Path) -> tuple:
    """In ``top``: a real user, alumnus, uid 61000 (the first a sandbox user could take), with a
    private file and a .bashrc in a home of their own, and the passwd and group files naming
    them; a readable checkout with its solutions, which a direct_url.json in ``site`` (the
    image's site folder) names as the package's origin.  Returns (home, passwd, group, checkout)."""
    home, checkout = top / "home", top / "checkout"
    (checkout / "tests" / "solutions").mkdir(parents=True)
    (checkout / "setup.cfg").write_text("[metadata]\nname = numpy_mamba\n")
    shutil.copy(SOLUTIONS / "gradients_solution.py", checkout / "tests" / "solutions")
    record = site / "numpy_mamba-0.1.0.dist-info"
    record.mkdir()
    (record / "METADATA").write_text("Metadata-Version: 2.1\nName: numpy_mamba\nVersion: 0.1.0\n")
    (record / "direct_url.json").write_text(json.dumps({"url": checkout.as_uri(), "dir_info": {}}))
    home.mkdir(mode=0o700)
    (home / "private.txt").write_text(f"{ALUMNUS}\n")
    (home / ".bashrc").write_text("# alumnus's shell\n")
    for path in (home, home / "private.txt", home / ".bashrc"):
        os.chown(path, 61000, 61000)
    os.chmod(home / "private.txt", 0o600)
    passwd, group = top / "passwd", top / "group"
    passwd.write_text(Path("/etc/passwd").read_text() + f"alumnus:x:61000:61000::{home}:/bin/sh\n")
    group.write_text(Path("/etc/group").read_text() + "alumnus:x:61000:\n")
    return home, passwd, group, checkout


@pytest.fixture(scope="module")
def user_tier_run():
    """Root without Landlock, in the image prepared as setup.sh prepares it (``gradescope
    prepare``): a real user with uid 61000, another grader run staging bob's file in the same
    temporary folder at the same time (held open here), and the checkout the package was
    installed from, readable, named by direct_url.json.  Yields {attack: (its row, what it aimed
    at before, after)}, the run's output and the checkout."""
    top = Path(tempfile.mkdtemp(prefix="numpy_mamba_user_tier_"))
    shared = top / "tmp"
    try:
        os.chmod(top, 0o755)
        shared.mkdir()
        os.chmod(shared, 0o1777)                        # a temporary folder every user lists, as /tmp
        with container_image() as (wrap, python, public, private):
            site = next((Path(python).parents[1] / "lib").glob("python3*")) / "site-packages"
            home, passwd, group, checkout = _user_tier_world(top, site)
            folder, grades = top / "class", top / "grades.csv"
            for name in USER_TIER:
                (folder / Path(name).stem).mkdir(parents=True)
                shutil.copy(SOLUTIONS / "gradients_solution.py" if name == "alice.py" else STUDENTS / name,
                            folder / Path(name).stem / name)
            os.chmod(folder, 0o700)
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(tempfile, "tempdir", str(shared))
                with sandbox.Folder() as other_run:               # another grader run, grading bob now
                    staged = other_run.stage("bob.py", f"# {CLASSMATE}\n".encode(), {})
                    aimed = {"attack_real_user.py": [home, home / "private.txt", home / ".bashrc"],
                             "attack_classmate_by_uid.py": [staged], "attack_direct_url.py": []}
                    before = {name: [_state(p) for p in paths] for name, paths in aimed.items()}
                    prelude = f"mount --bind {passwd} /etc/passwd; mount --bind {group} /etc/group"
                    steps = (f"{python} -m numpy_mamba.grader.gradescope prepare {folder} && "
                             f"{python} -m numpy_mamba grade {folder} --csv {grades} --time-limit 5")
                    done = subprocess.run(wrap(["bash", "-c", steps], prelude=prelude), capture_output=True,
                                          timeout=600, env={"PATH": os.environ["PATH"], "LANG": "C.UTF-8",
                                                            "PYTHONPATH": str(private), "TMPDIR": str(shared),
                                                            sandbox.kernel.MAX_ABI: "0"})
                    after = {name: [_state(p) for p in paths] for name, paths in aimed.items()}
        text = grades.read_text() if grades.exists() else ""
        rows = {Path(r["submission"]).name: r for r in csv.DictReader(text.splitlines())}
        yield ({name: (rows.get(name), before.get(name), after.get(name)) for name in USER_TIER},
               (done.stdout + done.stderr).decode("utf-8", "replace"), checkout)
    finally:
        shutil.rmtree(top, ignore_errors=True)


@pytest.mark.parametrize("name", USER_TIER[:3])
def test_the_user_tiers_own_attacks_find_nothing(user_tier_run, name):
    """No sandbox user is alumnus or holds bob's files, so neither's files are read or changed;
    ``prepare`` closes the checkout direct_url.json names, so the solution is not read; alice
    keeps her 10 points and the CSV is written."""
    found, printed, checkout = user_tier_run
    row, before, after = found[name]
    assert row is not None and found["alice.py"][0]["points"] == "10", printed[-3000:]
    assert "isolation: sandbox user" in printed, printed[:2000]
    assert row["points"] == "0" and after == before, row
    assert ALUMNUS not in json.dumps(row) and CLASSMATE not in json.dumps(row), row
    assert checkout.stat().st_mode & 0o007 == 0, "prepare did not close the checkout direct_url.json names"


def test_the_fork_server_carries_no_secret_of_the_grader(monkeypatch, tmp_path):
    """What the grader starts gets a clean environment and a command line of its own (no token of
    the grader's environment, none of its arguments), so that a child reading /proc, as the user
    tier's may, learns nothing from them.  (A secret on the grader's own command line is readable
    there by every user: tutorials/INSTRUCTORS.md.)"""
    from numpy_mamba.grader.grade import Session, grade_submission
    from numpy_mamba.grader.sandbox.parent import SERVER
    monkeypatch.setenv(SECRET, TOKEN)
    SERVER.reset()                                           # started anew, with this environment
    shutil.copy(SOLUTIONS / "gradients_solution.py", tmp_path / "gradients.py")
    assert grade_submission(tmp_path / "gradients.py", Session()).points == 10
    pid = SERVER.process.pid
    environ, cmdline = (Path(f"/proc/{pid}/{name}").read_bytes() for name in ("environ", "cmdline"))
    assert TOKEN.encode() not in environ and SECRET.encode() not in environ
    assert os.fsdecode(cmdline).split("\0")[1:4] == ["-I", sandbox.parent.CHILD, "--server"]
    assert len(cmdline.split(b"\0")) == 6, "more than the interpreter, child.py and its socket"


# Appended to the solution: what an honest file might do besides computing, run at import.
WIDE = '''

import collections, dataclasses, functools, itertools, json, math, os, random, sys, tempfile, time, warnings  # noqa
import scipy.linalg  # noqa

started, cpu = time.perf_counter(), time.process_time()
rng = np.random.default_rng()
x = rng.standard_normal((20, 20))
np.linalg.eigh(x + x.T), scipy.linalg.solve(np.eye(3), np.ones(3))
random.random(), os.getpid(), os.cpu_count(), time.time(), time.monotonic(), json.dumps({"a": [1]})
warnings.warn("a warning")
try:
    with open("scratch.txt", "w") as f:
        f.write("x")
    with open("scratch.txt") as f:
        f.read()
    os.remove("scratch.txt")
    with tempfile.TemporaryDirectory() as folder:
        np.save(os.path.join(folder, "x.npy"), x)
        np.load(os.path.join(folder, "x.npy"))
    print("scratch: written")
except OSError as exc:
    print(f"scratch: {exc}")
print(f"took {time.perf_counter() - started:.3f} s, {time.process_time() - cpu:.3f} s of CPU", file=sys.stderr)
'''


@pytest.mark.parametrize("abi", ["7", "3", "1"])
def test_an_honest_file_that_does_more_than_compute_keeps_its_marks(abi, monkeypatch, tmp_path):
    """The allowlist lets honest code do what it does besides computing: import more of the
    standard library and scipy, draw random numbers, time itself, warn, and write, read and remove
    a scratch file and a temporary folder in its working directory (below ABI 3 too, where
    O_TRUNC is allowed only with write access).  (The user tier, which writes nothing:
    tests/test_grader_attacks.py's replay of honest files.)"""
    from numpy_mamba.grader.grade import Session, grade_submission
    monkeypatch.setenv(sandbox.kernel.MAX_ABI, abi)
    (tmp_path / "gradients.py").write_text((SOLUTIONS / "gradients_solution.py").read_text() + WIDE)
    sub = grade_submission(tmp_path / "gradients.py", Session(isolation=sandbox.isolation()))
    assert sub.points == 10 and "scratch: written" in sub.output, (sub.error, sub.output)


def test_a_sandbox_user_held_anywhere_on_the_machine_is_not_taken_again():
    """Another process (another grader run) holds one; this process takes two at once: three
    different uids, none a user's or a group's of this machine; the locks live in a folder only
    root can use."""
    import grp
    import pwd
    from numpy_mamba.grader.sandbox.users import take_user
    holder = subprocess.Popen([sys.executable, "-c", "from numpy_mamba.grader.sandbox.users import take_user\n"
                               "print(take_user(everywhere=False)[0], flush=True)\ninput()"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    taken = []
    try:
        held = int(holder.stdout.readline())
        taken = [take_user(everywhere=False), take_user(everywhere=False)]
        uids = {held} | {uid for uid, _ in taken}
        assert len(uids) == 3, uids
        for uid in uids:
            with pytest.raises(KeyError):
                pwd.getpwuid(uid)
            with pytest.raises(KeyError):
                grp.getgrgid(uid)
        locks = os.stat("/run/numpy_mamba-sandbox-users" if os.path.isdir("/run") else "/tmp/numpy_mamba-sandbox-users")
        assert locks.st_uid == 0 and locks.st_mode & 0o077 == 0
    finally:
        for _, fd in taken:
            os.close(fd)
        holder.communicate("")


def test_no_moment_of_staging_lets_another_user_read_a_byte(monkeypatch):
    """Traced line by line while the grader makes a submission's folder, copies its files and
    makes a working directory (umask 022, a temporary folder every user lists, as /tmp): at every
    line, each file holding a byte is a sandbox user's alone (no group or other bits) and no
    folder of it is listable by other users, so no child of another run, polling the temporary
    folder, can open a classmate's copy at any moment."""
    from numpy_mamba.grader.sandbox import staging
    from numpy_mamba.grader.sandbox.kernel import SANDBOX_UID
    temporary = Path(tempfile.mkdtemp(prefix="numpy_mamba_staging_"))
    os.chmod(temporary, 0o1777)
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))
    open_to_others = []

    def look(frame, event, arg):
        for path in temporary.rglob("*"):
            info = path.lstat()
            if (path.is_file() and info.st_size and (info.st_mode & 0o077 or info.st_uid < SANDBOX_UID)) \
                    or (path.is_dir() and info.st_mode & 0o004):
                open_to_others.append((frame.f_lineno, str(path.relative_to(temporary)), oct(info.st_mode),
                                       info.st_uid))
        return look

    umask = os.umask(0o022)
    sys.settrace(lambda frame, event, arg: look if frame.f_code.co_filename == staging.__file__ else None)
    try:
        with sandbox.Folder() as box:
            box.stage("bob.py", b"# bob's answers\n" * 500, {"_bob_core.py": b"CORE = 1\n"})
            box.workdir()
    finally:
        sys.settrace(None)
        os.umask(umask)
        shutil.rmtree(temporary, ignore_errors=True)
    assert not open_to_others, open_to_others[:5]


# Sandbox users far up their range, which no grader run beside these tests reaches (each takes the
# lowest free one): their uid is the test's alone.
FAR = "sandbox.users.SANDBOX_UID, sandbox.users.USERS = 61150, 30\n"
KILLED = """import os, signal
from numpy_mamba.grader import sandbox
""" + FAR + """box = sandbox.Folder()
print(box.uid, box.stage("bob.py", b"# bob's answers\\n", {}), flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_what_a_killed_run_left_is_gone_before_its_user_is_handed_out_again(monkeypatch):
    """A grader killed while bob's copy is staged (its temporary folder one of its own) leaves
    the copy, bob's sandbox user's; a later run under another temporary folder that takes that
    user again finds the copy removed, so its child cannot read it."""
    first, second = (Path(tempfile.mkdtemp(prefix="numpy_mamba_killed_")) for _ in range(2))
    for made in (first, second):
        os.chmod(made, 0o1777)
    held = []
    try:
        done = subprocess.run([sys.executable, "-c", KILLED], capture_output=True, text=True, timeout=300,
                              env=dict(os.environ, PYTHONPATH=str(ROOT), TMPDIR=str(first)))
        uid, copy = done.stdout.split()
        uid, copy = int(uid), Path(copy)
        assert done.returncode == -9 and copy.stat().st_uid == uid, done.stderr
        monkeypatch.setattr(tempfile, "tempdir", str(second))
        monkeypatch.setattr(sandbox.users, "SANDBOX_UID", 61150)
        monkeypatch.setattr(sandbox.users, "USERS", 30)
        while len(held) < 8 and uid not in [box.uid for box in held]:     # lower users freed meanwhile come first
            held.append(sandbox.Folder())
        assert not copy.exists(), f"uid {uid} handed out again with bob's copy still there"
    finally:
        for box in held:
            box.close()
        for made in (first, second):
            shutil.rmtree(made, ignore_errors=True)


NEXT_USER = "from numpy_mamba.grader import sandbox\n" + FAR + "with sandbox.Folder() as box:\n    print(box.uid)"


def test_a_file_of_a_sandbox_uid_deep_in_a_folder_others_enter_keeps_that_uid_from_every_child():
    """A file of the uid the next run would take, which no user of the system's databases has (a
    deleted user's, an extracted archive's), one folder down in a temporary folder: at the user
    tier, where a child reads what others may, no child gets that uid."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    top = Path(tempfile.mkdtemp(prefix="numpy_mamba_deep_"))
    try:
        uid = int(subprocess.run([sys.executable, "-c", NEXT_USER], env=env, capture_output=True, text=True,
                                 check=True, timeout=300).stdout)
        (top / "inner").mkdir()
        (top / "inner" / "private.txt").write_text(f"{ALUMNUS}\n")
        os.chown(top / "inner" / "private.txt", uid, uid)
        for path, mode in ((top, 0o755), (top / "inner", 0o755), (top / "inner" / "private.txt", 0o600)):
            os.chmod(path, mode)
        again = int(subprocess.run([sys.executable, "-c", NEXT_USER], env=env, capture_output=True, text=True,
                                   check=True, timeout=300).stdout)
        assert again != uid, f"uid {uid} handed out with {top}/inner/private.txt its own"
    finally:
        shutil.rmtree(top, ignore_errors=True)

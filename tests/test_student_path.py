"""The student guide followed from a fresh clone: the commands of tutorials/README.md reach a graded
hand-out, as a Python file and as a notebook, without a wrong path; the clone stays clean; the
model answers are not next to the hand-outs; make_exercises.py --check says what it checked; the
commands' --help reads as plain text.

The walk-through copies what a clone holds (the package, tutorials/, .gitignore) into a temporary
folder made a git repository, then runs, in order, every command of the guide's section "Doing an
exercise and checking it" (`python` meaning this interpreter): the hand-outs are graded as they
are, stubs (exit status 1, every function "not attempted"), then filled in with the model answers
(exit status 0, every function "pass").  A failure means the guide names a file the commands do
not write, a hand-out that does not grade, or the student's work shows in `git status`.
"""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from numpy_mamba.cli import COMMANDS, main
from numpy_mamba.site import notebooks

ROOT = Path(__file__).resolve().parent.parent
GUIDE = ROOT / "tutorials" / "README.md"
INSTRUCTORS = ROOT / "tutorials" / "INSTRUCTORS.md"
SOLUTIONS = ROOT / "tests" / "solutions"
SECTION = "## Doing an exercise and checking it"
GIT = ["git", "-c", "user.name=student", "-c", "user.email=student@example.org", "-c", "init.defaultBranch=main"]


def guide_commands(text: str, section: str = SECTION) -> list:
    """The shell commands of the ```bash blocks of one section of the guide, comments dropped."""
    body = text.split(section, 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```bash\n(.*?)```", body, re.S)
    return [line.split("  #")[0].strip() for block in blocks for line in block.splitlines() if line.strip()]


def _clone(folder: Path) -> Path:
    """What a fresh clone holds for a student, as a git repository with one commit."""
    folder.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.ipynb", ".ipynb_checkpoints")
    for name in ("numpy_mamba", "tutorials"):
        shutil.copytree(ROOT / name, folder / name, ignore=ignore)
    for name in (".gitignore", "README.md", "setup.cfg", "pyproject.toml"):
        shutil.copy2(ROOT / name, folder / name)
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "clone"]):
        subprocess.run(GIT + args, cwd=folder, check=True, capture_output=True)
    return folder


def _run(command: str, cwd: Path) -> subprocess.CompletedProcess:
    words = command.split()
    assert words[0] in ("python", "cp"), f"the guide's command {command!r} is not one this walk-through runs"
    if words[0] == "python":
        words[0] = sys.executable
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    env.pop("PYTHONPATH", None)                            # the clone's own numpy_mamba, as `python -m` finds it
    return subprocess.run(words, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def _graded(command: str) -> Path:
    return Path(command.split()[-1])


def _rows(stdout: str) -> dict:
    """{function: result} from the grader's table ('grad_W_C (public) not attempted ...')."""
    return {m.group(1): m.group(2) for m in re.finditer(r"^(\w+) \(public\)\s+(pass|FAIL|not attempted)\b", stdout, re.M)}


def test_the_guide_followed_from_a_fresh_clone_reaches_graded_hand_outs(tmp_path):
    clone = _clone(tmp_path / "clone")
    commands = guide_commands(GUIDE.read_text())
    grades = [c for c in commands if c.startswith("python -m numpy_mamba grade ")]
    assert any(c.endswith(".py") for c in grades) and any(c.endswith(".ipynb") for c in grades), (
        f"the guide must show how to grade a .py copy and a notebook: {commands}")

    for command in commands:                               # the hand-outs as they are: stubs
        result = _run(command, clone)
        if command in grades:
            rows = _rows(result.stdout)
            assert result.returncode == 1 and rows and set(rows.values()) == {"not attempted"}, (
                f"{command}: a stub must grade as 'not attempted' with exit status 1; got {result.returncode}\n"
                f"{result.stdout[-2000:]}{result.stderr[-2000:]}")
        else:
            assert result.returncode == 0, f"{command} failed:\n{result.stdout[-2000:]}{result.stderr[-2000:]}"

    for command in grades:                                 # each hand-out filled in with the model answer
        target = clone / _graded(command)
        exercise = target.stem.removeprefix("my_")
        solution = SOLUTIONS / f"{exercise}_solution.py"
        if target.suffix == ".py":
            shutil.copy(solution, target)
        else:
            nb = nbformat.read(target, as_version=4)
            prose = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
            assert command in prose, f"the notebook {target.name} must give the guide's command {command!r}"
            nbformat.write(notebooks.exercise_notebook(solution, _graded(command).as_posix()), target)
        result = _run(command, clone)
        rows = _rows(result.stdout)
        assert result.returncode == 0 and rows and set(rows.values()) == {"pass"}, (
            f"{command} on the model answer: exit {result.returncode}\n{result.stdout[-2000:]}{result.stderr[-2000:]}")

    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=clone,
                            capture_output=True, text=True, check=True).stdout
    assert status == "", f"the student's work shows in git status of the clone:\n{status}"


def test_the_guide_opens_notebooks_with_a_command_the_notebooks_extra_installs():
    commands = [c for section in ("## Three ways to open a tutorial",) for c in guide_commands(GUIDE.read_text(), section)]
    opener = [c for c in commands if "jupyter" in c]
    assert opener == [f"python -m jupyterlab {notebooks.DEFAULT_OUT}"], opener
    assert f"python -m numpy_mamba notebooks" in " ".join(commands)


def test_the_model_answers_are_not_next_to_the_hand_outs():
    """A student who follows the guide copies from tutorials/exercises/ and works in the clone's root:
    no model answer is in tutorials/, and both guides say where they are."""
    assert not list((ROOT / "tutorials").rglob("*_solution.py")), "a model answer sits in tutorials/"
    where = SOLUTIONS.relative_to(ROOT).as_posix()
    for guide in (GUIDE, INSTRUCTORS):
        assert f"{where}/" in guide.read_text(), f"{guide.name} must say where the model answers are ({where}/)"


def test_make_exercises_check_says_what_it_checked(capsys):
    sys.path.insert(0, str(ROOT / "tutorials"))
    try:
        import make_exercises
    finally:
        sys.path.remove(str(ROOT / "tutorials"))
    assert make_exercises.main(["--check"]) == 0
    said = capsys.readouterr().out
    for path in make_exercises.generate():
        assert path.name in said, f"--check must name every exercise it checked; said {said!r}"
    assert make_exercises.SOLUTIONS.relative_to(ROOT).as_posix() in said


@pytest.mark.parametrize("command", [c for c in COMMANDS if c not in ("grade", "gradescope")])
def test_command_help_reads_as_plain_text(command, capsys):
    """No reST markup (``code``, :role:`x`, a '::' literal-block marker) in a command's --help."""
    with pytest.raises(SystemExit) as done:
        main([command, "--help"])
    assert done.value.code == 0
    text = capsys.readouterr().out
    assert "usage: python -m numpy_mamba " + command in text
    for markup in ("``", ":func:`", ":class:`", "::\n"):
        assert markup not in text, f"`{command} --help` shows reST markup {markup!r}"

"""The tutorials as plain scripts: each step prints a checked number, the figures hide nothing, and
where the figures go when no window can open.

Every numbered tutorial (tutorials/NN_*.py, not make_exercises.py nor the exercises/ subfolder) runs
once per session as a script in quick mode (NUMPY_MAMBA_QUICK=1), in a subprocess with MPLBACKEND=Agg
(no window can open), TMPDIR pointing to a fresh temporary folder and another fresh folder as working
directory.  It must exit 0; print, in every step (each "## " heading it prints), at least one line

    check: WHAT = VALUE (expected EXPECTATION): MEANING

whose VALUE meets its EXPECTATION when read back from the printed text (and no "check FAILED" line);
save every figure in the temp folder and print its path; name that folder in its closing line; write
nothing into the repository or its working directory; and draw no figure whose legend covers data
or where one line hides another (tests/figure_checks.py, measured on each figure as show_figure gets
it).  tests/test_notebooks.py executes some of them as notebooks too.  For every tutorial, a static
check that each figure goes through show_figure (so none is lost under Agg).  The figure helper
``numpy_mamba.site.tutorial.show_figure`` and the check line's ``check`` are tested on their own below.
"""
import ast
import json
import operator
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import matplotlib
import matplotlib.pyplot as plt
import pytest

from numpy_mamba.site import tutorial as output

ROOT = Path(__file__).resolve().parent.parent
TUTORIALS = sorted((ROOT / "tutorials").glob("[0-9][0-9]_*.py"))    # the numbered tutorials
TIMEOUT_S = 180             # hard stop for a hung tutorial
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
SAVED_LINE = re.compile(r"^saved figure (.+?\.png)  \(", re.M)
CHECK_LINE = re.compile(r"^check(?P<failed> FAILED)?: (?P<body>.*)$", re.M)
PREAMBLE = '''if importlib.util.find_spec("numpy_mamba") is None:    # a clone without `pip install .`
    here = Path(__file__).resolve().parent if "__file__" in globals() else Path.cwd()
    sys.path.insert(0, str(here.parent))
'''
# Runs the tutorial as `python TUTORIAL` would (runpy, __name__ == "__main__"), with show_figure wrapped
# so that each figure is measured (tests/figure_checks.py) before it is saved; the findings go to a JSON file.
RUNNER = '''import json, runpy, sys
tutorial, findings, tests = sys.argv[1:4]
sys.path.insert(0, tests)
import figure_checks
from numpy_mamba.site import tutorial as output
show_figure, seen = output.show_figure, []
def measured(fig, name):
    seen.append({"name": name, "legends": figure_checks.legends_over_data(fig), "hidden": figure_checks.hidden_lines(fig)})
    return show_figure(fig, name)
output.show_figure = measured
sys.argv = [tutorial]
runpy.run_path(tutorial, run_name="__main__")
with open(findings, "w") as f:
    json.dump(seen, f)
'''


class ScriptRun(NamedTuple):
    """One tutorial run as a script: what it printed, where it ran, and what its figures showed."""
    path: Path
    result: subprocess.CompletedProcess
    cwd: Path
    tmp: Path
    repo_changed: bool
    figures: list


def _repo_state():
    """Untracked and modified files of the repository (to catch a tutorial writing into it)."""
    try:
        out = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=ROOT,
                             capture_output=True, text=True)
    except OSError:                       # no git: skip this part of the check
        return None
    return out.stdout if out.returncode == 0 else None


def _figure_names(text):
    """The names the tutorial passes to show_figure, in order."""
    return re.findall(r'show_figure\(\w+, "([^"]+)"\)', text)


def test_tutorials_are_found():
    names = [p.name for p in TUTORIALS]
    assert len(names) >= 8, f"expected tutorials 01-08 in tutorials/, found {names}"
    for k in range(1, 9):
        assert any(n.startswith(f"0{k}_") for n in names), f"tutorial 0{k}_*.py is missing"


@pytest.fixture(scope="module", params=TUTORIALS, ids=[p.name for p in TUTORIALS])
def script_run(request, tmp_path_factory) -> ScriptRun:
    """The tutorial run once as a script in quick mode, in fresh folders, figures measured as drawn."""
    path = request.param
    base = tmp_path_factory.mktemp(path.stem)
    cwd, tmp = base / "cwd", base / "tmp"
    cwd.mkdir()
    tmp.mkdir()
    env = dict(os.environ, NUMPY_MAMBA_QUICK="1", MPLBACKEND="Agg", TMPDIR=str(tmp),
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
               OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    env.pop("NUMPY_MAMBA_FIGDIR", None)
    findings = base / "figures.json"
    before = _repo_state()
    result = subprocess.run([sys.executable, "-c", RUNNER, str(path), str(findings), str(ROOT / "tests")], cwd=cwd,
                            env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
    figures = json.loads(findings.read_text()) if findings.exists() else []
    return ScriptRun(path, result, cwd, tmp, _repo_state() != before, figures)


def _failure(run: ScriptRun) -> str:
    return (f"{run.path.name} exited with {run.result.returncode}\n--- stdout (tail) ---\n{run.result.stdout[-3000:]}\n"
            f"--- stderr (tail) ---\n{run.result.stderr[-3000:]}")


def test_tutorial_runs_as_a_script_and_saves_its_figures(script_run):
    """Exit 0, nothing written into the repo or the cwd, every figure saved where it says, and the closing line."""
    run, path = script_run, script_run.path
    assert run.result.returncode == 0, _failure(run)
    assert "Traceback" not in run.result.stderr
    assert list(run.cwd.iterdir()) == [], f"{path.name} wrote files into its working directory: {list(run.cwd.iterdir())}"
    assert not run.repo_changed, f"{path.name} changed files in the repository"

    # Under Agg no window can open: every figure must be saved in the temp folder, and its path printed.
    names = _figure_names(path.read_text())
    folder = run.tmp / output.TEMP_FIGURE_FOLDER
    printed = [Path(p) for p in SAVED_LINE.findall(run.result.stdout)]
    assert printed == [folder / f"{name}.png" for name in names], (
        f"{path.name}: show_figure was called for {names}, but the lines 'saved figure PATH' printed {printed} "
        f"(expected each under {folder})")
    for png in printed:
        assert png.read_bytes()[:8] == PNG_MAGIC, f"{path.name}: {png} is not a PNG file"
    assert sorted(folder.iterdir() if folder.exists() else []) == sorted(printed), (
        f"{path.name} saved files it did not announce: {sorted(folder.iterdir())}")
    last = run.result.stdout.rstrip().splitlines()[-1]
    assert last.startswith(f"Done: tutorial {int(path.name[:2])}, ") and last.endswith(f"; figure saved in {folder}"), (
        f"{path.name}: the last line must be 'Done: tutorial N, <what was shown>; figure saved in FOLDER', got {last!r}")


def _check_parts(body: str) -> tuple:
    """(what, value, expectation, meaning) of a check line's text after 'check: '."""
    head, found, tail = body.partition(" (expected ")
    what, _, value = head.rpartition(" = ")
    expectation, _, meaning = tail.partition("): ")
    assert found and what and value and expectation and meaning, f"a check line not of the form " \
        f"'check: WHAT = VALUE (expected EXPECTATION): MEANING': {body!r}"
    return what, value, expectation, meaning


COMPARE = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}


def _meets(value: str, expectation: str) -> bool:
    """Whether the printed value meets the printed expectation, read back from the text alone."""
    try:
        v = ast.literal_eval(value)
    except (ValueError, SyntaxError):                  # nan, inf, or not a literal: never a pass
        return False
    word, _, rest = expectation.partition(" ")
    if word in COMPARE:
        return COMPARE[word](float(v), float(rest))
    if word == "==":
        return v == ast.literal_eval(rest)
    if word == "between":
        low, _, high = rest.partition(" and ")
        return float(low) <= float(v) <= float(high)
    center, plus_minus, tolerance = expectation.partition(" +- ")
    assert plus_minus, f"unknown expectation {expectation!r}"
    return abs(float(v) - float(center)) <= float(tolerance)


def test_every_step_prints_a_check_that_holds(script_run):
    """Every printed section (a '## ' heading) has at least one check line, every check line holds
    when its printed value is compared with its printed expectation, and none says FAILED."""
    run, path = script_run, script_run.path
    assert run.result.returncode == 0, _failure(run)
    printed = run.result.stdout
    headings = re.findall(r"^# ## (.+)$", path.read_text(), re.M)
    sections = re.split(r"^## ", printed, flags=re.M)[1:]
    assert len(sections) == len(headings), (f"{path.name}: {len(headings)} section headings in the prose, but "
                                            f"{len(sections)} printed ('## ...' lines)")
    for section in sections:
        title = section.splitlines()[0]
        checks = CHECK_LINE.findall(section)
        assert checks, f"{path.name}, step '{title}': prints no 'check: ...' line, so a reader cannot check it"
        for failed, body in checks:
            what, value, expectation, _ = _check_parts(body)
            assert not failed, f"{path.name}, step '{title}': check FAILED: {body}"
            assert _meets(value, expectation), (
                f"{path.name}, step '{title}': the printed value {value} of {what!r} does not meet 'expected "
                f"{expectation}'")


def test_no_figure_covers_or_hides_its_data(script_run):
    """No legend over a line, a point or a bar, and no line drawn on another with nothing to tell them apart."""
    run = script_run
    assert run.result.returncode == 0, _failure(run)
    assert [f["name"] for f in run.figures] == _figure_names(run.path.read_text())
    problems = [f"{f['name']}: {p}" for f in run.figures for p in f["legends"] + f["hidden"]]
    assert not problems, f"{run.path.name}: " + "; ".join(problems)


@pytest.mark.parametrize("path", TUTORIALS, ids=[p.name for p in TUTORIALS])
def test_every_figure_goes_through_show_figure(path):
    """A figure made with pyplot but never passed to show_figure would be silently lost under Agg."""
    text = path.read_text()
    made = len(re.findall(r"plt\.(?:subplots|figure)\(", text))
    names = _figure_names(text)
    assert made == len(names), f"{path.name} makes {made} figure(s) but passes {len(names)} to show_figure"
    assert names, f"{path.name} draws no figure: each tutorial ends with one, shown inline or saved"
    assert len(set(names)) == len(names), f"{path.name}: two figures share a name, one would overwrite the other"
    assert all(name.startswith(path.name[:3]) for name in names), (
        f"{path.name}: figure names {names} must start with the tutorial number, so files of different "
        "tutorials do not collide in the shared folder")


@pytest.mark.parametrize("path", TUTORIALS, ids=lambda p: p.name)
def test_tutorial_format(path):
    """Percent format with prose cells, equation numbers quoted, LaTeX math, run time stated at the top,
    and the same preamble that lets it run from a clone without `pip install .`."""
    text = path.read_text()
    assert text.startswith("# %% [markdown]\n"), f"{path.name} must open with a markdown cell"
    assert text.count("# %% [markdown]") >= 4 and text.count("\n# %%\n") >= 4, f"{path.name}: too few cells"
    header = text.split("\n# %%\n", 1)[0]
    assert "Paper:" in header and "Run:" in header, f"{path.name}: header must cite the paper and say how to run"
    assert "eq (" in text or "eqs (" in text, f"{path.name} quotes no equation number"
    assert PREAMBLE in text, f"{path.name}: the sys.path preamble differs from the other tutorials'"
    markdown = "\n".join(cell for cell in re.split(r"\n# %%", "\n" + text) if cell.startswith(" [markdown]"))
    assert re.search(r"\$[^$\n]+\$", markdown), f"{path.name}: no LaTeX math ($...$) in the prose cells"
    assert markdown.count("$$") % 2 == 0, f"{path.name}: an odd number of $$, one display equation is unclosed"
    assert "NUMPY_MAMBA_FIGDIR" not in text and "def show(" not in text, (
        f"{path.name}: use numpy_mamba.site.tutorial.show_figure rather than a figure helper of its own")


# --- show_figure, the figure helper of the tutorials ------------------------------------------------------------


@pytest.mark.parametrize("backend, window", [("agg", False), ("Agg", False), ("pdf", False), ("svg", False),
                                             ("TkAgg", True), ("QtAgg", True), ("macosx", True),
                                             ("module://matplotlib_inline.backend_inline", True)])
def test_opens_window_knows_the_non_interactive_backends(backend, window):
    assert output.opens_window(backend) is window, f"backend {backend!r}: expected opens_window = {window}"


def test_show_figure_saves_in_the_temp_folder_when_no_window_can_open(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv(output.FIGDIR_VARIABLE, raising=False)
    monkeypatch.setattr(output.tempfile, "gettempdir", lambda: str(tmp_path))
    monkeypatch.setattr(matplotlib, "get_backend", lambda: "agg")
    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    path = output.show_figure(fig, "99_test")
    expected = tmp_path / output.TEMP_FIGURE_FOLDER / "99_test.png"
    assert path == expected and expected.read_bytes()[:8] == PNG_MAGIC
    assert f"saved figure {expected}  (" in capsys.readouterr().out, "show_figure must print where it saved"
    assert not plt.fignum_exists(fig.number), "show_figure must close the figure"


def test_show_figure_honours_NUMPY_MAMBA_FIGDIR_even_when_a_window_opens(tmp_path, monkeypatch, capsys):
    folder = tmp_path / "slides" / "new"                      # created if missing
    monkeypatch.setenv(output.FIGDIR_VARIABLE, str(folder))
    monkeypatch.setattr(matplotlib, "get_backend", lambda: "TkAgg")
    shown = []
    monkeypatch.setattr(plt, "show", lambda *a, **k: shown.append(True))
    fig, _ = plt.subplots()
    path = output.show_figure(fig, "99_test")
    assert path == folder / "99_test.png" and path.read_bytes()[:8] == PNG_MAGIC
    assert shown == [True], "with a window available the figure must also be shown"
    assert "NUMPY_MAMBA_FIGDIR" in capsys.readouterr().out


def test_show_figure_only_shows_when_a_window_opens_and_no_folder_is_set(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv(output.FIGDIR_VARIABLE, raising=False)
    monkeypatch.setattr(output.tempfile, "gettempdir", lambda: str(tmp_path))
    monkeypatch.setattr(matplotlib, "get_backend", lambda: "TkAgg")
    shown = []
    monkeypatch.setattr(plt, "show", lambda *a, **k: shown.append(True))
    fig, _ = plt.subplots()
    assert output.show_figure(fig, "99_test") is None
    assert shown == [True] and list(tmp_path.iterdir()) == [] and capsys.readouterr().out == ""


@pytest.mark.parametrize("name", ["", "a/b", "../x", ".", 3])
def test_show_figure_rejects_a_name_that_is_not_a_plain_file_name(name):
    fig, _ = plt.subplots()
    try:
        with pytest.raises(ValueError, match="plain file name"):
            output.show_figure(fig, name)
    finally:
        plt.close(fig)


# --- check, the tutorials' printed expectation ------------------------------------------------------------------


@pytest.mark.parametrize("value, expected", [(1e-17, "<= 1e-12"), (0.598, "0.6 +- 0.012"), ((8, 31, 21), "== (8, 31, 21)"),
                                             (0.7, "between 0.5 and 1"), (-3.3, "< -1.792"), (3, ">= 2"),
                                             (True, "== True"), (0.0, "== 0.0")])
def test_check_prints_one_line_that_reads_back_as_passed(value, expected, capsys):
    assert output.check("the thing", value, expected, "what it means") is value
    line = capsys.readouterr().out.rstrip("\n")
    assert "\n" not in line and CHECK_LINE.fullmatch(line), line
    what, shown, expectation, meaning = _check_parts(CHECK_LINE.fullmatch(line).group("body"))
    assert (what, expectation, meaning) == ("the thing", expected, "what it means")
    assert _meets(shown, expectation), f"{line!r} does not read back as passed"


@pytest.mark.parametrize("value, expected", [(2e-12, "<= 1e-12"), (0.5, "0.6 +- 0.012"), ((8, 31), "== (8, 31, 21)"),
                                             (1.5, "between 0.5 and 1"), (float("nan"), "< 1"),
                                             (float("nan"), "between 0 and 1")])
def test_check_that_fails_says_so_and_stops_the_tutorial(value, expected, capsys):
    with pytest.raises(AssertionError, match="check failed: the thing"):
        output.check("the thing", value, expected, "what it means")
    line = capsys.readouterr().out
    assert line.startswith("check FAILED: the thing = ") and f"(expected {expected}): what it means" in line


@pytest.mark.parametrize("value, expected, what, meaning, message", [
    (1.0, "about 1", "x", "m", "expected must take one of the forms"),
    (1.0, "< one", "x", "m", "expected must take one of the forms"),
    ([1.0, 2.0], "< 3", "x", "m", "a number, a bool or a tuple"),
    (1.0, "< 3", "", "m", "one-line, non-empty"),
    (1.0, "< 3", "x", "", "one-line, non-empty"),
    (1.0, "< 3", "x", "two\nlines", "one-line, non-empty")])
def test_check_refuses_what_it_could_not_print_as_a_checkable_line(value, expected, what, meaning, message):
    with pytest.raises(ValueError, match=message):
        output.check(what, value, expected, meaning)

"""The tutorials as plain scripts: their format, and where their figures go when no window can open.

Every numbered tutorial (tutorials/NN_*.py, not make_exercises.py nor the exercises/ or solutions/ subfolders) is
executed cell by cell in a Jupyter kernel by tests/test_notebooks.py, which checks its own assertions (e.g. eq (1) ==
eq (3) to 1e-12), its printed headings and closing line.  What only a script run shows is checked here, on the
tutorials listed in SCRIPT_RUNS (each a few seconds, so the suite does not run every tutorial twice): run as a script
in a subprocess with NUMPY_MAMBA_QUICK=1, MPLBACKEND=Agg (no window can open), TMPDIR pointing to a fresh temporary
folder and another fresh folder as working directory, it must exit 0, save every figure in the temp folder and print
its path, name that folder in its closing line, and write nothing into the repository or its working directory.  For
every tutorial, a static check that each figure goes through show_figure (so none is lost under Agg).  The figure
helper ``numpy_mamba.runs.output.show_figure`` is tested on its own below.
"""
import os
import re
import subprocess
import sys
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
import pytest

from numpy_mamba.runs import output

ROOT = Path(__file__).resolve().parent.parent
TUTORIALS = sorted((ROOT / "tutorials").glob("[0-9][0-9]_*.py"))    # the numbered tutorials
SCRIPT_RUNS = [p for p in TUTORIALS if p.name[:2] in ("01", "07")]   # small, and each saves a figure
TIMEOUT_S = 120             # hard stop for a hung tutorial
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
SAVED_LINE = re.compile(r"^saved figure (.+?\.png)  \(", re.M)
PREAMBLE = '''if importlib.util.find_spec("numpy_mamba") is None:    # a clone without `pip install .`
    here = Path(__file__).resolve().parent if "__file__" in globals() else Path.cwd()
    sys.path.insert(0, str(here.parent))
'''


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


@pytest.mark.parametrize("path", SCRIPT_RUNS, ids=[p.name for p in SCRIPT_RUNS])
def test_tutorial_runs_as_a_script_and_saves_its_figures(path, tmp_path):
    """Exit 0, nothing written into the repo or the cwd, every figure saved where it says, and the closing line."""
    cwd, tmp = tmp_path / "cwd", tmp_path / "tmp"
    cwd.mkdir()
    tmp.mkdir()
    env = dict(os.environ, NUMPY_MAMBA_QUICK="1", MPLBACKEND="Agg", TMPDIR=str(tmp),
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
               OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    env.pop("NUMPY_MAMBA_FIGDIR", None)
    before = _repo_state()
    result = subprocess.run([sys.executable, str(path)], cwd=cwd, env=env, capture_output=True,
                            text=True, timeout=TIMEOUT_S)
    assert result.returncode == 0, (f"{path.name} exited with {result.returncode}\n"
                                    f"--- stdout (tail) ---\n{result.stdout[-3000:]}\n"
                                    f"--- stderr (tail) ---\n{result.stderr[-3000:]}")
    assert "Traceback" not in result.stderr
    assert list(cwd.iterdir()) == [], f"{path.name} wrote files into its working directory: {list(cwd.iterdir())}"
    assert _repo_state() == before, f"{path.name} changed files in the repository"

    # Under Agg no window can open: every figure must be saved in the temp folder, and its path printed.
    names = _figure_names(path.read_text())
    folder = tmp / output.TEMP_FIGURE_FOLDER
    printed = [Path(p) for p in SAVED_LINE.findall(result.stdout)]
    assert printed == [folder / f"{name}.png" for name in names], (
        f"{path.name}: show_figure was called for {names}, but the lines 'saved figure PATH' printed {printed} "
        f"(expected each under {folder})")
    for png in printed:
        assert png.read_bytes()[:8] == PNG_MAGIC, f"{path.name}: {png} is not a PNG file"
    assert sorted(folder.iterdir() if folder.exists() else []) == sorted(printed), (
        f"{path.name} saved files it did not announce: {sorted(folder.iterdir())}")
    last = result.stdout.rstrip().splitlines()[-1]
    assert last.startswith(f"Done: tutorial {int(path.name[:2])}, ") and last.endswith(f"; figure saved in {folder}"), (
        f"{path.name}: the last line must be 'Done: tutorial N, <what was shown>; figure saved in FOLDER', got {last!r}")


def test_script_runs_cover_a_tutorial_that_draws_figures():
    assert len(SCRIPT_RUNS) == 2 and all(_figure_names(p.read_text()) for p in SCRIPT_RUNS)


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
        f"{path.name}: use numpy_mamba.runs.output.show_figure rather than a figure helper of its own")


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

"""The tutorials as notebooks in a real Jupyter kernel, and the ``notebooks`` command that writes them.

Every numbered tutorial is turned into a notebook with jupytext (its prose keeps its LaTeX, no cell
marker survives).  The tutorials of NOTEBOOK_RUNS are also executed by nbclient in a fresh Python 3
kernel, in quick mode (NUMPY_MAMBA_QUICK=1), exactly as ``python -m numpy_mamba notebooks OUT
--execute --quick`` does; tests/test_tutorials.py runs every tutorial as a script, so the suite does
not run each twice.  A failure means: a cell raised (a crash, or one of the tutorial's own checks
failed); a figure did not reach the notebook inline (no image/png output for a show_figure call);
the tutorial did not print its section headings, its check lines or its closing line; or it wrote
files outside its notebook's folder.  The command itself is tested on its own (notebooks written
outside tutorials/, an error output named with its cell and exit 1, a missing extra named with
exit 2).
"""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from numpy_mamba.site import notebooks

ROOT = Path(__file__).resolve().parent.parent
TUTORIALS = sorted((ROOT / "tutorials").glob("[0-9][0-9]_*.py"))
NOTEBOOK_RUNS = [p for p in TUTORIALS if p.name[:2] in ("01", "03")]   # seconds each; one of them draws LaTeX labels
EXERCISES = sorted((ROOT / "tutorials" / "exercises").glob("[a-z]*.py"))
CLOSING = re.compile(r"^Done: tutorial \d, .+", re.M)
FIGURE_CALL = re.compile(r'show_figure\(\w+, "([^"]+)"\)')


def _stdout(nb) -> str:
    return "".join(out.get("text", "") for cell in nb.cells if cell.cell_type == "code"
                   for out in cell.outputs if out.output_type == "stream" and out.name == "stdout")


def _images(nb) -> int:
    return sum("image/png" in out.get("data", {}) for cell in nb.cells if cell.cell_type == "code"
               for out in cell.outputs)


@pytest.mark.parametrize("path", TUTORIALS, ids=[p.name for p in TUTORIALS])
def test_tutorial_becomes_a_notebook_with_its_math(path):
    nb = notebooks.tutorial_notebook(path)
    markdown = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert re.search(r"\$[^$\n]+\$", markdown), f"{path.name}: the notebook's markdown cells carry no LaTeX ($...$)"
    assert not any(c.source.lstrip().startswith("# %%") for c in nb.cells), f"{path.name}: a cell marker survived"
    assert [c.cell_type for c in nb.cells].count("code") == path.read_text().count("\n# %%\n"), f"{path.name}: cells lost"


@pytest.mark.parametrize("path", NOTEBOOK_RUNS, ids=[p.name for p in NOTEBOOK_RUNS])
def test_tutorial_executes_as_a_notebook(path, tmp_path):
    nb = notebooks.tutorial_notebook(path)
    notebooks.execute(nb, tmp_path, quick=True, timeout=300)   # raises NotebookError naming the cell on any error

    assert notebooks.first_error(nb) is None
    figures = FIGURE_CALL.findall(path.read_text())
    assert figures, f"{path.name} draws no figure"
    assert _images(nb) == len(figures), (
        f"{path.name}: {len(figures)} show_figure call(s) but {_images(nb)} inline image/png output(s); "
        "a figure was saved instead of shown, or shown twice")
    printed = _stdout(nb)
    headings = re.findall(r"^# ## (.+)$", path.read_text(), re.M)
    said = re.findall(r"^## (.+)$", printed, re.M)
    assert len(said) == len(headings), (f"{path.name}: {len(headings)} section headings in the prose, but {len(said)} "
                                        f"printed ('## ...' lines): {said}")
    assert len(re.findall(r"^check: ", printed, re.M)) >= len(headings), f"{path.name}: the check lines did not print"
    assert len(CLOSING.findall(printed)) == 1 and CLOSING.findall(printed)[0].startswith(
        f"Done: tutorial {int(path.name[:2])},"), f"{path.name}: no closing line 'Done: tutorial N, ...'"
    assert "saved figure" not in printed, f"{path.name}: in a notebook the figures are shown inline, not saved"
    assert [p.name for p in tmp_path.iterdir()] == [], f"{path.name} wrote files into its notebook's folder"


def test_notebooks_command_writes_every_tutorial_and_exercise_outside_tutorials(tmp_path):
    """Without --execute: one notebook per tutorial and per exercise, none in tutorials/."""
    before = sorted(p.name for p in (ROOT / "tutorials").rglob("*"))
    out = tmp_path / "nb"
    result = subprocess.run([sys.executable, "-m", "numpy_mamba", "notebooks", str(out)], cwd=tmp_path,
                            env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in out.glob("*.ipynb")) == [f"{p.stem}.ipynb" for p in TUTORIALS]
    assert sorted(p.name for p in (out / "exercises").glob("*.ipynb")) == [f"{p.stem}.ipynb" for p in EXERCISES]
    assert sorted(p.name for p in (ROOT / "tutorials").rglob("*")) == before, "the command wrote into tutorials/"
    for path in EXERCISES:
        nb = nbformat.read(out / "exercises" / f"{path.stem}.ipynb", as_version=4)
        code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
        assert "NotImplementedError" in code and "def " in code, f"{path.name}: the stub did not reach the notebook"
        prose = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
        graded_as = (out / "exercises" / f"{path.stem}.ipynb").as_posix()
        assert f"python -m numpy_mamba grade {graded_as}" in prose, (
            f"{path.name}: the notebook must say how to grade it, with the path it was written to")
        assert "$" in prose and "\\" in prose, f"{path.name}: the hand-out's math must reach the notebook as LaTeX"
    first = json.loads((out / f"{TUTORIALS[0].stem}.ipynb").read_text())
    assert first["metadata"]["kernelspec"]["name"] == "python3"
    assert (f"{len(TUTORIALS)} tutorials written (not executed; --execute runs them), {len(EXERCISES)} exercise "
            "hand-outs written") in result.stdout, f"the closing line miscounts what it wrote: {result.stdout}"


def test_notebooks_command_writes_my_notebooks_by_default_and_says_how_to_open_and_grade_them(tmp_path):
    """Without OUT: my_notebooks/ in the current folder (the folder .gitignore names); its hand-outs name
    that path in their grade line, and the closing lines say how to open and grade them."""
    (tmp_path / "tutorials").symlink_to(ROOT / "tutorials")
    result = subprocess.run([sys.executable, "-m", "numpy_mamba", "notebooks"], cwd=tmp_path,
                            env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    out = tmp_path / notebooks.DEFAULT_OUT
    assert sorted(p.name for p in out.glob("*.ipynb")) == [f"{p.stem}.ipynb" for p in TUTORIALS]
    nb = nbformat.read(out / "exercises" / "gradients.ipynb", as_version=4)
    prose = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert f"python -m numpy_mamba grade {notebooks.DEFAULT_OUT}/exercises/gradients.ipynb" in prose
    assert f"python -m numpy_mamba grade {notebooks.DEFAULT_OUT}/exercises/NAME.ipynb" in result.stdout
    assert f"python -m jupyterlab {notebooks.DEFAULT_OUT}" in result.stdout


@pytest.mark.parametrize("installed", [True, False])
def test_notebooks_suggests_only_an_installed_way_to_open_them(installed, monkeypatch):
    """JupyterLab's command when it is installed (the notebooks extra brings it); else VS Code, or how
    to install JupyterLab first: never a command that is not there."""
    import importlib.util
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: (real("json") if installed else None) if name == "jupyterlab" else real(name, *a))
    line = notebooks.how_to_open(Path("my_notebooks"))
    assert "python -m jupyterlab my_notebooks" in line
    assert line.startswith("open them with: python -m jupyterlab") is installed
    assert ("pip install jupyterlab" in line) is not installed


def test_notebooks_extra_installs_what_the_command_suggests():
    """The notebooks extra of setup.cfg holds the tools the command needs and JupyterLab, which it suggests."""
    import configparser
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    extra = [line.split(">")[0].split("=")[0].strip() for line in config["options.extras_require"]["notebooks"].split("\n")
             if line.strip()]
    assert set(notebooks.TOOLS) | {"jupyterlab"} <= set(extra), extra


def test_notebooks_command_names_the_failing_cell_and_exits_1(tmp_path):
    source = tmp_path / "tutorials"
    source.mkdir()
    (source / "01_broken.py").write_text('# %% [markdown]\n# # Broken $x$\n\n# %%\nprint("fine")\n\n'
                                         '# %%\nanswer = 1 / 0\n')
    result = subprocess.run([sys.executable, "-m", "numpy_mamba", "notebooks", str(tmp_path / "out"), "--execute",
                             "--quick", "--tutorials", str(source)], cwd=tmp_path,
                            env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True, text=True, timeout=120)
    assert result.returncode == 1, f"an error output must fail the command\n{result.stdout}\n{result.stderr}"
    assert "01_broken.ipynb: cell 3 ('answer = 1 / 0'): ZeroDivisionError" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


def test_notebooks_command_without_the_extra_says_what_to_install(tmp_path):
    code = ("import sys; sys.modules['jupytext'] = None; from numpy_mamba.cli import main; "
            f"sys.exit(main(['notebooks', {str(tmp_path / 'out')!r}]))")
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=dict(os.environ, PYTHONPATH=str(ROOT)),
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and 'pip install "numpy_mamba[notebooks]"' in result.stderr, result.stderr
    assert not (tmp_path / "out").exists()


def test_kernel_environment_draws_inline_and_sets_quick_only_when_asked(monkeypatch):
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("NUMPY_MAMBA_QUICK", "1")
    full, quick = notebooks.kernel_environment(quick=False), notebooks.kernel_environment(quick=True)
    assert full["MPLBACKEND"] == notebooks.INLINE_BACKEND, "under Agg the figures would not reach the notebook"
    assert "NUMPY_MAMBA_QUICK" not in full and quick["NUMPY_MAMBA_QUICK"] == "1"
    assert str(ROOT) in full["PYTHONPATH"].split(os.pathsep), "the kernel must import this numpy_mamba"

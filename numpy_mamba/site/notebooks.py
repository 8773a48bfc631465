"""``python -m numpy_mamba notebooks [OUT] [--execute] [--quick]``: the tutorials as Jupyter notebooks.

One ``.ipynb`` per tutorial (``tutorials/NN_*.py``) and per exercise hand-out
(``tutorials/exercises/*.py``, written to OUT/exercises/), made from the percent-format sources
with jupytext.  OUT is ``my_notebooks`` unless given (the repository's .gitignore names it, so a
student's notebooks never show in ``git status``).  Each hand-out says how to grade it, with its
path as written (``python -m numpy_mamba grade my_notebooks/exercises/gradients.ipynb``).  The
``.py`` files stay the sources: nothing is written into ``tutorials/``.

With ``--execute`` every tutorial notebook is run, cell by cell, in a real Jupyter kernel
(nbclient; the same Python as this command), in full mode unless ``--quick``
(``NUMPY_MAMBA_QUICK=1`` for the kernel).  Figures are drawn inline; one line per notebook with
its time; the command stops with exit status 1 at the first error output, naming the notebook,
the cell and the error.  The exercise hand-outs are written, not executed (they are stubs).

The sources are read from ``--tutorials DIR``, by default the ``tutorials/`` folder of the current
directory or of the clone this package was imported from: run the command from a clone, after
``pip install ".[notebooks]"`` (the tutorials are not part of the installed package).  The
notebook tools are an extra: without them the command says what to install (exit 2).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from ..runs.args import help_text

EXTRA = 'pip install "numpy_mamba[notebooks]" (from a clone: pip install ".[notebooks]")'
DEFAULT_OUT = "my_notebooks"     # in .gitignore
TOOLS = ("jupytext", "nbclient", "nbformat", "ipykernel")
INLINE_BACKEND = "module://matplotlib_inline.backend_inline"
CELL_TIMEOUT_S = 1800            # a hung cell, not a slow one


def _missing_tools() -> list:
    import importlib.util
    return [name for name in TOOLS if importlib.util.find_spec(name) is None]


def find_tutorials(given: str | None) -> Path:
    """The folder holding the percent-format tutorials NN_*.py: ``given``, else ./tutorials, else the
    ``tutorials/`` folder beside the imported package (a clone run without installing)."""
    package_parent = Path(__file__).resolve().parents[2]
    candidates = [Path(given)] if given else [Path.cwd() / "tutorials", package_parent / "tutorials"]
    for folder in candidates:
        if any(folder.glob("[0-9][0-9]_*.py")):
            return folder
    where = given or f"./tutorials or {package_parent / 'tutorials'}"
    raise FileNotFoundError(f"no tutorials (NN_*.py) in {where}: run from a clone of the repository "
                            "or pass --tutorials DIR")


def tutorial_notebook(path: Path):
    """The notebook of one percent-format tutorial: markdown cells (with their LaTeX) and code cells,
    as jupytext reads them, for the default Python 3 kernel."""
    import jupytext
    nb = jupytext.read(path, fmt="py:percent")
    nb.metadata.pop("jupytext", None)                     # a standalone notebook, not paired with the .py
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    return nb


def exercise_notebook(path: Path, written_to: str):
    """The notebook of one exercise hand-out (a percent-format module): its docstring as the first
    markdown cell (first line as the title, the rest verbatim), its cells (the math as LaTeX, the
    code to complete), and how to grade the notebook itself, at ``written_to`` (the path the
    notebook is written to, as the command was given it)."""
    import ast
    import jupytext
    text = path.read_text()
    module = ast.parse(text)
    doc = ast.get_docstring(module) or ""
    body = text
    if doc and module.body and isinstance(module.body[0], ast.Expr):
        body = "\n".join(text.splitlines()[module.body[0].end_lineno:]).lstrip("\n")
    title, _, rest = doc.partition("\n")
    # the docstring is plain text (grad_W_C, G_{i,l+1}): shown as written, not parsed as markdown
    shown = [f"# {title.strip() or path.stem}", "", "```text", *rest.strip("\n").splitlines(), "```"]
    prose = "\n".join(f"# {line}".rstrip() for line in shown)
    grade = (f"# To grade your answer, save this notebook and grade it as it is, in a terminal, from the folder "
             f"you ran `python -m numpy_mamba notebooks` in (its code cells are graded exactly as the `.py` would "
             f"be; IPython magics and shell lines are refused):\n#\n"
             f"#     python -m numpy_mamba grade {written_to}")
    percent = f"# %% [markdown]\n{prose}\n\n# %%\n{body.rstrip()}\n\n# %% [markdown]\n{grade}\n"
    nb = jupytext.reads(percent, fmt="py:percent")
    nb.metadata.pop("jupytext", None)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


def kernel_environment(quick: bool) -> dict:
    """The kernel's environment: this process's, with the package importable (the kernel runs the
    same numpy_mamba as this command), inline figures, and NUMPY_MAMBA_QUICK set by ``quick`` only."""
    env = dict(os.environ)
    package_parent = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_parent, env.get("PYTHONPATH", "")) if p)
    env["MPLBACKEND"] = INLINE_BACKEND                    # not the caller's Agg: the figures go into the notebook
    env.pop("NUMPY_MAMBA_FIGDIR", None)
    env.pop("NUMPY_MAMBA_QUICK", None)
    if quick:
        env["NUMPY_MAMBA_QUICK"] = "1"
    return env


class NotebookError(RuntimeError):
    """A cell's error output: which notebook, which cell, which error."""


def first_error(nb) -> str | None:
    """'cell N (its first line): ErrorName: message' for the first code cell with an error output
    (cells counted from 1, markdown included, as Jupyter shows them), else None."""
    for index, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []) if cell.cell_type == "code" else []:
            if out.get("output_type") == "error":
                first = next((line for line in cell.source.splitlines() if line.strip()), "")
                return f"cell {index + 1} ({first.strip()[:60]!r}): {out.get('ename')}: {out.get('evalue')}"
    return None


def execute(nb, workdir: Path, quick: bool, timeout: int = CELL_TIMEOUT_S):
    """Run every cell of ``nb`` in a fresh Python 3 kernel of this interpreter, in ``workdir``;
    return the executed notebook.  Raises NotebookError at the first cell with an error output."""
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    # Only ipykernel's own spec (this interpreter), never a "python3" kernel installed elsewhere.
    specs = KernelSpecManager(kernel_dirs=[], ensure_native_kernel=True)
    km = KernelManager(kernel_name="python3", kernel_spec_manager=specs)
    client = NotebookClient(nb, km=km, timeout=timeout, allow_errors=False, record_timing=False,
                            resources={"metadata": {"path": str(workdir)}})
    # The kernel process's own log (not the cells' output, which reaches the notebook) goes to a
    # temporary file, shown only when the kernel itself fails.
    with tempfile.TemporaryFile("w+") as log:
        try:
            client.execute(env=kernel_environment(quick), stderr=log)
        except CellExecutionError as exc:                 # the first cell with an error output; the rest not run
            raise NotebookError(first_error(nb) or str(exc).strip().splitlines()[-1]) from None
        except Exception as exc:                          # a dead kernel, a cell past the timeout
            log.seek(0)
            raise NotebookError(f"{type(exc).__name__}: {exc}\nkernel log:\n{log.read()[-2000:]}") from None
    problem = first_error(nb)
    if problem:
        raise NotebookError(problem)
    return nb


def write_notebooks(source: Path, out: Path, run: bool, quick: bool, log=print) -> list:
    """Write the notebooks of ``source`` (a tutorials folder) into ``out``; execute the tutorials'
    when ``run``.  Returns the paths written.  Raises NotebookError at the first failing cell."""
    import nbformat
    out.mkdir(parents=True, exist_ok=True)
    written = []
    tutorials = sorted(source.glob("[0-9][0-9]_*.py"))
    for path in tutorials:
        target = out / f"{path.stem}.ipynb"
        nb = tutorial_notebook(path)
        if run:
            log(f"executing {path.name} ({'quick' if quick else 'full'} mode) ...")
            start = time.perf_counter()
            try:
                execute(nb, out, quick)
            except NotebookError as exc:
                nbformat.write(nb, target)                # kept, so the error can be read in context
                raise NotebookError(f"{target}: {exc}") from None
            log(f"  {target}  ({time.perf_counter() - start:.1f} s)")
        else:
            log(f"  {target}")
        nbformat.write(nb, target)
        written.append(target)
    exercises = sorted((source / "exercises").glob("[a-z]*.py"))
    if exercises:
        (out / "exercises").mkdir(exist_ok=True)
    for path in exercises:
        target = out / "exercises" / f"{path.stem}.ipynb"
        nbformat.write(exercise_notebook(path, target.as_posix()), target)
        log(f"  {target}  (exercise hand-out, not executed)")
        written.append(target)
    return written


def how_to_open(out: Path) -> str:
    """How to open the notebooks in ``out``, with what this Python has: JupyterLab when installed
    (the notebooks extra installs it), else VS Code or installing JupyterLab."""
    import importlib.util
    if importlib.util.find_spec("jupyterlab") is not None:
        return f"open them with: python -m jupyterlab {out}  (or in VS Code, with its Jupyter extension)"
    return (f"open them in VS Code (with its Jupyter extension), or install JupyterLab (pip install jupyterlab, or "
            f"the notebooks extra) and run: python -m jupyterlab {out}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m numpy_mamba notebooks", description=help_text(__doc__.split("\n\n")[0]),
                                     epilog=f"Needs the notebooks extra: {EXTRA}.")
    parser.add_argument("out", nargs="?", default=DEFAULT_OUT,
                        help=f"folder for the .ipynb files (created if needed; not tutorials/); default: {DEFAULT_OUT}, "
                             "which git ignores")
    parser.add_argument("--execute", action="store_true",
                        help="run each tutorial notebook in a Jupyter kernel (full mode unless --quick)")
    parser.add_argument("--quick", action="store_true",
                        help="with --execute: the tutorials' quick mode (NUMPY_MAMBA_QUICK=1; seconds each)")
    parser.add_argument("--tutorials", default=None,
                        help="folder of the percent-format tutorials (default: ./tutorials, or the clone's)")
    args = parser.parse_args(argv)
    missing = _missing_tools()
    if missing:
        print(f"notebooks: missing {', '.join(missing)}; install the notebooks extra: {EXTRA}", file=sys.stderr)
        return 2
    try:
        source = find_tutorials(args.tutorials)
    except FileNotFoundError as exc:
        print(f"notebooks: {exc}", file=sys.stderr)
        return 2
    out = Path(args.out)
    if out.resolve() == source.resolve() or source.resolve() in out.resolve().parents:
        print(f"notebooks: OUT must lie outside {source} (the sources stay .py files)", file=sys.stderr)
        return 2
    start = time.perf_counter()
    try:
        written = write_notebooks(source, out, args.execute, args.quick, log=lambda s: print(s, flush=True))
    except NotebookError as exc:
        print(f"notebooks: error output in {exc}", file=sys.stderr)
        return 1
    handouts = sum(1 for path in written if path.parent.name == "exercises")    # stubs: never executed
    tutorials = len(written) - handouts
    done = f"{tutorials} tutorials " + ("executed and written" if args.execute else
                                         "written (not executed; --execute runs them)")
    print(f"notebooks: {done}, {handouts} exercise hand-outs written, in {out} ({time.perf_counter() - start:.1f} s)")
    print(f"notebooks: {how_to_open(out)}")
    if handouts:
        print(f"notebooks: grade a hand-out with: python -m numpy_mamba grade {(out / 'exercises').as_posix()}/NAME.ipynb")
    return 0

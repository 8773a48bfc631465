"""``python -m numpy_mamba site [OUT] [--full] [--check]``: the tutorials and the report as a website.

One HTML site, built by Sphinx with myst-nb from the sources as they are in the clone: the README
as the first page (the paper-to-code table, the notes on the paper's derivations), the student's
guide (``tutorials/README.md``), the eight tutorials executed in a Jupyter kernel (their math
typeset, their figures inline, their ``check:`` lines printed under each cell), the report
(``figures/REPORT.md`` with its figures and tables), the instructor's guide
(``tutorials/INSTRUCTORS.md``) and an API page from the docstrings of the core (each function's
equation and shapes).  The tutorials run in quick mode (``NUMPY_MAMBA_QUICK=1``: fewer SGD steps
and test prompts) unless ``--full``, and each tutorial page says which mode its numbers came from.

The Sphinx project (``project``) is put together in a temporary folder beside OUT: the pages
read from the clone, the tutorials executed there, MathJax 3 copied from the installed
``django-static-mathjax`` package (its files only; Django is not needed), so that a page loads
nothing from the network.  Nothing is written into the clone's sources.  The site goes to OUT, by
default ``site`` (which git ignores), replacing an earlier site there only once the new one is
complete: open ``OUT/index.html`` in a browser.  A Sphinx warning (a link that leads nowhere, a
docstring Sphinx cannot read) is printed and makes the exit status 1.  ``--check`` then opens
every page in headless Chromium (``check``) and writes screenshots and what it found into
OUT/_check/.

Run from a clone, after ``pip install ".[docs]"``: the tutorials, the report and the guides are
not part of the installed package.  Without the docs tools the command says what to install
(exit 2).
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from . import notebooks, project
from ..runs.args import help_text

EXTRA = 'pip install "numpy_mamba[docs]" (from a clone: pip install ".[docs]")'
DEFAULT_OUT = "site"                     # in .gitignore
TOOLS = ("sphinx", "myst_nb", "furo", "mathjax", "jupytext", "nbclient", "nbformat", "ipykernel")
GUIDES = ("tutorials/README.md", "tutorials/INSTRUCTORS.md")
MATHJAX_PARTS = ("tex-chtml.js", "input", "output", "a11y", "ui", "adaptors", "sre")   # of MathJax's es5/


def find_clone(given: str | None) -> Path:
    """The clone whose pages are built: ``given``, else the current directory, else the folder this
    package was imported from; it must hold README.md, tutorials/NN_*.py and figures/REPORT.md."""
    package_parent = Path(__file__).resolve().parents[2]
    for folder in [Path(given)] if given else [Path.cwd(), package_parent]:
        if ((folder / "README.md").is_file() and (folder / "figures" / "REPORT.md").is_file()
                and any((folder / "tutorials").glob("[0-9][0-9]_*.py"))):
            return folder.resolve()
    where = given or f"{Path.cwd()} or {package_parent}"
    raise FileNotFoundError(f"no clone of numpy_mamba (README.md, tutorials/NN_*.py, figures/REPORT.md) in {where}: "
                            "run from a clone of the repository or pass --clone DIR")


def mode_note(quick: bool) -> str:
    """The note at the top of each tutorial page: which mode its printed numbers and figures came from
    (its class, mode-quick or mode-full, says it to a program)."""
    from .. import __version__
    if quick:
        mode = ("**quick mode** (`NUMPY_MAMBA_QUICK=1`: fewer SGD steps and test prompts, the same code): its "
                "numbers are noisier than in full mode, which `python -m numpy_mamba site --full` runs")
    else:
        mode = "**full mode** (the sizes of the table in the student's guide)"
    return (f"```{{note}}\n:class: mode-{'quick' if quick else 'full'}\n\nThe outputs on this page come from running "
            f"this tutorial in a Jupyter kernel with numpy_mamba {__version__}, in {mode}.\n```")


def executed_tutorials(clone: Path, into: Path, quick: bool, log=print) -> list:
    """Each tutorial ``clone/tutorials/NN_*.py`` as a notebook executed in a fresh kernel (in
    ``quick`` mode or full), with the mode note as its second cell, written to ``into/NN_*.ipynb``.
    Returns the paths written.  Raises notebooks.NotebookError at the first cell with an error."""
    import nbformat
    written = []
    with tempfile.TemporaryDirectory(prefix="numpy_mamba_site_run_") as workdir:
        for path in sorted((clone / "tutorials").glob("[0-9][0-9]_*.py")):
            log(f"executing {path.name} ({'quick' if quick else 'full'} mode) ...")
            start = time.perf_counter()
            nb = notebooks.tutorial_notebook(path)
            try:
                notebooks.execute(nb, Path(workdir), quick)
            except notebooks.NotebookError as exc:
                raise notebooks.NotebookError(f"{path.name}: {exc}") from None
            nb.cells.insert(1, nbformat.v4.new_markdown_cell(mode_note(quick)))
            written.append(into / f"{path.stem}.ipynb")
            nbformat.write(nb, written[-1])
            log(f"  {path.name}  ({time.perf_counter() - start:.1f} s)")
    return written


def write_project(clone: Path, src: Path, quick: bool, log=print) -> None:
    """The Sphinx project in ``src``, laid out as the clone: the README as index.md with the site's
    navigation appended, the guides, the executed tutorials, the report with its figures and
    tables, the API page, and MathJax and the site's CSS in _static/."""
    import mathjax
    (src / "tutorials").mkdir(parents=True)
    (src / "figures").mkdir()
    for guide in GUIDES:
        shutil.copyfile(clone / guide, src / guide)
    tutorials = [f"tutorials/{p.stem}" for p in executed_tutorials(clone, src / "tutorials", quick, log)]
    for path in sorted((clone / "figures").iterdir()):
        if path.suffix in (".md", ".png"):
            shutil.copyfile(path, src / "figures" / path.name)
    tables = [f"figures/{p.stem}" for p in sorted((clone / "figures").glob("*.md")) if p.name != "REPORT.md"]
    sidebar = {"For students": ["tutorials/README", *tutorials], "Results": ["figures/REPORT", *tables],
               "Reference": ["api"], "For instructors": ["tutorials/INSTRUCTORS"]}
    (src / "index.md").write_text((clone / "README.md").read_text() + project.navigation(sidebar))
    (src / "api.rst").write_text(project.api_page())
    es5 = Path(mathjax.__file__).parent / "static" / "mathjax" / "es5"
    target = src / "_static" / "mathjax"
    target.mkdir(parents=True)
    for part in MATHJAX_PARTS:
        (shutil.copytree if (es5 / part).is_dir() else shutil.copyfile)(es5 / part, target / part)
    shutil.copyfile(es5.parent / "LICENSE", target / "LICENSE")
    (src / "_static" / "numpy_mamba.css").write_text(project.CSS)


def build_site(clone: Path, out: Path, quick: bool, log=print) -> dict:
    """Build the site of ``clone`` into ``out`` (replacing an earlier site there only once the new one
    is complete).  Returns {"pages": HTML pages relative to out, "warnings": Sphinx's warnings (with
    the clone's paths), "quick": quick, "seconds": the build's wall time}."""
    start = time.perf_counter()
    out = out.resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".site_", dir=out.parent) as staging:
        src, html = Path(staging) / "src", Path(staging) / "html"
        write_project(clone, src, quick, log)
        log("building the pages (sphinx) ...")
        warnings = [line.replace(str(src / "index.md"), str(clone / "README.md")).replace(str(src), str(clone))
                    for line in project.build(src, html)]
        if out.exists():
            shutil.rmtree(out)
        os.replace(html, out)
    pages = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.html") if "_static" not in p.parts)
    return {"pages": pages, "warnings": warnings, "quick": quick, "seconds": time.perf_counter() - start}


def check_out(out: Path, clone: Path) -> str | None:
    """Why ``out`` cannot receive the site (None if it can): it must not be the clone nor lie in its
    sources, and, if it exists, be an earlier site (Sphinx's .buildinfo) or an empty folder."""
    out = out.resolve()
    if out == clone:
        return f"OUT must be a folder of its own, not the clone {clone}"
    for folder in (clone / "tutorials", clone / "figures", clone / "numpy_mamba", clone / "tests"):
        if out == folder or folder in out.parents:
            return f"OUT must lie outside {folder} (the sources are read, never written); got {out}"
    if out.exists() and (not out.is_dir() or (any(out.iterdir()) and not (out / ".buildinfo").exists())):
        return f"OUT {out} exists and is not an earlier site (no .buildinfo): give an empty or new folder"
    return None


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m numpy_mamba site", description=help_text(__doc__.split("\n\n")[0]),
                                     epilog=f"Needs the docs extra: {EXTRA}.")
    parser.add_argument("out", nargs="?", default=DEFAULT_OUT,
                        help=f"folder for the HTML pages (replaced if it holds an earlier site); default: {DEFAULT_OUT}, "
                             "which git ignores")
    parser.add_argument("--full", action="store_true",
                        help="run the tutorials in full mode (the sizes of the student's guide) instead of quick mode "
                             "(NUMPY_MAMBA_QUICK=1)")
    parser.add_argument("--check", action="store_true",
                        help="then open every page in headless Chromium (console errors, images, links, math); "
                             "screenshots and findings in OUT/_check/")
    parser.add_argument("--clone", default=None,
                        help="the clone to build from (default: ., else the clone this package was imported from)")
    args = parser.parse_args(argv)
    missing = [name for name in TOOLS if importlib.util.find_spec(name) is None]
    if missing:
        print(f"site: missing {', '.join(missing)}; install the docs extra: {EXTRA}", file=sys.stderr)
        return 2
    try:
        clone = find_clone(args.clone)
    except FileNotFoundError as exc:
        print(f"site: {exc}", file=sys.stderr)
        return 2
    problem = check_out(Path(args.out), clone)
    if problem:
        print(f"site: {problem}", file=sys.stderr)
        return 2
    try:
        built = build_site(clone, Path(args.out), quick=not args.full, log=lambda s: print(s, flush=True))
    except notebooks.NotebookError as exc:
        print(f"site: error output in tutorial {exc}", file=sys.stderr)
        return 1
    for warning in built["warnings"]:
        print(f"site: sphinx: {warning}", file=sys.stderr)
    print(f"site: {len(built['pages'])} pages in {args.out} ({built['seconds']:.1f} s; tutorials in "
          f"{'quick' if built['quick'] else 'full'} mode, {len(built['warnings'])} Sphinx warning(s)); "
          f"open {Path(args.out) / 'index.html'}")
    code = 1 if built["warnings"] else 0
    if args.check:
        from . import check
        code = max(code, check.main_check(Path(args.out)))
    return code

"""The website: ``python -m numpy_mamba site OUT --check`` builds every page, and headless Chromium
finds each one whole.

The site is built once per test session in quick mode by the command as a person runs it (a
subprocess, from the clone), with ``--check`` where Chromium and chromedriver are installed; under
``-n 2`` the first test process that asks builds it and the other reads it (``made_once``).  A
failure means: a page is missing (the README, a guide, a tutorial, the report or one of its tables,
the API page); Sphinx warned (a link that leads nowhere, a docstring it cannot read); a tutorial
page does not say which mode its numbers came from, or lacks its check lines; the API page lacks a
documented function of the core; or, in the browser, a page logged a console error, an image did
not load, a link leads to no file or no anchor, LaTeX was left raw or MathJax refused a formula, a
page loaded something from the network, a tutorial page shows no typeset math or not its figures,
the report not its figures, or the screenshots are missing.  The browser check itself is tested on
a page made to hold one problem of each kind, and the command's refusals of a bad OUT or clone.

The browser tests need Debian's ``chromium`` and ``chromium-driver``.  Where they are missing, the
tests are skipped, unless NUMPY_MAMBA_REQUIRE_BROWSER=1 (which .ci/run sets): then they fail.
"""
import importlib
import inspect
import json
import os
import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import made_once, session_folder
from numpy_mamba.site import build as site, check as site_check, project as site_sphinx

ROOT = Path(__file__).resolve().parent.parent
TUTORIALS = sorted((ROOT / "tutorials").glob("[0-9][0-9]_*.py"))
TABLES = sorted(p for p in (ROOT / "figures").glob("*.md") if p.name != "REPORT.md")
SPHINX_PAGES = {"genindex.html", "search.html", "py-modindex.html"}     # Sphinx's own index and search
BROWSER = bool(site_check.find_program(site_check.CHROMIUM) and site_check.find_program(site_check.CHROMEDRIVER))
REQUIRE_BROWSER = os.environ.get("NUMPY_MAMBA_REQUIRE_BROWSER") == "1"
BUILD_TIMEOUT_S = 1800          # a hung kernel or browser, not a slow build
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="session")
def built(tmp_path_factory) -> dict:
    """The session's site in SESSION/site (made once): the command's exit code, stdout, stderr, and
    the folder."""
    out = session_folder(tmp_path_factory) / "site"

    def make() -> dict:
        shutil.rmtree(out, ignore_errors=True)                  # left by a process that failed while making it
        command = [sys.executable, "-m", "numpy_mamba", "site", str(out)] + (["--check"] if BROWSER else [])
        result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
        return {"code": result.returncode, "stdout": result.stdout, "stderr": result.stderr}

    return {**made_once(out.parent, "site", make), "out": out}


@pytest.fixture(scope="session")
def browser() -> None:
    """Chromium and chromedriver are installed; else the test is skipped, or failed when
    NUMPY_MAMBA_REQUIRE_BROWSER=1."""
    if not BROWSER:
        message = f"chromium and chromedriver are not installed ({site_check.INSTALL})"
        if REQUIRE_BROWSER:
            pytest.fail(f"{message}, and NUMPY_MAMBA_REQUIRE_BROWSER=1 asks for the browser check")
        pytest.skip(f"{message}; NUMPY_MAMBA_REQUIRE_BROWSER=1 turns this skip into a failure")


@pytest.fixture(scope="session")
def checked(built, browser) -> dict:
    """What the browser check of the session's site found (OUT/_check/check.json)."""
    report = built["out"] / "_check" / "check.json"
    assert report.exists(), f"site --check wrote no {report}:\n{built['stdout'][-3000:]}\n{built['stderr'][-3000:]}"
    return json.loads(report.read_text())


def _html(built, page: str) -> str:
    return (built["out"] / page).read_text()


def test_the_site_builds_every_page_without_a_warning(built):
    assert not re.findall(r"^site: sphinx: .*$", built["stderr"], re.M), f"Sphinx warned:\n{built['stderr'][-5000:]}"
    assert re.search(r"^site: \d+ pages in ", built["stdout"], re.M), f"no site was built:\n{built['stderr'][-5000:]}"
    pages = set(site_check.site_pages(built["out"]))
    expected = ({"index.html", "tutorials/README.html", "tutorials/INSTRUCTORS.html", "figures/REPORT.html",
                 "api.html"} | {f"tutorials/{p.stem}.html" for p in TUTORIALS} | {f"figures/{p.stem}.html" for p in TABLES})
    assert expected <= pages, f"pages missing from the site: {sorted(expected - pages)}"
    assert pages - expected <= SPHINX_PAGES, f"pages nobody asked for: {sorted(pages - expected - SPHINX_PAGES)}"
    assert len(TUTORIALS) == 8 and TABLES, "the tutorials or the report's tables were not found in the clone"


def test_each_tutorial_page_says_its_mode_and_shows_its_check_lines(built):
    for path in TUTORIALS:
        html = _html(built, f"tutorials/{path.stem}.html")
        notes = re.findall(r'<div class="[^"]*\b(mode-\w+)\b[^"]*"', html)
        assert notes == ["mode-quick"], f"{path.name}: the page says {notes} of the mode its numbers came from"
        sections = len(re.findall(r"^# ## ", path.read_text(), re.M))
        assert html.count("\ncheck: ") + html.count(">check: ") >= sections, f"{path.name}: check lines missing"
        assert "check FAILED" not in html, f"{path.name}: a check failed in the executed tutorial"


def test_the_api_page_documents_every_documented_function_of_the_core(built):
    html = _html(built, "api.html")
    documented = 0
    for name in set(site_sphinx.API_MODULES) - set(site_sphinx.PACKAGES):
        module = importlib.import_module(name)
        for attr, obj in vars(module).items():
            if attr.startswith("_") or getattr(obj, "__module__", None) != name or not inspect.getdoc(obj):
                continue
            if inspect.isfunction(obj) or inspect.isclass(obj):
                assert f'id="{name}.{attr}"' in html, f"api.html does not document {name}.{attr}"
                documented += 1
    assert documented >= 40, f"only {documented} functions and classes found in the core: API_MODULES is wrong"
    assert "Paper:" in html and "(B, d+1, l+1)" in html, "the docstrings' equations and shapes did not reach the page"


def test_every_page_opens_in_the_browser_without_a_problem(built, checked):
    assert checked["problems"] == [], "\n".join(checked["problems"])
    assert sorted(checked["pages"]) == site_check.site_pages(built["out"]), "the check did not open every page"
    assert built["code"] == 0, built["stderr"][-3000:]


def test_tutorial_pages_show_typeset_math_their_figures_and_checks(checked):
    for path in TUTORIALS:
        page = checked["pages"][f"tutorials/{path.stem}.html"]
        figures = len(re.findall(r"show_figure\(\w+, \"", path.read_text()))
        assert page["math"] > 0, f"{path.name}: no typeset formula on its page"
        assert len(page["images"]) == figures and all(i["loaded"] for i in page["images"]), (
            f"{path.name}: {figures} figure(s) drawn, the page shows {page['images']}")
        assert page["checks"] >= 1, f"{path.name}: no check line in the page's outputs"


def test_the_report_page_shows_its_figures(checked):
    page = checked["pages"]["figures/REPORT.html"]
    drawn = len(re.findall(r"!\[[^\]]*\]\(", (ROOT / "figures" / "REPORT.md").read_text()))
    assert drawn and len(page["images"]) == drawn and all(i["loaded"] for i in page["images"]), page["images"]


def test_the_screenshots_are_written(checked):
    assert [Path(p).name for p in checked["screenshots"]] == list(site_check.SCREENSHOTS)
    for path in map(Path, checked["screenshots"]):
        head = path.read_bytes()[:24]
        assert head[:8] == PNG_MAGIC, f"{path} is not a PNG"
        width, height = struct.unpack(">II", head[16:24])
        assert width == 1280 and height >= 600, f"{path}: {width} x {height}, not a first screen of the 1280-wide window"
        print(f"screenshot: {path}")


def test_the_browser_check_finds_each_kind_of_problem(tmp_path, browser):
    """A page with one problem of each kind, beside what is none: code that looks like LaTeX, a link
    to an anchor that exists, a formula MathJax typesets."""
    import mathjax
    typeset = (Path(mathjax.__file__).parent / "static" / "mathjax" / "es5" / "tex-chtml.js").as_uri()
    (tmp_path / "other.html").write_text("<html><body><p id='here'>other</p></body></html>")
    (tmp_path / "index.html").write_text(
        f"<html><head><script src='{typeset}'></script></head><body>"
        "<img src='missing.png'><a href='other.html#nowhere'>a</a><a href='other.html#here'>b</a>"
        "<a href='gone.html'>c</a><p>raw $x_i$ and \\frac{a}{b}</p><pre>$G_{i,l+1}$ \\frac{1}{2}</pre>"
        "<p>\\(W_B^\\top W_C\\)</p><p>\\[\\begin{split}a \\tag{2}\\end{split}\\]</p>"
        "<script>throw new Error('boom')</script><link rel='stylesheet' href='http://127.0.0.1:9/style.css'>"
        "</body></html>")
    found = site_check.check_site(tmp_path)
    problems = "\n".join(found["problems"])
    assert "Uncaught Error: boom" in problems, problems
    assert "image not loaded" in problems and "missing.png" in problems, problems
    assert "no element #nowhere on other.html" in problems and "#here" not in problems, problems
    assert "gone.html: no such file" in problems, problems
    raw = [p for p in found["problems"] if "raw LaTeX" in p]
    assert len(raw) == 2 and "G_{i,l+1}" not in problems, raw       # $x_i$ and \frac in prose; the <pre> is code
    assert "MathJax could not typeset: \\tag not allowed in split environment" in problems, problems
    assert found["pages"]["index.html"]["math"] == 2, "MathJax did not typeset the page's two formulas"
    assert "loaded from the network: http://127.0.0.1:9/style.css" in problems, problems


def test_check_site_refuses_a_folder_without_a_site(tmp_path):
    with pytest.raises(ValueError, match="no built site"):
        site_check.check_site(tmp_path)


@pytest.mark.parametrize("where", ["tutorials", "figures/new", "."])
def test_site_refuses_an_out_inside_the_sources(where, capsys):
    assert site.main([str(ROOT / where), "--clone", str(ROOT)]) == 2
    assert "OUT must" in capsys.readouterr().err


def test_site_refuses_to_replace_a_folder_that_is_no_site(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("mine")
    assert site.main([str(tmp_path), "--clone", str(ROOT)]) == 2
    assert "is not an earlier site" in capsys.readouterr().err and (tmp_path / "notes.txt").exists()


def test_site_says_where_no_clone_is(tmp_path, capsys):
    assert site.main([str(tmp_path / "out"), "--clone", str(tmp_path)]) == 2
    assert "no clone of numpy_mamba" in capsys.readouterr().err and not (tmp_path / "out").exists()

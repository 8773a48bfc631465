"""The site in a real browser: headless Chromium opens every page that ``site`` built.

Each HTML page of the site (``_static/`` aside) is loaded from disk in Debian's Chromium, driven
by its chromedriver through Selenium; once MathJax has typeset the page, it is read as a person
would see it:

    console   the browser's console messages of level SEVERE (a script that failed, a file not found)
    images    every <img>: its source and whether it loaded (complete, with a width)
    links     every <a href>: a link inside the site must reach a file of the site, and its #anchor an
              element of that page
    math      typeset formulas (MathJax's <mjx-container>), MathJax's error boxes, and raw LaTeX left
              in the prose ($...$, \\frac, \\( ...), code blocks and program output aside
    network   every resource the page loaded from anywhere but the site's folder (file:)
    checks    the ``check:`` lines in the printed output of the tutorials' cells

``check_site`` returns one record per page and the problems found; ``take_screenshots`` saves the
screens of SCREENSHOTS (tutorial 1's first screen and its figure with the check lines above it, the
report's first screen).  ``main_check`` (``site --check``) writes both into
OUT/_check/ and fails (exit 1) on any problem.  Chromium and chromedriver come from the system
(``apt-get install chromium chromium-driver`` on Debian); Selenium is in the docs extra.
"""
from __future__ import annotations

import json
import re
import shutil
import sys
import tempfile
from pathlib import Path
from urllib.parse import unquote, urlparse

CHROMIUM = ("chromium", "chromium-browser")
CHROMEDRIVER = ("chromedriver",)
INSTALL = "apt-get install chromium chromium-driver"
# as root and with no network but the site's folder: no sandbox, no GPU, no background connections
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--window-size=1280,900", "--hide-scrollbars")
RAW_MATH = re.compile(r"\$[^$\n]*[\\^_{}][^$\n]*\$|\\(?:frac|begin|end|tag|mathbb|mathrm|sum|prod|left|right|top|odot)\b"
                      r"|\\\(|\\\[")
# file: (page, what to scroll to, or None for the first screen)
SCREENSHOTS = {"tutorial.png": ("tutorials/01_ssm_to_linear_attention.html", None),
               "tutorial_figure.png": ("tutorials/01_ssm_to_linear_attention.html", ".cell_output img"),
               "report.png": ("figures/REPORT.html", None)}
PAGE_TIMEOUT_S = 120
# Read once MathJax is done (or at once on a page without math); code, program output and the
# typeset formulas are taken out before the prose is searched for raw LaTeX.
READ_PAGE = """
const done = arguments[arguments.length - 1];
const typeset = (window.MathJax && MathJax.startup && MathJax.startup.promise) || Promise.resolve();
typeset.then(() => {
  const prose = document.body.cloneNode(true);
  prose.querySelectorAll('pre, code, script, style, mjx-container').forEach(e => e.remove());
  done({
    title: document.title,
    images: [...document.images].map(i => ({src: i.currentSrc || i.src, loaded: i.complete && i.naturalWidth > 0})),
    links: [...document.querySelectorAll('a[href]')].map(a => a.href),
    ids: [...document.querySelectorAll('[id]')].map(e => e.id)
           .concat([...document.querySelectorAll('a[name]')].map(a => a.name)),
    math: document.querySelectorAll('mjx-container').length,
    math_errors: [...document.querySelectorAll('mjx-merror')].map(e => e.getAttribute('data-mjx-error') || e.textContent),
    prose: prose.textContent,
    output: [...document.querySelectorAll('.cell_output pre')].map(p => p.textContent).join('\\n'),
    resources: performance.getEntriesByType('resource').map(r => r.name),
  });
}, error => done({error: String(error)}));
"""


def find_program(names: tuple) -> str | None:
    """The first of ``names`` on PATH, or None."""
    return next((found for name in names if (found := shutil.which(name))), None)


def browser(profile: Path):
    """Headless Chromium under chromedriver, with a fresh profile in ``profile`` and the console
    kept (goog:loggingPrefs).  Raises FileNotFoundError naming what to install when either is missing."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    chromium, driver = find_program(CHROMIUM), find_program(CHROMEDRIVER)
    if not chromium or not driver:
        missing = [name for name, found in (("chromium", chromium), ("chromedriver", driver)) if not found]
        raise FileNotFoundError(f"{' and '.join(missing)} not found on PATH: {INSTALL}")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in FLAGS + (f"--user-data-dir={profile}",):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    session = webdriver.Chrome(service=Service(executable_path=driver), options=options)
    session.set_script_timeout(PAGE_TIMEOUT_S)
    session.set_page_load_timeout(PAGE_TIMEOUT_S)
    return session


def read_page(session, path: Path) -> dict:
    """Load ``path`` in ``session`` and read it (READ_PAGE), with its console errors and the matches
    of raw LaTeX in its prose."""
    session.get(path.resolve().as_uri())
    page = session.execute_async_script(READ_PAGE)
    severe = [entry["message"] for entry in session.get_log("browser") if entry["level"] == "SEVERE"]
    page["console"] = list(dict.fromkeys(severe))          # Chromium may log one failed file twice
    page["raw_math"] = sorted(set(match.group(0) for match in RAW_MATH.finditer(page.pop("prose", ""))))
    page["checks"] = len(re.findall(r"^check: ", page.get("output", ""), re.M))
    page["failed_checks"] = len(re.findall(r"^check FAILED", page.pop("output", ""), re.M))
    return page


def link_problem(site: Path, href: str, pages: dict) -> str | None:
    """Why the link ``href`` (absolute, as the browser resolved it) leads nowhere, or None: a file: link
    must reach a file inside ``site``, and its #anchor an id of that page (``pages``: page -> record)."""
    url = urlparse(href)
    if url.scheme != "file":
        return None                                      # a link out of the site (the theme's credits)
    target = Path(unquote(url.path))
    if site.resolve() not in target.resolve().parents:
        return f"{href}: outside the site"
    if not target.is_file():
        return f"{href}: no such file"
    name = target.resolve().relative_to(site.resolve()).as_posix()
    if url.fragment and name in pages and unquote(url.fragment) not in pages[name]["ids"]:
        return f"{href}: no element #{url.fragment} on {name}"
    return None


def page_problems(name: str, page: dict) -> list:
    """What is wrong with one page as read (``read_page``), one sentence each."""
    problems = [f"{name}: console: {message}" for message in page["console"]]
    problems += [f"{name}: image not loaded: {image['src']}" for image in page["images"] if not image["loaded"]]
    problems += [f"{name}: raw LaTeX left in the prose: {text!r}" for text in page["raw_math"]]
    problems += [f"{name}: loaded from the network: {url}" for url in page["resources"] if not url.startswith("file:")]
    problems += [f"{name}: MathJax could not typeset: {error}" for error in page["math_errors"]]
    if page["failed_checks"]:
        problems.append(f"{name}: {page['failed_checks']} failed check line(s) in its output")
    if page.get("error"):
        problems.append(f"{name}: {page['error']}")
    return problems


def site_pages(site: Path) -> list:
    """The HTML pages of a built site, relative to it (the theme's and MathJax's files aside)."""
    return sorted(p.relative_to(site).as_posix() for p in site.rglob("*.html")
                  if not {"_static", "_check"} & set(p.relative_to(site).parts))


def take_screenshots(session, site: Path, folder: Path) -> list:
    """The screens of SCREENSHOTS, typeset, saved as PNG files in ``folder``; returns their paths."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for shot, (name, scroll_to) in SCREENSHOTS.items():
        session.get((site / name).resolve().as_uri())
        session.execute_async_script(READ_PAGE)                  # once MathJax is done
        if scroll_to:
            session.execute_script("document.querySelector(arguments[0]).scrollIntoView({block: 'center', behavior: 'instant'})", scroll_to)
        session.save_screenshot(str(folder / shot))
        written.append(str(folder / shot))
    return written


def check_site(site: Path, screenshots: Path | None = None) -> dict:
    """Open every page of ``site`` in headless Chromium.  Returns {"pages": {page: record}, "problems":
    [sentence, ...], "screenshots": [paths written]}; with ``screenshots`` (a folder), the first
    screen of the pages of SCREENSHOTS is saved there."""
    names = site_pages(site)
    if "index.html" not in names:
        raise ValueError(f"{site} holds no built site (no index.html); build it with python -m numpy_mamba site")
    pages, written = {}, []
    with tempfile.TemporaryDirectory(prefix="numpy_mamba_chromium_") as profile:
        session = browser(Path(profile))
        try:
            for name in names:
                pages[name] = read_page(session, site / name)
            if screenshots is not None:
                written = take_screenshots(session, site, screenshots)
        finally:
            session.quit()
    problems = [problem for name in names for problem in page_problems(name, pages[name])]
    problems += sorted({problem for name in names for href in pages[name]["links"]
                        if (problem := link_problem(site, href, pages))})
    return {"pages": pages, "problems": problems, "screenshots": written}


def main_check(site: Path) -> int:
    """``site --check``: check ``site`` (``check_site``), write OUT/_check/check.json and the
    screenshots, print the problems; 0 if there are none, 1 if there are, 2 without a browser."""
    try:
        found = check_site(site, screenshots=site / "_check")
    except FileNotFoundError as exc:
        print(f"site --check: {exc}", file=sys.stderr)
        return 2
    (site / "_check" / "check.json").write_text(json.dumps(found, indent=1))
    for problem in found["problems"]:
        print(f"site --check: {problem}", file=sys.stderr)
    pages = found["pages"].values()
    print(f"site --check: {len(found['pages'])} pages opened in headless Chromium, {sum(len(p['images']) for p in pages)} "
          f"images, {sum(len(p['links']) for p in pages)} links, {sum(p['math'] for p in pages)} typeset formulas; "
          f"{len(found['problems'])} problem(s); screenshots: {', '.join(found['screenshots'])}")
    return 1 if found["problems"] else 0

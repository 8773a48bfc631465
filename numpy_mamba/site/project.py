"""The Sphinx project of the ``site`` command: its settings (there is no conf.py), its navigation,
its API page, and the three hooks that let the repository's pages build as they are written.

    settings       MyST for the Markdown pages, myst-nb for the executed tutorials (not run again),
                   autodoc for the API page, the furo theme, MathJax 3 from the site's _static/,
                   and CSS, one rule: long lines of docstrings and printed output wrap
    navigation     the sidebar: hidden toctrees appended to the first page (the README)
    api_page       the API of the core, one autodoc section per module of API_MODULES
    build          Sphinx run on a project folder, its warnings returned

The hooks, each a difference between how GitHub or Jupyter show a page and how Sphinx would:

    docstring_as_written     a docstring is shown as help() prints it (plain-text formulas, aligned)
    page_source              the report's <a name="x"></a> anchors become MyST targets; a page
                             without a heading gets its file name as title
    display_math_as_written  $$...$$ goes to MathJax as written (Sphinx's split wrapper refuses \\tag)
"""
from __future__ import annotations

import io
import re
from pathlib import Path

COPYRIGHT = "2026, the numpy_mamba authors"     # as LICENSE says
# The core of the package, as the README's paper-to-code table lists it: the modules the API page
# documents (the experiment families are documented by their commands and the report).
API_MODULES = ("numpy_mamba", "numpy_mamba.data", "numpy_mamba.scan", "numpy_mamba.model", "numpy_mamba.loss",
               "numpy_mamba.gradients", "numpy_mamba.gradcheck", "numpy_mamba.sgd", "numpy_mamba.network",
               "numpy_mamba.stack", "numpy_mamba.layer", "numpy_mamba.rmsnorm", "numpy_mamba.fused",
               "numpy_mamba.fused.eq3", "numpy_mamba.fused.layer", "numpy_mamba.fused.stack",
               "numpy_mamba.fused.network", "numpy_mamba.gates.families", "numpy_mamba.gates.attention")
PACKAGES = ("numpy_mamba", "numpy_mamba.fused")   # their docstring only: their names live in their modules
# Long lines of the docstrings and of the tutorials' printed output (the check lines, with what was
# expected beside what was measured) wrap instead of hiding past the page's edge.
CSS = "dl.py > dd pre, .cell_output pre { white-space: pre-wrap; }\n"


def settings() -> dict:
    """The site's Sphinx configuration, as overrides of Sphinx's defaults."""
    from .. import __version__
    return {
        "project": "numpy_mamba", "version": __version__, "release": __version__, "copyright": COPYRIGHT,
        "extensions": ["myst_nb", "sphinx.ext.autodoc", "sphinx.ext.mathjax"],
        "root_doc": "index", "exclude_patterns": ["_static", "_doctrees"],
        # $...$ and $$...$$ as in Jupyter; GitHub's heading anchors, which the pages' links use
        "myst_enable_extensions": ["dollarmath", "amsmath", "attrs_inline"], "myst_heading_anchors": 6,
        "nb_execution_mode": "off", "nb_merge_streams": True,
        "autodoc_member_order": "bysource",
        "mathjax_path": "mathjax/tex-chtml.js", "html_static_path": ["_static"], "html_css_files": ["numpy_mamba.css"],
        "html_theme": "furo", "html_title": f"numpy_mamba {__version__}",
        "html_copy_source": False, "html_show_sourcelink": False,
    }


def navigation(sections: dict) -> str:
    """The site's sidebar, {caption: [document, ...]}, as hidden MyST toctrees."""
    return "".join("\n".join(["", "```{toctree}", ":hidden:", f":caption: {caption}", "", *pages, "```", ""])
                   for caption, pages in sections.items())


def api_page() -> str:
    """The API page (reST): the package's docstring, then each module of API_MODULES with its public
    functions and classes, as autodoc reads them."""
    lines = ["API of the core", "===============", "",
             "Every public function of the paper's model, from its docstring: the equation it implements "
             "and the shapes of its arrays.", ""]
    for name in API_MODULES:
        lines += [f"``{name}``", "-" * (len(name) + 4), "", f".. automodule:: {name}"]
        lines += ([] if name in PACKAGES else ["   :members:"]) + [""]
    return "\n".join(lines)


def build(src: Path, html: Path) -> list:
    """Build the project in ``src`` into ``html`` (doctrees in src/_doctrees); returns Sphinx's
    warnings, one string each."""
    from sphinx.application import Sphinx
    from sphinx.util.console import nocolor
    nocolor()
    warnings = io.StringIO()
    app = Sphinx(str(src), None, str(html), str(src / "_doctrees"), "html", confoverrides=settings(),
                 status=None, warning=warnings, freshenv=True)
    app.set_html_assets_policy("always")          # MathJax on every page: the navigation shows the titles' math
    app.connect("autodoc-process-docstring", docstring_as_written)
    app.connect("source-read", page_source)
    app.connect("doctree-read", display_math_as_written)
    app.build()
    return [line for line in warnings.getvalue().splitlines() if line.strip()]


def docstring_as_written(app, what, name, obj, options, lines) -> None:
    """autodoc: a docstring is shown as ``help()`` prints it, one literal block (the docstrings write
    their formulas and shape tables in plain text, aligned by spaces)."""
    if any(line.strip() for line in lines):
        lines[:] = ["::", ""] + [f"    {line}".rstrip() for line in lines] + [""]


def page_source(app, docname, source) -> None:
    """Sphinx's source-read: a report's ``<a name="x"></a>`` anchors as MyST targets ``[]{#x}``, so
    that its ``](#x)`` links resolve; a page without a heading (the report's tables) gets its file
    name as its title."""
    text = re.sub(r'<a name="([^"]+)"></a>', r"[]{#\1}", source[0])
    if docname.startswith("figures/") and not text.lstrip().startswith("#"):
        text = f"# {docname}.md\n\n{text}"
    source[0] = text


def display_math_as_written(app, doctree) -> None:
    """Sphinx's doctree-read: each display formula ($$...$$) goes to MathJax as written, between \\[
    and \\], as Jupyter shows it; Sphinx would wrap a formula with a line break in a split
    environment, where MathJax refuses the \\tag of the paper's equation numbers."""
    from docutils import nodes
    for node in list(doctree.findall(nodes.math_block)):
        if not node.get("nowrap") and not node.get("number"):
            latex = node.astext()
            node.clear()
            node += nodes.Text(rf"\[{latex}\]")
            node["nowrap"] = True

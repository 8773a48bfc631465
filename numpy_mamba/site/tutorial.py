"""What every tutorial uses to talk to its reader: ``check`` prints the number a step measured beside
the one the reader should expect (and stops the tutorial if they disagree), ``show_figure`` shows a
figure in a window or notebook, or saves it as a PNG and prints where when none can open.

    from numpy_mamba.site.tutorial import check, show_figure
    check("|F - scan|", err, "<= 1e-12", "the closed form is the scan")
"""
from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

import numpy as np

FIGDIR_VARIABLE = "NUMPY_MAMBA_FIGDIR"          # where show_figure saves, when set
TEMP_FIGURE_FOLDER = "numpy_mamba_figures"      # else this folder in the system temp dir


def opens_window(backend: str) -> bool:
    """Whether ``pyplot.show()`` under ``backend`` displays a figure: False for matplotlib's
    non-interactive backends (agg, pdf, svg, ...), True otherwise (TkAgg, QtAgg, macosx, and
    the notebook backends such as Jupyter's inline one)."""
    try:                                                    # matplotlib >= 3.9
        from matplotlib.backends import BackendFilter, backend_registry
        non_interactive = backend_registry.list_builtin(BackendFilter.NON_INTERACTIVE)
    except ImportError:
        from matplotlib.rcsetup import non_interactive_bk as non_interactive
    return str(backend).lower() not in {name.lower() for name in non_interactive}


def show_figure(fig, name: str):
    """Show a pyplot figure in a window or notebook; where none can open, save it and say where.

    Used by the tutorials.  The PNG goes to ``$NUMPY_MAMBA_FIGDIR/NAME.png`` when that variable is
    set (then also when a window opens, e.g. for slides), else, only when the backend opens no
    window (Agg: ssh, CI), to ``numpy_mamba_figures/NAME.png`` in the system temp dir
    (``tempfile.gettempdir()``, which honours TMPDIR), so a run from a clone writes nothing into
    it.  Each save prints one line with the path.  Returns that path, or None when only shown.
    The figure is closed either way.
    """
    import matplotlib
    from matplotlib import pyplot as plt

    if not isinstance(name, str) or not name or Path(name).name != name or name in (".", ".."):
        raise ValueError(f"name must be a plain file name without folder or suffix, e.g. '01_gates'; got {name!r}.")
    backend = matplotlib.get_backend()
    window = opens_window(backend)
    figdir = os.environ.get(FIGDIR_VARIABLE)
    path = None
    if figdir or not window:
        folder = Path(figdir) if figdir else Path(tempfile.gettempdir()) / TEMP_FIGURE_FOLDER
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{name}.png"
        fig.savefig(path, dpi=120, bbox_inches="tight")
        why = (f"{FIGDIR_VARIABLE} is set" if figdir else
               f"the {backend!r} backend opens no window; set {FIGDIR_VARIABLE} to choose the folder")
        print(f"saved figure {path}  ({why})")
    if window:
        plt.show()
    plt.close(fig)
    return path


CHECK_FORMS = ("< X", "<= X", "> X", ">= X", "between A and B", "X +- T", "== X")


def _expectation(expected: str):
    """The test of an expectation written as in CHECK_FORMS: a function of the value -> bool."""
    import ast
    import operator
    number = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
    text = expected.strip()
    bound = re.fullmatch(rf"(<=|<|>=|>) ({number})", text)
    if bound:
        compare = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}[bound.group(1)]
        return lambda v: compare(float(v), float(bound.group(2)))
    span = re.fullmatch(rf"between ({number}) and ({number})", text)
    if span:
        return lambda v: float(span.group(1)) <= float(v) <= float(span.group(2))
    near = re.fullmatch(rf"({number}) \+- ({number})", text)
    if near:
        return lambda v: abs(float(v) - float(near.group(1))) <= float(near.group(2))
    if text.startswith("== "):
        target = ast.literal_eval(text[3:])
        return lambda v: v == target
    raise ValueError(f"expected must take one of the forms {', '.join(CHECK_FORMS)}; got {expected!r}.")


def _shown(value) -> str:
    """A value as the check line prints it: 4 significant digits for a float, as is otherwise."""
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return f"{float(value):.4g}"
    if isinstance(value, tuple):
        return str(tuple(int(v) if isinstance(v, (int, np.integer)) else v for v in value))
    raise ValueError(f"a check's value must be a number, a bool or a tuple (a shape); got {type(value).__name__}.")


def check(what: str, value, expected: str, meaning: str):
    """Print one line a tutorial's reader can check by eye, and stop the tutorial if it fails::

        check: WHAT = VALUE (expected EXPECTED): MEANING

    ``expected`` takes one of the forms of CHECK_FORMS, numbers written out (``"<= 1e-12"``,
    ``"0.6 +- 0.012"``, ``"== (8, 31, 21)"``).  A value that does not meet it (or is NaN) prints
    the line as ``check FAILED: ...`` and raises AssertionError with it.  Returns ``value``.
    """
    if not what or not meaning or "\n" in what + meaning:
        raise ValueError(f"what and meaning must be one-line, non-empty texts; got {what!r}, {meaning!r}.")
    passed = _expectation(expected)
    shown = _shown(value)
    holds = bool(passed(value)) and not (isinstance(value, (float, np.floating)) and np.isnan(value))
    line = f"{what} = {shown} (expected {expected}): {meaning}"
    print(f"check: {line}" if holds else f"check FAILED: {line}", flush=True)
    if not holds:
        raise AssertionError(f"check failed: {line}")
    return value

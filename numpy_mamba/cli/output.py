"""Writing results: JSON with every setting and value, named sections of figures/REPORT.md, and
figures drawn without pyplot (so a command never changes the caller's matplotlib backend).

Each command (``reproduce``, ``theory``, ``gates``) owns one section of REPORT.md, delimited
by HTML comments, and rewrites only that section, so the commands can run in any order.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

REPORT_TITLE = "# numpy_mamba: reproduction and theory report\n"


def _plain(obj):
    if isinstance(obj, dict):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _plain(obj.tolist())
    if isinstance(obj, np.generic):
        return obj.item()
    return obj


def save_json(path, obj) -> Path:
    """Write ``obj`` (dicts, lists, NumPy arrays and scalars) as JSON; a NaN or inf is an error."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        text = json.dumps(_plain(obj), indent=1, allow_nan=False)
    except ValueError as exc:
        raise ValueError(f"refusing to write {path}: it holds a NaN or infinite value ({exc}).") from None
    path.write_text(text + "\n")
    return path


def write_section(path, name: str, markdown: str) -> Path:
    """Replace (or append) the section ``name`` of the Markdown report at ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    begin, end = f"<!-- BEGIN {name} -->", f"<!-- END {name} -->"
    block = f"{begin}\n{markdown.strip()}\n{end}\n"
    text = path.read_text() if path.exists() else REPORT_TITLE
    pattern = re.compile(re.escape(begin) + r".*?" + re.escape(end) + r"\n?", re.S)
    if pattern.search(text):
        text = pattern.sub(lambda _: block, text)
    else:
        text = text.rstrip("\n") + "\n\n" + block
    path.write_text(text)
    return path


def subplots(nrows: int = 1, ncols: int = 1, figsize=None, **kwargs):
    """(figure, axes) like ``pyplot.subplots``, but a bare ``Figure``: saved with ``fig.savefig``,
    never shown, and no global backend or figure registry is touched."""
    fig = Figure(figsize=figsize)
    return fig, fig.subplots(nrows, ncols, **kwargs)

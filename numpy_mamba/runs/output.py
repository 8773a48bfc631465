"""Writing results: JSON with every setting and value, named sections of figures/REPORT.md,
figures drawn without pyplot (so a command never changes the caller's matplotlib backend), and the
smoke-run stamp and the settings footer every figure carries.

Each command (``reproduce``, ``theory``, ``ablation``, ``gates``) owns one section of REPORT.md, delimited
by HTML comments, and rewrites only that section, so the commands can run in any order.

All-or-nothing output folders (``run_staged``) are in ``runner.py``.
"""
from __future__ import annotations

import json
import os
import re
import tempfile
import textwrap
from pathlib import Path

import numpy as np

REPORT_TITLE = "# numpy_mamba: reproduction and theory report\n"
SMOKE = "SMOKE RUN (--quick), reduced sizes: the numbers mean nothing"
FOOTER_GREY = "#555555"


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


_FLAT_LIST = re.compile(r"\[\s*((?:-?[\d.eE+-]+|null|true|false)(?:,\s*(?:-?[\d.eE+-]+|null|true|false))*)\s*\]")


def save_compact_json(path, obj) -> Path:
    """``save_json`` (which refuses NaN and inf), then each innermost list of numbers put on one
    line, so a large result file stays small and diffable.  Same JSON content."""
    path = save_json(path, obj)
    text = _FLAT_LIST.sub(lambda m: "[" + ", ".join(x.strip() for x in m.group(1).split(",")) + "]",
                          path.read_text())
    path.write_text(re.sub(r"\[\s+\]", "[]", text))
    return path


SECTION = re.compile(r"<!-- BEGIN (\S+) -->\n(.*?)\n<!-- END \1 -->\n?", re.S)
LEADING = ("results",)          # sections that open the report (right after its title) when first written
TRAILING = "appendix"           # the section that closes it: other sections are added before it


def merge_section(text: str, name: str, markdown: str) -> str:
    """``text`` (a report) with its section ``name`` replaced by ``markdown``, or added: at the end
    (before the TRAILING section, if there is one), or right after the title for a section of
    LEADING (the results table every command feeds)."""
    begin, end = f"<!-- BEGIN {name} -->", f"<!-- END {name} -->"
    block = f"{begin}\n{markdown.strip()}\n{end}\n"
    pattern = re.compile(re.escape(begin) + r".*?" + re.escape(end) + r"\n?", re.S)
    if pattern.search(text):
        return pattern.sub(lambda _: block, text)
    if name in LEADING:
        title, _, rest = text.partition("\n")
        if title.startswith("# "):
            return f"{title}\n\n{block}\n{rest.lstrip(chr(10))}".rstrip("\n") + "\n"
    last = f"<!-- BEGIN {TRAILING} -->"
    if name != TRAILING and last in text:
        head, _, tail = text.partition(last)
        return head.rstrip("\n") + "\n\n" + block + "\n" + last + tail
    return text.rstrip("\n") + "\n\n" + block


def write_section(path, name: str, markdown: str) -> Path:
    """Replace (or append) the section ``name`` of the Markdown report at ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(merge_section(path.read_text() if path.exists() else REPORT_TITLE, name, markdown))
    return path


def subplots(nrows: int = 1, ncols: int = 1, figsize=None, **kwargs):
    """(figure, axes) like ``pyplot.subplots``, but a bare ``Figure``: saved with ``fig.savefig``,
    never shown, and no global backend or figure registry is touched."""
    from matplotlib.figure import Figure                    # only when drawing: workers never do
    fig = Figure(figsize=figsize)
    return fig, fig.subplots(nrows, ncols, **kwargs)


def save_figure(fig, path, quick: bool, tight: bool = False, stamp_axes=()) -> Path:
    """Save ``fig`` at 110 dpi into ``path`` (its folder made if needed); a quick run's figure gets
    the smoke stamp (``smoke_stamp``; ``stamp_axes``: the axes that carry its watermark)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    smoke_stamp(fig, quick, stamp_axes)
    fig.savefig(path, dpi=110, bbox_inches="tight" if tight else None)
    return path


WATERMARK = "SMOKE RUN\nnumbers mean nothing"


def smoke_stamp(fig, quick: bool, axes=()) -> None:
    """On a quick run's figure: a large diagonal watermark, and the title (suptitle) in red starting
    with "SMOKE RUN" (call after the layout is final).

    The watermark lies across the whole figure; given ``axes``, it lies inside each of them instead
    (over their plot, clipped to it), for a figure where one across it would cover numbers (a table
    drawn beside plots).
    """
    if not quick:
        return
    style = dict(color="red", alpha=0.18, ha="center", va="center", rotation=25, weight="bold", zorder=100)
    for ax in axes:
        width = ax.get_position().width * fig.get_figwidth()           # inches
        ax.text(0.5, 0.5, WATERMARK, transform=ax.transAxes, fontsize=4.6 * width, clip_on=True, **style)
    if not axes:
        fig.text(0.5, 0.5, WATERMARK, fontsize=3.6 * fig.get_figwidth(), **style)
    title = fig.get_suptitle()
    if title:
        fig.suptitle(f"[{SMOKE}]\n{title}", color="red", fontsize=11)
    else:
        fig.text(0.5, 0.995, SMOKE, fontsize=10, color="red", ha="center", va="top", weight="bold", zorder=101)


def footnote(fig, text: str, note: str) -> None:
    """Grey settings text at the bottom left, ``note`` first, wrapped to the figure's width."""
    width = int(fig.get_figwidth() * 17)
    fig.text(0.01, 0.005, "\n".join(textwrap.wrap(f"{note}. {text}", width)), fontsize=8, color=FOOTER_GREY,
             va="bottom", ha="left")

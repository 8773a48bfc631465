"""What a reader's eye checks in a figure, measured on the drawn figure (display pixels, Agg).

    legends_over_data(fig)   a legend that covers a plotted point, a stretch of a line, or a bar
    hidden_lines(fig)        a line drawn on top of another along most of its length, with nothing
                             left to tell the two apart (markers showing around the top line's, or
                             the bottom line showing through a dashed top line)

Each returns a list of sentences, empty when the figure is fine.  Used by tests/test_tutorials.py
on every tutorial figure and by tests/test_student_path_figures.py on the reproduce tables.
"""
import numpy as np
from matplotlib.lines import Line2D

STEP_PX = 2.0           # a line is sampled every STEP_PX pixels between its vertices
SAME_PX = 2.0           # two vertices closer than this are drawn on top of each other


def _drawn(fig):
    fig.canvas.draw()
    return fig.canvas.get_renderer()


def _line_pixels(line: Line2D, ax) -> np.ndarray:
    """The display positions a line covers inside its axes: its vertices, and, when a line style is
    drawn, points every STEP_PX pixels along each segment.  (n, 2)."""
    xy = line.get_transform().transform(np.asarray(line.get_xydata(), dtype=float))
    xy = xy[np.all(np.isfinite(xy), axis=1)]
    if len(xy) > 1 and line.get_linestyle() not in ("None", "", " "):
        pieces = [xy[:1]]
        for a, b in zip(xy[:-1], xy[1:]):
            n = max(int(np.ceil(np.linalg.norm(b - a) / STEP_PX)), 1)
            pieces.append(a + (b - a) * np.linspace(0, 1, n + 1)[1:, None])
        xy = np.vstack(pieces)
    box = ax.get_window_extent()
    inside = (xy[:, 0] >= box.x0) & (xy[:, 0] <= box.x1) & (xy[:, 1] >= box.y0) & (xy[:, 1] <= box.y1)
    return xy[inside]


def _name(artist, ax) -> str:
    label = artist.get_label()
    where = ax.get_title() or "an axes"
    return f"{label!r} in {where!r}" if label and not label.startswith("_") else f"an unlabelled {type(artist).__name__} in {where!r}"


def legends_over_data(fig) -> list:
    """One sentence per (legend, artist) pair where the legend covers the artist's data: a line's
    points or segments, or a bar (a Rectangle in data coordinates; spans such as axvspan are
    backgrounds, not data)."""
    renderer = _drawn(fig)
    legends = [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None] + list(fig.legends)
    problems = []
    for legend in legends:
        box = legend.get_window_extent(renderer).padded(-1.0)
        for ax in fig.axes:
            for line in ax.lines:
                if not line.get_visible():
                    continue
                xy = _line_pixels(line, ax)
                covered = (xy[:, 0] > box.x0) & (xy[:, 0] < box.x1) & (xy[:, 1] > box.y0) & (xy[:, 1] < box.y1)
                if covered.any():
                    problems.append(f"the legend covers {int(covered.sum())} point(s) of line {_name(line, ax)}")
            for patch in ax.patches:
                if not patch.get_visible() or patch.get_data_transform() is not ax.transData:
                    continue
                bar = patch.get_window_extent(renderer)
                if bar.width > 0 and bar.height > 0 and bar.overlaps(box):
                    problems.append(f"the legend covers a bar ({_name(patch, ax)})")
    return problems


def _shows_under(bottom: Line2D, top: Line2D) -> bool:
    """Whether the line drawn first still shows where the one drawn on top lies on it: through the
    gaps of a dashed or dotted top line over a solid one; as markers wider than a top line without
    markers; or as markers larger than the top line's (1.3 times), or around its hollow ones."""
    def marked(line):
        return line.get_marker() not in (None, "None", "", " ")
    if top.get_linestyle() in ("--", ":", "-.") and bottom.get_linestyle() == "-" and not marked(top):
        return True
    if not marked(bottom):
        return False
    if not marked(top):
        return top.get_linewidth() < 0.6 * bottom.get_markersize()
    hollow = str(top.get_markerfacecolor()).lower() == "none"
    return hollow or bottom.get_markersize() >= 1.3 * top.get_markersize()


def hidden_lines(fig) -> list:
    """One sentence per pair of lines of one axes that lie on top of each other at half or more of
    their vertices (within SAME_PX pixels) while nothing tells them apart there."""
    _drawn(fig)
    problems = []
    for ax in fig.axes:
        lines = sorted((line for line in ax.lines if line.get_visible() and len(line.get_xydata()) > 1),
                       key=lambda line: line.get_zorder())           # drawing order: zorder, then insertion
        for i, bottom in enumerate(lines):
            a = bottom.get_transform().transform(np.asarray(bottom.get_xydata(), dtype=float))
            for top in lines[i + 1:]:
                b = top.get_transform().transform(np.asarray(top.get_xydata(), dtype=float))
                if a.shape != b.shape:
                    continue
                same = np.linalg.norm(a - b, axis=1) < SAME_PX
                if same.mean() >= 0.5 and not _shows_under(bottom, top):
                    problems.append(f"line {_name(top, ax)} hides line {_name(bottom, ax)} at {int(same.sum())} of "
                                    f"{len(same)} points")
    return problems

"""What a student sees in the quick run's Table 1 image: the smoke-run watermark says so without
covering a number.

table1.png (and table1_L3.png, the same drawing) is a table of numbers above bar panels.  Its quick
run carries the smoke stamp; a watermark across the whole figure would lie over table cells and the
legend's title, so it goes inside the bar panels instead.  Measured on the drawn figure, from the
session's ``reproduce --quick`` run (tests/conftest.py).  A failure means the watermark covers a
table cell or a legend, is missing, or the full run's figure gained one.
"""
import json

import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.transforms import Bbox

from figure_checks import legends_over_data
from numpy_mamba.reproduce import table1
from numpy_mamba.runs.output import WATERMARK


def _drawn_table1(result, tmp_path, monkeypatch):
    """The Figure table1.png draws for ``result``, as it is saved (smoke stamp included)."""
    seen = []
    save = table1.save

    def keep(fig, path, result, **kwargs):
        out = save(fig, path, result, **kwargs)
        seen.append(fig)
        return out

    monkeypatch.setattr(table1, "save", keep)
    table1.png(result, tmp_path / "table1.png")
    (fig,) = seen
    FigureCanvasAgg(fig).draw()                      # a bare Figure: give it the canvas it was saved with
    return fig


def _watermarks(fig):
    texts = list(fig.texts) + [t for ax in fig.axes for t in ax.texts]
    return [t for t in texts if t.get_text() == WATERMARK]


def test_quick_table1_watermark_covers_no_table_cell_and_no_legend(reproduce_quick, tmp_path, monkeypatch):
    result = json.loads((reproduce_quick.out / "table1.json").read_text())
    assert result["settings"]["quick"] is True
    fig = _drawn_table1(result, tmp_path, monkeypatch)
    renderer = fig.canvas.get_renderer()
    marks = _watermarks(fig)
    assert marks, "a quick run's Table 1 must carry the smoke-run watermark"
    cells = [cell.get_window_extent(renderer) for ax in fig.axes for table in ax.tables
             for cell in table.get_celld().values()]
    assert len(cells) > 10, "the table's cells were not found"
    legends = [legend.get_window_extent(renderer) for legend in fig.legends]
    for mark in marks:
        where = mark.get_window_extent(renderer)
        if mark.get_clip_on() and mark.axes is not None:          # drawn only inside its axes
            where = Bbox.intersection(where, mark.axes.bbox)
        assert where is not None and where.width > 0
        covered = [box for box in cells if where.overlaps(box)]
        assert not covered, f"the watermark lies over {len(covered)} table cell(s)"
        assert not any(where.overlaps(box) for box in legends), "the watermark lies over the legend and its title"
    assert legends_over_data(fig) == [], "the legend covers a bar"


def test_full_run_table1_has_no_watermark(reproduce_quick, tmp_path, monkeypatch):
    result = json.loads((reproduce_quick.out / "table1.json").read_text())
    result["settings"] = dict(result["settings"], quick=False)
    assert _watermarks(_drawn_table1(result, tmp_path, monkeypatch)) == []


@pytest.mark.parametrize("quick", [True, False])
def test_the_figure_watermark_of_other_figures_stays_across_the_figure(quick):
    from numpy_mamba.runs.output import smoke_stamp, subplots
    fig, ax = subplots()
    ax.plot([0, 1], [0, 1])
    smoke_stamp(fig, quick)
    assert [t.axes for t in _watermarks(fig)] == ([None] if quick else [])

"""The registry of ``reproduce``: every experiment is one module with the same interface, and a new
experiment (or figure) is one new module plus one line in ``EXPERIMENTS``.  ``run.py`` and
``report.py`` only loop over this tuple.

The interface of an experiment module::

    NAME              its name in timings and progress lines ("fig2", "mechanism", "depth3")
    JSON_NAMES        the JSON files it writes (NAME.json), which are also its ``--only`` names;
                      one training run may serve several (mechanism: fig3, fig4, table1)
    RUNS_LABEL        (short, long) name of its one-layer training runs in the report head's shared
                      tables (training, step sizes), or None if its ``report`` shows its training itself
    OUTPUTS           its lines of ``reproduce --help``: what it computes -> the files it writes
    SETTINGS, QUICK   its full and quick settings, frozen dataclasses (``common.Settings`` or a subclass)
    settings(one_layer) -> its settings, given the run's one-layer settings (``--quick``, ``--seeds``)
    selection(settings) -> {model: Plan}: the step-size rule of ``step_size.py`` as units
    plan(settings, selection, names) -> Plan: its training units, given the rule's record per model;
                      assembles to {JSON name: JSON-ready result} for the ``names`` asked for
    claims(results) -> [[claim, paper, ours, verdict]]: its rows of the claims table, from the
                      results present ({JSON name: result}, possibly none of its own)
    draw(results, out) -> [paths]: its figures and tables, drawn from the JSON as saved
    report(results) -> markdown: its part of the "reproduce" section of REPORT.md ("" if none)

Order: the ``--only`` names, the claims table and the report follow this tuple; the training
units run in the reverse order, so the slowest experiment (listed last) starts first and no
worker idles at the end of a ``--jobs`` run.
"""
from . import depth3, fig2, mechanism

EXPERIMENTS = (fig2, mechanism, depth3)

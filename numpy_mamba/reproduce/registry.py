"""The registry of ``reproduce``: every experiment is one module that defines its ``EXPERIMENT``
(``experiment.Experiment``), and a new experiment (or figure) is one new module plus one line here.
``run.py`` and ``report.py`` only loop over this tuple.

Order: the ``--only`` names, the claims table and the report follow this tuple; the training
units run in the reverse order, so the slowest experiment (listed last) starts first and no
worker idles at the end of a ``--jobs`` run.
"""
from . import depth3, factorial, fig2, mechanism

EXPERIMENTS = (fig2.EXPERIMENT, factorial.EXPERIMENT, mechanism.EXPERIMENT, depth3.EXPERIMENT)


def json_names() -> tuple:
    """Every registered experiment's JSON names, in registry order: the ``--only`` names, and the
    files a full run writes (NAME.json)."""
    return tuple(name for experiment in EXPERIMENTS for name in experiment.json_names)

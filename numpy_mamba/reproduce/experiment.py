"""What an experiment of ``reproduce`` is, as one value: an ``Experiment`` says which files it
writes and how to choose its step sizes, train, judge, draw and report, so ``run.py`` and
``report.py`` only loop over the registry (``registry.py``) and never ask which experiment they hold.

An experiment's results are JSON-ready dicts, one per file it writes ({JSON name: result}); the
step-size rule and the training come as ``runs.jobs.Plan``s of independent units, so that every
experiment's units share the workers of one ``--jobs`` run.  A step-size selection is keyed by what
it selects for (``common.selection_key``), so two experiments that train alike run it once.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from .common import Settings


def one_layer_settings(settings: Settings) -> Settings:
    """An experiment's settings when it has none of its own: the run's one-layer settings
    (``--quick``, ``--seeds``)."""
    return settings


def no_summary(results: dict) -> list:
    """An experiment that adds no line to the report's first screen."""
    return []


@dataclass(frozen=True, eq=False)           # one value per experiment: compared and hashed by identity
class Experiment:
    """One experiment of ``reproduce``.

    name        : its name in progress lines and timings ("fig2", "mechanism", "depth3").
    json_names  : the JSON files it writes (NAME.json), which are also its ``--only`` names; one
                  training run may serve several (mechanism: fig3, fig4, table1).
    outputs     : its lines of ``reproduce --help``: what it computes -> the files it writes.
    selection   : settings -> {key: Plan}: the step-size rule of ``runs/step_size.py`` as units; a
                  key names what the rule selects for (``common.selection_key``), and a key two
                  experiments share is run once.
    plan        : (settings, {key: the rule's record}, names) -> Plan: its training units; the
                  Plan assembles to {JSON name: result} for the ``names`` asked for.
    claims      : {JSON name: result} -> [row]: its rows of REPORT.md's results table
                  (``measure.rules.claim_row``), from the results present (possibly none of its own).
    rules       : {rule name: text}: the rules its rows cite, written once under the report's Rules.
    draw        : ({JSON name: result}, out folder) -> [paths]: its figures and tables, drawn from
                  the JSON as saved.
    report      : {JSON name: result} -> markdown: its part of the "reproduce" section ("" if none).
    runs_label  : (short, long) name of its one-layer training runs in the report head's shared
                  tables (training, step sizes), or None if its ``report`` shows its training itself.
    settings    : the run's one-layer settings -> its own (``one_layer_settings`` unless it keeps
                  its own sizes).
    summary     : {JSON name: result} -> [markdown line]: what it adds to the report's first screen
                  (the measured reason of a miss), from the results present.
    """

    name: str
    json_names: tuple
    outputs: str
    selection: Callable
    plan: Callable
    claims: Callable
    draw: Callable
    report: Callable
    rules: dict = field(default_factory=dict)
    runs_label: tuple | None = None
    settings: Callable = one_layer_settings
    summary: Callable = no_summary

    def __post_init__(self):
        if not (isinstance(self.json_names, tuple) and self.json_names
                and all(isinstance(n, str) and n for n in self.json_names)):
            raise ValueError(f"json_names must be a non-empty tuple of file names; got {self.json_names!r} ({self.name}).")
        if self.runs_label is not None and not (isinstance(self.runs_label, tuple) and len(self.runs_label) == 2
                                                and all(isinstance(x, str) for x in self.runs_label)):
            raise ValueError(f"runs_label must be None or (short, long) strings; got {self.runs_label!r} ({self.name}).")

"""What an experiment is, as nanoGPT's ``train.py`` is one flat script: one module with the same few
parts, which the one runner (``command.py``) runs alone or with any other.  A command (``reproduce``,
``theory``, ``gates``, ``ablation``) is a name over a tuple of experiments, its registry, in its
family's ``__init__.py``: a new experiment is one module plus one line there.

An experiment module defines

    NAME                 "fig2": its name in progress lines and timings
    FILES                ("fig2",): the JSON files it writes (FILE.json), also its ``--only`` names
    OUTPUTS              its line of ``--help``: what it computes -> what it writes
    FULL, QUICK          its settings, frozen dataclasses with ``to_dict()`` (QUICK: a smoke run)
    RULES                the names of the rules (``measure.rules.RULES``) its claims cite
    units(settings, chosen) -> [Unit]
                         the independent runs (seeds, settings), each a module-level function and
                         its arguments (``runner.Unit``), run ``--jobs`` at a time
    assemble(settings, chosen, found, run) -> {file: result}
                         its JSON-ready results from ``found`` ({unit key: what the unit returned})
    figure(results, out) -> [paths]
                         its figures, drawn from the JSON as saved
    claims(results) -> [row]
                         its rows of the results table: each a claim of the paper (or ours) with the
                         numbers, the rule that judged it and the verdict (``claims.claim_row``)
    report(results, run) -> str
                         its part of the command's REPORT.md section, the sentences of a Markdown
                         template in its family's ``templates/`` folder (``report.Template``)

and where it needs them

    selection(settings, chosen) -> {key: Plan}
                         the step-size rule as units, run before ``units``; a key that two experiments
                         ask for runs once; asked again with what was chosen until it asks for nothing new
    settings(quick, seeds) -> settings
                         its settings for ``--quick`` and ``--seeds`` (default: QUICK or FULL, with
                         ``seeds`` replaced where given)
    judge(results)       verdicts kept in its own JSON (theory): applied after ``assemble`` and on ``--replot``
    summary(results) -> [line]
                         lines of the report's first screen (the measured reason of a miss)
    headlines(results) -> [(what, paper, ours)]
                         its headline numbers (default: those its rows carry)

Every part reads ``results``, {file: result} of every JSON present (this run's and those already in
``--out``), so a part may read another experiment's file; it never writes into it.

What an experiment needs besides the core is importable from here: ``Unit`` (a unit of work),
``claim_row`` and ``finding_row`` (its rows), ``Template`` (its sentences), ``subplots`` and
``save_figure`` (its figures, matplotlib imported only when drawing), and the verdict vocabulary
``judge_cases`` and ``case`` (its rule's text and case function go to ``measure.rules``).  To add one,
read this file, the registry (the family's ``__init__.py``), an experiment of the family, and
``measure/rules.py``; tests/toy_experiment.py is a whole one.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable

from ..measure.rules import case, judge_cases
from .claims import claim_row, finding_row
from .output import save_figure, subplots
from .report import Template
from .runner import Unit

__all__ = ["Command", "Run", "Template", "Unit", "case", "check", "claim_row", "finding_row", "judge_cases",
           "save_figure", "settings_for", "subplots"]

REQUIRED = ("NAME", "FILES", "OUTPUTS", "FULL", "QUICK", "RULES", "units", "assemble", "figure", "claims", "report")


def check(experiment) -> None:
    """Raise ValueError naming what an experiment module lacks (at registration, not mid-run)."""
    missing = [part for part in REQUIRED if not hasattr(experiment, part)]
    if missing:
        raise ValueError(f"the experiment {getattr(experiment, '__name__', experiment)!r} lacks {missing}: "
                         f"an experiment defines {', '.join(REQUIRED)} (numpy_mamba/runs/experiment.py).")
    if not (isinstance(experiment.FILES, tuple) and all(isinstance(f, str) and f for f in experiment.FILES)):
        raise ValueError(f"FILES must be a tuple of file names; got {experiment.FILES!r} ({experiment.NAME}).")


def settings_for(experiment, quick: bool, seeds: int | None = None):
    """The experiment's settings for ``--quick`` and ``--seeds``: its own ``settings(quick, seeds)``,
    else QUICK or FULL with ``seeds`` replaced where given."""
    if hasattr(experiment, "settings"):
        return experiment.settings(quick, seeds)
    base = experiment.QUICK if quick else experiment.FULL
    return base if seeds is None else replace(base, seeds=seeds)


@dataclass(frozen=True)
class Run:
    """How a command ran, for what its experiments write: its name, the command line as the report
    states it, smoke run or not, workers, the compute seconds of each experiment's units (its share
    of the step-size rule included) and the wall time until its JSON was written."""
    command: str
    line: str
    quick: bool
    jobs: int
    seconds: dict = field(default_factory=dict)
    wall: float | None = None


@dataclass(frozen=True)
class Command:
    """A command over its registry of experiments (their order is the report's).

    name        "reproduce": the command, its REPORT.md section and claims_<name>.json
    experiments the experiment modules, in the order of their rows and report parts
    doc         its ``--help`` text (the options are every command's: ``command.py``)
    heading     (quick) -> the heading of its REPORT.md section, stamped for a smoke run
    section     (results, run, rows, headlines) -> Markdown: its section, the experiments' parts in its template
    rules_before, rules_after
                the names of rules its rows and section cite besides the experiments' own (the report
                lists them in this order: before, the experiments', after)
    notes       (results) -> {name: Markdown}: notes of the report's appendix (the main setting)
    summary     (results) -> [line]: the command's own lines of the report's first screen (its bottom
                line), before its experiments' lines
    extra       (results, run) -> {file: JSON}: files of the whole command (theory's summary)
    kept        names of ``extra``'s files that ``--replot`` reads back from OUT into ``results``, so that
                what only the run knew (theory's run times) is written again as it was
    seeds       whether ``--seeds`` applies (a number of training seeds)
    """
    name: str
    experiments: tuple
    doc: str
    heading: Callable
    section: Callable
    rules_before: tuple = ()
    rules_after: tuple = ()
    notes: Callable = lambda results: {}
    summary: Callable = lambda results: []
    extra: Callable = lambda results, run: {}
    kept: tuple = ()
    seeds: bool = False

    def __post_init__(self):
        for experiment in self.experiments:
            check(experiment)
        files = [f for e in self.experiments for f in e.FILES]
        if len(set(files)) != len(files):
            raise ValueError(f"two experiments of {self.name} write the same file: {files}.")

    def files(self) -> tuple:
        """Every experiment's JSON names, in registry order: the ``--only`` names."""
        return tuple(f for e in self.experiments for f in e.FILES)

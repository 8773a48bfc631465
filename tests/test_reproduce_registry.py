"""The registry of ``reproduce`` (numpy_mamba/reproduce/registry.py) is the one place that lists
the experiments: every experiment is an ``Experiment`` value, the command and the report only loop
over the registry, and a new experiment plugs in as one module plus one registry entry."""
import json
from dataclasses import FrozenInstanceError
from pathlib import Path

import numpy as np
import pytest

from numpy_mamba.runs.claims import claim_row
from numpy_mamba.reproduce import common, registry, run
from numpy_mamba.reproduce.experiment import Experiment
from numpy_mamba.runs.jobs import Plan, Unit


@pytest.mark.parametrize("experiment", registry.EXPERIMENTS, ids=lambda e: e.name)
def test_every_experiment_is_an_experiment_value_with_frozen_settings(experiment):
    """If this fails, an experiment is registered as something other than an Experiment, or its
    settings can be changed after they are made, or a quick run's settings do not say so (every
    output is stamped from them)."""
    assert isinstance(experiment, Experiment)
    for one_layer, quick in ((common.FULL, False), (common.QUICK, True)):
        settings = experiment.settings(one_layer)
        assert isinstance(settings, common.Settings) and settings.quick is quick
        with pytest.raises(FrozenInstanceError):
            settings.seeds = 3
    with pytest.raises(FrozenInstanceError):
        experiment.name = "other"


def test_the_registry_gives_the_only_names_and_json_files():
    """If this fails, an --only name or a JSON file is listed outside the registry, or two
    experiments write the same file."""
    names = registry.json_names()
    assert len(names) == len(set(names)) and len({e.name for e in registry.EXPERIMENTS}) == len(registry.EXPERIMENTS)
    assert names == ("fig2", "factorial", "fig3", "fig4", "table1", "depth3")
    assert run.parse_only(None) == names


def test_an_experiment_that_cannot_be_reported_is_refused_when_made():
    """If this fails, a malformed Experiment (no files, a one-string runs label) is accepted and
    breaks the run or the report later, far from where it was made."""
    parts = dict(outputs="x -> x.json", selection=None, plan=None, claims=None, draw=None, report=None)
    with pytest.raises(ValueError, match="json_names must be a non-empty tuple.*got \\(\\)"):
        Experiment("x", (), **parts)
    with pytest.raises(ValueError, match="runs_label must be None or \\(short, long\\).*got 'x'"):
        Experiment("x", ("x",), runs_label="x", **parts)


def test_help_lists_every_experiment_and_the_paper_figures(monkeypatch):
    """If this fails, ``reproduce --help`` leaves out an experiment's outputs or misnames the figures."""
    text = run.description()
    assert "Figures 2-6 and\nTable 1" in text
    for experiment in registry.EXPERIMENTS:
        for line in experiment.outputs.splitlines():
            assert "    " + line in text
    monkeypatch.setattr(registry, "EXPERIMENTS", registry.EXPERIMENTS + (TOY,))
    assert "    " + TOY.outputs in run.description(), "a registered experiment must appear in --help"


# ------------------------------------------------------------- a new experiment, as one module
def toy_unit(seed: int, value: float) -> float:
    return value + seed


def toy_selection(settings):
    return {("toy", m): Plan([Unit(0, "toy step size", toy_unit, (0, 0.5))], lambda f: {"chosen": {"eta": f[0]}})
            for m in common.MODELS}


def toy_plan(settings, selection, names=("toy",)):
    units = [Unit(s, f"toy seed {s}", toy_unit, (s, selection[("toy", "mamba")]["chosen"]["eta"])) for s in range(2)]
    return Plan(units, lambda f: {names[0]: {"settings": settings.to_dict(), "values": [f[0], f[1]]}})


def toy_draw(results, out):
    path = Path(out) / "toy.txt"
    path.write_text(str(results["toy"]["values"]))
    return [path]


TOY = Experiment("toy", ("toy",), "toy                 a toy -> toy.json, toy.txt", toy_selection, toy_plan,
                 claims=lambda results: [claim_row("toy", "toy claim", "paper", str(results["toy"]["values"]),
                                                   {"level": "full", "holds_in": ["a"], "part_in": [], "trend_in": [],
                                                    "fails_in": []}, "toy-rule", [("toy.txt", "toy.txt")])]
                 if results else [],
                 draw=toy_draw, report=lambda results: "### Toy section" if results else "",
                 rules={"toy-rule": "a toy holds when its values are 0.5 and 1.5"},
                 summary=lambda results: ["- The toy: [toy.txt](toy.txt)."] if results else [])


def test_a_new_experiment_is_one_module_plus_one_registry_entry(tmp_path, monkeypatch):
    """If this fails, adding an experiment to the registry is not enough to run it, save its JSON,
    draw its figures and put its claims and section into the report."""
    monkeypatch.setattr(registry, "EXPERIMENTS", (TOY,))
    assert run.parse_only(["toy"]) == ("toy",)
    results, timings = run.compute(common.QUICK, ("toy",), progress=False)
    assert results["toy"]["values"] == [0.5, 1.5] and "toy" in timings
    report_path = tmp_path / "REPORT.md"
    written = run.write_outputs(results, ("toy",), tmp_path, tmp_path, report_path, 1.0, quick=False)
    assert {p.name for p in written} == {"toy.json", "toy.txt", "REPORT.md", "claims_reproduce.json"}
    assert json.loads((tmp_path / "toy.json").read_text())["values"] == [0.5, 1.5]
    text = report_path.read_text()
    assert "| toy claim | paper | [0.5, 1.5] | **holds** ([toy-rule](#rule-toy-rule)) | holds: everywhere | [toy.txt](toy.txt) |" in text
    assert "### Toy section" in text and "#### toy claim" in text
    claims = json.loads((tmp_path / "claims_reproduce.json").read_text())
    assert claims["rules"]["toy-rule"] == TOY.rules["toy-rule"], "the experiment's own rules reach the report"
    assert claims["summary"] == ["- The toy: [toy.txt](toy.txt)."], "and its line of the first screen"
    assert run.load_results(tmp_path).keys() == {"toy"}
    assert np.isclose(results["toy"]["seconds"], timings["toy"] + timings["step sizes (toy)"])


def test_two_experiments_asking_for_one_step_size_selection_share_one_run(monkeypatch):
    """If this fails, an experiment that trains like another runs the step-size rule a second time
    (or gets another's record): the second toy asks for the first one's selection keys."""
    second = Experiment("toy2", ("toy2",), "toy2 -> toy2.json", toy_selection, toy_plan, claims=lambda r: [],
                        draw=toy_draw, report=lambda r: "")
    monkeypatch.setattr(registry, "EXPERIMENTS", (TOY, second))
    results, timings = run.compute(common.QUICK, ("toy", "toy2"), progress=False)
    assert results["toy"]["values"] == results["toy2"]["values"] == [0.5, 1.5]
    assert "step sizes (toy)" in timings and "step sizes (toy2)" not in timings

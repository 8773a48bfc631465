"""The registry of ``reproduce`` (``numpy_mamba.reproduce.COMMAND``) is the one place that lists the
experiments: every experiment is a module with the parts of numpy_mamba/runs/experiment.py, the
command and the report only loop over the registry, and a new experiment plugs in as one module plus
one registry entry."""
import json
import types
from dataclasses import FrozenInstanceError, replace

import pytest

import numpy_mamba.reproduce as reproduce
from numpy_mamba.cli import main as cli_main
from numpy_mamba.reproduce import COMMAND
from numpy_mamba.runs.claims import claim_row
from numpy_mamba.runs.command import parser
from numpy_mamba.runs.experiment import Command, settings_for
from numpy_mamba.runs.runner import Plan, Unit


@pytest.mark.parametrize("experiment", COMMAND.experiments, ids=lambda e: e.NAME)
def test_every_experiment_has_frozen_settings_that_say_when_they_are_quick(experiment):
    """If this fails, an experiment's settings can be changed after they are made, or a quick run's
    settings do not say so (every output is stamped from them)."""
    for quick in (False, True):
        settings = settings_for(experiment, quick)
        assert settings.quick is quick and settings.to_dict()["quick"] is quick
        with pytest.raises(FrozenInstanceError):
            settings.seeds = 3


def test_the_registry_gives_the_only_names_and_json_files():
    """If this fails, an --only name or a JSON file is listed outside the registry, or two
    experiments write the same file."""
    names = COMMAND.files()
    assert names == ("fig2", "factorial", "fig3", "fig4", "table1", "depth3")
    assert len({e.NAME for e in COMMAND.experiments}) == len(COMMAND.experiments)


def test_seeds_apply_to_the_one_layer_experiments_only():
    """If this fails, --seeds changes the factorial's or the three-layer runs' seeds, which keep their
    own (the help text says so), or no longer sets the one-layer experiments'."""
    fig2, factorial, mechanism, depth3 = COMMAND.experiments
    for quick in (False, True):
        assert settings_for(fig2, quick, 3).seeds == settings_for(mechanism, quick, 3).seeds == 3
        assert settings_for(factorial, quick, 3) == settings_for(factorial, quick)
        assert settings_for(depth3, quick, 3) == settings_for(depth3, quick)
    assert "factorial and depth3 keep their own" in parser(COMMAND).format_help().replace("\n", " ")


def test_an_experiment_without_its_parts_is_refused_when_registered():
    """If this fails, an experiment that cannot be run or reported is accepted into the registry and
    breaks the run or the report later, far from where it was added."""
    broken = types.ModuleType("broken")
    broken.NAME, broken.FILES = "broken", ("broken",)
    with pytest.raises(ValueError, match="lacks .*'OUTPUTS'"):
        replace(COMMAND, experiments=COMMAND.experiments + (broken,))
    with pytest.raises(ValueError, match="write the same file"):
        Command("reproduce", COMMAND.experiments + COMMAND.experiments[:1], "d", COMMAND.heading, COMMAND.section)


def test_help_lists_every_experiment_and_the_paper_figures():
    """If this fails, ``reproduce --help`` leaves out an experiment's outputs or misnames the figures."""
    text = parser(COMMAND).format_help()
    assert "Figures 2-6 and\nTable 1" in text
    for experiment in COMMAND.experiments:
        for line in experiment.OUTPUTS.splitlines():
            assert "    " + line in text
    assert "    " + TOY.OUTPUTS in parser(replace(COMMAND, experiments=COMMAND.experiments + (TOY,))).format_help()


# ------------------------------------------------------------- a new experiment, as one module
def toy_unit(seed: int, value: float) -> float:
    return value + seed


def _toy() -> types.ModuleType:
    """A new experiment as a contributor writes one: a module with the parts of runs/experiment.py, one
    step-size selection (asked under a key of its own) and two units."""
    toy = types.ModuleType("toy")
    toy.NAME, toy.FILES, toy.RULES = "toy", ("toy",), ("vocabulary",)
    toy.OUTPUTS = "toy                 a toy -> toy.json, toy.txt"
    toy.FULL = toy.QUICK = reproduce.common.QUICK
    toy.selection = lambda s, chosen: {("toy", "eta"): Plan([Unit(0, "toy step size", toy_unit, (0, 0.5))],
                                                            lambda found: {"chosen": {"eta": found[0]}})}
    toy.units = lambda s, chosen: [Unit(k, f"toy seed {k}", toy_unit, (k, chosen[("toy", "eta")]["chosen"]["eta"]))
                                   for k in range(2)]
    toy.assemble = lambda s, chosen, found, run: {"toy": {"values": [found[0], found[1]], "seconds": run.seconds["toy"]}}

    def figure(results, out):
        (out / "toy.txt").write_text(str(results["toy"]["values"]))
        return [out / "toy.txt"]

    toy.figure = figure
    toy.claims = lambda results: [claim_row("toy", "toy claim", "paper", str(results["toy"]["values"]),
                                            {"level": "full", "holds_in": ["a"], "part_in": [], "trend_in": [],
                                             "fails_in": []}, "vocabulary", [("toy.txt", "toy.txt")])] \
        if "toy" in results else []
    toy.report = lambda results, run: "### Toy section"
    toy.summary = lambda results: ["- The toy: [toy.txt](toy.txt)."] if "toy" in results else []
    return toy


TOY = _toy()


def test_a_new_experiment_is_one_module_plus_one_registry_entry(tmp_path, monkeypatch):
    """If this fails, adding an experiment to the registry is not enough to run it with ``--only``,
    save its JSON, draw its figures and put its claims, its part of the section and its first-screen
    line into the report (beside the three-layer claims, "not run" without their JSON)."""
    monkeypatch.setattr(reproduce, "COMMAND", replace(COMMAND, experiments=COMMAND.experiments + (TOY,)))
    assert cli_main(["reproduce", "--only", "toy", "--out", str(tmp_path), "--jobs", "1", "--quiet"]) == 0
    assert json.loads((tmp_path / "toy.json").read_text())["values"] == [0.5, 1.5]
    assert (tmp_path / "toy.txt").read_text() == "[0.5, 1.5]"
    claims = json.loads((tmp_path / "claims_reproduce.json").read_text())
    assert [r["key"] for r in claims["rows"]][-1] == "toy" and claims["summary"] == ["- The toy: [toy.txt](toy.txt)."]
    assert {r["level"] for r in claims["rows"][:-1]} == {"not run"}, "the three-layer claims are listed as not run"
    section = (tmp_path / "REPORT.md").read_text().split("<!-- BEGIN reproduce -->")[1]
    assert "### Toy section" in section and "#### toy claim" in section and "experiments: toy" in section
    assert {p.name for p in tmp_path.iterdir()} == {"toy.json", "toy.txt", "REPORT.md", "claims_reproduce.json"}


def test_two_experiments_asking_for_one_step_size_selection_share_one_run():
    """If this fails, an experiment that trains like another runs the step-size rule a second time
    (or gets another's record): fig2 and the factorial ask for the same selection on the cycle."""
    from numpy_mamba.reproduce import factorial, fig2
    first, second = fig2.selection(fig2.QUICK, {}), factorial.selection(factorial.QUICK, {})
    assert set(first) < set(second) and len(second) == 2 * len(first), "the factorial adds its all-pairs selections"


def test_a_contributors_experiment_module_runs_through_reproduce_only(tmp_path, monkeypatch):
    """If this fails, a new experiment written as a contributor would write one (tests/toy_experiment.py:
    settings, units, JSON, figure, a claim judged by a rule, a report part from its Markdown template)
    needs more than its module and one line in the registry to run through ``reproduce --only``, or
    one of its outputs is lost: its JSON, its PNG, its row with a verdict, its part of the section."""
    import toy_experiment
    monkeypatch.setattr(reproduce, "COMMAND", replace(COMMAND, experiments=COMMAND.experiments + (toy_experiment,)))
    assert cli_main(["reproduce", "--quick", "--only", "toy", "--out", str(tmp_path), "--jobs", "2", "--quiet"]) == 0
    accuracy = json.loads((tmp_path / "toy.json").read_text())["accuracy"]
    assert len(accuracy) == toy_experiment.QUICK.seeds and all(0 <= a <= 1 for a in accuracy)
    assert (tmp_path / "toy.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    row = json.loads((tmp_path / "claims_reproduce.json").read_text())["rows"][-1]
    assert row["key"] == "toy" and row["verdict"] in ("holds", "holds in part", "does not hold here")
    section = (tmp_path / "REPORT.md").read_text().split("<!-- BEGIN reproduce -->")[1]
    assert "### A toy experiment" in section and f"({toy_experiment.QUICK.seeds} seeds)" in section

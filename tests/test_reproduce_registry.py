"""The registry of ``reproduce`` (numpy_mamba/reproduce/experiments.py) is the one place that lists
the experiments: every experiment module has the same interface, the command and the report only
loop over the registry, and a new experiment plugs in as one module plus one registry entry."""
import ast
import inspect
import json
from dataclasses import FrozenInstanceError, is_dataclass
from pathlib import Path

import numpy as np
import pytest

from numpy_mamba.reproduce import common, experiments, report, run
from numpy_mamba.runs.jobs import Plan, Unit

REPRODUCE = Path(run.__file__).parent
INTERFACE = {"settings": ["one_layer"], "selection": ["settings"], "plan": ["settings", "selection", "names"],
             "claims": ["results"], "draw": ["results", "out"], "report": ["results"]}


@pytest.mark.parametrize("experiment", experiments.EXPERIMENTS, ids=lambda e: e.NAME)
def test_every_experiment_module_has_the_same_interface(experiment):
    """If this fails, an experiment needs code of its own in run.py or report.py to be run or reported."""
    assert isinstance(experiment.NAME, str) and experiment.JSON_NAMES and all(
        isinstance(n, str) for n in experiment.JSON_NAMES)
    assert isinstance(experiment.OUTPUTS, str) and experiment.OUTPUTS.strip()
    assert experiment.RUNS_LABEL is None or (len(experiment.RUNS_LABEL) == 2 and all(
        isinstance(x, str) for x in experiment.RUNS_LABEL))
    for settings, quick in ((experiment.SETTINGS, False), (experiment.QUICK, True)):
        assert is_dataclass(settings) and isinstance(settings, common.Settings), "settings are a Settings dataclass"
        assert settings.quick is quick, "QUICK must say it is a quick run (every output is stamped from it)"
        with pytest.raises(FrozenInstanceError):
            settings.seeds = 3
    for name, params in INTERFACE.items():
        fn = getattr(experiment, name)
        assert callable(fn) and list(inspect.signature(fn).parameters)[:len(params)] == params, (name, params)
    assert experiment.settings(common.QUICK) == experiment.QUICK
    assert experiment.settings(common.FULL) == experiment.SETTINGS


def test_the_registry_gives_the_only_names_and_json_files():
    """If this fails, an --only name or a JSON file is listed outside the registry, or two
    experiments write the same file."""
    names = [n for e in experiments.EXPERIMENTS for n in e.JSON_NAMES]
    assert len(names) == len(set(names)) and len({e.NAME for e in experiments.EXPERIMENTS}) == len(experiments.EXPERIMENTS)
    assert run.EXPERIMENTS == run.JSON_NAMES == tuple(names) == ("fig2", "fig3", "fig4", "table1", "depth3")
    assert run.parse_only(None) == tuple(names)


def test_help_lists_every_experiment_and_the_paper_figures(monkeypatch):
    """If this fails, ``reproduce --help`` leaves out an experiment's outputs or misnames the figures."""
    text = run.description()
    assert "Figures 2-6 and\nTable 1" in text
    for experiment in experiments.EXPERIMENTS:
        for line in experiment.OUTPUTS.splitlines():
            assert "    " + line in text
    monkeypatch.setattr(run, "REGISTRY", run.REGISTRY + (Toy,))
    assert "    " + Toy.OUTPUTS in run.description(), "a registered experiment must appear in --help"


@pytest.mark.parametrize("module", [run, report], ids=["run.py", "report.build"])
def test_the_command_has_no_branch_per_experiment(module):
    """If this fails, run.py (or the report's assembly) names an experiment itself, so a new one
    would need an edit there too."""
    tree = ast.parse(inspect.getsource(module if module is run else module.build))
    names = {n for e in experiments.EXPERIMENTS for n in (e.NAME, *e.JSON_NAMES)}
    strings = {node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)}
    assert not strings & names, f"names an experiment: {sorted(strings & names)}"
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) for alias in node.names}
    imported |= {node.module.rsplit(".", 1)[-1] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
    assert not imported & {e.__name__.rsplit(".", 1)[-1] for e in experiments.EXPERIMENTS}, "imports an experiment module"


# ------------------------------------------------------------- a new experiment, as one module
def toy_unit(seed: int, value: float) -> float:
    return value + seed


class Toy:
    """A whole experiment in the registry's interface: one JSON file, one figure-like file, one claim."""
    NAME, JSON_NAMES, RUNS_LABEL, OUTPUTS = "toy", ("toy",), None, "toy                 a toy -> toy.json, toy.txt"
    SETTINGS, QUICK = common.FULL, common.QUICK

    @staticmethod
    def settings(one_layer):
        return one_layer

    @staticmethod
    def selection(settings):
        return {m: Plan([Unit(0, "toy step size", toy_unit, (0, 0.5))], lambda f: {"chosen": {"eta": f[0]}})
                for m in common.MODELS}

    @staticmethod
    def plan(settings, selection, names=("toy",)):
        units = [Unit(s, f"toy seed {s}", toy_unit, (s, selection["mamba"]["chosen"]["eta"])) for s in range(2)]
        return Plan(units, lambda f: {"toy": {"settings": settings.to_dict(), "values": [f[0], f[1]]}})

    @staticmethod
    def claims(results):
        return [["toy claim", "paper", str(results["toy"]["values"]), "**reproduced**"]] if results else []

    @staticmethod
    def draw(results, out):
        path = Path(out) / "toy.txt"
        path.write_text(str(results["toy"]["values"]))
        return [path]

    @staticmethod
    def report(results):
        return "### Toy section" if results else ""


def test_a_new_experiment_is_one_module_plus_one_registry_entry(tmp_path, monkeypatch):
    """If this fails, adding an experiment to the registry is not enough to run it, save its JSON,
    draw its figures and put its claims and section into the report."""
    monkeypatch.setattr(run, "REGISTRY", (Toy,))
    monkeypatch.setattr(report, "EXPERIMENTS", (Toy,))
    results, timings = run.compute(common.QUICK, ("toy",), progress=False)
    assert results["toy"]["values"] == [0.5, 1.5] and "toy" in timings
    report_path = tmp_path / "REPORT.md"
    written = run.write_outputs(results, ("toy",), tmp_path, tmp_path, report_path, 1.0)
    assert {p.name for p in written} == {"toy.json", "toy.txt", "REPORT.md"}
    assert json.loads((tmp_path / "toy.json").read_text())["values"] == [0.5, 1.5]
    text = report_path.read_text()
    assert "| toy claim | paper | [0.5, 1.5] | **reproduced** |" in text and "### Toy section" in text
    assert run.load_results(tmp_path).keys() == {"toy"}
    assert np.isclose(results["toy"]["seconds"], timings["toy"] + timings["step size (toy, mamba)"]
                      + timings["step size (toy, linear_transformer)"])

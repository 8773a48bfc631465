"""``python -m numpy_mamba reproduce --jobs N`` and its all-or-nothing output folder.

The numbers must not depend on N (every unit's randomness comes from its own seed stream and
results are assembled by key); an interrupted run must leave the previous folder as it was.  An
unwritable --out found before any training is tests/test_runs.py's, for every command."""
from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import pytest

from numpy_mamba.runs import output
from numpy_mamba.runs.command import main
from numpy_mamba.runs.output import write_section
from numpy_mamba.reproduce import COMMAND, depth3, factorial, fig2, mechanism
from numpy_mamba.reproduce.common import QUICK
from test_reproduce import run_experiments
from test_runs import _interrupted_run

TIMING_KEYS = {"seconds", "train_seconds"}
TINY = replace(QUICK, seeds=2, T=12, record_every=4, eta_grid=(0.05, 0.5), n_test=30, n_probe=8, n_heldout=16,
               alphas=(0.3, 0.7), kappa_a_primes=(2.0,), K_primes=(1.5,))


def numbers(obj):
    """A result with its timings removed, as plain JSON-able values (what must not depend on --jobs)."""
    if isinstance(obj, dict):
        return {k: numbers(v) for k, v in obj.items() if k not in TIMING_KEYS}
    if isinstance(obj, list):
        return [numbers(v) for v in obj]
    return obj


def test_jobs_2_gives_the_same_numbers_as_jobs_1():
    """If this fails, a unit's numbers depend on the process that ran it or on the other units
    (randomness not from its own seed stream, or results assembled in completion order)."""
    settings = {e: TINY for e in (fig2, mechanism)}
    settings.update({factorial: factorial.FactorialSettings(**{**TINY.to_dict(), "curve_alphas": (0.3, 0.5, 0.7, 0.9)}),
                     depth3: depth3.QUICK})
    one, two = (run_experiments(settings, jobs) for jobs in (1, 2))
    assert set(one) == set(two) == set(COMMAND.files())
    a, b = (json.dumps(output._plain(numbers(r)), sort_keys=True) for r in (one, two))
    assert a == b


def test_the_step_size_rule_as_units_is_the_rule_of_choose():
    """If this fails, running the step-size rule as units changed what it picks (units looked up
    under the wrong candidate or seed)."""
    from numpy_mamba.reproduce.common import chosen_records, eta_selection
    from numpy_mamba.runs.worlds import selection_world
    from numpy_mamba.measure.rules import choose
    from numpy_mamba.runs.step_size import heldout_loss_after_training
    from numpy_mamba.runs.runner import run_units
    from numpy_mamba.fused import network                              # the Network the command trains
    s = replace(TINY, eta_grid=(0.01, 0.5, 2000.0), select_seeds=2)     # 2000 diverges: excluded
    plans = eta_selection(s, 0.4, "t")
    found = chosen_records({key: plan.assemble(run_units(plan.units, 1, "t", progress=False))
                            for key, plan in plans.items()}, s, 0.4)
    for m, model in enumerate(("mamba", "linear_transformer")):
        direct = choose({"eta": s.eta_grid}, heldout_loss_after_training(
            selection_world, s.train_config(0.4, s.eta_grid[0]), network(model), s.n_heldout, (8, 40, m + 1)), range(2))
        assert found[model] == direct
        assert found[model]["candidates"][2]["diverged"], "eta = 2000 must diverge and be excluded"


def _old_reproduce_folder(folder: Path) -> dict:
    folder.mkdir(parents=True)
    for name in ("fig2.json", "fig3.json", "fig3.png", "table1.md", "depth3.json", "fig5.png"):
        (folder / name).write_text(f"OLD {name}\n")
    write_section(folder / "REPORT.md", "reproduce", "OLD reproduce")
    write_section(folder / "REPORT.md", "theory", "KEEP theory")
    return {p.name: p.read_bytes() for p in folder.iterdir()}


@pytest.mark.skipif(os.name != "posix", reason="process groups and SIGINT to a group are POSIX")
def test_an_interrupted_reproduce_leaves_the_previous_folder_intact(tmp_path):
    """If this fails, Ctrl-C during reproduce leaves new JSON beside old figures (a folder whose
    REPORT.md describes settings its JSON does not hold), a staging folder, or a process behind."""
    out = tmp_path / "out"
    before = _old_reproduce_folder(out)
    r = _interrupted_run("reproduce", out, r"units done", 0.5, True)
    assert r["rc"] == 130 and r["sent"], r["stderr"][-3:]
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before, "the previous results were changed"
    said = [line for line in r["stderr"] if line.startswith("reproduce: interrupted (SIGINT) before its results were complete")]
    assert said, f"no message that nothing was changed; stderr ends {r['stderr'][-3:]}"
    assert not [line for line in r["stderr"] if "Traceback" in line], "a traceback on Ctrl-C"


@pytest.mark.parametrize("argv", [["--seeds", "0"], ["--seeds", "-2"], ["--seeds", "two"], ["--jobs", "0"]])
def test_bad_numbers_are_usage_errors(argv, capsys):
    """If this fails, --seeds 0 or --jobs 0 crash with a traceback (or run nothing) instead of a usage error."""
    with pytest.raises(SystemExit) as info:
        main(COMMAND, ["--quick", *argv])
    assert info.value.code == 2 and "expected" in capsys.readouterr().err

"""Tests of ``python -m numpy_mamba theory``: the measuring helpers on known answers, bad input,
and the whole command in --quick mode (figures, JSON without NaN, verdicts, its REPORT section)."""
from __future__ import annotations

import json
import re

import numpy as np
import pytest

from numpy_mamba import theory
from numpy_mamba.data import Batch, make_world
from numpy_mamba.model import Params
from numpy_mamba.measure.attention import score_sums
from numpy_mamba.measure.gates import gate_statistics
from numpy_mamba.theory.measure import fit_slope, largest_tolerated, lemma6_sum, steps_to_epsilon
from tests.helpers import broken_links

VERDICTS = ("holds", "holds in trend", "holds in part", "does not hold here")


def test_largest_tolerated_interpolates_the_first_crossing():
    alphas = [0.0, 0.1, 0.2, 0.3]
    assert largest_tolerated(alphas, [0.1, 0.2, 0.4, 0.1], 0.3) == pytest.approx(0.15)
    assert largest_tolerated(alphas, [0.1, 0.1, 0.1, 0.1], 0.3) == 0.3      # never crosses
    assert largest_tolerated(alphas, [0.5, 0.1, 0.1, 0.1], 0.3) == 0.0      # starts above


def test_fit_slope_refuses_non_positive_values_and_largest_tolerated_bad_alphas():
    with pytest.raises(ValueError, match="positive"):
        fit_slope([1.0, 2.0], [1.0, 0.0])                 # log of 0: a failed run must not enter a fit
    with pytest.raises(ValueError, match="increasing"):
        largest_tolerated([0.0, 0.1], [0.1, 0.2, 0.3], 0.25)


def test_fit_slope_recovers_a_power_law():
    x = np.array([1.0, 2.0, 4.0, 8.0])
    slope, intercept = fit_slope(x, 3.0 * x ** -1.5)
    assert slope == pytest.approx(-1.5) and np.exp(intercept) == pytest.approx(3.0)


@pytest.mark.parametrize("l, expected", [(1, 0.25), (2, 0.5), (3, 0.6875)])
def test_lemma6_sum_known_answer_at_w_zero(l, expected):
    """w = 0: sigma = 1/2, G_i = 2^-(l+2-i), so the sum is sum_k k 2^-(k+1) (k = l-i+1)."""
    P = np.zeros((1, 3, l + 1))
    assert lemma6_sum(np.zeros(3), P)[0] == pytest.approx(expected)


def test_gate_statistics_ranks_clean_examples_from_the_query():
    # l = 4; examples 2 and 4 (1-based) carry outliers; w = 0 so G_i = 2^-(l+2-i)
    P = np.zeros((1, 3, 5))
    outlier = np.array([[False, True, False, True]])
    batch = Batch(P, np.array([1.0]), np.array([[0, 1]]), outlier, np.ones((1, 4), bool))
    stats = gate_statistics(Params(np.eye(3), np.eye(3), np.zeros(3)), batch)
    G = 2.0 ** -(4 + 2 - np.arange(1, 5))                 # G_1..G_4
    assert stats["clean_rank_gate"][:2] == pytest.approx([G[2], G[0]])  # h(1) = 3, h(2) = 1
    assert stats["clean_rank_gate"][2] is None
    assert stats["G_outlier"] == pytest.approx((G[1] + G[3]) / 2)


def test_score_sums_split_by_pattern():
    P = np.zeros((1, 3, 3))
    P[0, 0, :] = [1.0, 2.0, 1.0]                          # scores = x_i * x_query with W = I
    batch = Batch(P, np.array([1.0]), np.array([[0, 1]]), np.zeros((1, 2), bool), np.array([[True, False]]))
    same, diff = score_sums(Params(np.eye(3), np.eye(3), np.zeros(3)), batch)
    assert same[0] == 1.0 and diff[0] == 2.0


def test_steps_to_epsilon_counts_from_zero_and_rejects_bad_input():
    world = make_world(d=8, M1=2, M2=2, V=1, rng=0)
    r = steps_to_epsilon(world, "mamba", p_a=0.0, l_tr=4, eta=0.1, delta=0.2, eps=10.0, T_max=5, seed=0)
    assert r["T"] == 0, "a loss below a huge eps must be detected before the first step"
    r = steps_to_epsilon(world, "mamba", p_a=0.0, l_tr=4, eta=1e-9, delta=0.01, eps=1e-3, T_max=3, seed=0)
    assert r["T"] is None and not r["diverged"]
    with pytest.raises(ValueError, match="p_a"):
        steps_to_epsilon(world, "mamba", p_a=1.0, l_tr=4, eta=0.1, delta=0.2, eps=0.1, T_max=5, seed=0)
    with pytest.raises(ValueError, match="model must be one of the paper's models"):
        steps_to_epsilon(world, "transformer", p_a=0.1, l_tr=4, eta=0.1, delta=0.2, eps=0.1, T_max=5, seed=0)


def test_theory_quick_writes_figures_json_and_only_its_report_section(theory_quick):
    """If this fails, ``theory --quick`` (the session's run, conftest.py) does not write its figures
    and JSON, does not say it is a smoke run, leaves a verdict outside the vocabulary, or touches
    another command's section of the report it was given."""
    tmp_path, report = theory_quick.out, theory_quick.out / "REPORT.md"
    assert theory_quick.code == 0
    assert "SMOKE RUN" in theory_quick.stdout.splitlines()[-1], "a quick run must say so on stdout"
    for name in ("convergence", "alpha", "attention", "gates", "lemmas"):
        assert (tmp_path / f"theory_{name}.png").stat().st_size > 10_000, f"theory_{name}.png missing or empty"
        data = json.loads((tmp_path / f"theory_{name}.json").read_text())   # save_json refuses NaN
        assert data["command"].endswith("--quick")
    summary = json.loads((tmp_path / "theory_summary.json").read_text())["summary"]
    for key in ("thm1_verdict", "thm3_verdict", "thm2_verdict", "thm4_verdict"):
        assert summary[key].removesuffix(" (borderline)") in VERDICTS + ("not run",), f"{key}: {summary[key]}"
    rows = json.loads((tmp_path / "claims_theory.json").read_text())["rows"]
    assert len(rows) >= 12 and all(r["verdict"].removesuffix(" (borderline)") in VERDICTS for r in rows)
    text = report.read_text()
    assert "KEEP ME" in text and "OLD-PLACEHOLDER" not in text, "only the theory section may change"
    linked = set(re.findall(r"\]\(([\w.]+\.png)\)", text))
    assert {f"theory_{name}.png" for name in ("convergence", "alpha", "attention", "gates", "lemmas")} <= linked
    assert not [link for link in broken_links(report) if not link.startswith("#")], "a figure link leads nowhere"
    section = text.split("<!-- BEGIN theory -->")[1]
    assert "SMOKE RUN" in section.splitlines()[1], "a quick run must say so in its section header"
    assert summary["cor1_by_task_group"]["by_group"].keys() == {"training", "reversed", "distance_2", "distance_3"}


def test_rendering_states_the_verdicts_the_results_carry(theory_quick):
    """If this fails, drawing the report or the summary judges the results again instead of
    stating the verdicts they were saved with (a replot could then print another verdict than the
    JSON beside it)."""
    from numpy_mamba.runs.experiment import Run
    out = theory_quick.out
    results = {f: json.loads((out / f"{f}.json").read_text()) for f in theory.COMMAND.files()}
    results["theory_convergence"]["p_a"]["verdict"]["mamba"] = "MADE-UP VERDICT 1"
    results["theory_alpha"]["alpha"]["verdict"]["linear_transformer"] = "MADE-UP VERDICT 2"
    run = Run("theory", "python -m numpy_mamba theory --quick", True, 1, {}, 1.0)
    text = theory.section(results, run, [], [])
    assert "**MADE-UP VERDICT 1**" in text and "**MADE-UP VERDICT 2**" in text
    summary = theory.summary_file(results, run)["theory_summary"]["summary"]
    assert summary["thm1_verdict"] == "MADE-UP VERDICT 1" and summary["thm4_verdict"] == "MADE-UP VERDICT 2"
    for experiment in theory.EXPERIMENTS:
        experiment.judge(results)
    assert results["theory_convergence"]["p_a"]["verdict"]["mamba"] != "MADE-UP VERDICT 1", "judge() applies the rules"
    assert results["theory_alpha"]["alpha"]["verdict"]["linear_transformer"] != "MADE-UP VERDICT 2"


def test_theory_rejects_unknown_options():
    from numpy_mamba.runs.command import main
    with pytest.raises(SystemExit):
        main(theory.COMMAND, ["--bogus"])


def test_settings_are_frozen_and_a_quick_run_says_so_in_every_part():
    """If this fails, a setting can be changed after it is made (a run could record other settings
    than it ran with), or a quick run's part is not stamped as one (its figures and JSON would not
    say SMOKE RUN)."""
    from dataclasses import FrozenInstanceError
    from numpy_mamba.theory import convergence, gates, lemmas, tolerance
    parts = {"p_a": (convergence.FULL.p_a, convergence.QUICK.p_a), "l_tr": (convergence.FULL.l_tr, convergence.QUICK.l_tr),
             "alpha": (tolerance.FULL, tolerance.QUICK), "M1": (gates.FULL, gates.QUICK),
             "trajectory": (lemmas.FULL, lemmas.QUICK)}
    for full, quick in parts.values():
        with pytest.raises(FrozenInstanceError):
            setattr(full, "seeds", (9,))
        assert quick.to_dict()["quick"] is True and "quick" not in full.to_dict()
    assert "eta" not in tolerance.FULL.to_dict(), "a step size the rule has not chosen yet must not be recorded"
    assert json.loads(json.dumps(tolerance.FULL.to_dict())) == tolerance.FULL.to_dict(), "to_dict holds the JSON's values"


def test_corollary1_verdict_is_the_rule_shared_with_the_reproduce_section():
    from numpy_mamba.measure.rules import corollary1
    from numpy_mamba.measure.rules import verdict_text
    from numpy_mamba.measure.tasks import task_group_names
    from numpy_mamba.theory.attention import judge_attention
    rng = np.random.default_rng(0)
    group = np.repeat(np.arange(4), 25)
    same, diff = rng.normal(50, 5, 100), np.where(group == 2, 20.0, -20.0) + rng.normal(0, 1, 100)
    out = judge_attention({"runs": [{"same": same, "different": diff, "group": group, "median_same": 50.0}]}, 6)
    shared = corollary1(same, diff, group, task_group_names(6))
    assert out["verdict"]["corollary1"] == verdict_text(shared) == "holds in part"


def test_lemma6_verdict_says_what_happens_outside_its_window():
    """If this fails, Lemma 6 is judged over another range than Lemma 4's first phase (up to the
    steepest fall of v*^T w, t* = 50 here), or claims something after it: the sums grow past 3
    after t* (l = 40 ends at 7.1), which is no verdict's business."""
    from numpy_mamba.theory.lemmas import analyse_trajectory
    steps = np.arange(0, 201, 10)
    grow = {10: np.linspace(0.7, 2.5, steps.size), 40: np.linspace(0.7, 7.1, steps.size)}
    fall = 1 / (1 + np.exp(-(steps - 50) / 10.0))               # v*^T w falls fastest at t* = 50
    hist = {"step": steps, **{f"proj_{k}": -np.outer(fall, np.ones(3)) for k in ("v_star", "mu")},
            "proj_nu": np.zeros((steps.size, 3)), "wp_outlier": -np.ones(steps.size), "wp_clean": -np.ones(steps.size)}
    for l, v in grow.items():
        hist[f"lemma6_mean_l{l}"] = v
    s = {"eta": 0.02, "p_a": 0.6, "kappa_a": 2.0, "lemma6_l_grid": [10, 40]}
    out = analyse_trajectory({"settings": s, "history": hist}, M1=6)
    assert out["lemma6"]["window_t"] == 50 and out["verdict"]["lemma6_in_window"] == "holds"
    assert "lemma6_outside_window" not in out["verdict"], "outside its window the lemma claims nothing: no verdict"
    assert out["lemma6"]["outside_window"].startswith("not claimed there; grows with l")
    assert out["lemma6"]["checked_steps"] < out["lemma6"]["total_steps"]


def test_replot_keeps_the_run_times_and_every_number(theory_quick, tmp_path):
    """If this fails, ``theory --replot`` writes other numbers or verdicts than the run it replots, or
    forgets that run's times (theory_summary.json and the section's first and last lines state them)."""
    import shutil
    from numpy_mamba.cli import main
    out = tmp_path / "out"
    shutil.copytree(theory_quick.out, out)
    before = {p.name: json.loads(p.read_text()) for p in out.glob("*.json")}
    assert main(["theory", "--replot", "--quiet", "--out", str(out)]) == 0
    after = {p.name: json.loads(p.read_text()) for p in out.glob("*.json")}
    for name in before:
        if name != "claims_theory.json":                      # it records how the replot ran
            assert after[name] == before[name], f"{name} changed on --replot"
    times = before["theory_summary.json"]["timings_seconds"]
    section = (out / "REPORT.md").read_text().split("<!-- BEGIN theory -->")[1]
    assert f"in {times['total']} s (--jobs {times['workers (--jobs)']})" in section
    assert "Run times (s): " + ", ".join(f"{k}: {v}" for k, v in times.items()) + "." in section

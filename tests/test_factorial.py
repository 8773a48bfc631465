"""The factorial of Figure 2's protocol (numpy_mamba/reproduce/factorial.py): its break-even
derivation on known answers, its runs against Figure 2's, and runs past the divergence bound kept
out of every number.  If a test here fails, the report's reason for Figure 2's miss no longer
rests on what the factorial measured."""
import json
from dataclasses import replace

import numpy as np
import pytest

from numpy_mamba import init_params, make_world
from numpy_mamba.data import testing_batch
from numpy_mamba.reproduce import common, factorial
from numpy_mamba.runs.experiment import Run
from numpy_mamba.runs.runner import run_units


def test_crossing_interpolates_where_the_error_reaches_one_half():
    """If this fails, the measured break-even is read off the error curve at another place: 0.4 ->
    0.6 between alpha 0.5 and 0.6 crosses 1/2 at 0.55; a curve below 1/2 throughout has none."""
    alphas = (0.4, 0.5, 0.6, 0.7)
    assert factorial.crossing(alphas, [0.1, 0.4, 0.6, 0.9]) == pytest.approx(0.55)
    assert factorial.crossing(alphas, [0.1, 0.2, 0.3, 0.49]) is None
    assert factorial.crossing(alphas, [0.5, 0.6, 0.7, 0.8]) == 0.4


def test_the_linear_transformer_has_a_gate_ratio_of_one_and_eq3_votes_add_up():
    """If this fails, the vote ratio no longer reads eq (3): the linear Transformer's gates are all 1
    (r_G = 1, so alpha* = 1/2); and with flipped labels z F is the clean votes minus the outlier
    votes, prompt by prompt."""
    world = make_world(rng=0)
    params = init_params(world.d, rng=1)
    batch = testing_batch(world, 200, 20, alpha=0.5, label_rule="flip", rng=np.random.default_rng(2))
    r_G, r_V = factorial.vote_ratios("linear_transformer", params, batch)
    assert r_G == 1.0 and np.isfinite(r_V)
    from numpy_mamba.model import gates_for, output, scores
    G, s = gates_for("mamba", params, batch.P)[:, :-1], scores(params, batch.P)[:, :-1]
    y = batch.P[:, -1, :-1]
    v = batch.z[:, None] * np.where(batch.outlier, -y, y) * G * s                    # votes with clean labels
    zF = batch.z * output("mamba", params, batch.P)
    np.testing.assert_allclose(zF, (v * ~batch.outlier).sum(1) - (v * batch.outlier).sum(1), rtol=1e-10, atol=1e-12)


def test_the_predicted_break_even_is_one_over_one_plus_r():
    """If this fails, the predicted break-even is not the seed mean of 1 / (1 + r) of the derivation."""
    wrong = np.array([[[10, 60]], [[20, 70]]])                 # (seeds, kappa_a', alpha): rates 0.1, 0.6 / 0.2, 0.7
    n = np.full_like(wrong, 100)
    out = factorial.breakeven((0.5, 0.7), wrong, n, [np.array([[0.5, 1.0]]), np.array([[0.25, 3.0]])])
    assert out["predicted_vote"] == [pytest.approx(np.mean([1 / 2, 1 / 4]))]
    assert out["predicted_gate"] == [pytest.approx(np.mean([1 / 1.5, 1 / 1.25]))]
    assert out["measured"] == [pytest.approx(0.5 + (0.5 - 0.15) / 0.5 * 0.2)]


def test_the_cycle_at_the_rules_eta_is_figure_2s_run(reproduce_quick):
    """If this fails, the factorial's "cycle, rule's eta" arm is not Figure 2's training run (same
    world, initialisation, minibatches and step size), so the factorial would explain another model."""
    fig2 = json.loads((reproduce_quick.out / "fig2.json").read_text())
    fact = json.loads((reproduce_quick.out / "factorial.json").read_text())
    for m in common.MODELS:
        assert fact["eta_rule"][m]["cycle"] == fig2["eta"][m]
        for seed, run in enumerate(fact["training"][m]["cycle/rule"]):
            assert run["final_minibatch_loss"] == fig2["training"][m][seed]["final_minibatch_loss"]


def test_runs_past_the_divergence_bound_are_flagged_and_kept_out_of_every_number():
    """If this fails, a run that diverged (here the linear Transformer at a fixed eta of 1000)
    still counts: its seeds must be flagged with the step, carry no prompts into the pooled rates
    and no ratio into the break-even, and the healthy arms must keep theirs."""
    fs = replace(factorial.QUICK, T=20, seeds=2, n_test=40, kappa_a_primes=(2.0,), curve_alphas=(0.3, 0.7),
                 eta_fixed=1e3)
    records = {key: {"chosen": {"eta": 0.05}} for tasks in ("cycle", "all") for key in
               (common.selection_key(fs, m, fs.p_a_fig2, tasks) for m in common.MODELS)}
    found = run_units(factorial.units(fs, records), 1, "factorial", progress=False)
    res = factorial.assemble(fs, records, found, Run("reproduce", "", True, 1, {"factorial": 0.0}))["factorial"]
    assert res["healthy"]["linear_transformer"]["cycle/fixed"] == [False, False]
    assert all(r["diverged_at"] is not None for r in res["training"]["linear_transformer"]["cycle/fixed"])
    bad = res["error"]["linear_transformer"]["cycle/fixed"]["flip"]["all"]
    assert all(x is None for x in np.ravel(bad["n"])) and bad["rate"][0][0] is None      # no prompts: no rate
    assert res["breakeven"]["linear_transformer"]["cycle/fixed"]["seeds"] == 0
    good = res["error"]["linear_transformer"]["cycle/rule"]["flip"]["all"]
    assert res["healthy"]["linear_transformer"]["cycle/rule"] == [True, True] and good["rate"][0][0] is not None

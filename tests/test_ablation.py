"""The ablation of the distance-2 gap (numpy_mamba/ablation/).

If a test here fails, either the mechanism terms no longer add up to the learned cross-pattern
score S(a, b) or put a term in the wrong distance class, the seed spread is wrong, the baseline is
not the first T_short steps of the long run, the delta rule (0.2 first, the next only where every
eta diverged) is not what the record says, or the command's output (JSON with its settings,
figure, report section, smoke stamp) is incomplete.
"""
import json
import re
from dataclasses import replace

import numpy as np
import pytest

from numpy_mamba import TrainConfig, network, train
from numpy_mamba.cli import COMMANDS
from numpy_mamba.ablation import gap
from numpy_mamba.ablation.gap import QUICK, AblationSettings, change_verdict, factor_verdict, heldout_verdict
from numpy_mamba.ablation.one_run import (ARMS, HELD_OUT, RUNS, STREAM, TESTS, group_counts, prompts_for, run_unit,
                                         training_world)
from numpy_mamba.ablation.results import FACTORS, PAPER, spread
from numpy_mamba.ablation.terms import layer_scores, pattern_terms, signed_steps, step_classes
from numpy_mamba.data import training_batch
from numpy_mamba.fused import network as fused_network
from numpy_mamba.model import scores
from numpy_mamba.stack import forward_with_caches
from numpy_mamba.runs.worlds import world_for
from numpy_mamba.runs.output import SMOKE
from tests.helpers import broken_links

SMALL = replace(QUICK, seeds=1, n_test=40)


def _shift(world, k, eps):
    """eps * sum_a u_{a+k} u_a^T as an (m, d+1) matrix, u_a = (mu_a, 0) / beta: moves every pattern k steps."""
    U = np.zeros((world.M1, world.d + 1))
    U[:, :-1] = world.mu / world.beta
    return eps * sum(np.outer(U[(a + k) % world.M1], U[a]) for a in range(world.M1))


def test_step_classes():
    # If this fails, signed steps are grouped wrongly (M1 = 6 has +-1, +-2 and the single step 3).
    assert step_classes(6) == [0, 1, -1, 2, -2, 3]
    assert step_classes(5) == [0, 1, -1, 2, -2]


def test_pattern_terms_known_answers():
    # If this fails, S(a, b) or its split is wrong: at the initialisation S is beta^2 delta^2 on
    # the diagonal only; two partner steps in opposite directions (dW_B: a -> a+1, dW_C: a -> a-1)
    # give a product at step b - a = -2 that passes entirely through the middle pattern.
    world, delta = world_for(0), 0.2
    W0 = np.zeros((world.d + 1, world.d + 1))
    W0[np.arange(world.d), np.arange(world.d)] = delta
    classes = step_classes(world.M1)
    t = pattern_terms(world, W0, W0, delta)
    np.testing.assert_allclose(t["S"], [world.beta ** 2 * delta ** 2] + [0.0] * 5, atol=1e-12)
    for name in ("linear", "product", "dW_B", "dW_C"):
        np.testing.assert_allclose(t[name], 0.0, atol=1e-12)
    eps = 0.1
    t = pattern_terms(world, W0 + _shift(world, 1, eps), W0 + _shift(world, -1, eps), delta)
    expect = dict.fromkeys(classes, 0.0)
    expect[-2] = world.beta ** 2 * eps ** 2
    np.testing.assert_allclose(t["product"], [expect[c] for c in classes], atol=1e-12)
    np.testing.assert_allclose(t["via_middle"], t["product"], atol=1e-12)
    for name in ("via_ends", "via_other", "outside"):
        np.testing.assert_allclose(t[name], 0.0, atol=1e-12)
    np.testing.assert_allclose(t["dW_B"], [eps if c == 1 else 0.0 for c in classes], atol=1e-12)
    np.testing.assert_allclose(t["dW_C"], [eps if c == -1 else 0.0 for c in classes], atol=1e-12)


def test_pattern_terms_add_up_for_any_update():
    # If this fails, S != init + linear + product or the product's four parts miss a piece.
    world, delta = world_for(1), 0.2
    rng = np.random.default_rng(0)
    W0 = np.zeros((world.d + 1, world.d + 1))
    W0[np.arange(world.d), np.arange(world.d)] = delta
    t = pattern_terms(world, W0 + rng.normal(0, 0.1, W0.shape), W0 + rng.normal(0, 0.1, W0.shape), delta)
    a = {k: np.asarray(v) for k, v in t.items()}
    np.testing.assert_allclose(a["S"], a["init"] + a["linear"] + a["product"], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(a["product"], a["via_ends"] + a["via_middle"] + a["via_other"] + a["outside"],
                               rtol=1e-12, atol=1e-12)
    assert np.abs(a["outside"]).max() > 1e-3 and np.abs(a["via_other"]).max() > 1e-4      # not all zeros


def test_spread_over_seeds():
    # If this fails, the seed mean, range or 95% t-interval of the mean is wrong, or a missing
    # (diverged) seed is counted.
    s = spread([0.9, 1.0, None, 0.8])
    assert s["n_seeds"] == 3 and s["min"] == 0.8 and s["max"] == 1.0
    assert s["mean"] == pytest.approx(0.9)
    assert s["t95"] == pytest.approx(4.302652729911275 * 0.1 / np.sqrt(3))
    assert spread([None])["mean"] is None and spread([0.5])["t95"] is None


def test_spread_of_huge_terms_is_finite_or_not_measured():
    """A diverging run's terms reach 1e200: squaring them overflowed, and the inf made the full
    ablation refuse to write its JSON after 19 minutes; the interval is taken on scaled values."""
    s = spread([1e200, -1e200, 3e200])
    assert s["mean"] == pytest.approx(1e200) and s["t95"] == pytest.approx(spread([1, -1, 3])["t95"] * 1e200)
    assert spread([1.7e308, 1.7e308, -1e308])["t95"] is None                  # beyond the float range
    assert spread([0.0, 0.0])["t95"] == 0.0


def test_settings_refuse_checkpoints_that_miss_the_baseline():
    # If this fails, a setting whose checkpoints do not include T_short or T_long would report a
    # baseline or long run that was never measured.
    with pytest.raises(ValueError, match="multiples of checkpoint_every.*T_short = 6"):
        AblationSettings(T_short=6, T_long=12, checkpoint_every=4, record_every=2)
    with pytest.raises(ValueError, match="T_short < T_long"):
        AblationSettings(T_short=8, T_long=8, checkpoint_every=4, record_every=2)


def test_a_run_is_algorithm_1_on_its_seeds_streams_and_step_0_is_the_initialisation():
    # If this fails, the baseline's run is not what Algorithm 1 gives for T_short steps from the same
    # seed's streams (a long run continues the same streams: its checkpoint at T_short is the same
    # run's at that step), or step 0 is not Algorithm 1's initialisation (the untrained factor).
    step = {"delta": 0.2, "eta": 0.1}
    got = run_unit(SMALL, 0, "mamba", "three_layer", "cycle", "long", step)
    assert got["T"] == SMALL.T_long and got["diverged_at"] is None and got["length"] == "long"
    world = world_for(0)
    config = SMALL.config(step["eta"], step["delta"], SMALL.T_short)
    net = fused_network("mamba", 3)                       # the Network the command trains
    rng = np.random.default_rng([0, STREAM, 0, 0])
    layers, _ = train(world, config, net, rng=rng)
    tests = prompts_for(world, SMALL, 0)
    counts = group_counts(net, layers, tests, 4)
    at = got["checkpoints"][str(SMALL.T_short)]
    assert {k: at[k] for k in counts} == counts and set(counts) == {f"{t}/{w}" for t in TESTS for w in ("all", "heldout")}
    assert at["terms"] == [pattern_terms(world, layer.W_B, layer.W_C, step["delta"]) for layer in layers]
    initial = net.init(world.d, np.random.default_rng([0, STREAM, 0, 0]), None, step["delta"])
    assert {k: got["checkpoints"]["0"][k] for k in counts} == group_counts(net, initial, tests, 4)
    assert str(SMALL.T_long) in got["checkpoints"] and isinstance(config, TrainConfig)


def test_held_out_pairs_are_never_trained_on_and_are_tested_alone():
    # If this fails, the held-out arm trains on a pair it is meant to keep unseen (its accuracy there
    # would not measure generalisation), or the held-out prompts hold other tasks.
    world = world_for(0)
    train_on, tasks = training_world(world, "heldout")
    kept = {tuple(t) for t in train_on.training_tasks().tolist()}
    assert tasks == "cycle" and len(kept) == 24 and not kept & set(HELD_OUT) and np.array_equal(train_on.mu, world.mu)
    batch = training_batch(train_on, 500, 5, p_a=0.4, rng=0)
    assert not {tuple(t) for t in batch.task.tolist()} & set(HELD_OUT)
    held = prompts_for(world, SMALL, 0)["FQ", "heldout"][0]
    assert {tuple(t) for t in held.task.tolist()} <= set(HELD_OUT)
    assert training_world(world, "all") == (world, "all")


def test_signed_steps_and_layer_scores_known_answers():
    # If this fails, the scores by distance are binned by the wrong step (the query's pattern is a of
    # task (a, b) when z = +1), or a layer's scores are not its own s_{i,l+1} on its input.
    class B:
        task = np.array([[0, 2], [0, 2]])
        z = np.array([1.0, -1.0])
        same_pattern = np.array([[True, False], [True, False]])
    assert signed_steps(B, 6).tolist() == [[0, 2], [0, -2]]
    world = world_for(1)
    batch = prompts_for(world, SMALL, 0)["clean", "all"][0]
    one = network("mamba").init(world.d, 0)
    np.testing.assert_allclose(layer_scores("mamba", 1, False, one, batch.P)[0], scores(one, batch.P)[:, :-1])
    stack3 = network("mamba", 3).init(world.d, 0)
    _, caches = forward_with_caches(stack3, batch.P, "mamba")
    for s, cache in zip(layer_scores("mamba", 3, False, stack3, batch.P), caches):
        np.testing.assert_allclose(s, cache.S[:, :-1, -1], rtol=1e-10, atol=1e-12)


def _claims_result(d2, others=0.99, change=0.05, t95=0.01, held=None):
    """An ablation result whose every (test, model, depth, factor) has distance-2 accuracy d2[factor]
    and the other groups at ``others``; paired change ``change`` +- t95 against the baseline."""
    cell = lambda v: {"mean": v, "min": v, "max": v, "t95": 0.0, "n_seeds": 2}  # noqa: E731
    groups = ["training", "reversed", "distance_2", "distance_3"]
    table, diff = {"all": {}, "heldout": {}}, {"all": {}, "heldout": {}}
    for which in ("all", "heldout"):
        for test in TESTS:
            for m in ("mamba", "linear_transformer"):
                for L in ("1", "3"):
                    for f in FACTORS:
                        v = d2.get(f) if which == "all" else (held or {}).get(f)
                        if v is None:
                            continue
                        table[which].setdefault(test, {}).setdefault(m, {}).setdefault(L, {})[f] = {
                            g: cell(v if g == "distance_2" else others) for g in groups}
                        if f != "baseline":
                            diff[which].setdefault(test, {}).setdefault(m, {}).setdefault(L, {})[f] = {
                                "distance_2": {"mean": v - (d2 if which == "all" else held)["baseline"],
                                               "t95": t95, "n_seeds": 2}}
    return {"table": table, "change_vs_baseline": diff, "task_groups": groups}


def test_ablation_rules_reach_each_level():
    # If this fails, a question of the ablation is judged wrongly: a factor that brings distance 2 up
    # to the other groups closes the gap (holds), one that raises it partly holds in trend, one that
    # lowers it fails; the untrained model above the trained one holds; held-out pairs learned as well
    # as trained ones hold, better than the baseline only in trend.
    level = lambda verdict: verdict["level"]  # noqa: E731
    r = _claims_result({"untrained": 0.97, "baseline": 0.80, "all_pairs": 0.99, "long": 0.85, "prenorm": 0.70})
    assert level(factor_verdict(r, "all_pairs")) == "full" and level(factor_verdict(r, "long")) == "trend"
    assert level(factor_verdict(r, "prenorm")) == "none" and level(factor_verdict(r, "untrained")) == "trend"
    r = _claims_result({"untrained": 0.99, "baseline": 0.80, "all_pairs": 0.99}, t95=0.5)
    assert level(factor_verdict(r, "untrained")) == "trend", "an interval containing 0 is not a measured change"
    r = _claims_result({"untrained": 0.99, "baseline": 0.80}, t95=0.01)
    assert level(factor_verdict(r, "untrained")) == "full"
    held = {"baseline": 0.80, "all_pairs": 0.99, "heldout": 0.985}
    assert level(heldout_verdict(_claims_result({"baseline": 0.8}, held=held))) == "full"
    held["heldout"] = 0.9
    assert level(heldout_verdict(_claims_result({"baseline": 0.8}, held=held))) == "trend"
    held["heldout"] = 0.7
    assert level(heldout_verdict(_claims_result({"baseline": 0.8}, held=held))) == "none"


def test_quick_command_writes_stamped_json_figure_and_report(ablation_quick):
    # If this fails, `python -m numpy_mamba ablation --quick` does not write its JSON (with its
    # settings), figure, claims and report section, does not say it is a smoke run, leaves out a
    # factor, a test or a layer's mechanism, or records a delta choice that breaks the rule (0.2
    # first; the next only if every eta diverged).
    assert COMMANDS["ablation"][0] == "numpy_mamba.ablation"
    assert ablation_quick.code == 0
    out = ablation_quick.out
    result = json.loads((out / "ablation.json").read_text())
    assert result["settings"]["quick"] is True and result["smoke"] == SMOKE
    assert result["settings"]["seeds"] == 2 and result["paper"] == json.loads(json.dumps(PAPER))
    assert (out / "ablation.png").stat().st_size > 10_000
    one = {"untrained", "baseline", "all_pairs", "long", "all_pairs_long", "heldout"}
    for m in ("mamba", "linear_transformer"):
        for test in TESTS:
            assert set(result["table"]["all"][test][m]["1"]) == one
            assert set(result["table"]["all"][test][m]["3"]) == one | {"prenorm"}
        assert [len(result["mechanism"][m][L]["baseline"]["scores"]) for L in ("1", "3")] == [1, 3]
        assert {(arm, *run.split("/")) for arm, runs in result["step"][m].items() for run in runs} == set(RUNS), \
            "every run has its own step size"
        for arm, runs in result["step"][m].items():
            for chosen in runs.values():
                tried = chosen["tried"]
                assert tried[0]["delta"] == 0.2 and chosen["delta"] == tried[-1]["delta"]
                assert all(r["chosen"] is None for r in tried[:-1]) and tried[-1]["chosen"]["eta"] == chosen["eta"]
                assert all(c["diverged"] for r in tried[:-1] for c in r["candidates"])
    text = (out / "REPORT.md").read_text()
    assert SMOKE in text and text.count("<!-- BEGIN ablation -->") == 1
    saved = json.loads((out / "claims_ablation.json").read_text())
    assert gap.section({"ablation": result}, None, saved["rows"], saved["headlines"]) in text, \
        "the report's section is not the one its JSON renders"
    assert "ablation.png" in re.findall(r"\]\(([\w.]+\.png)\)", text)
    assert not [link for link in broken_links(out / "REPORT.md") if not link.startswith("#")]
    assert {r["key"] for r in saved["rows"]} == {"ab_untrained", "ab_all_pairs", "ab_long", "ab_all_pairs_long", "ab_prenorm",
                                        "ab_heldout"}


def test_the_next_delta_is_tried_only_where_every_eta_diverged():
    # If this fails, the step-size rule tries a smaller delta where an eta trained at delta = 0.2, or
    # not where every eta diverged, asks again for a delta it has, or trains although no delta worked.
    record = lambda delta, eta=None: {"delta": delta, "chosen": None if eta is None else {"eta": eta}}  # noqa: E731
    first = gap.selection(QUICK, {})
    assert set(first) == {("ablation", m, *run, 0.2) for m in ("mamba", "linear_transformer") for run in RUNS}, (
        "every run (arm, task set, length) chooses its own step size")
    lt3 = ("ablation", "linear_transformer", "three_layer", "cycle", "short")
    chosen = {key: record(0.2, None if key[:5] == lt3 else 0.1) for key in first}
    assert set(gap.selection(QUICK, chosen)) == {(*lt3, 0.1)}
    chosen[(*lt3, 0.1)] = record(0.1)
    assert set(gap.selection(QUICK, chosen)) == {(*lt3, 0.05)}
    chosen[(*lt3, 0.05)] = record(0.05, 0.01)
    assert gap.selection(QUICK, chosen) == {}
    step = gap.step_sizes(QUICK, chosen)["linear_transformer"]["three_layer"]["cycle/short"]
    assert (step["delta"], step["eta"], [r["delta"] for r in step["tried"]]) == (0.05, 0.01, [0.2, 0.1, 0.05])
    assert gap.step_sizes(QUICK, chosen)["mamba"]["three_layer"]["cycle/short"]["tried"] == [record(0.2, 0.1)]
    assert gap.step_sizes(QUICK, chosen)["linear_transformer"]["three_layer"]["all/long"]["tried"] == [record(0.2, 0.1)]
    chosen[(*lt3, 0.05)] = record(0.05)
    assert gap.selection(QUICK, chosen) == {}
    with pytest.raises(ValueError, match="no eta of .* trains at any delta"):
        gap.units(QUICK, chosen)


def test_change_verdict_follows_the_interval_over_seeds():
    # If this fails, a change whose 95% t-interval contains 0 is reported as a rise or a fall (or a
    # clear one is not), or a single seed is given an interval it does not have.
    assert change_verdict(spread([0.10, 0.12, 0.11])).startswith("raises it (+11.0 points")
    assert change_verdict(spread([-0.10, -0.12, -0.11])).startswith("lowers it")
    assert change_verdict(spread([0.10, -0.12, 0.01])).startswith("does not measurably change it")
    assert change_verdict(spread([0.3])) == "n/a (fewer than 2 seeds)"


def test_a_bar_below_forty_percent_is_drawn_whole():
    """The pre-norm Mamba arm of the full run averaged 37.9 % (seeds 10-74 %): on an axis from 40 %
    its bar and most of its whisker were not drawn.  The axis now starts low enough for both."""
    import matplotlib.pyplot as plt
    from numpy_mamba.ablation.figure import _bars
    cell = lambda mean, lo, hi, n=8: {"distance_2": {"mean": mean, "min": lo, "max": hi, "t95": 0.01, "n_seeds": n}}  # noqa: E731
    table = {test: {"mamba": {"3": {"baseline": cell(0.8, 0.75, 0.87), "prenorm": cell(0.379, 0.1, 0.74, 7)}}}
             for test in TESTS}
    fig, ax = plt.subplots()
    try:
        _bars(ax, {"settings": {"seeds": 8}, "table": {"all": table}}, "all", "mamba", "3", ["baseline", "prenorm"])
        assert ax.get_ylim()[0] <= 8 and ax.get_ylim()[1] == 101
        assert [t.get_text() for t in ax.texts] == ["7/8"] * len(TESTS)
        table = {t: {"mamba": {"3": {"baseline": cell(0.8, 0.75, 0.87)}}} for t in TESTS}
        ax.clear()
        _bars(ax, {"settings": {"seeds": 8}, "table": {"all": table}}, "all", "mamba", "3", ["baseline"])
        assert ax.get_ylim()[0] == 40, "an axis whose bars all stand above 40 % keeps its range"
    finally:
        plt.close(fig)

"""The verdict rules of REPORT.md as the reproduce section applies them (every setting of a grid
judged, the verdict naming where it holds), the one main setting, and the step-size rule, on known
inputs.  If a test here fails, a row of the results table no longer follows the rule it names (e.g.
a rise at one kappa_a' would be called a rise everywhere, or one model matching Table 1 a match)."""
import numpy as np
import pytest

from numpy_mamba.reproduce.fig2 import lt_rise_row, remark5_row
from numpy_mamba.reproduce.mechanism import claims as mechanism_claims, fig3_claims, fig4_claims
from numpy_mamba.reproduce.common import FULL, PAPER, main_table1
from numpy_mamba.reproduce.mechanism import vote_baseline
from numpy_mamba.reproduce.section import TEXT as SECTION_TEXT
from numpy_mamba.measure.tasks import task_group_names, task_groups
from numpy_mamba.measure.rules import candidates, choose
from numpy_mamba.measure.rules import where_it_holds
from numpy_mamba.sgd import DivergenceError

def table1_claims(res: dict) -> list:
    """Table 1's two rows (numbers, pattern) of a one-layer table1 result."""
    return mechanism_claims({"table1": res})


ALPHAS = np.round(np.arange(0.0, 0.951, 0.05), 2)


def test_where_it_holds_levels():
    assert where_it_holds({"a": True, "b": True})["level"] == "full"
    r = where_it_holds({"a": True, "b": False})
    assert r["level"] == "part" and r["holds_in"] == ["a"] and r["fails_in"] == ["b"]
    assert where_it_holds({"a": False})["level"] == "none"
    with pytest.raises(ValueError):
        where_it_holds({})


def test_task_groups_known_answer():
    tasks = np.array([[0, 1], [1, 0], [0, 2], [4, 2], [0, 3], [5, 0], [0, 5]])
    assert task_groups(tasks, 6).tolist() == [0, 1, 2, 2, 3, 0, 1]
    assert task_group_names(6) == ("training", "reversed", "distance_2", "distance_3")
    with pytest.raises(ValueError, match="two different patterns"):
        task_groups(np.array([[2, 2]]), 6)


def test_step_size_rule_picks_lowest_heldout_loss_and_excludes_diverged_runs():
    losses = {0.01: [0.5, 0.4], 0.1: [0.1, 0.3], 0.2: [0.05, None], 0.5: [1e18, 0.01]}   # 0.2, 0.5 diverge

    def score(fields, seed):
        v = losses[fields["eta"]][seed]
        if v is None:
            raise DivergenceError("diverged")
        return v

    sel = choose({"eta": (0.01, 0.1, 0.2, 0.5)}, score, seeds=[0, 1])
    assert sel["chosen"] == {"eta": 0.1}
    rows = {r["fields"]["eta"]: r for r in sel["candidates"]}
    assert rows[0.2]["diverged"] and rows[0.2]["mean"] is None and rows[0.1]["mean"] == pytest.approx(0.2)
    assert rows[0.5]["diverged"] and rows[0.5]["losses"] == [None, 0.01], "a finite blow-up is a diverged run"
    assert choose({"eta": (0.01, 0.1, 0.2)}, lambda f, s: 1.0, [0])["chosen"] == {"eta": 0.01}, "ties: first"
    with pytest.raises(ValueError, match="every candidate"):
        choose({"eta": (0.1,)}, lambda f, s: float("nan"), [0])


def test_step_size_rule_takes_any_fields():
    assert candidates({"eta": (0.1, 0.2), "delta": (0.2,)}) == [{"eta": 0.1, "delta": 0.2}, {"eta": 0.2, "delta": 0.2}]
    sel = choose({"eta": (0.1, 0.2), "delta": (0.1, 0.3)}, lambda f, s: abs(f["eta"] - 0.2) + f["delta"], [0])
    assert sel["chosen"] == {"eta": 0.2, "delta": 0.1}
    with pytest.raises(ValueError, match="non-empty"):
        candidates({"eta": ()})


# ------------------------------------------------------------------ the rules as wired into the results table
KEYS = [f"{r}/{k:g}" for r in ("flip", "target", "random") for k in (2.0, 8.0)]


def _gate_result(ratio_of, seeds: int = 5, l: int = 20) -> dict:
    """A fig4-like result over the settings KEYS whose outlier gate is ``ratio_of(key)`` (scalar or
    (l,)) times the clean gate at every position; clean gates halve per step from the query."""
    clean = np.array([0.25 * 0.5 ** (l - 1 - i) for i in range(l)])
    runs = []
    for k in range(seeds):
        profiles = {}
        for key in KEYS:
            out = np.asarray(ratio_of(key)) * clean * (1 + 0.02 * k)
            profiles[key] = {"outlier_mean": out.tolist(), "clean_mean": clean.tolist(),
                             "outlier_gate_mean": float(out.mean()), "outlier_gate_max": float(out.max()),
                             "clean_gate_mean": float(clean.mean()), "clean_rank_mean": clean[::-1].tolist(),
                             "clean_rank_count": [500] * l}
        runs.append(profiles)
    return {"per_seed": runs, "paper": {"M1": PAPER["M1"]}, "setting_keys": KEYS, "main_setting": "target/2"}


def test_corollary2_i_is_judged_in_every_setting_and_names_where_it_holds():
    """Outlier gates at 0.065 of the clean gate at kappa_a' = 8 and at 0.44-0.74 at kappa_a' = 2 (the
    one-layer and three-layer numbers): the row must say it holds at kappa_a' = 8 only and leans the
    claimed way at 2, and report the main setting's ratio."""
    row = fig4_claims(_gate_result(lambda key: 0.065 if key.endswith("/8") else np.linspace(0.44, 0.74, 20)))[0]
    assert row["verdict"] == "holds in part" and "holds: kappa_a' = 8 (3 of 6)" in row["where"]
    assert "in trend: kappa_a' = 2" in row["where"] and row["ours"].startswith("outlier / clean gate 0.46-0.77")
    assert fig4_claims(_gate_result(lambda key: 0.065))[0]["verdict"] == "holds"
    assert fig4_claims(_gate_result(lambda key: 2.0))[0]["verdict"] == "does not hold here"


def _score_result(gap_of_step, seeds: int = 3, steps=np.arange(0, 501, 10), diff_d2=-5.0) -> dict:
    final = {"same": [50.0] * 8, "different": [-5.0, -5.0, diff_d2, -5.0] * 2, "group": [0, 1, 2, 3] * 2}
    runs = [{"step": steps.tolist(), "score_same": (gap_of_step(steps) * (1 + 0.01 * k)).tolist(),
             "score_diff": np.zeros(steps.size).tolist(), "final": {key: final for key in KEYS}} for k in range(seeds)]
    return {"per_seed": {"mamba": runs, "linear_transformer": runs}, "alpha": 0.3, "task_groups": list(task_group_names(6)),
            "setting_keys": KEYS, "main_setting": "target/2"}


def test_gap_growth_row_counts_growth_whenever_it_happens():
    """Fig 3 at eta = 1: the gap jumps from 3.6 to about 50 in the first steps and then stays: it grew
    during training (holds, and the row says how much of it came by 10 % of the steps); a rise of 10 %
    of the start holds in trend; a falling gap fails; steady growth holds."""
    jump = lambda t: np.where(t == 0, 3.6, 50.0 + 0.01 * np.sin(t))  # noqa: E731
    row = fig3_claims(_score_result(jump))[1]
    assert row["verdict"] == "holds" and "3.6 -> 50.0 (100%, full)" in row["detail"]
    assert fig3_claims(_score_result(lambda t: 3.6 + 0.0008 * t))[1]["verdict"] == "holds in trend"
    assert fig3_claims(_score_result(lambda t: 3.6 - 0.001 * t))[1]["verdict"] == "does not hold here"
    assert fig3_claims(_score_result(lambda t: 3.6 + 0.2 * t))[1]["verdict"] == "holds"


def test_corollary1_row_names_the_task_group_that_only_leans():
    row = fig3_claims(_score_result(lambda t: 3.6 + 0.2 * t, diff_d2=18.8))[0]
    assert row["verdict"] == "holds in part" and "in trend: distance 2 (6 of 24)" in row["where"]
    assert fig3_claims(_score_result(lambda t: 3.6 + 0.2 * t))[0]["verdict"] == "holds"


def _table1_result(acc: dict, seeds=(0.0, 0.0), n: int = 1000, kappas=(2.0, 8.0)) -> dict:
    """A Table 1 result: acc[(rule, kappa_a')][model][placement] = accuracy, the same in every task
    group; seed s's accuracy is shifted by seeds[s].  Missing settings get 0.9 everywhere."""
    rules, places, models = ["flip", "target", "random"], ["FQ", "R", "CQ"], ["mamba", "linear_transformer"]
    shape = (len(seeds), len(rules), len(kappas), 3, 4)
    n_prompts = np.full(shape, n // 4)
    wrong, accuracy = {m: np.zeros(shape, dtype=int) for m in models}, {m: {} for m in models}
    for r, rule in enumerate(rules):
        for k, kap in enumerate(kappas):
            for m in models:
                accuracy[m].setdefault(rule, {})[str(kap)] = {}
                for q, p in enumerate(places):
                    a = acc.get((rule, kap), {}).get(m, {}).get(p, 0.9)
                    for s, shift in enumerate(seeds):
                        wrong[m][s, r, k, q] = np.round((1 - a - shift) * n // 4)
                    accuracy[m][rule][str(kap)][p] = {"all": {"rate": a, "seed_ci95": [a - 0.01, a + 0.01]}}
    return {"settings": {"kappa_a_primes": list(kappas), **{k: getattr(FULL, k) for k in ("main_kappa_a_prime",
                                                                                          "mechanism_label_rule")}},
            "label_rules": rules, "paper": PAPER, "n_prompts": n_prompts, "wrong": wrong, "accuracy": accuracy}


PAPER_LIKE = {"mamba": {"FQ": 0.998, "R": 0.99, "CQ": 0.73}, "linear_transformer": {"FQ": 0.785, "R": 0.783, "CQ": 0.786}}
MAIN = (FULL.mechanism_label_rule, FULL.main_kappa_a_prime)


def test_table1_pattern_is_judged_in_every_setting_and_names_where():
    """One-layer Mamba at CQ = 23.6 % in the main setting, the paper's pattern elsewhere: the row must
    hold in part and name the main setting among the failures."""
    below = {"mamba": {"FQ": 0.948, "R": 0.809, "CQ": 0.236}, "linear_transformer": PAPER_LIKE["linear_transformer"]}
    others = {(r, k): PAPER_LIKE for r in ("flip", "target", "random") for k in (2.0, 8.0)}
    row = table1_claims(_table1_result({**others, MAIN: below}))[1]
    assert row["verdict"] == "holds in part" and "fails: target, kappa_a' = 2 (1 of 6)" in row["where"]
    assert table1_claims(_table1_result({key: below for key in others}))[1]["verdict"] == "does not hold here"
    every = {key: PAPER_LIKE for key in others}
    assert table1_claims(_table1_result(every))[1]["verdict"] == "holds"
    straddle = {key: {"mamba": PAPER_LIKE["mamba"], "linear_transformer": {"FQ": 0.6, "R": 0.6, "CQ": 0.6}} for key in others}
    assert table1_claims(_table1_result(straddle))[1]["verdict"] == "holds"
    assert table1_claims(_table1_result(straddle, seeds=(-0.15, 0.15)))[1]["verdict"] == "holds in trend", \
        "an LT at 45 % and 75 % over seeds is above chance only pooled"


def test_table1_numbers_are_not_matched_by_one_model_alone():
    """The three-layer case: the linear Transformer within 2 points of the paper while Mamba misses by
    10-18 points is no match of the table (the rule that called this "holds in part" is gone)."""
    lt_only = {"mamba": {"FQ": 0.894, "R": 0.811, "CQ": 0.684}, "linear_transformer": PAPER_LIKE["linear_transformer"]}
    assert table1_claims(_table1_result({MAIN: lt_only}))[0]["verdict"] == "does not hold here"
    assert table1_claims(_table1_result({MAIN: PAPER_LIKE}))[0]["verdict"] == "holds in part"
    every = {(r, k): PAPER_LIKE for r in ("flip", "target", "random") for k in (2.0, 8.0)}
    assert table1_claims(_table1_result(every))[0]["verdict"] == "holds"


def test_one_main_setting_for_every_figure_and_table():
    """If this fails, Figure 2 and Section 4.2 take their main settings from different arguments:
    both must be at kappa_a' = kappa_a = 2, the magnitude Section 4 states, with K' = 1.5; Section 4.2's
    labels are the targeted ones Table 1's numbers admit."""
    assert FULL.main_kappa_a_prime == PAPER["kappa_a"] == 2.0 and FULL.main_K_prime == 1.5
    assert main_table1(FULL.to_dict()) == ("target", 2.0) and "kappa_a' = kappa_a = 2" in SECTION_TEXT("main-setting")


def test_vote_baseline_known_answers_by_symmetry():
    """At alpha = 1/2 a vote of the query-pattern examples is at chance with flipped labels, right
    on about 3/4 of the prompts with targeted labels and nearly always with random ones; if this
    fails, the main-setting argument in REPORT.md rests on wrong counts."""
    from dataclasses import replace
    vote = vote_baseline(replace(FULL, n_test=4000))
    for p in ("FQ", "R", "CQ"):
        assert abs(vote["flip"][p] - 0.5) < 0.03
        assert abs(vote["target"][p] - 0.75) < 0.03
        assert vote["random"][p] > 0.9


def _fig2_result(lt_rates, mamba_rates, n=4000, kappas=(2.0, 8.0)) -> dict:
    """A Fig 2 result: rates (S, n_alpha) per model for each kappa_a' ({kappa: (lt, mamba)} or one
    pair for every kappa_a'), the same for every labelling, K' = 1.5."""
    per = lt_rates if isinstance(lt_rates, dict) else {k: (lt_rates, mamba_rates) for k in kappas}
    S, A = np.asarray(next(iter(per.values()))[0]).shape
    shape = (S, 3, len(kappas), 1, A, 1)
    wrong = {m: np.zeros(shape, dtype=int) for m in ("linear_transformer", "mamba")}
    for k, kap in enumerate(kappas):
        for m, rates in zip(("linear_transformer", "mamba"), per[kap]):
            wrong[m][:, :, k, 0, :, 0] = np.round(np.asarray(rates) * n).astype(int)[:, None, :]
    stats = {k: [[[0.1] * A]] * len(kappas) for k in ("rate", "ci95_low", "ci95_high", "seed_mean", "seed_min", "seed_max")}
    return {"settings": {"kappa_a_primes": list(kappas), "K_primes": [1.5], "alphas": ALPHAS.tolist(),
                         "main_kappa_a_prime": 2.0, "main_K_prime": 1.5},
            "wrong": wrong, "n_prompts": np.full(shape, n),
            "error": {m: {rule: {"all": stats} for rule in ("flip", "target", "random")} for m in wrong}}


def test_lt_rise_row_names_the_settings_where_the_rise_holds():
    """The LT's error rises by 0.6 at kappa_a' = 8 with agreeing seeds, and by 0.3 pooled at kappa_a' = 2
    where one seed does not rise (intervals overlap): holds at kappa_a' = 8, in trend at 2; an error
    that falls across 1/2 everywhere fails everywhere."""
    up, flat, low = np.where(ALPHAS > 0.5, 0.8, 0.2), np.full(ALPHAS.size, 0.2), np.full(ALPHAS.size, 0.01)
    row = lt_rise_row(_fig2_result({2.0: ([up, flat], [low, low]), 8.0: ([up, up * 0.95], [low, low])}, None))
    assert row["verdict"] == "holds in part" and "holds: kappa_a' = 8" in row["where"]
    assert "in trend: kappa_a' = 2" in row["where"]
    falling = np.where(ALPHAS > 0.5, 0.15, 0.2)
    assert lt_rise_row(_fig2_result([falling, falling], [low, low]))["verdict"] == "does not hold here"


def test_remark5_row_reaches_holds_in_trend_when_one_seed_of_mamba_is_as_bad_as_the_lt():
    lt = np.where(ALPHAS > 0.5, 0.6, 0.1)
    good, bad = np.full(ALPHAS.size, 0.05), np.where(ALPHAS > 0.5, 0.7, 0.05)
    assert remark5_row(_fig2_result([lt] * 3, [good] * 3))["verdict"] == "holds"
    assert remark5_row(_fig2_result([lt] * 3, [good, good, bad]))["verdict"] == "holds in trend"

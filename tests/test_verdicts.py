"""The verdict rules of REPORT.md as the reproduce section applies them, and the step-size rule, on
known inputs: each rule has a case that passes and a case that fails.  If a test here fails, a
verdict printed in REPORT.md no longer follows the rule written next to it (e.g. a flat error
curve would be called a rise, or outlier gates half as large as clean ones "near zero")."""
import numpy as np
import pytest

from numpy_mamba.reproduce.claims import _lt_rise_row, _remark5_row
from numpy_mamba.reproduce.claims_mechanism import fig3_claims, fig4_claims, table1_claims
from numpy_mamba.reproduce.common import FULL, PAPER, TABLE1_MAIN
from numpy_mamba.reproduce.mechanism import vote_baseline
from numpy_mamba.measure.tasks import task_group_names, task_groups
from numpy_mamba.runs.step_size import candidates, choose
from numpy_mamba.measure.error_verdicts import below_at_every_alpha, rise_after_half
from numpy_mamba.measure.verdicts import corollary1, where_it_holds
from numpy_mamba.sgd import DivergenceError

ALPHAS = np.round(np.arange(0.0, 0.951, 0.05), 2)
N = 4000


def _counts(rates, n=N, seeds=2):
    """Error counts (seeds, n_alpha) for error rates per alpha, n prompts per seed and point."""
    wrong = np.round(np.asarray(rates) * n).astype(int)
    return np.tile(wrong, (seeds, 1)), np.full((seeds, len(rates)), n)


def test_rise_rule_fails_on_a_flat_curve():
    flat = np.full(ALPHAS.size, 0.2)                       # the LT at 0.2 everywhere: nothing happens at 1/2
    assert rise_after_half(*_counts(flat), ALPHAS)["holds"] is False


def test_rise_rule_passes_on_a_jump_at_one_half():
    jump = np.where(ALPHAS > 0.5, 0.8, 0.2)
    r = rise_after_half(*_counts(jump), ALPHAS)
    assert r["holds"] is True and r["rise"] == pytest.approx(0.6)


def test_rise_rule_fails_on_a_slow_steady_increase_and_on_too_few_prompts():
    slow = 0.2 + 0.2 * ALPHAS                               # +0.04 across the two windows: below the 0.1 margin
    assert rise_after_half(*_counts(slow), ALPHAS)["holds"] is False
    jump = np.where(ALPHAS > 0.5, 0.4, 0.2)
    assert rise_after_half(*_counts(jump, n=5, seeds=1), ALPHAS)["holds"] is False, "overlapping intervals must fail"


def test_rise_rule_reports_an_empty_window_and_rejects_bad_shapes():
    assert rise_after_half(*_counts([0.1, 0.2]), [0.0, 0.3])["holds"] is None
    with pytest.raises(ValueError, match="n_alpha"):
        rise_after_half(np.zeros((2, 3)), np.ones((2, 3)), ALPHAS)


def test_remark5_rule_names_the_alphas_where_mamba_is_not_below():
    lt = _counts(np.where(ALPHAS > 0.5, 0.8, 0.2))
    assert below_at_every_alpha(_counts(np.full(ALPHAS.size, 0.1)), lt, ALPHAS) == {"holds": True, "failing_alphas": []}
    mamba = np.where(ALPHAS >= 0.9, 0.85, 0.1)               # worse than the LT at alpha = 0.9, 0.95
    r = below_at_every_alpha(_counts(mamba), lt, ALPHAS)
    assert r["holds"] is False and r["failing_alphas"] == [0.9, 0.95]


def test_where_it_holds_levels():
    assert where_it_holds({"a": True, "b": True})["level"] == "full"
    r = where_it_holds({"a": True, "b": False})
    assert r["level"] == "part" and r["holds_in"] == ["a"] and r["fails_in"] == ["b"]
    assert where_it_holds({"a": False})["level"] == "none"
    with pytest.raises(ValueError):
        where_it_holds({})


def test_corollary1_rule_by_task_group():
    names = task_group_names(6)
    group = np.repeat(np.arange(4), 10)
    same = np.full(40, 50.0)
    negative = np.full(40, -20.0)
    assert corollary1(same, negative, group, names)["level"] == "full"
    diff = negative.copy()
    diff[group == 2] = 25.0                                  # distance-2 prompts: large positive sums
    c = corollary1(same, diff, group, names)
    assert c["level"] == "part" and c["fails_in"] == ["distance 2"] and c["by_group"]["distance_2"]["share_below"] == 0
    assert corollary1(np.full(40, 0.5), negative, group, names)["level"] == "none", "same-pattern sum below 1 fails"
    with pytest.raises(ValueError, match="equal-length"):
        corollary1(same, diff[:3], group, names)


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


# ------------------------------------------------------------------ the rules as wired into the claims table
def _verdict(row) -> str:
    return row[3].split("**")[1]


def _gate_result(ratio, seeds: int = 5, l: int = 20) -> dict:
    """A fig4-like result whose outlier gate is ``ratio`` (scalar or (l,)) times the clean gate at
    every position; clean gates decay by 1/2 per step from the query, as eq (18) allows."""
    clean = np.array([0.25 * 0.5 ** (l - 1 - i) for i in range(l)])
    runs = []
    for k in range(seeds):
        out = np.asarray(ratio) * clean * (1 + 0.02 * k)
        runs.append({"outlier_mean": out.tolist(), "clean_mean": clean.tolist(), "outlier_gate_mean": float(out.mean()),
                     "outlier_gate_max": float(out.max()), "clean_gate_mean": float(clean.mean()),
                     "clean_rank_mean": clean[::-1].tolist(), "clean_rank_count": [500] * l})
    return {"per_seed": runs, "paper": {"M1": PAPER["M1"]}}


def test_corollary2_i_fails_when_outlier_gates_are_half_the_clean_ones():
    """Three-layer layer 1 measured outlier / clean ratios of 0.44-0.74: small in absolute terms
    (mean outlier gate far below 1/M1^2), but not "close to 0" next to a clean example at the
    same position.  The one-layer ratio (0.065) holds."""
    bad = _gate_result(np.linspace(0.44, 0.74, 20))
    assert np.mean([r["outlier_gate_mean"] for r in bad["per_seed"]]) < PAPER["M1"] ** -2
    assert _verdict(fig4_claims(bad)[0]) == "does not hold here"
    assert _verdict(fig4_claims(_gate_result(0.065))[0]) == "holds"
    half = _gate_result(np.where(np.arange(20) < 10, 0.5, 0.05))
    row = fig4_claims(half)[0]
    assert _verdict(row) == "holds in part" and "i = 1" in row[3]


def _score_result(gap_of_step, seeds: int = 3, steps=np.arange(0, 501, 10)) -> dict:
    runs = [{"step": steps.tolist(), "score_same": (gap_of_step(steps) * (1 + 0.01 * k)).tolist(),
             "score_diff": np.zeros(steps.size).tolist(), "final_same": [50.0] * 8, "final_different": [-5.0] * 8,
             "final_group": [0, 1, 2, 3] * 2} for k in range(seeds)]
    return {"per_seed": {"mamba": runs, "linear_transformer": runs}, "alpha": 0.3, "task_groups": list(task_group_names(6))}


def test_gap_growth_fails_on_a_jump_at_the_first_step_then_flat():
    """Fig 3 at eta = 1: the gap jumps from 3.6 to about 50 in the first step and then stays; larger
    at the end than at step 0, but it does not grow during training."""
    jump = lambda t: np.where(t == 0, 3.6, 50.0 + 0.01 * np.sin(t))  # noqa: E731
    assert _verdict(fig3_claims(_score_result(jump))[1]) == "does not hold here"
    steady = lambda t: 3.6 + 0.2 * t  # noqa: E731
    assert _verdict(fig3_claims(_score_result(steady))[1]) == "holds"


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
                    accuracy[m][rule][str(kap)][p] = {"all": {"rate": a}}
    return {"settings": {"kappa_a_primes": list(kappas)}, "label_rules": rules, "paper": PAPER, "n_prompts": n_prompts,
            "wrong": wrong, "accuracy": accuracy}


PAPER_LIKE = {"mamba": {"FQ": 0.998, "R": 0.99, "CQ": 0.73}, "linear_transformer": {"FQ": 0.785, "R": 0.783, "CQ": 0.786}}


def test_table1_pattern_fails_in_the_main_setting_with_mamba_cq_below_chance():
    """One-layer Mamba at CQ = 23.6 %: CQ is the worst by far and the LT is flat, but a cell below
    chance is not the paper's pattern."""
    main = (TABLE1_MAIN["label_rule"], TABLE1_MAIN["kappa_a_prime"])
    below = {"mamba": {"FQ": 0.948, "R": 0.809, "CQ": 0.236}, "linear_transformer": PAPER_LIKE["linear_transformer"]}
    others = {(r, k): PAPER_LIKE for r in ("flip", "target", "random") for k in (2.0, 8.0)}
    rows = table1_claims(_table1_result({**others, main: below}))
    assert _verdict(rows[1]) == "holds in part", "it fails in the main setting and holds in the other five"
    assert "every cell above chance: False" in rows[1][2] and "Mamba CQ (accuracy 23.6 %" in rows[1][2]
    everywhere = {key: below for key in others}
    assert _verdict(table1_claims(_table1_result(everywhere))[1]) == "does not hold here"
    assert _verdict(table1_claims(_table1_result({main: PAPER_LIKE}))[1]) == "holds"


def test_table1_pattern_fails_when_the_seeds_straddle_chance():
    """Pooled LT accuracy 0.6, seeds at 0.45 and 0.75: above chance pooled, not over seeds."""
    main = (TABLE1_MAIN["label_rule"], TABLE1_MAIN["kappa_a_prime"])
    acc = {"mamba": PAPER_LIKE["mamba"], "linear_transformer": {"FQ": 0.6, "R": 0.6, "CQ": 0.6}}
    every = {(r, k): acc for r in ("flip", "target", "random") for k in (2.0, 8.0)}
    assert _verdict(table1_claims(_table1_result(every))[1]) == "holds"
    assert _verdict(table1_claims(_table1_result(every, seeds=(-0.15, 0.15)))[1]) == "does not hold here"


def test_table1_numbers_are_judged_in_the_main_setting():
    main = (TABLE1_MAIN["label_rule"], TABLE1_MAIN["kappa_a_prime"])
    assert _verdict(table1_claims(_table1_result({main: PAPER_LIKE}))[0]) == "holds"
    lt_only = {"mamba": {"FQ": 0.9, "R": 0.8, "CQ": 0.7}, "linear_transformer": PAPER_LIKE["linear_transformer"]}
    assert _verdict(table1_claims(_table1_result({main: lt_only}))[0]) == "holds in part"
    elsewhere = {("flip", 8.0): PAPER_LIKE}
    assert _verdict(table1_claims(_table1_result(elsewhere))[0]) == "does not hold here", \
        "a match outside the main setting must not count"


def test_table1_main_setting_is_targeted_labels_at_the_papers_kappa_a():
    assert TABLE1_MAIN == {"label_rule": "target", "kappa_a_prime": PAPER["kappa_a"]} and PAPER["kappa_a"] == 2.0


def test_vote_baseline_known_answers_by_symmetry():
    """At alpha = 1/2 a vote of the query-pattern examples is at chance with flipped labels, right
    on about 3/4 of the prompts with targeted labels and nearly always with random ones; if this
    fails, the argument for Table 1's main setting in REPORT.md rests on wrong counts."""
    from dataclasses import replace
    vote = vote_baseline(replace(FULL, n_test=4000))
    for p in ("FQ", "R", "CQ"):
        assert abs(vote["flip"][p] - 0.5) < 0.03
        assert abs(vote["target"][p] - 0.75) < 0.03
        assert vote["random"][p] > 0.9


def _fig2_result(lt_rates, mamba_rates, n=4000) -> dict:
    """A Fig 2 result with one labelling axis filled for every rule: rates (S, n_alpha) per model."""
    lt, mb = np.asarray(lt_rates, dtype=float), np.asarray(mamba_rates, dtype=float)
    S, A = lt.shape
    shape = (S, 3, 1, 1, A, 1)
    count = lambda r: np.broadcast_to(np.round(r * n).astype(int)[:, None, None, None, :, None], shape)  # noqa: E731
    return {"settings": {"kappa_a_primes": [8.0], "K_primes": [1.5], "alphas": ALPHAS.tolist(), "main_kappa_a_prime": 8.0,
                         "main_K_prime": 1.5},
            "wrong": {"linear_transformer": count(lt), "mamba": count(mb)}, "n_prompts": np.full(shape, n),
            "error": {m: {rule: {"all": {k: [[[0.1] * A]] for k in ("rate", "ci95_low", "ci95_high", "seed_mean",
                                                                   "seed_min", "seed_max")}}
                          for rule in ("flip", "target", "random")} for m in ("mamba", "linear_transformer")}}


def test_lt_rise_row_fails_when_only_one_seed_rises():
    """Pooled over two seeds the LT's error rises by 0.3 with tight Clopper-Pearson intervals, but
    one seed does not rise at all: the reproduce row must use the interval over seeds."""
    up, flat = np.where(ALPHAS > 0.5, 0.8, 0.2), np.full(ALPHAS.size, 0.2)
    low = np.full(ALPHAS.size, 0.01)
    res = _fig2_result([up, flat], [low, low])
    assert _verdict(_lt_rise_row(res, ALPHAS, 8.0, 1.5, "main")) == "does not hold here"
    res = _fig2_result([up, up * 0.95], [low, low])
    assert _verdict(_lt_rise_row(res, ALPHAS, 8.0, 1.5, "main")) == "holds"


def test_remark5_row_fails_when_one_seed_of_mamba_is_as_bad_as_the_lt():
    lt = np.where(ALPHAS > 0.5, 0.6, 0.1)
    good, bad = np.full(ALPHAS.size, 0.05), np.where(ALPHAS > 0.5, 0.7, 0.05)
    assert _verdict(_remark5_row(_fig2_result([lt] * 3, [good] * 3), ALPHAS, 1.5)) == "holds"
    assert _verdict(_remark5_row(_fig2_result([lt] * 3, [good, good, bad]), ALPHAS, 1.5)) == "does not hold here"

"""The verdict rules of REPORT.md and the step-size rule, on known inputs: each rule has a case
that passes and a case that fails.  If a test here fails, a verdict printed in REPORT.md no
longer follows the rule written next to it (e.g. a flat error curve would be called a rise)."""
import numpy as np
import pytest

from numpy_mamba.reproduce.claims_mechanism import pattern_checks
from numpy_mamba.measure.tasks import task_group_names, task_groups
from numpy_mamba.reproduce.step_size import candidates, choose
from numpy_mamba.measure.verdicts import below_at_every_alpha, corollary1, rise_after_half, where_it_holds
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


def test_table1_pattern_criteria():
    paper_like = {"mamba": {"FQ": 0.998, "R": 0.99, "CQ": 0.73}, "linear_transformer": {"FQ": 0.785, "R": 0.783, "CQ": 0.786}}
    assert all(pattern_checks(paper_like).values())
    flat = {"mamba": {"FQ": 0.95, "R": 0.94, "CQ": 0.94}, "linear_transformer": {"FQ": 0.5, "R": 0.5, "CQ": 0.5}}
    checks = pattern_checks(flat)
    assert checks["Mamba CQ worst by >= 10 points"] is False and checks["LT spread <= 5 points"] is True


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

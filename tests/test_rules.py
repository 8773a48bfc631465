"""The shared verdict rules, the seed-aware interval and the step-size tie-break, on made-up
numbers: each rule has a case where it must hold and a case where it must fail.  If a test here
fails, a verdict printed in REPORT.md no longer follows the rule written next to it."""
import numpy as np
import pytest
from scipy.stats import binomtest

from numpy_mamba.measure.rates import clopper_pearson, rate_summary, seed_interval
from numpy_mamba.measure.error_verdicts import (below_at_every_alpha, rise_after_half, table1_pattern, theorem4_context,
                                                theorem4_kappa_bound, theorem4_sufficient)
from numpy_mamba.measure.verdicts import WORDS, gate_ratio, grows_after_start, word
from numpy_mamba.runs.step_size import PAPER_DELTA, choose

ALPHAS = np.round(np.arange(0.0, 0.951, 0.05), 2)


# ------------------------------------------------------------------ one vocabulary
def test_every_level_has_one_word_and_an_unknown_level_is_refused():
    """If this fails, a verdict level is printed with another word than the vocabulary's, or a
    misspelt level is printed instead of refused."""
    assert [word(x) for x in ("full", "part", "trend", "none")] == [
        "holds", "holds in part", "holds in trend", "does not hold here"] == list(WORDS.values())
    with pytest.raises(ValueError, match="level must be one of .*got 'reproduced'"):
        word("reproduced")


# ------------------------------------------------------------------ the interval over seeds
def test_seed_interval_widens_with_seed_spread():
    """Seeds at 0.34 and 0.85 (the spread of three-layer CQ): the pooled Clopper-Pearson interval
    of 8000 prompts is about +-0.01 wide and would call the rate settled; the seed interval must
    not."""
    n = np.full(2, 4000)
    wrong = np.round(np.array([0.34, 0.85]) * n)
    cp_low, cp_high = clopper_pearson(wrong.sum(), n.sum())
    low, high = seed_interval(wrong, n)
    assert cp_high - cp_low < 0.03
    assert low == 0.0 and high == 1.0, "t with 1 degree of freedom over two seeds this far apart spans [0, 1]"
    five = np.round(np.array([0.34, 0.50, 0.55, 0.60, 0.85]) * 4000)
    low5, high5 = seed_interval(five, np.full(5, 4000))
    assert 0.2 < low5 < 0.4 and 0.7 < high5 < 0.9


def test_seed_interval_keeps_the_clopper_pearson_floor():
    """Seeds that agree exactly (all 0 errors) have sd 0: the interval must still contain the
    pooled exact interval, and with one seed it is exactly that interval."""
    low, high = seed_interval([0, 0, 0], [100, 100, 100])
    cp = binomtest(0, 300).proportion_ci(0.95, "exact")
    assert low == 0.0 and high == pytest.approx(cp.high)
    low1, high1 = seed_interval([7], [50])
    cp1 = binomtest(7, 50).proportion_ci(0.95, "exact")
    assert (low1, high1) == pytest.approx((cp1.low, cp1.high))


def test_seed_interval_is_elementwise_and_rejects_bad_shapes():
    low, high = seed_interval([[1, 0], [3, 0]], [[10, 0], [10, 0]])   # second cell has no prompts
    assert np.isfinite(low[0]) and np.isnan(low[1]) and np.isnan(high[1])
    with pytest.raises(ValueError, match="seeds first"):
        seed_interval([1, 2], [10, 10, 10])


def test_rate_summary_keeps_its_keys_and_adds_the_seed_interval():
    s = rate_summary([1, 30], [100, 100])
    assert {"rate", "ci95_low", "ci95_high", "n", "seed_mean", "seed_min", "seed_max"} <= set(s)
    assert s["seed_ci95_low"] < s["ci95_low"] and s["seed_ci95_high"] > s["ci95_high"]
    assert rate_summary([0, 0], [0, 0])["seed_ci95_low"] is None


# ------------------------------------------------------------------ Fig 2 rules with seeds
def _seeds(rates_by_seed, n=4000):
    rates = np.asarray(rates_by_seed, dtype=float)
    return np.round(rates * n).astype(int), np.full(rates.shape, n)


def test_rise_rule_fails_when_the_seeds_disagree():
    """Pooled over seeds the rise is 0.3 with tight Clopper-Pearson intervals, but one seed rises
    and the other does not move: the windows' intervals over seeds overlap."""
    up = np.where(ALPHAS > 0.5, 0.8, 0.2)
    flat = np.full(ALPHAS.size, 0.2)
    r = rise_after_half(*_seeds([up, flat]), ALPHAS)
    assert r["rise"] == pytest.approx(0.3) and r["holds"] is False
    assert rise_after_half(*_seeds([up, up * 0.95]), ALPHAS)["holds"] is True


def test_remark5_rule_fails_when_one_seed_of_mamba_is_as_bad_as_the_lt():
    lt = _seeds([np.where(ALPHAS > 0.5, 0.6, 0.1)] * 3)
    good = np.full(ALPHAS.size, 0.05)
    assert below_at_every_alpha(_seeds([good] * 3), lt, ALPHAS)["holds"] is True
    bad = np.where(ALPHAS > 0.5, 0.7, 0.05)                   # pooled Mamba 0.25 < 0.6, but seeds 0.05 .. 0.7
    r = below_at_every_alpha(_seeds([good, good, bad]), lt, ALPHAS)
    assert r["holds"] is False and r["failing_alphas"] == [a for a in ALPHAS.tolist() if a > 0.5]


# ------------------------------------------------------------------ Corollary 2 (i)
def test_gate_ratio_holds_at_one_fifteenth_and_fails_at_one_half():
    """M1 = 6, threshold 1/6: outlier gates at 0.065 of the clean gate (the one-layer numbers)
    hold; at 0.44-0.74 (three-layer layer 1) they fail, although every outlier gate there is
    far below 1/M1^2 in absolute terms (the rule this one replaces would pass them)."""
    clean = np.array([[2.0 ** -(21 - i) for i in range(20)]] * 5)            # (S, l): sums to 1/2, decays away from the query
    jitter = 1 + 0.05 * np.arange(5)[:, None]
    low = gate_ratio(0.065 * clean * jitter, clean, M1=6)
    assert low["level"] == "full" and max(low["upper"]) <= 1 / 6
    outlier = np.linspace(0.44, 0.74, 20) * clean * jitter
    high = gate_ratio(outlier, clean, M1=6)
    assert high["level"] == "none" and outlier.mean() < 6 ** -2
    mixed = gate_ratio(np.where(np.arange(20) < 10, 0.5, 0.05) * clean * jitter, clean, M1=6)
    assert mixed["level"] == "part" and mixed["fails_in"][0] == "i = 1"


def test_gate_ratio_judges_the_seed_spread_not_only_the_mean():
    """Geometric mean 0.1 < 1/6 at every position, but seeds at 0.02 and 0.5: the t interval over
    two seeds of log ratio reaches far above 1/6, so the rule must fail."""
    clean = np.ones((2, 4)) * 0.1
    r = gate_ratio(clean * np.array([[0.02], [0.5]]), clean, M1=6)
    assert all(x == pytest.approx(0.1) for x in r["ratio"]) and r["level"] == "none"


def test_gate_ratio_positions_without_both_kinds_and_underflow():
    out = [[None, 0.0, 0.0, 0.01]]
    clean = [[0.5, 0.0, 0.1, 0.0]]                            # pos 2: 0/0 skipped; pos 4: x/0 fails
    r = gate_ratio(out, clean, M1=4)
    assert r["ratio"][0] is None and r["ratio"][1] is None
    assert r["holds_in"] == ["i = 3"] and r["fails_in"] == ["i = 4"]
    with pytest.raises(ValueError, match="seeds, positions"):
        gate_ratio([[0.1, 0.2]], [[0.1]], M1=6)


# ------------------------------------------------------------------ growth during training
def test_growth_rule_fails_on_a_jump_at_the_first_step_then_flat():
    """Fig 3 at eta = 1: the gap jumps from 3.6 to about 50 after one step and then stays; the
    old rule (end > step 0) passes, this one must not."""
    steps = np.arange(0, 501, 10)
    jump = np.where(steps == 0, 3.6, 50.0 + 0.01 * np.sin(steps))
    r = grows_after_start(np.stack([jump, jump + 1]), steps)
    assert r["level"] == "none" and jump[-1] > jump[0]


def test_growth_rule_holds_on_steady_growth_and_names_the_failing_seed():
    steps = np.arange(0, 501, 10)
    grow = 3.6 + 0.2 * steps
    r = grows_after_start(np.stack([grow, grow * 1.1]), steps)
    assert r["level"] == "full" and all(s["late"] > 1.25 * s["early"] for s in r["per_seed"])
    saturating = 50 * (1 - np.exp(-steps / 5.0))               # flat after the first 10% of the run
    r = grows_after_start(np.stack([grow, saturating]), steps)
    assert r["level"] == "part" and r["fails_in"] == ["seed 1"]
    with pytest.raises(ValueError, match="too few"):
        grows_after_start(np.ones((1, 3)), np.arange(3))


# ------------------------------------------------------------------ Table 1
def _table(mamba, lt, n=1000, spread=0.0):
    """Counts for accuracies {placement: acc}; two seeds at acc -+ spread."""
    cell = lambda acc: (np.round((1 - np.array([acc - spread, acc + spread])) * n), np.full(2, n))  # noqa: E731
    return {"mamba": {p: cell(a) for p, a in mamba.items()},
            "linear_transformer": {p: cell(a) for p, a in lt.items()}}


def test_table1_pattern_holds_on_the_papers_numbers():
    r = table1_pattern(_table({"FQ": 0.9984, "R": 0.9904, "CQ": 0.7328}, {"FQ": 0.7852, "R": 0.7828, "CQ": 0.786}))
    assert r["holds"] is True and all(r["checks"].values())


def test_table1_pattern_fails_with_mamba_cq_below_chance():
    """One-layer Mamba at CQ = 23.6 %: the three pattern criteria hold, chance does not."""
    r = table1_pattern(_table({"FQ": 0.98, "R": 0.95, "CQ": 0.236}, {"FQ": 0.6, "R": 0.6, "CQ": 0.6}))
    assert r["checks"]["Mamba CQ worst by >= 10 points"] and r["checks"]["LT spread <= 5 points"]
    assert r["checks"]["every cell above chance"] is False and r["holds"] is False


def test_table1_pattern_fails_when_a_cell_is_above_chance_only_pooled():
    """LT at 55 % pooled, seeds at 40 % and 70 %: above chance pooled, not over seeds."""
    counts = _table({"FQ": 0.99, "R": 0.99, "CQ": 0.7}, {"FQ": 0.55, "R": 0.55, "CQ": 0.55}, spread=0.15)
    assert table1_pattern(counts)["checks"]["every cell above chance"] is False
    with pytest.raises(ValueError, match="FQ, R, CQ"):
        table1_pattern({"mamba": {}, "linear_transformer": {}})


# ------------------------------------------------------------------ Theorem 4 as stated
def test_theorem4_context_length_of_eq_15():
    assert theorem4_context(0.0, 6) == pytest.approx(np.log(6))
    assert theorem4_context(0.3, 6) == pytest.approx(7.5 * np.log(6))          # (0.2)^-2 0.3 = 7.5
    assert theorem4_context(0.5, 6) == np.inf
    assert theorem4_kappa_bound(3, 3.0, 0.6, 2.0, 0.3, 20, 0.25) == pytest.approx(800.0)


def _cell(alpha, l_ts, errors, kappa=2.0, n=1000):
    return {"kappa_a_prime": kappa, "l_ts": l_ts, "alpha": alpha,
            "wrong": np.round(np.asarray(errors) * n), "n": np.full(len(errors), n)}


def test_theorem4_is_not_contradicted_by_errors_above_one_half_or_in_short_contexts():
    """The LT fails at alpha = 0.6 and at alpha = 0.4 with l_ts = 20 (below eq (15)'s 72): the
    theorem claims neither, so the rule holds on the cells it does claim."""
    cells = [_cell(0.0, 20, [0.01, 0.02]), _cell(0.3, 20, [0.05, 0.06]),
             _cell(0.4, 20, [0.45, 0.5]), _cell(0.6, 20, [0.9, 0.9])]
    r = theorem4_sufficient(cells, eps=0.25, M1=6, kappa_bound=800.0)
    assert r["claimed"] == 2 and r["level"] == "full"


def test_theorem4_fails_where_it_claims_a_small_error():
    cells = [_cell(0.0, 20, [0.01, 0.02]), _cell(0.4, 80, [0.2, 0.45])]          # l_ts 80 >= 72: claimed
    r = theorem4_sufficient(cells, eps=0.25, M1=6, kappa_bound=800.0)
    assert r["level"] == "part" and r["fails_in"] == ["kappa_a' = 2, l_ts = 80, alpha = 0.4"]
    assert r["worst"]["cell"] == r["fails_in"][0]
    assert theorem4_sufficient([_cell(0.0, 20, [0.9], kappa=900.0)], 0.25, 6, 800.0)["level"] is None


# ------------------------------------------------------------------ step-size ties
def test_step_size_tie_goes_to_the_papers_delta_then_the_larger_margin():
    """Three candidates fit the training data perfectly (loss 0): delta = 0.2 wins over an earlier
    delta = 0.05 with a larger margin; without delta on the grid the larger margin wins."""
    score = {(0.05, 0.1): (0.0, 9.0), (0.2, 0.1): (0.0, 2.0), (0.2, 0.3): (0.0, 4.0), (0.05, 0.3): (0.1, 30.0)}
    r = choose({"delta": (0.05, 0.2), "eta": (0.1, 0.3)}, lambda f, s: score[(f["delta"], f["eta"])], seeds=[0, 1])
    assert r["chosen"] == {"delta": PAPER_DELTA, "eta": 0.3} and len(r["tied"]) == 3
    eta_only = {0.1: (0.0, 2.0), 0.2: (0.0, 5.0), 0.5: (0.0, 3.0)}
    assert choose({"eta": (0.1, 0.2, 0.5)}, lambda f, s: eta_only[f["eta"]], seeds=[0])["chosen"] == {"eta": 0.2}


def test_step_size_tie_break_never_overrides_a_lower_loss():
    score = {0.1: (0.01, 0.5), 0.2: (0.0, 0.1)}
    r = choose({"eta": (0.1, 0.2)}, lambda f, s: score[f["eta"]], seeds=[0])
    assert r["chosen"] == {"eta": 0.2} and r["tied"] == [{"eta": 0.2}]
    plain = choose({"eta": (0.1, 0.2)}, lambda f, s: 0.0, seeds=[0])       # bare losses: grid order
    assert plain["chosen"] == {"eta": 0.1}

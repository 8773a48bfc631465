"""Error counts per task group (eq (5)) and their 95% intervals: the Clopper-Pearson interval of
the prompts pooled over seeds, and the seed-aware interval the verdict rules use (``seed_interval``)."""
from __future__ import annotations

import numpy as np
from scipy.stats import beta as beta_dist
from scipy.stats import t as t_dist

from ..loss import TIE_RTOL

TIE_RULE = (f"an output within rounding of 0 is a tie and counts as an error, as an output of exactly 0 does "
            f"(eq (5)): |F| <= {TIE_RTOL:g} S, where S is the size of the terms that make F (F with every factor "
            f"replaced by its absolute value; for a stack, its top layer's terms and the residual), since its sign "
            f"is rounding noise that each BLAS kernel draws differently (numpy_mamba/loss.py, TIE_RTOL). Ties arise "
            f"where F is 0 in exact arithmetic: the untrained linear Transformer, where same-pattern examples with "
            f"opposite labels cancel")



def group_wrong_counts(wrong, group, n_groups: int) -> tuple[np.ndarray, np.ndarray]:
    """(wrong, n) per task group: misclassified prompts (the mask of ``Network.misclassified``:
    eq (5), ties and NaN count as wrong) and prompts; wrong (B,) bool, group (B,) int -> two
    (n_groups,) int arrays."""
    return (np.bincount(group[wrong], minlength=n_groups), np.bincount(group, minlength=n_groups))


def clopper_pearson(k, n, level: float = 0.95):
    """Exact (Clopper-Pearson) interval for k successes in n trials, elementwise over arrays.

    The same numbers as ``scipy.stats.binomtest(k, n).proportion_ci(level, "exact")``
    (tests/test_reproduce.py checks this), from beta quantiles so that whole grids take one call.
    """
    k, n = np.asarray(k, dtype=float), np.asarray(n, dtype=float)
    a = 1 - level
    with np.errstate(all="ignore"):
        low = np.where(k > 0, beta_dist.ppf(a / 2, k, n - k + 1), 0.0)
        high = np.where(k < n, beta_dist.ppf(1 - a / 2, k + 1, n - k), 1.0)
    return low, high


SD_RULE = ("every sd printed in this report (a mean ± sd over seeds or runs) is the sample standard deviation, n - 1 "
           "in the denominator (numpy.std(..., ddof=1)), the one the t intervals use; 0 for a single value")


def sample_sd(values) -> float:
    """The standard deviation of ``SD_RULE``: ddof = 1, 0.0 for a single value; values (n,)."""
    v = np.asarray(values, dtype=float)
    if v.ndim != 1 or v.size == 0:
        raise ValueError(f"sample_sd needs a non-empty 1-d array of values; got shape {v.shape}.")
    return float(np.std(v, ddof=1)) if v.size > 1 else 0.0


SEED_INTERVAL_RULE = ("95% interval over seeds: the Student t interval of the per-seed rates (mean +- "
                      "t_(0.975, S-1) sd / sqrt(S), scipy.stats.t), widened where needed to contain the Clopper-"
                      "Pearson interval of the prompts pooled over seeds (the only interval when S = 1), clipped "
                      "to [0, 1]")


def seed_interval(wrong, n, level: float = 0.95):
    """The interval of ``SEED_INTERVAL_RULE`` for the rate wrong / n, elementwise.

    wrong, n : (S, ...) counts, seeds first.  The seed-to-seed spread enters through the t interval
    of the per-seed rates (seeds without prompts left out); the pooled Clopper-Pearson interval
    keeps a floor for sampling error (seeds that all agree, e.g. all at 0 errors, would otherwise
    give an interval of width 0).  Returns (low, high), each (...); NaN where no seed has prompts.
    """
    wrong, n = np.asarray(wrong, dtype=float), np.asarray(n, dtype=float)
    if wrong.shape != n.shape or wrong.ndim == 0:
        raise ValueError(f"wrong and n must be (S, ...) arrays of one shape, seeds first; got {wrong.shape}, {n.shape}.")
    cp_low, cp_high = clopper_pearson(wrong.sum(0), n.sum(0), level)
    has = n > 0
    S = has.sum(0)                                                           # (...) seeds with prompts
    with np.errstate(all="ignore"):
        rate = np.where(has, wrong / n, 0.0)
        mean = rate.sum(0) / S
        sd = np.sqrt(np.where(has, (rate - mean) ** 2, 0.0).sum(0) / (S - 1))
        half = t_dist.ppf(0.5 + level / 2, np.maximum(S - 1, 1)) * sd / np.sqrt(S)
        half = np.where(S >= 2, half, 0.0)
        low = np.clip(np.minimum(mean - half, cp_low), 0.0, 1.0)
        high = np.clip(np.maximum(mean + half, cp_high), 0.0, 1.0)
    empty = S == 0
    return np.where(empty, np.nan, low), np.where(empty, np.nan, high)


def rate_summary(wrong, n) -> dict:
    """Pooled rate over seeds with its 95% Clopper-Pearson interval, the per-seed mean/min/max, and
    the seed-aware interval of ``seed_interval`` ("seed_ci95_low", "seed_ci95_high").

    wrong, n : (S, ...) integer counts (seeds first).  Returns a dict of (...) arrays or, for
    (S,) input, of floats.  A cell without prompts gives None, never NaN.
    """
    wrong, n = np.asarray(wrong, dtype=float), np.asarray(n, dtype=float)
    k, total = wrong.sum(0), n.sum(0)
    low, high = clopper_pearson(k, total)
    with np.errstate(all="ignore"):
        per_seed = np.where(n > 0, wrong / n, np.nan)                      # seeds without prompts: NaN
        used = np.maximum((n > 0).sum(0), 1)
        out = {"rate": k / total, "ci95_low": low, "ci95_high": high, "n": total,
               "seed_mean": np.where(n > 0, per_seed, 0.0).sum(0) / used,
               "seed_min": np.where(n > 0, per_seed, np.inf).min(0),
               "seed_max": np.where(n > 0, per_seed, -np.inf).max(0)}
        out["seed_ci95_low"], out["seed_ci95_high"] = seed_interval(wrong, n)
    empty = total == 0
    return {key: _none_where(value, empty) for key, value in out.items()}


def _none_where(value, empty):
    value = np.asarray(value, dtype=float)
    if value.ndim == 0:
        return None if empty else float(value)
    return np.where(empty, None, value).tolist()

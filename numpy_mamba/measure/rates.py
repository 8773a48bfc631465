"""Error counts per task group (eq (5)) and their 95% Clopper-Pearson intervals, pooled over seeds."""
from __future__ import annotations

import numpy as np
from scipy.stats import beta as beta_dist

from ..loss import misclassified


def group_wrong_counts(F, z, group, n_groups: int) -> tuple[np.ndarray, np.ndarray]:
    """(wrong, n) per task group: misclassified prompts (eq (5), NaN counts as wrong) and prompts;
    F, z, group (B,) -> two (n_groups,) int arrays."""
    wrong = misclassified(F, z)
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


def rate_summary(wrong, n) -> dict:
    """Pooled rate over seeds with its 95% Clopper-Pearson interval, and the per-seed mean/min/max.

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
    empty = total == 0
    return {key: _none_where(value, empty) for key, value in out.items()}


def _none_where(value, empty):
    value = np.asarray(value, dtype=float)
    if value.ndim == 0:
        return None if empty else float(value)
    return np.where(empty, None, value).tolist()

"""Error counts per task group (eq (5)) and their rates pooled over seeds, with the two 95% intervals
of ``rules.py``: the Clopper-Pearson interval of the pooled prompts and the interval over seeds."""
from __future__ import annotations

import numpy as np

from .rules import clopper_pearson, seed_interval


def group_wrong_counts(wrong, group, n_groups: int) -> tuple[np.ndarray, np.ndarray]:
    """(wrong, n) per task group: misclassified prompts (the mask of ``Network.misclassified``:
    eq (5), ties and NaN count as wrong) and prompts; wrong (B,) bool, group (B,) int -> two
    (n_groups,) int arrays."""
    return (np.bincount(group[wrong], minlength=n_groups), np.bincount(group, minlength=n_groups))


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

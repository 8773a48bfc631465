"""The one vocabulary of every verdict in REPORT.md, and the rules on the mechanism that the
"reproduce" and "theory" sections both judge: Corollary 1 (attention sums), Corollary 2 (i) (outlier
against clean gates) and the growth of a recorded quantity during training.  The rules on error
rates (Figure 2, Remark 5, Table 1, Theorem 4) are in ``error_verdicts.py``.

Each rule is a function of measured numbers that can fail, with its text next to it (``*_RULE``).
A rule returns a level, "full", "part", "trend" or "none", which every section prints in one
vocabulary (``WORDS``, ``word``): "holds", "holds in part" (in some settings, cases or seeds, which
the result names), "holds in trend" (the claimed direction, not the claimed size) and "does not
hold here".  Every interval a rule uses includes seed-to-seed variation (``rates.seed_interval``
or, for gate ratios, a t interval over seeds of the log ratio).
"""
from __future__ import annotations

from typing import Mapping

import numpy as np
from scipy.stats import t as t_dist

from .tasks import group_label

WORDS = {"full": "holds", "part": "holds in part", "trend": "holds in trend", "none": "does not hold here"}


def word(level: str) -> str:
    """The verdict word of ``level`` ("full", "part", "trend", "none"), the same in every section."""
    if level not in WORDS:
        raise ValueError(f"level must be one of {tuple(WORDS)}; got {level!r}.")
    return WORDS[level]


def where_it_holds(cases: Mapping[str, bool]) -> dict:
    """A claim checked case by case (settings, labellings, ...): "full" if it holds in every case,
    "part" if in some, "none" if in none.  Returns {"level", "holds_in": [...], "fails_in": [...]}."""
    if not cases:
        raise ValueError("where_it_holds needs at least one case; got none.")
    holds = [name for name, ok in cases.items() if ok]
    fails = [name for name, ok in cases.items() if not ok]
    level = "full" if not fails else "part" if holds else "none"
    return {"level": level, "holds_in": holds, "fails_in": fails}


def where_text(result: dict, what: str = "") -> str:
    """Where a case-by-case claim holds, from ``where_it_holds``'s result: the shorter of the two
    lists is named and the other counted ('fails in: c. holds in the other 8 cases')."""
    holds, fails = result["holds_in"], result["fails_in"]
    if not fails:
        return f"holds{what} in all {len(holds)} case(s)" + (f": {'; '.join(holds)}" if len(holds) <= 3 else "")
    if not holds:
        return f"fails{what} in all {len(fails)} case(s)" + (f": {'; '.join(fails)}" if len(fails) <= 3 else "")
    if len(fails) <= len(holds):
        return f"fails{what} in: {'; '.join(fails)}. Holds{what} in the other {len(holds)} case(s)"
    return f"holds{what} only in: {'; '.join(holds)}. Fails{what} in the other {len(fails)} case(s)"


COROLLARY1_RULE = ("(a) median sum over same-pattern examples (N_1) >= 1 (Theta(1) with constant 1); (b) the "
                   "sum over the other examples is a signed upper bound Theta((1-p_a)^-1 eps): checked per task "
                   "group as median different-pattern sum <= {r:g} x the median same-pattern sum. Holds if (a) and "
                   "(b) in every group, in part if (a) and (b) in some groups")


def corollary1(same, different, group, group_names, ratio: float = 0.1) -> dict:
    """Corollary 1 (eq (16)) on trained-model test prompts, judged per task group.

    same, different : (n,) per-prompt attention-score sums over same- and different-pattern
    examples; group : (n,) int task group (``measure.tasks.task_groups``); group_names : name per group
    index.  Returns {"median_same", "threshold", "by_group": {name: {"n", "median_different",
    "share_below"}}, "part_a": bool, "level", "holds_in", "fails_in"}.
    """
    same, different, group = (np.asarray(x) for x in (same, different, group))
    if not (same.shape == different.shape == group.shape) or same.ndim != 1 or same.size == 0:
        raise ValueError(f"same, different and group must be equal-length non-empty (n,) arrays; got "
                         f"{same.shape}, {different.shape}, {group.shape}.")
    median_same = float(np.median(same))
    threshold = ratio * median_same
    by_group, cases = {}, {}
    for g, name in enumerate(group_names):
        d = different[group == g]
        if d.size == 0:
            continue
        by_group[name] = {"n": int(d.size), "median_different": float(np.median(d)),
                          "share_below": float(np.mean(d <= threshold))}
        cases[group_label(name)] = by_group[name]["median_different"] <= threshold
    result = where_it_holds(cases)
    part_a = median_same >= 1.0
    level = result["level"] if part_a else "none"
    return {"median_same": median_same, "threshold": threshold, "ratio": ratio, "by_group": by_group,
            "part_a": part_a, **result, "level": level}


def corollary1_text(c: dict) -> str:
    """The sentence both sections print for ``corollary1``'s result."""
    groups = "; ".join(f"{group_label(name)} {v['median_different']:+.1f} ({v['share_below']:.0%} of "
                       f"{v['n']} prompts below)" for name, v in c["by_group"].items())
    return (f"**{word(c['level'])}**: median same-pattern sum {c['median_same']:.1f} (part (a) "
            f"{'met' if c['part_a'] else 'not met'}); median different-pattern sum by task group (threshold "
            f"{c['threshold']:.1f} = {c['ratio']:g} x same): {groups}. Part (b) {where_text(c)}.")


GATE_RATIO_RULE = ("at each context position i where both occur, the mean gate G_{i,l+1} of the outlier examples is at "
                   "most 1/M1 times the mean gate of the clean examples at the same position (eq (17) "
                   "with poly(M1) = M1 and constant 1: by (59) the bound is on the outlier's factor sigma(w^T p_i), "
                   "and the factor prod_(j>i) (1 - sigma(w^T p_j)) that both share at one position cancels in the "
                   "ratio). Per position, the ratio is the geometric mean over seeds, judged by the upper end of "
                   "its 95% t interval over seeds of log ratio (scipy.stats.t; one seed: the ratio itself). Holds "
                   "if at every position, in part if at some")


def gate_ratio(outlier_mean, clean_mean, M1: int, level: float = 0.95) -> dict:
    """Corollary 2 (i), eq (17): outlier gates against clean gates at the same positions.

    outlier_mean, clean_mean : (S, l) per seed and context position i = 1..l, the mean gate over
    outlier / clean examples there (None or NaN where a position has none; ``measure.gates.gate_profile``
    gives them).  A clean gate of 0 (underflow) with an outlier gate of 0 leaves nothing to compare;
    with an outlier gate above 0 the ratio is infinite and the position fails.  Returns {"threshold",
    "ratio", "upper" (per position, None where not compared), "level", "holds_in", "fails_in"}.
    """
    to_array = lambda x: np.array([[np.nan if v is None else v for v in row] for row in x], dtype=float)  # noqa: E731
    out, clean = to_array(outlier_mean), to_array(clean_mean)
    if out.shape != clean.shape or out.ndim != 2 or out.size == 0:
        raise ValueError(f"outlier_mean and clean_mean must be (seeds, positions) of one shape; got {out.shape}, "
                         f"{clean.shape}.")
    if int(M1) < 2:
        raise ValueError(f"M1 must be an integer >= 2; got {M1!r}.")
    threshold = 1.0 / M1
    with np.errstate(all="ignore"):                 # 0/0 -> NaN (not compared), x/0 -> inf (fails)
        log_ratio = np.log(np.maximum(out, 1e-300)) - np.log(clean)
    log_ratio[np.isnan(out) | np.isnan(clean) | ((out == 0) & (clean == 0))] = np.nan
    ratio, upper, cases = [], [], {}
    for i in range(out.shape[1]):
        v = log_ratio[:, i][~np.isnan(log_ratio[:, i])]
        if v.size == 0:
            ratio.append(None)
            upper.append(None)
            continue
        mean = float(np.mean(v))
        if v.size >= 2 and np.all(np.isfinite(v)):
            high = mean + t_dist.ppf(0.5 + level / 2, v.size - 1) * np.std(v, ddof=1) / np.sqrt(v.size)
        else:
            high = mean if np.all(np.isfinite(v)) else np.inf
        ratio.append(float(np.exp(mean)))
        upper.append(float(np.exp(high)))
        cases[f"i = {i + 1}"] = upper[-1] <= threshold
    if not cases:
        return {"threshold": threshold, "ratio": ratio, "upper": upper, "level": "none", "holds_in": [],
                "fails_in": ["no position with both an outlier and a clean gate above 0"]}
    return {"threshold": threshold, "ratio": ratio, "upper": upper, **where_it_holds(cases)}


GROWTH_RULE = ("after the first {skip:.0%} of the recorded steps, the quantity keeps growing in every seed: its mean "
               "over the last {tail:.0%} of the records exceeds its mean over the {tail:.0%} of records right after "
               "that start by more than {margin:.0%} of the latter's size, and its least-squares slope against the "
               "step over the records after the start is positive. Holds if in every seed, in part if in some")


def grows_after_start(values, steps, skip: float = 0.1, tail: float = 0.1, margin: float = 0.25) -> dict:
    """Does a recorded quantity (e.g. Fig 3's gap between the same- and different-pattern sums)
    keep growing during training, not only in the first steps?

    values : (S, R) per seed and record; steps : (R,) the step of each record (evenly spaced).
    Skips the first ``skip`` of the records, so a jump at the first step does not count; compares
    the mean over the last ``tail`` of the records with the mean over the ``tail`` right after the
    skipped start.  Returns {"per_seed": [{"early", "late", "slope", "holds"}], "level", "holds_in",
    "fails_in"}.
    """
    values, steps = np.asarray(values, dtype=float), np.asarray(steps, dtype=float)
    if values.ndim != 2 or steps.shape != values.shape[1:]:
        raise ValueError(f"values must be (seeds, records) and steps (records,); got {values.shape}, {steps.shape}.")
    R = values.shape[1]
    k0, width = int(np.ceil(skip * R)), max(1, int(round(tail * R)))
    if R - k0 < 2 * width or R - k0 < 3:
        raise ValueError(f"{R} records leave too few after skipping the first {skip:.0%} to compare two windows "
                         f"of {width}.")
    per_seed, cases = [], {}
    for s, v in enumerate(values):
        early, late = float(v[k0:k0 + width].mean()), float(v[-width:].mean())
        slope = float(np.polyfit(steps[k0:], v[k0:], 1)[0])
        ok = bool(late - early > margin * abs(early) and slope > 0)
        per_seed.append({"early": early, "late": late, "slope": slope, "holds": ok})
        cases[f"seed {s}"] = ok
    return {"per_seed": per_seed, "skip": skip, "tail": tail, "margin": margin, **where_it_holds(cases)}

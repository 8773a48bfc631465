"""The rules on the mechanism that the "reproduce" and "theory" sections both judge: Corollary 1
(attention sums), Corollary 2 (i) (outlier against clean gates), Corollary 2 (ii) (the decay of
clean gates) and the growth of a recorded quantity during training.

Each rule gives every case a level of ``verdicts.judge_cases`` ("full", "trend", "none") with
its text next to it (``*_RULE``), and returns that function's verdict with the numbers behind it.
"""
from __future__ import annotations

import numpy as np
from scipy.stats import t as t_dist

from .tasks import group_label
from .verdicts import EXPONENT_TOL, EXPONENT_WHY, ROUNDING, at_most, below, judge_cases, near, where_text, word

COROLLARY1_RULE = ("per task group of the prompts: the median sum over same-pattern examples (N_1) >= 1 (Theta(1) "
                   "with constant 1) and the median sum over the other examples <= {r:g} x the median same-pattern sum "
                   "(eq (16)'s signed bound Theta((1-p_a)^-1 eps)) holds; the median other-pattern sum below the "
                   "median same-pattern sum (attention leans to the query's pattern, not by the claimed size) holds in "
                   "trend; otherwise fails")


def corollary1(same, different, group, group_names, ratio: float = 0.1) -> dict:
    """Corollary 1 (eq (16)) on trained-model test prompts, judged per task group (``COROLLARY1_RULE``).

    same, different : (n,) per-prompt attention-score sums over same- and different-pattern
    examples; group : (n,) int task group (``measure.tasks.task_groups``); group_names : name per group
    index.  Returns ``judge_cases``' verdict over the groups plus {"median_same", "threshold", "ratio",
    "by_group": {name: {"n", "median_different", "share_below"}}, "part_a": bool}.
    """
    same, different, group = (np.asarray(x) for x in (same, different, group))
    if not (same.shape == different.shape == group.shape) or same.ndim != 1 or same.size == 0:
        raise ValueError(f"same, different and group must be equal-length non-empty (n,) arrays; got "
                         f"{same.shape}, {different.shape}, {group.shape}.")
    median_same = float(np.median(same))
    threshold = ratio * median_same
    part_a = median_same >= 1.0
    by_group, cases, borderline = {}, {}, []
    for g, name in enumerate(group_names):
        d = different[group == g]
        if d.size == 0:
            continue
        median = float(np.median(d))
        by_group[name] = {"n": int(d.size), "median_different": median, "share_below": float(np.mean(d <= threshold))}
        label = group_label(name)
        cases[label] = ("full" if part_a and median <= threshold else
                        "trend" if part_a and median < median_same else "none")
        if near(median - threshold, threshold):
            borderline.append(label)
    return {"median_same": median_same, "threshold": threshold, "ratio": ratio, "by_group": by_group,
            "part_a": part_a, **judge_cases(cases, borderline)}


def corollary1_text(c: dict) -> str:
    """The numbers behind ``corollary1``'s verdict, as one sentence (the verdict word first)."""
    groups = "; ".join(f"{group_label(name)} {v['median_different']:+.1f} ({v['share_below']:.0%} of "
                       f"{v['n']} prompts below)" for name, v in c["by_group"].items())
    return (f"**{word(c['level'])}**: median same-pattern sum {c['median_same']:.1f} (part (a) "
            f"{'met' if c['part_a'] else 'not met'}); median different-pattern sum by task group (threshold "
            f"{c['threshold']:.1f} = {c['ratio']:g} x same): {groups}; {where_text(c)}.")


GATE_RATIO_RULE = ("at each context position i where both occur, the ratio of the mean gate G_{i,l+1} on outlier "
                   "examples to the mean gate on clean examples at that position (eq (17) with poly(M1) = M1 and "
                   "constant 1; by (59) the bound is on the outlier's factor sigma(w^T p_i), and the factor "
                   "prod_(j>i) (1 - sigma(w^T p_j)) both share at one position cancels in the ratio), as the geometric "
                   "mean over seeds with the upper end of its 95% t interval over seeds of the log ratio (one seed: "
                   "the ratio itself): upper end <= 1/M1 holds; upper end < 1 (outlier gates below clean ones, not "
                   "near 0) holds in trend; otherwise fails. The tolerance is the seeds' own spread, counted "
                   "against the claim (the interval's upper end is compared, so seeds that straddle 1/M1 do not "
                   f"hold); an upper end within {ROUNDING:g} of 1/M1 or of 1 is on it. Cases: the positions (in a "
                   "setting)")


def gate_ratio(outlier_mean, clean_mean, M1: int, level: float = 0.95) -> dict:
    """Corollary 2 (i), eq (17): outlier gates against clean gates at the same positions (``GATE_RATIO_RULE``).

    outlier_mean, clean_mean : (S, l) per seed and context position i = 1..l, the mean gate over
    outlier / clean examples there (None or NaN where a position has none; ``measure.gates.gate_profile``
    gives them).  A clean gate of 0 (underflow) with an outlier gate of 0 leaves nothing to compare;
    with an outlier gate above 0 the ratio is infinite and the position fails.  Returns
    ``judge_cases``' verdict over the positions with "threshold", "ratio" and "upper" (per position,
    None where not compared).
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
    ratio, upper, cases, borderline = [], [], {}, []
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
        name = f"i = {i + 1}"
        cases[name] = "full" if at_most(upper[-1], threshold) else "trend" if below(upper[-1], 1.0) else "none"
        if near(upper[-1] - threshold, threshold):
            borderline.append(name)
    if not cases:
        cases = {"no position with both an outlier and a clean gate above 0": "none"}
    return {"threshold": threshold, "ratio": ratio, "upper": upper, **judge_cases(cases, borderline)}


DECAY_RULE = ("the mean gate G_{h(j),l+1} of the j-th closest clean example against j (eq (18)): a least-squares "
              "line through log2 G over the ranks; decaying by at most 1 bit per rank (no faster than 2^-(j-1)) within "
              f"{EXPONENT_TOL:g}, i.e. by 0 to {1 + EXPONENT_TOL:g} bits per rank, with R^2 >= 0.9 (about exponential) "
              "holds; decaying otherwise (faster, or not exponential) holds in trend; not decaying fails (a slope "
              f"within {ROUNDING:g} of 0 is flat). " + EXPONENT_WHY + "; 2^-(j-1) (1 + 1/j) fits 1.14 bits per rank "
              "over six ranks")


def clean_gate_decay(j, gates, min_r2: float = 0.9) -> dict:
    """Corollary 2 (ii), eq (18), in one case (``DECAY_RULE``): j (n,) ranks, gates (n,) mean gates
    G_{h(j),l+1} > 0.  Returns {"bits_per_rank", "ratio_per_rank", "r2", "level", "borderline"}."""
    j, gates = np.asarray(j, dtype=float), np.asarray(gates, dtype=float)
    if j.shape != gates.shape or j.ndim != 1 or j.size < 2 or np.any(~np.isfinite(gates) | (gates <= 0)):
        raise ValueError(f"j and gates must be two equal (n,) arrays, n >= 2, with positive finite gates; got "
                         f"{j.shape}, {gates.shape}.")
    y = np.log2(gates)
    slope, intercept = np.polyfit(j, y, 1)
    spread = np.sum((y - y.mean()) ** 2)
    r2 = float(1 - np.sum((y - intercept - slope * j) ** 2) / spread) if spread > 0 else 1.0
    bits, fastest = float(-slope), 1 + EXPONENT_TOL
    decaying = below(slope, 0.0)
    level = "full" if decaying and at_most(bits, fastest) and r2 >= min_r2 else "trend" if decaying else "none"
    borderline = near(r2 - min_r2, min_r2) or near(bits - fastest, 1)
    return {"bits_per_rank": bits, "ratio_per_rank": float(2 ** slope), "r2": r2, "level": level,
            "borderline": bool(borderline and decaying)}


GROWTH_RULE = ("per seed, over the whole run: the mean over the last {tail:.0%} of the records exceeds the value at "
               "the first record (step 0, Algorithm 1's initialisation) by more than {margin:.0%} of the latter's "
               "size holds; exceeding it by less holds in trend; otherwise fails. Growth counts whenever it happens: "
               "\"this gap increases during training\" says nothing of when, and in our runs most of it happens in "
               "the first {early:.0%} of the steps (the share is printed with the verdict)")


def grows_in_training(values, steps, tail: float = 0.1, margin: float = 0.25, early: float = 0.1) -> dict:
    """Does a recorded quantity (e.g. Fig 3's gap between the same- and different-pattern sums) grow
    during training?  (``GROWTH_RULE``, cases: seeds.)

    values : (S, R) per seed and record, the first record at step 0; steps : (R,) the step of each
    record.  Returns ``judge_cases``' verdict over the seeds with "per_seed": [{"start", "late",
    "early_share", "level"}] ("early_share": the part of the growth start -> late already there at
    the first record past ``early`` of the steps) and the rule's "tail", "margin", "early".
    """
    values, steps = np.asarray(values, dtype=float), np.asarray(steps, dtype=float)
    if values.ndim != 2 or steps.shape != values.shape[1:]:
        raise ValueError(f"values must be (seeds, records) and steps (records,); got {values.shape}, {steps.shape}.")
    R = values.shape[1]
    width = max(1, int(round(tail * R)))
    if R < 2 * width + 1 or R < 3:
        raise ValueError(f"{R} records are too few to compare the start with a last window of {width}.")
    k_early = int(np.searchsorted(steps, steps[0] + early * (steps[-1] - steps[0])))
    per_seed, cases, borderline = [], {}, []
    for s, v in enumerate(values):
        start, late = float(v[0]), float(v[-width:].mean())
        growth = late - start
        level = "full" if growth > margin * abs(start) else "trend" if growth > 0 else "none"
        share = float((v[k_early] - start) / growth) if growth > 0 else None
        per_seed.append({"start": start, "late": late, "early_share": share, "level": level})
        cases[f"seed {s}"] = level
        if growth > 0 and near(growth - margin * abs(start), margin * abs(start)):
            borderline.append(f"seed {s}")
    return {"per_seed": per_seed, "tail": tail, "margin": margin, "early": early, **judge_cases(cases, borderline)}

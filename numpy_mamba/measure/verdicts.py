"""Verdict rules shared by the "reproduce" and "theory" sections of REPORT.md.

Each rule is a function of measured numbers that can fail, with its text next to it (``*_RULE``).
A rule returns a level, "full", "part", "trend" or "none", which both sections print in one
vocabulary (``WORDS``, ``word``): "holds", "holds in part" (in some settings, cases or seeds, which
the result names), "holds in trend" (the claimed direction, not the claimed size) and "does not
hold here".  Every interval a rule uses includes seed-to-seed variation (``rates.seed_interval``).
"""
from __future__ import annotations

from typing import Mapping

import numpy as np
from scipy.stats import t as t_dist

from .rates import SEED_INTERVAL_RULE, seed_interval
from .tasks import group_label

WORDS = {"full": "holds", "part": "holds in part", "trend": "holds in trend", "none": "does not hold here"}
SECTIONS = ("reproduce", "theory")


def word(level: str, section: str | None = None) -> str:
    """The verdict word of ``level`` ("full", "part", "trend", "none"); the same in every section
    (``section``, "reproduce" or "theory", is accepted so that both sections call it alike)."""
    if section is not None and section not in SECTIONS:
        raise ValueError(f"section must be one of {SECTIONS}; got {section!r}.")
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


def _by_seed(wrong, n, n_alpha: int) -> tuple[np.ndarray, np.ndarray]:
    """(S, n_alpha) counts from (n_alpha,) (one seed) or (S, ..., n_alpha) (seeds first, the middle
    axes pooled within each seed)."""
    wrong, n = np.asarray(wrong), np.asarray(n)
    if wrong.shape != n.shape or wrong.ndim == 0 or wrong.shape[-1] != n_alpha:
        raise ValueError(f"wrong and n must have the same shape, seeds first and ending in n_alpha = {n_alpha}; "
                         f"got {wrong.shape} and {n.shape}.")
    if wrong.ndim == 1:
        return wrong[None], n[None]
    return wrong.reshape(wrong.shape[0], -1, n_alpha).sum(1), n.reshape(n.shape[0], -1, n_alpha).sum(1)


RISE_RULE = ("the pooled error over alpha in (1/2, 1/2 + {w:g}] exceeds the pooled error over alpha in "
             "(1/2 - {w:g}, 1/2] by at least {m:g}, and their 95% intervals over seeds do not overlap (" +
             SEED_INTERVAL_RULE + ")")


def rise_after_half(wrong, n, alphas, window: float = 0.2, margin: float = 0.1) -> dict:
    """Does the error rise once alpha passes 1/2 (Fig 2's claim for the linear Transformer)?

    wrong, n : (S, ..., n_alpha) error and prompt counts, seeds first (middle axes pooled within a
    seed), or (n_alpha,) for one seed; alphas : (n_alpha,).  Compares the window just above 1/2 with
    the window just below it (both ``window`` wide), so a curve that is flat, or rises only far from
    1/2, fails.  Each window's rate is pooled over its alphas and seeds; its interval is
    ``rates.seed_interval`` over the per-seed window rates.  Returns {"below": [rate, low, high],
    "above": [...], "rise", "holds"}; "holds" is None if a window is empty.
    """
    alphas = np.asarray(alphas, dtype=float)
    wrong, n = _by_seed(wrong, n, alphas.size)
    eps = 1e-9
    masks = {"below": (alphas > 0.5 - window + eps) & (alphas <= 0.5 + eps),
             "above": (alphas > 0.5 + eps) & (alphas <= 0.5 + window + eps)}
    out = {}
    for name, mask in masks.items():
        k, total = wrong[:, mask].sum(1), n[:, mask].sum(1)                # (S,) per seed
        if total.sum() == 0:
            return {"below": None, "above": None, "rise": None, "holds": None}
        low, high = seed_interval(k, total)
        out[name] = [float(k.sum() / total.sum()), float(low), float(high)]
    out["rise"] = out["above"][0] - out["below"][0]
    out["holds"] = bool(out["rise"] >= margin and out["above"][1] > out["below"][2])
    return out


BELOW_RULE = ("Mamba's 95% interval over seeds lies entirely below the linear Transformer's at every alpha > 1/2 of "
              "the grid (" + SEED_INTERVAL_RULE + ")")


def below_at_every_alpha(mamba, lt, alphas) -> dict:
    """Remark 5 in one setting: is Mamba's error below the linear Transformer's at every alpha > 1/2?

    mamba, lt : (wrong, n) pairs of (S, ..., n_alpha) counts, seeds first, or (n_alpha,) for one
    seed; intervals by ``rates.seed_interval``.  Returns {"holds": bool, "failing_alphas": [...]}
    (alphas where the intervals overlap or Mamba is higher)."""
    alphas = np.asarray(alphas, dtype=float)
    above = alphas > 0.5 + 1e-9
    if not above.any():
        raise ValueError(f"no alpha > 1/2 in {alphas.tolist()}: Remark 5 cannot be checked.")
    (mw, mn), (lw, ln) = [_by_seed(w, n, alphas.size) for w, n in (mamba, lt)]
    _, m_high = seed_interval(mw, mn)
    l_low, _ = seed_interval(lw, ln)
    fail = above & ~(m_high < l_low)
    return {"holds": not fail.any(), "failing_alphas": [round(float(a), 4) for a in alphas[fail]]}


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


def corollary1_text(c: dict, section: str) -> str:
    """The shared sentence both sections print for ``corollary1``'s result."""
    groups = "; ".join(f"{group_label(name)} {v['median_different']:+.1f} ({v['share_below']:.0%} of "
                       f"{v['n']} prompts below)" for name, v in c["by_group"].items())
    return (f"**{word(c['level'], section)}**: median same-pattern sum {c['median_same']:.1f} (part (a) "
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


PLACES = ("FQ", "R", "CQ")
TABLE1_RULE = ("every cell above chance (the upper end of the error's 95% interval over seeds below 1/2, for both "
               "models at FQ, R and CQ; " + SEED_INTERVAL_RULE + "); Mamba's CQ accuracy the lowest of its three "
               "and at least 10 points below its FQ; the linear Transformer's three accuracies within 5 points of "
               "each other; Mamba's accuracy above the linear Transformer's at FQ and at R (pooled rates)")


def table1_pattern(counts: Mapping) -> dict:
    """Table 1's pattern in one setting (labelling, kappa_a'), by ``TABLE1_RULE``.

    counts : {"mamba": {placement: (wrong, n)}, "linear_transformer": {...}} for placements FQ, R,
    CQ, with wrong and n (S,) error and prompt counts per seed.  Returns {"accuracy", "accuracy_low"
    (pooled accuracy and the low end of its interval, {model: {placement}}), "checks": {criterion:
    bool}, "holds": all criteria}.
    """
    models = ("mamba", "linear_transformer")
    if set(counts) != set(models) or any(set(counts[m]) != set(PLACES) for m in models):
        raise ValueError(f"counts must map {models} to {{FQ, R, CQ}}; got {({m: sorted(v) for m, v in counts.items()})}.")
    acc, acc_low, chance = {}, {}, True
    for m in models:
        acc[m], acc_low[m] = {}, {}
        for p in PLACES:
            wrong, n = (np.atleast_1d(np.asarray(x, dtype=float)) for x in counts[m][p])
            if n.sum() == 0:
                raise ValueError(f"no prompts for {m} at {p}.")
            _, high = seed_interval(wrong, n)
            acc[m][p], acc_low[m][p] = float(1 - wrong.sum() / n.sum()), float(1 - high)
            chance &= bool(high < 0.5)
    a, lt = acc["mamba"], acc["linear_transformer"]
    checks = {"every cell above chance": chance,
              "Mamba CQ worst by >= 10 points": a["CQ"] == min(a.values()) and a["FQ"] - a["CQ"] >= 0.1,
              "LT spread <= 5 points": max(lt.values()) - min(lt.values()) <= 0.05,
              "Mamba > LT at FQ and R": a["FQ"] > lt["FQ"] and a["R"] > lt["R"]}
    return {"accuracy": acc, "accuracy_low": acc_low, "checks": checks, "holds": all(checks.values())}


THEOREM4_RULE = ("Theorem 4 is a sufficient condition: if (b) kappa_a' <= V beta p_a^-1 (1-p_a) kappa_a^-1 L^-1 l_tr "
                 "eps^-1, (c) alpha < 1/2 and (d) l_ts >= max{{(1-alpha)^-1, (1/2-alpha)^-2 alpha}} log M1 (every "
                 "constant 1), the linear Transformer's test error is <= eps. Checked at every measured (kappa_a', "
                 "l_ts, alpha) that meets (b)-(d), with eps = {eps:g}: holds there if the upper end of the error's "
                 "95% interval over seeds is <= eps (" + SEED_INTERVAL_RULE + "). Holds if in every such "
                 "cell, in part if in some. Cells outside (b)-(d) are not claimed: an error above eps at alpha >= "
                 "1/2 or with a short context is no evidence against the theorem")


def theorem4_context(alpha: float, M1: int) -> float:
    """The l_ts of Theorem 4 (d), eq (15), with every constant 1: max{(1-alpha)^-1, (1/2-alpha)^-2 alpha} log M1;
    inf for alpha >= 1/2 (condition (c) fails there)."""
    if alpha >= 0.5:
        return float("inf")
    return float(max(1.0 / (1.0 - alpha), alpha / (0.5 - alpha) ** 2) * np.log(M1))


def theorem4_kappa_bound(V: int, beta: float, p_a: float, kappa_a: float, L: float, l_tr: int, eps: float) -> float:
    """The largest kappa_a' of Theorem 4 (b) with constant 1: V beta p_a^-1 (1-p_a) kappa_a^-1 L^-1 l_tr eps^-1."""
    return float("inf") if p_a == 0 else V * beta * (1 - p_a) * l_tr / (p_a * kappa_a * L * eps)


def theorem4_sufficient(cells, eps: float, M1: int, kappa_bound: float) -> dict:
    """Theorem 4 checked as stated (``THEOREM4_RULE``).

    cells : iterable of {"kappa_a_prime", "l_ts", "alpha", "wrong": (S,), "n": (S,)}, the linear
    Transformer's error counts per seed at one test setting.  Returns {"claimed": number of cells
    meeting (b)-(d), "worst": the claimed cell with the highest interval end, "level", "holds_in",
    "fails_in"}; level None (nothing to judge) if no cell meets the conditions.
    """
    cases, worst = {}, None
    for c in cells:
        if c["alpha"] >= 0.5 or c["kappa_a_prime"] > kappa_bound or c["l_ts"] < theorem4_context(c["alpha"], M1):
            continue
        wrong, n = (np.atleast_1d(np.asarray(c[k], dtype=float)) for k in ("wrong", "n"))
        _, high = seed_interval(wrong, n)
        name = f"kappa_a' = {c['kappa_a_prime']:g}, l_ts = {c['l_ts']}, alpha = {c['alpha']:g}"
        cases[name] = bool(high <= eps)
        if worst is None or high > worst["high"]:
            worst = {"cell": name, "rate": float(wrong.sum() / n.sum()), "high": float(high)}
    if not cases:
        return {"claimed": 0, "worst": None, "level": None, "holds_in": [], "fails_in": []}
    return {"claimed": len(cases), "worst": worst, **where_it_holds(cases)}

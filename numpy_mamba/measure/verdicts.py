"""Verdict rules shared by the "reproduce" and "theory" sections of REPORT.md.

Each rule is a function of measured numbers that can fail, with its text next to it (``*_RULE``).
A rule returns a level, "full", "part" or "none", which each section prints in its own words
(``WORDS``: "reproduced" / "partly" / "not" in the reproduce section, "holds" / "holds in part" /
"does not hold here" in the theory section), plus where the claim holds and where it fails,
so a claim that holds only in some settings names them.
"""
from __future__ import annotations

from typing import Mapping

import numpy as np

from .rates import clopper_pearson
from .tasks import group_label

WORDS = {"reproduce": {"full": "reproduced", "part": "partly", "none": "not"},
         "theory": {"full": "holds", "part": "holds in part", "none": "does not hold here"}}


def word(level: str, section: str) -> str:
    """The verdict word of ``level`` ("full", "part", "none") in ``section`` ("reproduce", "theory")."""
    return WORDS[section][level]


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


RISE_RULE = ("the pooled error over alpha in (1/2, 1/2 + {w:g}] exceeds the pooled error over alpha in "
             "(1/2 - {w:g}, 1/2] by at least {m:g}, and their 95% Clopper-Pearson intervals do not overlap")


def rise_after_half(wrong, n, alphas, window: float = 0.2, margin: float = 0.1) -> dict:
    """Does the error rise once alpha passes 1/2 (Fig 2's claim for the linear Transformer)?

    wrong, n : (..., n_alpha) error and prompt counts (any leading axes, e.g. seeds, are pooled);
    alphas : (n_alpha,).  Compares the window just above 1/2 with the window just below it (both
    ``window`` wide), so a curve that is flat, or rises only far from 1/2, fails.  Returns
    {"below": [rate, low, high], "above": [...], "rise", "holds"}; "holds" is None if a window is empty.
    """
    alphas = np.asarray(alphas, dtype=float)
    wrong, n = np.asarray(wrong), np.asarray(n)
    if wrong.shape != n.shape or wrong.shape[-1] != alphas.size:
        raise ValueError(f"wrong and n must have the same shape ending in n_alpha = {alphas.size}; "
                         f"got {wrong.shape} and {n.shape}.")
    eps = 1e-9
    masks = {"below": (alphas > 0.5 - window + eps) & (alphas <= 0.5 + eps),
             "above": (alphas > 0.5 + eps) & (alphas <= 0.5 + window + eps)}
    out = {}
    for name, mask in masks.items():
        k, total = wrong[..., mask].sum(), n[..., mask].sum()
        if total == 0:
            return {"below": None, "above": None, "rise": None, "holds": None}
        low, high = clopper_pearson(k, total)
        out[name] = [float(k / total), float(low), float(high)]
    out["rise"] = out["above"][0] - out["below"][0]
    out["holds"] = bool(out["rise"] >= margin and out["above"][1] > out["below"][2])
    return out


BELOW_RULE = ("Mamba's 95% Clopper-Pearson interval lies entirely below the linear Transformer's at every "
              "alpha > 1/2 of the grid")


def below_at_every_alpha(mamba, lt, alphas) -> dict:
    """Remark 5 in one setting: is Mamba's error below the linear Transformer's at every alpha > 1/2?

    mamba, lt : (wrong, n) pairs of (..., n_alpha) counts (leading axes pooled).  Returns
    {"holds": bool, "failing_alphas": [...]} (alphas where the intervals overlap or Mamba is higher)."""
    alphas = np.asarray(alphas, dtype=float)
    above = alphas > 0.5 + 1e-9
    if not above.any():
        raise ValueError(f"no alpha > 1/2 in {alphas.tolist()}: Remark 5 cannot be checked.")
    (mw, mn), (lw, ln) = [(np.asarray(w).reshape(-1, alphas.size).sum(0), np.asarray(n).reshape(-1, alphas.size).sum(0))
                          for w, n in (mamba, lt)]
    _, m_high = clopper_pearson(mw, mn)
    l_low, _ = clopper_pearson(lw, ln)
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

"""The verdict rules on error rates: Figure 2's rise of the linear Transformer's error once alpha
passes 1/2, Remark 5 (Mamba below the linear Transformer), Table 1's numbers and pattern, and
Theorem 4 as a sufficient condition.  Each judges one case (a setting of its grid) and returns a
level of ``verdicts.judge_cases`` ("full", "trend", "none") with a borderline flag and the numbers
behind it; every interval it uses is the 95% interval over seeds (``rates.seed_interval``).
"""
from __future__ import annotations

from typing import Mapping

import numpy as np

from .rates import seed_interval
from .verdicts import judge_cases, near


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


RISE_RULE = ("per setting: the pooled error over alpha in (1/2, 1/2 + {w:g}] exceeds the pooled error over alpha in "
             "(1/2 - {w:g}, 1/2] by at least {m:g} with the two windows' 95% intervals over seeds apart, holds; a "
             "rise (pooled) short of that holds in trend; no rise fails")


def rise_after_half(wrong, n, alphas, window: float = 0.2, margin: float = 0.1) -> dict:
    """Does the error rise once alpha passes 1/2 (Fig 2's claim for the linear Transformer)?  (``RISE_RULE``)

    wrong, n : (S, ..., n_alpha) error and prompt counts, seeds first (middle axes pooled within a
    seed), or (n_alpha,) for one seed; alphas : (n_alpha,).  Compares the window just above 1/2 with
    the window just below it (both ``window`` wide), so a curve that is flat, or rises only far from
    1/2, fails.  Each window's rate is pooled over its alphas and seeds; its interval is
    ``rates.seed_interval`` over the per-seed window rates.  Returns {"below": [rate, low, high],
    "above": [...], "rise", "level", "borderline"}; "level" is None if a window is empty.
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
            return {"below": None, "above": None, "rise": None, "level": None, "borderline": False}
        low, high = seed_interval(k, total)
        out[name] = [float(k.sum() / total.sum()), float(low), float(high)]
    rise = out["above"][0] - out["below"][0]
    apart = out["above"][1] > out["below"][2]
    out.update(rise=rise, level="full" if rise >= margin and apart else "trend" if rise > 0 else "none",
               borderline=near(rise - margin, margin))
    return out


BELOW_RULE = ("per setting: Mamba's 95% interval over seeds entirely below the linear Transformer's at every alpha > "
              "1/2 of the grid holds; Mamba's pooled error below the linear Transformer's at every such alpha "
              "(intervals overlapping somewhere) holds in trend; otherwise fails")


def below_at_every_alpha(mamba, lt, alphas) -> dict:
    """Remark 5 in one setting (``BELOW_RULE``): is Mamba's error below the linear Transformer's at
    every alpha > 1/2?

    mamba, lt : (wrong, n) pairs of (S, ..., n_alpha) counts, seeds first, or (n_alpha,) for one
    seed; intervals by ``rates.seed_interval``.  Returns {"level", "borderline", "failing_alphas"
    (alphas where the intervals overlap or Mamba is higher)}; borderline when the narrowest gap
    between the intervals is within 10 % of the smaller linear-Transformer error there.
    """
    alphas = np.asarray(alphas, dtype=float)
    above = alphas > 0.5 + 1e-9
    if not above.any():
        raise ValueError(f"no alpha > 1/2 in {alphas.tolist()}: Remark 5 cannot be checked.")
    (mw, mn), (lw, ln) = [_by_seed(w, n, alphas.size) for w, n in (mamba, lt)]
    _, m_high = seed_interval(mw, mn)
    l_low, _ = seed_interval(lw, ln)
    m_rate, l_rate = mw.sum(0) / mn.sum(0), lw.sum(0) / ln.sum(0)
    fail = above & ~(m_high < l_low)
    level = "full" if not fail.any() else "trend" if np.all(m_rate[above] < l_rate[above]) else "none"
    gap = (l_low - m_high)[above]
    k = int(np.argmin(gap))
    return {"level": level, "borderline": near(gap[k], l_rate[above][k]),
            "failing_alphas": [round(float(a), 4) for a in alphas[fail]]}


PLACES = ("FQ", "R", "CQ")
TABLE1_PATTERN_RULE = ("per setting (labelling, kappa_a'): every cell above chance (the upper end of the error's 95% "
                       "interval over seeds below 1/2, both models at FQ, R, CQ), Mamba's CQ accuracy the lowest of "
                       "its three and at least 10 points below its FQ, the linear Transformer's three within 5 points "
                       "of each other, and Mamba's 95% interval above the linear Transformer's at FQ and at R, holds; "
                       "the same directions without the sizes (every cell above chance pooled, Mamba's CQ lowest, "
                       "Mamba's FQ - CQ drop larger than the linear Transformer's spread, Mamba above it at FQ and R "
                       "pooled) holds in trend; otherwise fails")


def table1_pattern(counts: Mapping) -> dict:
    """Table 1's pattern in one setting (labelling, kappa_a'), by ``TABLE1_PATTERN_RULE``.

    counts : {"mamba": {placement: (wrong, n)}, "linear_transformer": {...}} for placements FQ, R,
    CQ, with wrong and n (S,) error and prompt counts per seed.  Returns {"accuracy", "accuracy_low",
    "accuracy_high" ({model: {placement}}: pooled accuracy and its interval), "checks": {criterion:
    bool} (the four criteria at their sizes), "level", "borderline"}.
    """
    models = ("mamba", "linear_transformer")
    if set(counts) != set(models) or any(set(counts[m]) != set(PLACES) for m in models):
        raise ValueError(f"counts must map {models} to {{FQ, R, CQ}}; got {({m: sorted(v) for m, v in counts.items()})}.")
    acc, low, high = {m: {} for m in models}, {m: {} for m in models}, {m: {} for m in models}
    for m in models:
        for p in PLACES:
            wrong, n = (np.atleast_1d(np.asarray(x, dtype=float)) for x in counts[m][p])
            if n.sum() == 0:
                raise ValueError(f"no prompts for {m} at {p}.")
            err_low, err_high = seed_interval(wrong, n)
            acc[m][p], low[m][p], high[m][p] = float(1 - wrong.sum() / n.sum()), float(1 - err_high), float(1 - err_low)
    a, lt = acc["mamba"], acc["linear_transformer"]
    drop, spread = a["FQ"] - a["CQ"], max(lt.values()) - min(lt.values())
    checks = {"every cell above chance": all(low[m][p] > 0.5 for m in models for p in PLACES),
              "Mamba CQ worst by >= 10 points": a["CQ"] == min(a.values()) and drop >= 0.1,
              "LT spread <= 5 points": spread <= 0.05,
              "Mamba > LT at FQ and R": all(low["mamba"][p] > high["linear_transformer"][p] for p in ("FQ", "R"))}
    directions = (all(acc[m][p] > 0.5 for m in models for p in PLACES) and a["CQ"] == min(a.values())
                  and drop > spread and a["FQ"] > lt["FQ"] and a["R"] > lt["R"])
    level = "full" if all(checks.values()) else "trend" if directions else "none"
    borderline = near(drop - 0.1, 0.1) or near(spread - 0.05, 0.05)
    return {"accuracy": acc, "accuracy_low": low, "accuracy_high": high, "checks": checks, "level": level,
            "borderline": bool(borderline)}


TABLE1_NUMBERS_RULE = ("per setting (labelling, kappa_a'): all six cells (both models at FQ, R, CQ) within {close:g} "
                       "points of the paper's holds; all six within {loose:g} points holds in trend; otherwise fails "
                       "(a table is reproduced as a whole: one model's cells matching while the other's miss is no match)")


def table1_numbers(accuracy: Mapping, paper: Mapping, close: float = 0.02, loose: float = 0.05) -> dict:
    """Table 1's numbers in one setting (``TABLE1_NUMBERS_RULE``): accuracy and paper {model:
    {placement: accuracy}}.  Returns {"worst": largest |ours - paper| (accuracy units), "level",
    "borderline"}."""
    if set(accuracy) != set(paper) or any(set(accuracy[m]) != set(PLACES) for m in accuracy):
        raise ValueError(f"accuracy must map the paper's models {sorted(paper)} to {{FQ, R, CQ}}; got "
                         f"{ {m: sorted(v) for m, v in accuracy.items()} }.")
    worst = max(abs(accuracy[m][p] - paper[m][p]) for m in paper for p in PLACES)
    level = "full" if worst <= close else "trend" if worst <= loose else "none"
    return {"worst": float(worst), "level": level, "borderline": near(worst - close, close)}


THEOREM4_RULE = ("Theorem 4 is a sufficient condition: if (b) kappa_a' <= V beta p_a^-1 (1-p_a) kappa_a^-1 L^-1 l_tr "
                 "eps^-1, (c) alpha < 1/2 and (d) l_ts >= max{{(1-alpha)^-1, (1/2-alpha)^-2 alpha}} log M1 (every "
                 "constant 1), the linear Transformer's test error is <= eps. Cases: every measured (kappa_a', l_ts, "
                 "alpha) that meets (b)-(d), at each eps of {eps}: the upper end of the error's 95% interval over seeds "
                 "<= eps holds; the pooled error <= eps holds in trend; otherwise fails. Cells outside (b)-(d) are not "
                 "claimed: an error above eps at alpha >= 1/2 or with a short context is no evidence against it")


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
    """Theorem 4 checked as stated (``THEOREM4_RULE``) at one eps.

    cells : iterable of {"kappa_a_prime", "l_ts", "alpha", "wrong": (S,), "n": (S,)}, the linear
    Transformer's error counts per seed at one test setting.  Returns ``judge_cases``' verdict over
    the cells meeting (b)-(d) with "claimed" (their number) and "worst" (the one with the highest
    interval end); level None (nothing to judge) if no cell meets the conditions.
    """
    cases, worst, borderline = {}, None, []
    for c in cells:
        if c["alpha"] >= 0.5 or c["kappa_a_prime"] > kappa_bound or c["l_ts"] < theorem4_context(c["alpha"], M1):
            continue
        wrong, n = (np.atleast_1d(np.asarray(c[k], dtype=float)) for k in ("wrong", "n"))
        _, high = seed_interval(wrong, n)
        rate = float(wrong.sum() / n.sum())
        name = f"kappa_a' = {c['kappa_a_prime']:g}, l_ts = {c['l_ts']}, alpha = {c['alpha']:g}"
        cases[name] = "full" if high <= eps else "trend" if rate <= eps else "none"
        if near(high - eps, eps):
            borderline.append(name)
        if worst is None or high > worst["high"]:
            worst = {"cell": name, "rate": rate, "high": float(high)}
    if not cases:
        return {"claimed": 0, "worst": None, "level": None, "holds_in": [], "part_in": [], "trend_in": [],
                "fails_in": [], "borderline": [], "cases": {}}
    return {"claimed": len(cases), "worst": worst, **judge_cases(cases, borderline)}

"""The verdict rules on error rates: Figure 2's rise of the linear Transformer's error once alpha
passes 1/2, Remark 5 (Mamba below the linear Transformer), Table 1's pattern and Theorem 4 as a
sufficient condition.  Each returns a level of ``verdicts.WORDS`` or a bool the caller turns into
one, and every interval it uses is the 95% interval over seeds (``rates.seed_interval``).
"""
from __future__ import annotations

from typing import Mapping

import numpy as np

from .rates import SEED_INTERVAL_RULE, seed_interval
from .verdicts import where_it_holds


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

"""Every rule that turns a measured number into a verdict, its text beside the function that
applies it, and the one vocabulary of verdicts in REPORT.md.

A rule gives each case of a claim (a setting of its grid, a task group, a seed, a position) one
level: "full" (the claim at its claimed size), "trend" (the claimed direction, not the size) or
"none"; ``judge_cases`` turns the cases into one verdict that names where it holds:

    holds               every case holds
    holds in part       some cases hold (the verdict names which): a subset of the grid, never a
                        loosened size
    holds in trend      no case holds at the claimed size, some show the claimed direction
    does not hold here  no case shows even the direction

A case whose margin is within 10 % of its threshold is *borderline* (``near``); the verdict lists
those cases, so a thin pass or a thin failure is never shown as clear.  A rule that compares a
measured exponent or ratio with a claimed one does so with a stated tolerance (``EXPONENT_TOL``),
and where a threshold can be met exactly, a value within ``ROUNDING`` of it is on it (``at_most``,
``below``): the last bits of a number move with the CPU's vector instructions and BLAS kernel, and
must not decide a verdict.  Case names are strings or ``case(...)`` tuples of (dimension, value)
pairs, which ``describe`` folds into short phrases ("kappa_a' = 2, 4; every labelling").

The rules, in the order of this module:

    the vocabulary      judge_cases, combine, where_text, verdict_text; bound_case (an upper bound)
    intervals           the sample sd and the 95% interval over seeds every rule uses
    ties, divergence    an output within rounding of 0 (loss.TIE_RTOL); a diverged run (sgd.divergence)
    the step size       how eta (and delta) are chosen per model on held-out training prompts (``choose``)
    error rates         Figure 2's rise at alpha = 1/2, Remark 5, Table 1's numbers and pattern, Theorem 4
    the mechanism       Corollary 1, Corollary 2 (i) and (ii), growth during training

Each rule's text is a constant ending in ``_RULE``; ``RULES`` names them as the report's appendix does.
"""
from __future__ import annotations

from itertools import combinations, product
from typing import Callable, Mapping, Sequence

import numpy as np

from ..data import SECTION4
from ..loss import TIE_RTOL
from ..sgd import DIVERGENCE_BOUND, DivergenceError
from .tasks import group_label


# ---------------------------------------------------------------- the vocabulary
LEVELS = ("full", "part", "trend", "none")
WORDS = {"full": "holds", "part": "holds in part", "trend": "holds in trend", "none": "does not hold here"}
BORDERLINE = 0.1                # a margin within this fraction of its threshold's scale is borderline
EXPONENT_TOL = 0.25             # a fitted exponent (or rate in bits per rank) this close to the claimed one meets it
EXPONENT_WHY = (f"The tolerance {EXPONENT_TOL:g} is that of every fitted exponent here: a least-squares slope over a "
                "grid about a decade wide carries the constants and lower-order terms that Theta and O leave out "
                "(c / (x + 1) fits an exponent of -0.84 over x = 2..17)")
ROUNDING = 1e-9                 # x max(1, |threshold|): kernels move a number by ~1e-16; measured spreads are >= 1e-3

VOCABULARY_RULE = ("each claim is judged case by case (every setting of its grid, task group, seed or position, as "
                   "its rule says); a case holds (the claimed size), holds in trend (the claimed direction only) or "
                   "fails. The verdict: **holds** if every case holds; **holds in part** if some cases hold (named); "
                   "**holds in trend** if none holds but some show the direction; **does not hold here** otherwise. A "
                   f"case whose value lies within {BORDERLINE:.0%} of any threshold its rule uses (the claimed size and "
                   "the trend's, or of a sign's claimed size) is reported as borderline")


def word(level: str) -> str:
    """The verdict word of ``level`` ("full", "part", "trend", "none"), the same in every section."""
    if level not in WORDS:
        raise ValueError(f"level must be one of {tuple(WORDS)}; got {level!r}.")
    return WORDS[level]


def case(*pairs) -> tuple:
    """A structured case name: case(("", "flip"), ("kappa_a'", 8)) is shown "flip, kappa_a' = 8"."""
    for pair in pairs:
        if not (isinstance(pair, tuple) and len(pair) == 2 and isinstance(pair[0], str)):
            raise ValueError(f"a case is built from (dimension, value) pairs; got {pair!r}.")
    return tuple((dim, _text(value)) for dim, value in pairs)


def _text(value) -> str:
    return f"{value:g}" if isinstance(value, (float, np.floating)) else str(value)


def case_name(key) -> str:
    """The display name of a case: a string as is, a ``case`` tuple as 'flip, kappa_a' = 8'."""
    if isinstance(key, str):
        return key
    return ", ".join(value if not dim else f"{dim} = {value}" for dim, value in key)


def near(margin: float, scale: float) -> bool:
    """Borderline: |margin| (the distance of a value from its threshold) within BORDERLINE x |scale|
    (the threshold, or for a threshold of 0 the size of the compared values)."""
    margin, scale = float(margin), abs(float(scale))
    return bool(np.isfinite(margin) and abs(margin) <= BORDERLINE * scale)


def near_any(value: float, thresholds, scale: float | None = None) -> bool:
    """The one borderline rule of every verdict: ``value`` within BORDERLINE of any threshold its rule
    uses, |value - t| <= BORDERLINE |t|; a threshold of 0 (a sign) is measured against ``scale``, the
    claimed size of the value, instead."""
    return any(near(value - t, t if t else (scale or 0.0)) for t in thresholds)


def at_most(value: float, bound: float) -> bool:
    """value <= bound, a value within ROUNDING x max(1, |bound|) above the bound counting as on it."""
    return bool(value <= bound + ROUNDING * max(1.0, abs(bound)))


def below(value: float, bound: float) -> bool:
    """value < bound by more than rounding: a value within ROUNDING x max(1, |bound|) of the bound is
    on it, not below it."""
    return bool(value < bound - ROUNDING * max(1.0, abs(bound)))


def judge_cases(cases: Mapping, borderline=()) -> dict:
    """One verdict from per-case levels (``VOCABULARY_RULE``).

    cases : {case name or ``case`` tuple: "full" | "part" | "trend" | "none"} ("part": a case that
    itself holds in some of its sub-cases, e.g. a setting where the claim holds at some positions);
    borderline : the case names whose margin is within BORDERLINE of its threshold.
    Returns {"level", "holds_in", "part_in", "trend_in", "fails_in", "borderline"} (names in the
    order given, as display strings in "names"), and "cases" {name: level}.
    """
    if not cases:
        raise ValueError("judge_cases needs at least one case; got none.")
    bad = {k: v for k, v in cases.items() if v not in LEVELS}
    if bad:
        raise ValueError(f"every case level must be one of {LEVELS}; got {bad}.")
    by = {level: [k for k, v in cases.items() if v == level] for level in LEVELS}
    if len(by["full"]) == len(cases):
        level = "full"
    elif by["full"] or by["part"]:
        level = "part"
    elif by["trend"]:
        level = "trend"
    else:
        level = "none"
    return {"level": level, "holds_in": by["full"], "part_in": by["part"], "trend_in": by["trend"],
            "fails_in": by["none"], "borderline": [k for k in cases if k in set(borderline)],
            "order": list(cases), "cases": {case_name(k): v for k, v in cases.items()}}


def where_it_holds(cases: Mapping) -> dict:
    """``judge_cases`` for a claim whose cases either hold or fail: {name: bool}."""
    return judge_cases({k: "full" if ok else "none" for k, ok in cases.items()})


def combine(results: Mapping) -> dict:
    """Judge a claim over outer cases whose own verdicts are ``judge_cases`` results (e.g. settings,
    each judged over its positions): each outer case counts with its own level."""
    return judge_cases({k: r["level"] for k, r in results.items()},
                       [k for k, r in results.items() if r.get("borderline")])


def describe(names: list, universe: list) -> str:
    """A short phrase for the cases ``names`` among all cases ``universe``.  ``case`` tuples are
    covered greedily by products of values ("target or random, kappa_a' = 2 or 4"; a dimension whose
    every value is in the product is left out; "everywhere" for all); strings are listed."""
    if not names:
        return "none"
    if set(names) == set(universe):
        return "everywhere"
    if any(isinstance(n, str) for n in names) or len({len(n) for n in universe}) != 1:
        return "; ".join(case_name(n) for n in names)
    values = [list(dict.fromkeys(u[i] for u in universe)) for i in range(len(universe[0]))]
    wanted, left, parts = set(names), set(names), []
    options = [[list(c) for k in range(1, len(v) + 1) for c in combinations(v, k)] for v in values]
    while left:
        best = max((box for box in product(*options) if set(product(*box)) <= wanted),
                   key=lambda box: (len(set(product(*box)) & left), -sum(map(len, box))))
        left -= set(product(*best))
        parts.append(", ".join(_join(c) for c, v in zip(best, values) if len(c) < len(v)) or "everywhere")
    return "; ".join(parts)


def _join(pairs: list) -> str:
    """[("kappa_a'", "4"), ("kappa_a'", "8")] -> "kappa_a' = 4 or 8"; [("", "flip"), ("", "target")] -> "flip or target"."""
    dim = pairs[0][0]
    values = " or ".join(v for _, v in pairs)
    return f"{dim} = {values}" if dim else values


WHERE_LIMIT = 200               # a longer description is cut to counts (the detail keeps every case)


def where_text(result: dict, limit: int | None = None) -> str:
    """Where a case-by-case verdict holds, from ``judge_cases``: 'holds: A; in part: B; in trend: C;
    fails: D (n of N)' with each list folded by ``describe``, then the borderline cases.  Beyond
    ``limit`` characters the longest lists are replaced by their counts."""
    key = lambda k: k if isinstance(k, str) else tuple(tuple(pair) for pair in k)  # noqa: E731 (JSON gives lists)
    result = {name: [key(k) for k in result.get(name, [])] for name in
              ("holds_in", "part_in", "trend_in", "fails_in", "borderline", "order")}
    universe = result["order"] or [k for part in ("holds_in", "part_in", "trend_in", "fails_in") for k in result[part]]
    parts = {}
    for key, label in (("holds_in", "holds"), ("part_in", "in part"), ("trend_in", "in trend"), ("fails_in", "fails")):
        if result[key]:
            what = describe(result[key], universe)
            parts[key] = [label, what, f" ({len(result[key])} of {len(universe)})" if what != "everywhere" else ""]
    if result.get("borderline"):
        parts["borderline"] = ["borderline", describe(result["borderline"], universe), f" ({len(result['borderline'])})"]
    text = lambda: "; ".join(f"{a}: {b}{c}" for a, b, c in parts.values())  # noqa: E731
    while limit and len(text()) > limit:
        key = max((k for k, v in parts.items() if not v[1].startswith("(")), key=lambda k: len(parts[k][1]),
                  default=None)
        if key is None:
            break
        parts[key][1], parts[key][2] = f"({parts[key][2].strip(' ()')}, see detail)", ""
    return text()


def verdict_text(result: dict) -> str:
    """'holds in part (borderline)' : the verdict word, flagged when a case is borderline."""
    return word(result["level"]) + (" (borderline)" if result.get("borderline") else "")


def bound_case(value: float, bound: float, trend_factor: float = 10.0) -> tuple[str, bool]:
    """An upper bound claim 'value <= bound' in one case: ("full" if it holds, "trend" if value <=
    trend_factor x bound, else "none"; borderline if within BORDERLINE of the bound)."""
    if value is None or not np.isfinite(value):
        return "none", False
    level = "full" if value <= bound else "trend" if value <= trend_factor * bound else "none"
    return level, near_any(value, (bound, trend_factor * bound))


def bound_rule(bound: float, trend_factor: float = 10.0, what: str = "the error") -> str:
    """The text of ``bound_case`` for one claim."""
    return (f"{what} <= {bound:g} holds; <= {trend_factor * bound:g} ({trend_factor:g} times the claimed size) holds in "
            "trend; above that fails")


# ---------------------------------------------------------------- intervals
SD_RULE = ("every sd printed in this report (a mean ± sd over seeds or runs) is the sample standard deviation, n - 1 "
           "in the denominator (numpy.std(..., ddof=1)), the one the t intervals use; 0 for a single value")


def sample_sd(values) -> float:
    """The standard deviation of ``SD_RULE``: ddof = 1, 0.0 for a single value; values (n,)."""
    v = np.asarray(values, dtype=float)
    if v.ndim != 1 or v.size == 0:
        raise ValueError(f"sample_sd needs a non-empty 1-d array of values; got shape {v.shape}.")
    return float(np.std(v, ddof=1)) if v.size > 1 else 0.0


def clopper_pearson(k, n, level: float = 0.95):
    """Exact (Clopper-Pearson) interval for k successes in n trials, elementwise over arrays.

    The same numbers as ``scipy.stats.binomtest(k, n).proportion_ci(level, "exact")``
    (tests/test_reproduce.py checks this), from beta quantiles so that whole grids take one call.
    """
    from scipy.stats import beta as beta_dist                # scipy.stats only when judging: the commands start fast
    k, n = np.asarray(k, dtype=float), np.asarray(n, dtype=float)
    a = 1 - level
    with np.errstate(all="ignore"):
        low = np.where(k > 0, beta_dist.ppf(a / 2, k, n - k + 1), 0.0)
        high = np.where(k < n, beta_dist.ppf(1 - a / 2, k + 1, n - k), 1.0)
    return low, high


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
    from scipy.stats import t as t_dist
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


# ---------------------------------------------------------------- ties and divergence
TIE_RULE = (f"an output of exactly 0, or within rounding of 0, is a tie and counts as an error: |F| <= {TIE_RTOL:g} S, "
            f"where S is the size of the terms that make F (F with every factor replaced by its absolute value; for a "
            f"stack, its top layer's terms and the residual), since the sign of such an F is rounding noise that each "
            f"BLAS kernel draws differently (numpy_mamba/loss.py, TIE_RTOL). Eq (5) is strict, 1[z F < 0], and would "
            f"count an exact 0 as right: this rule is stricter than the paper's. Ties arise where F is 0 in exact "
            f"arithmetic: the untrained linear Transformer, where same-pattern examples with opposite labels cancel")


DIVERGENCE_RULE = (       # applied by sgd.divergence, at sgd.DIVERGENCE_BOUND
    f"a run has diverged at the first step where an output |F| on its minibatch or an entry of its parameters "
    f"is beyond {DIVERGENCE_BOUND:g} in absolute value, or not finite; it is flagged, kept out of every mean (the "
    "count of runs behind a mean is shown where it is short), and a step size with a diverged run is never chosen. "
    "Why this bound: the hinge loss (eq (4)) is flat once z F >= 1, so SGD has no reason to grow an output far past "
    "1; the healthy runs of every command stay below |F| = 200 and |parameter| = 2 (the largest: three-layer Mamba "
    "at its chosen step size, |F| = 168), while runs on their way to overflow pass 1e90. The bound sits four orders "
    "above the first and far below the second, so no healthy run is cut and no broken one is kept")


# ---------------------------------------------------------------- the step size
DIVERGED_ABOVE = 100.0
PAPER_DELTA = SECTION4.delta    # Section 4: "Let delta = 0.2"
TIE = 1e-12                 # mean losses this close count as equal (in practice: both exactly 0)
TIE_BREAK_WHY = ("tied candidates fit the held-out training prompts equally well; the mean margin z F that would "
                 "tell them apart grows with the scale of the weights, which grows with eta, so it would reward scale, "
                 "not fit; the smaller step reaches the same fit by smaller updates, further from divergence")
STEP_SIZE_RULE = ("for each candidate, train from the same initialisation on the same minibatch stream for every "
        "selection seed; score by the hinge loss (eq (4)) on held-out training prompts (Definition 1, own seed "
        "stream) at the end of training; exclude candidates that diverge in any seed (past the divergence bound "
        f"of rule [divergence](#rule-divergence) at any step, or a held-out loss above {DIVERGED_ABOVE:g}); choose "
        f"the lowest mean held-out loss; ties (means within {TIE:g}, e.g. all 0) go to delta = {PAPER_DELTA:g} "
        "(Section 4) where delta is on the grid, then to the smaller eta, then to the earlier candidate in grid "
        f"order ({TIE_BREAK_WHY}); no test setting is looked at")


def candidates(grid: Mapping[str, Sequence]) -> list[dict]:
    """Every combination of the grid's values, in grid order: {"eta": (a, b)} -> [{"eta": a}, {"eta": b}]."""
    if not grid or any(len(values) == 0 for values in grid.values()):
        raise ValueError(f"grid must map each field to a non-empty sequence of values; got {dict(grid)!r}.")
    names = list(grid)
    return [dict(zip(names, combo)) for combo in product(*(grid[n] for n in names))]


def choose(grid: Mapping[str, Sequence], heldout_loss: Callable[[dict, int], float], seeds: Sequence[int]) -> dict:
    """Apply the rule of this module.

    grid : field -> candidate values.  heldout_loss(fields, seed) trains with ``fields`` on selection
    seed ``seed`` and returns the held-out hinge loss, or (loss, margin) with the mean held-out
    margin z F, recorded as information (a bare loss counts as margin 0); it may raise ``DivergenceError``
    (or return a non-finite loss, or one above DIVERGED_ABOVE) for a diverged run.
    seeds : the selection seeds.

    Returns {"rule", "grid", "seeds", "candidates": [{"fields", "losses" (per seed, None where
    diverged), "mean" (None if excluded), "margins", "mean_margin", "diverged": bool}], "tied":
    [fields of every candidate at the lowest mean], "chosen": fields of the winner}.
    Raises ValueError if every candidate diverged.
    """
    seeds = [int(s) for s in seeds]
    if not seeds:
        raise ValueError("choose needs at least one selection seed; got none.")
    rows = []
    for fields in candidates(grid):
        losses, margins = [], []
        for seed in seeds:
            try:
                value, margin = _loss_and_margin(heldout_loss(dict(fields), seed))
            except DivergenceError:
                value, margin = float("nan"), float("nan")
            ok = np.isfinite(value) and value <= DIVERGED_ABOVE
            losses.append(value if ok else None)
            margins.append(margin if ok and np.isfinite(margin) else None)
        diverged = any(v is None for v in losses)
        rows.append({"fields": dict(fields), "losses": losses, "diverged": diverged,
                     "mean": None if diverged else float(np.mean(losses)), "margins": margins,
                     "mean_margin": None if diverged or None in margins else float(np.mean(margins))})
    kept = [r for r in rows if not r["diverged"]]
    if not kept:
        raise ValueError(f"every candidate of {dict(grid)!r} diverged on selection seeds {seeds}.")
    lowest = min(r["mean"] for r in kept)
    tied = [r for r in kept if r["mean"] <= lowest + TIE]
    best = tied[0] if len(tied) == 1 else break_tie(tied, "delta" in grid)
    return {"rule": STEP_SIZE_RULE, "grid": {k: list(v) for k, v in grid.items()}, "seeds": seeds,
            "candidates": rows, "tied": [dict(r["fields"]) for r in tied], "chosen": dict(best["fields"])}


def break_tie(tied: Sequence[dict], delta_on_grid: bool) -> dict:
    """Step 5 of the rule: among candidate rows of ``choose`` at the lowest mean loss, those at
    delta = PAPER_DELTA (if delta is on the grid and one of them has it), then the smallest "eta"
    (a grid without eta: every candidate), then the earliest in grid order."""
    if delta_on_grid:
        paper = [r for r in tied if np.isclose(r["fields"].get("delta", np.nan), PAPER_DELTA)]
        tied = paper or tied
    return min(tied, key=lambda r: r["fields"].get("eta", 0.0))      # min keeps the first of equal etas


def _loss_and_margin(value) -> tuple[float, float]:
    """(loss, margin) from what a scoring step returns: a loss, or a (loss, margin) pair."""
    if np.ndim(value) == 0:
        return float(value), 0.0
    loss, margin = value
    return float(loss), float(margin)


# ---------------------------------------------------------------- error rates
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
               borderline=near_any(rise, (margin, 0.0), margin))
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
    gap, lead = (l_low - m_high)[above], (l_rate - m_rate)[above]      # intervals apart; pooled rates apart
    k, j = int(np.argmin(gap)), int(np.argmin(lead))
    return {"level": level, "borderline": near(gap[k], l_rate[above][k]) or near(lead[j], l_rate[above][j]),
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
    borderline = (near_any(drop, (0.1,)) or near_any(spread, (0.05,))
                  or near_any(min(low[m][p] for m in models for p in PLACES), (0.5,)))
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
    return {"worst": float(worst), "level": level, "borderline": near_any(worst, (close, loose))}


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
        if near_any(high, (eps,)) or near_any(rate, (eps,)):
            borderline.append(name)
        if worst is None or high > worst["high"]:
            worst = {"cell": name, "rate": rate, "high": float(high)}
    if not cases:
        return {"claimed": 0, "worst": None, "level": None, "holds_in": [], "part_in": [], "trend_in": [],
                "fails_in": [], "borderline": [], "cases": {}}
    return {"claimed": len(cases), "worst": worst, **judge_cases(cases, borderline)}


# ---------------------------------------------------------------- the mechanism
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
        if near_any(median, (threshold, median_same)) or near_any(median_same, (1.0,)):
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
    from scipy.stats import t as t_dist
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
        if near_any(upper[-1], (threshold, 1.0)):
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
    borderline = near_any(r2, (min_r2,)) or near_any(bits, (fastest, 0.0), 1.0)
    return {"bits_per_rank": bits, "ratio_per_rank": float(2 ** slope), "r2": r2, "level": level,
            "borderline": bool(borderline)}


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
        if near_any(growth, (margin * abs(start), 0.0), margin * abs(start)):
            borderline.append(f"seed {s}")
    return {"per_seed": per_seed, "tail": tail, "margin": margin, "early": early, **judge_cases(cases, borderline)}


# ---------------------------------------------------------------- the claims of the reproduction (Section 4)
RISE_WINDOW, RISE_MARGIN = 0.2, 0.1         # Figure 2's rise of the linear Transformer's error (rule rise)
COROLLARY1_RATIO = 0.1                      # rule cor1: the other-pattern sum <= this x the same-pattern sum
GROWTH = dict(tail=0.1, margin=0.25, early=0.1)     # rule growth
TABLE1_CLOSE, TABLE1_LOOSE = 0.02, 0.05     # rule table1-numbers, in accuracy (2 and 5 points)
FIG2_EPS = 0.01                             # Figure 2's claimed error, Theorems 1-2's eps (bound_case of four rules)
FIG2_SMALL_RULE = ("per setting (labelling, kappa_a', K'), Mamba's error on all tasks at alpha = 0.8: "
                   + bound_rule(FIG2_EPS))
UNSEEN_RULE = ("per task group never seen in training (reversed, distance 2, distance 3) and K', Mamba's error "
               "at alpha = 0 (prompts of every labelling and kappa_a' pooled: without outliers they are "
               "alike): " + bound_rule(FIG2_EPS))
def gap_growth(gap, steps) -> dict:
    """``GROWTH_RULE`` (``grows_in_training``) on the gap between Fig 3's same- and different-pattern
    sums, gap (S, records); with too few records to judge, a "none" verdict that says why."""
    try:
        return grows_in_training(gap, steps, **GROWTH)
    except ValueError as e:
        return {**judge_cases({"too few records": "none"}), "error": str(e), "per_seed": []}


# ---------------------------------------------------------------- the theory checks
THM4D_TOL = 0.35            # Theorem 4 (d)'s exponent: its l_ts grid is coarser than the others
THM2_EPS = FIG2_EPS         # Theorem 2's eps: Figure 2's claimed error
LOGIT_TOL = 0.25            # eq (37) is met within this, in w^T p (rule logit-outlier says why)
SLOPE_RULE = ("per seed, the least-squares slope of log T (or log l_ts) on the log of the claimed scaling "
              f"variable: within {EXPONENT_TOL:g} of the claimed exponent holds; the claimed sign (claimed exponent not "
              f"0; a slope within {ROUNDING:g} of 0 has none) holds in trend; otherwise fails. A grid value where no "
              "seed reached eps is a case that fails (the claim says T is finite there); fewer than 3 reached points "
              f"in a seed: that seed fails. {EXPONENT_WHY}. Theorem 4 (d): within {THM4D_TOL:g}, its l_ts grid being "
              "coarser")


def slope_verdict(per_seed: list, claim: float, tol: float = EXPONENT_TOL, never=(), label: str = "p_a") -> dict:
    """A fitted exponent against the one a theorem claims (eqs (9), (14), (15)), judged per seed
    (``SLOPE_RULE``): ``per_seed`` the seeds' slopes (None where too few points reached eps);
    ``never`` the grid values where no seed reached eps, each a failing case.  Returns
    ``judge_cases``' verdict."""
    cases, borderline = {}, []
    for k, slope in enumerate(per_seed):
        name = f"seed {k}"
        if slope is None:
            cases[name] = "none"
            continue
        cases[name] = ("full" if at_most(abs(slope - claim), tol) else
                       "trend" if claim != 0 and below(0.0, slope * np.sign(claim)) else "none")
        if near_any(abs(slope - claim), (tol,)) or (claim != 0 and near_any(slope, (0.0,), claim)):
            borderline.append(name)
    for g in never:
        cases[f"{label} = {g} (eps never reached)"] = "none"
    if not cases:
        cases["no seed"] = "none"
    return judge_cases(cases, borderline)


def convergence_verdict(grid, T_by_seed, slope: dict, label: str = "p_a") -> tuple[str, str, dict]:
    """Eqs (9), (14) (``SLOPE_RULE``): T = Theta((1-p_a)^-1 ...) claims a finite T at every grid value,
    growing with the slope claimed: ``slope_verdict`` over the seeds' slopes (fitted where runs reached
    eps), a grid value where no seed reached eps failing.  T_by_seed (seeds, grid) steps or None; slope
    {"per_seed", "claim"}.  Returns (verdict word, detail, judged result)."""
    n_seeds = len(T_by_seed)
    reached = [sum(T[k] is not None for T in T_by_seed) for k in range(len(grid))]
    never = [g for g, r in zip(grid, reached) if r == 0]
    some = [f"{g} ({r}/{n_seeds} seeds)" for g, r in zip(grid, reached) if 0 < r < n_seeds]
    per_seed = list(slope["per_seed"]) + [None] * (n_seeds - len(slope["per_seed"]))
    v = slope_verdict(per_seed, slope["claim"], never=never, label=label)
    detail = where_text(v) + (f"; eps reached in only some seeds at {label} = {', '.join(some)}" if some else "")
    return verdict_text(v), detail, v


THM2_RULE = ("Theorem 2 (c)-(d) as the sufficient condition it is, per case (a setting of Figure 2's grid; a (p_a, "
             "kappa_a', l_ts) of the theory grid): Mamba's error on all tasks, pooled over seeds, at every grid alpha "
             "the theorem covers, (c) alpha < min(1, p_a l_tr / l_ts) and (d) l_ts >= (1-alpha)^-1 log M1 (constant 1; "
             "(d)'s upper end, poly(M1^kappa_a) without a degree, is not checked); the largest of them: "
             + bound_rule(THM2_EPS) + ". A grid alpha within rounding of the bound is on it, not below it. The error "
             "the outliers add, err(alpha) - err(0), is shown beside the verdict but does not decide it: the theorem "
             "bounds the error itself")


def theorem2_covers(alphas, bound: float, l_ts: int, M1: int) -> list:
    """The indices of the grid alphas Theorem 2 covers (``THM2_RULE``): (c) alpha < bound = min(1, p_a
    l_tr / l_ts), within ``ROUNDING`` of the bound being on it, not below; (d) l_ts >= (1 - alpha)^-1
    log M1 (constant 1)."""
    return [k for k, a in enumerate(alphas) if below(a, bound) and at_most(np.log(M1) / (1 - a), l_ts)]


def theorem2_case(errors, alphas, bound: float, l_ts: int, M1: int) -> tuple[str, bool, int]:
    """``THM2_RULE`` in one case: ``errors`` (n_alpha,) Mamba's error at each grid alpha.  Returns
    (level, borderline, the index of the largest covered error); no alpha covered fails (index None)."""
    covered = theorem2_covers(alphas, bound, l_ts, M1)
    if not covered:
        return "none", False, None
    k = max(covered, key=lambda i: errors[i])
    return (*bound_case(errors[k], THM2_EPS), k)


def theorem2_excess(alphas, errors_by_seed, bound: float, l_ts: int, M1: int) -> dict:
    """Theorem 2 in one (p_a, kappa_a', l_ts) case of the theory grid: the error (mean over seeds,
    equal prompts each) and the error the outliers add, err(alpha) - err(0), at every grid alpha the
    theorem covers (``theorem2_covers``), and the rule's verdict on the error (``theorem2_case``).
    errors_by_seed : per seed the error at each alpha of ``alphas`` (None for a diverged run, left
    out).  Returns {"alphas", "error", "excess" (per covered alpha), "worst" (the largest excess),
    "worst_error", "level", "borderline"}."""
    errs = np.array([e for e in errors_by_seed if e is not None], dtype=float)          # (S, n_alpha)
    mean = errs.mean(axis=0)
    covered = theorem2_covers(alphas, bound, l_ts, M1)
    level, thin, k = theorem2_case(mean, alphas, bound, l_ts, M1)
    ex = [float(mean[i] - mean[0]) for i in covered]
    return {"alphas": [float(alphas[i]) for i in covered], "error": [float(mean[i]) for i in covered], "excess": ex,
            "worst": max(ex) if ex else None, "worst_error": None if k is None else float(mean[k]), "level": level,
            "borderline": thin}


REMARK5_ALPHA_RULE = ("per (p_a, kappa_a', l_ts) trained at the linear Transformer's p_a: Mamba's alpha* above the "
                      "linear Transformer's in every seed holds; above it in the seed mean holds in trend; otherwise fails")


def remark5_case(pairs: list) -> tuple[str, bool]:
    """``REMARK5_ALPHA_RULE`` in one case: pairs [(Mamba's alpha*, the linear Transformer's)], one per
    seed.  Returns (level, borderline: the smallest lead or the mean lead within 10 % of the linear
    Transformer's mean alpha*)."""
    lt = float(np.mean([t for _, t in pairs]))
    lead, mean_lead = min(m - t for m, t in pairs), float(np.mean([m for m, _ in pairs])) - lt
    level = "full" if lead > 0 else "trend" if mean_lead > 0 else "none"
    return level, near_any(lead, (0.0,), lt) or near_any(mean_lead, (0.0,), lt)


def theorem4_judged(cells: list, constants: dict, p_a: float, l_tr: int, eps_grid) -> tuple[dict, dict | None, str]:
    """``THEOREM4_RULE`` at each eps of ``eps_grid``, each eps a case: cells as ``theorem4_sufficient``
    takes them; constants {"M1", "V", "beta", "kappa_a", "L"} of conditions (b) and (d); p_a the linear
    Transformer's training p_a.  Returns ({str(eps): that eps' verdict with "eps", "kappa_bound"}, the
    verdict over the eps where some cell is claimed (None if none is), its detail)."""
    found = {}
    for eps in eps_grid:
        bound = theorem4_kappa_bound(constants["V"], constants["beta"], p_a, constants["kappa_a"], constants["L"], l_tr, eps)
        found[eps] = dict(theorem4_sufficient(cells, eps, constants["M1"], bound), eps=eps, kappa_bound=bound)
    judged = {f"eps = {e:g}": r for e, r in found.items() if r["level"] is not None}
    detail = "; ".join(
        f"eps = {e:g}: {r['claimed']} measured cells meet (b)-(d), {verdict_text(r)} ({where_text(r)}); highest "
        f"interval end {r['worst']['high']:.3f} (error {r['worst']['rate']:.3f}) at {r['worst']['cell']}"
        for e, r in found.items() if r["level"] is not None)
    return {str(e): r for e, r in found.items()}, combine(judged) if judged else None, detail


M1_SLOPE_RULE = ("eq (17) across M1, per seed: the least-squares slope of log(mean gate on outlier test examples) on "
                 f"log M1 at most -1 within {EXPONENT_TOL:g} (falling at least like poly(M1)^-1 with poly(M1) = M1), "
                 f"i.e. <= {EXPONENT_TOL - 1:g}, holds; a negative slope holds in trend; otherwise fails (a slope "
                 f"within {ROUNDING:g} of 0 is flat). " + EXPONENT_WHY)


def m1_slope(per_seed) -> dict:
    """Eq (17) across M1 (``M1_SLOPE_RULE``): per_seed the seeds' least-squares slopes of log G on
    log M1.  Returns ``judge_cases``' verdict over the seeds."""
    steepest = EXPONENT_TOL - 1                     # the claimed exponent -1, within the tolerance
    cases = {f"seed {k}": "full" if at_most(x, steepest) else "trend" if below(x, 0.0) else "none"
             for k, x in enumerate(per_seed)}
    return judge_cases(cases, [f"seed {k}" for k, x in enumerate(per_seed) if near_any(x, (steepest, 0.0), 1.0)])


LOGIT_OUTLIER_RULE = ("eq (37), per M1: the seed mean of the mean w^T p on training examples with outliers at most "
                      f"-log M1 within {LOGIT_TOL:g}, i.e. <= -log M1 + {LOGIT_TOL:g}, holds; < 0 (the gate closing, "
                      f"not by the claimed size) holds in trend; otherwise fails. The tolerance {LOGIT_TOL:g} puts the "
                      f"outlier's gate factor sigma(w^T p) within a factor e^{LOGIT_TOL:g} = {np.exp(LOGIT_TOL):.2f} of "
                      "1/M1, about how far the seeds' mean w^T p spread")


def outlier_logits(logit_by_M1: dict, M1s) -> dict:
    """Eq (37) per M1 (``LOGIT_OUTLIER_RULE``): logit_by_M1 {M1 (or str(M1), as JSON gives it): seed
    mean of the mean w^T p on training examples with outliers}.  Returns ``judge_cases``' verdict over the M1."""
    cases, borderline = {}, []
    for M1 in M1s:
        x = logit_by_M1[M1 if M1 in logit_by_M1 else str(M1)]
        bound, name = LOGIT_TOL - np.log(M1), f"M1 = {M1}"
        cases[name] = "full" if x <= bound else "trend" if x < 0 else "none"
        if near_any(x, (bound, 0.0), np.log(M1)):
            borderline.append(name)
    return judge_cases(cases, borderline)


LOGIT_CLEAN_RULE = ("eq (38), per seed: the mean w^T p on clean training examples spread over M1 by less than 1 (of "
                    "order 1, not growing with M1) holds; above the outlier examples' w^T p at every M1 holds in trend; "
                    "otherwise fails")


def clean_logits(runs: list, seeds, M1s) -> dict:
    """Eq (38) per seed (``LOGIT_CLEAN_RULE``): runs [{"M1", "seed", "train": {"logit_clean",
    "logit_outlier"}}], the mean w^T p on clean and outlier training examples of each run.  Returns
    ``judge_cases``' verdict over the seeds."""
    cases, borderline = {}, []
    for seed in seeds:
        mine = {r["M1"]: r["train"] for r in runs if r["seed"] == seed}
        clean = [mine[M1]["logit_clean"] for M1 in M1s]
        lead = min(mine[M1]["logit_clean"] - mine[M1]["logit_outlier"] for M1 in M1s)
        cases[f"seed {seed}"] = "full" if np.ptp(clean) < 1 else "trend" if lead > 0 else "none"
        if near_any(np.ptp(clean), (1.0,)) or near_any(lead, (0.0,), 1.0):
            borderline.append(f"seed {seed}")
    return judge_cases(cases, borderline)


SIGNS_RULE = ("Lemma 4, per projection of the change of w at the end of the run: v*^T w and (mu/beta)^T w at most -0.1 "
              "holds, below 0 holds in trend; |nu/beta^T w| below half the smaller of the two holds, below it holds "
              "in trend; otherwise fails")
PHASES_RULE = ("Lemmas 4-5, per curve (v*^T w and mu^T w): before the steepest step t* a fit a t + b t^3 with b < 0 "
               "and R^2 > 0.9, and after 2 t* a falling log t fit better than a straight line, holds; one of the two "
               "phases holds in trend; otherwise fails")
LEMMA6_RULE = ("eq (39) over the lemma's range of t, per context length l: the largest mean sum_i G_i (l - i + 1) <= 3 "
               "(Theta(1) with constant 3) holds; <= 6 holds in trend; otherwise fails. The range: Lemma 6's is Lemma "
               "4's (the same expression in t), the first phase of training, in which v*^T w falls slowly; it ends at "
               "the steepest fall of v*^T w, t*, measured on the same run (rule phases). With every constant 1 the "
               "expression would end it within the first few dozen steps, a small fraction of the phase it describes: "
               "that reading checks the initialisation only")


def lemmas_judged(phases: dict, v: float, mu: float, nu: float, l6: dict) -> dict:
    """Lemmas 4-6 on one run (``SIGNS_RULE``, ``PHASES_RULE``, ``LEMMA6_RULE``): v, mu, nu the final
    changes of the projections of w (nu as |.|); phases {curve: the fits of its two phases}; l6 {l:
    largest mean of eq (39) in the window}.  Returns {claim: ``judge_cases``' verdict}."""
    smaller = min(abs(v), abs(mu))
    signs = {"v*^T w": "full" if v <= -0.1 else "trend" if v < 0 else "none",
             "mu^T w": "full" if mu <= -0.1 else "trend" if mu < 0 else "none",
             "|nu^T w|": "full" if nu < 0.5 * smaller else "trend" if nu < smaller else "none"}
    border_signs = [name for name, x, thresholds in (("v*^T w", v, (-0.1, 0.0)), ("mu^T w", mu, (-0.1, 0.0)),
                                                     ("|nu^T w|", nu, (0.5 * smaller, smaller)))
                    if near_any(x, thresholds, 0.1)]
    two_phases = {}
    for name, ph in phases.items():
        one = ph["phase1_b"] < 0 and (ph["phase1_r2"] or 0) > 0.9
        two = ph.get("phase2_log_slope", 0) < 0 and ph.get("phase2_r2_log", 0) > ph.get("phase2_r2_linear", 1)
        two_phases[name] = "full" if one and two else "trend" if one or two else "none"
    border_phases = [name for name, ph in phases.items() if near_any(ph["phase1_r2"] or 0.0, (0.9,))]
    lemma6 = {f"l = {l}": "full" if x <= 3 else "trend" if x <= 6 else "none" for l, x in l6.items()}
    border6 = [f"l = {l}" for l, x in l6.items() if near_any(x, (3.0, 6.0))]
    return {"lemma4_signs": judge_cases(signs, border_signs), "lemma4_5_two_phases": judge_cases(two_phases, border_phases),
            "lemma6_in_window": judge_cases(lemma6, border6)}


# ---------------------------------------------------------------- the gates of Appendix E.6, the ablation
GATES_RULE = ("per gate and kappa_a' at alpha = 0.7 with flipped labels (the Figure 2 protocol): for a gate whose weight "
              "on example i reads p_i (Mamba, GLA), its 95% interval over seeds entirely below the linear "
              "Transformer's holds and a lower mean holds in trend; for a decay gate (Mamba-2, RetNet, Gated "
              "Retention), an interval not entirely below the linear Transformer's holds; otherwise fails")
INPUT_GATES = ("mamba", "gla")              # the weight of example i reads p_i: predicted below the linear Transformer


def gates_case(model: str, error: float, halfwidth: float, lt_error: float, lt_halfwidth: float) -> tuple[str, bool]:
    """``GATES_RULE`` for one gate at one kappa_a': its mean error and 95% half-width over seeds against
    the linear Transformer's, at alpha = 0.7 with flipped labels.  Returns (level, borderline: the
    intervals' distance or the means' within 10 % of the linear Transformer's error)."""
    apart, lead = (lt_error - lt_halfwidth) - (error + halfwidth), lt_error - error
    below = apart > 0
    thin = near_any(apart, (0.0,), lt_error) or near_any(lead, (0.0,), lt_error)
    if model in INPUT_GATES:
        return ("full" if below else "trend" if lead > 0 else "none"), thin
    return ("full" if not below else "none"), thin
GAP_CLOSE = 0.01            # the ablation: distance 2 within 1 point of the lowest other group closes the gap
GAP = ("the gap: distance-2 accuracy against the lowest of the other task groups (training, reversed, distance 3), "
       "seed means on the prompts of every task; closed when within 1 point. Means and paired changes are over the "
       "healthy runs only: a run past the divergence bound (rule divergence) is left out from the step it passed it, "
       "and the seeds left are counted wherever they are fewer. Cases: model x depth x test prompts (FQ, R, CQ at "
       "alpha = 0.5, clean)")
AB_UNTRAINED_RULE = ("training on the cycle creates the gap: the untrained model (initialisation) has no gap and its "
                     "distance-2 accuracy exceeds the trained baseline's (95% t-interval of the paired change above 0) "
                     "holds; the untrained model better at distance 2 (seed mean) holds in trend; otherwise fails. " + GAP)
AB_CLOSES_RULE = ("a factor closes the gap: the factor's run has no gap and its distance-2 accuracy exceeds the "
                  "baseline's (95% t-interval of the paired change above 0) holds; a higher distance-2 accuracy (seed "
                  "mean) holds in trend; otherwise fails. " + GAP)
AB_HELDOUT_RULE = ("pairs kept out of all-pairs training are learned anyway: on prompts of the held-out pairs two "
                   "steps apart, the held-out arm's accuracy within 1 point of the all-pairs arm's (which trains on "
                   "them) holds; above the baseline's (95% t-interval of the paired change above 0) holds in trend; "
                   "otherwise fails. Cases: model x depth x test prompts")


def gap_closed(d2: float, lowest: float) -> bool:
    """The gap of ``GAP`` is closed: distance-2 accuracy at least the lowest other group's less
    GAP_CLOSE (seed means, as fractions)."""
    return d2 >= lowest - GAP_CLOSE


def measured_rise(change: dict) -> bool:
    """A paired change {"mean", "t95"} whose 95% t-interval over seeds lies above 0 (one seed: no interval)."""
    return change["t95"] is not None and change["mean"] - change["t95"] > 0


def _thin_change(change: dict) -> bool:
    """A paired change whose mean, or its interval's lower end, lies within 10 % of a point of 0."""
    return near_any(change["mean"], (0.0,), GAP_CLOSE) or (
        change["t95"] is not None and near_any(change["mean"] - change["t95"], (0.0,), GAP_CLOSE))


def ab_closes_case(d2: float, lowest: float, change: dict) -> tuple[str, bool]:
    """``AB_CLOSES_RULE`` (and ``AB_UNTRAINED_RULE``, the untrained model as the factor) in one case:
    the factor's distance-2 and lowest other accuracy, and its paired change against the baseline.
    Returns (level, borderline: the gap within 10 % of its 1 point, or the change of 0)."""
    level = "full" if gap_closed(d2, lowest) and measured_rise(change) else "trend" if change["mean"] > 0 else "none"
    return level, near_any(lowest - d2, (GAP_CLOSE,)) or _thin_change(change)


def ab_heldout_case(held: float, all_pairs: float, change: dict) -> tuple[str, bool]:
    """``AB_HELDOUT_RULE`` in one case: the held-out arm's and the all-pairs arm's accuracy on the
    held-out pairs two steps apart, and the held-out arm's paired change against the baseline.
    Returns (level, borderline)."""
    level = "full" if held >= all_pairs - GAP_CLOSE else "trend" if measured_rise(change) else "none"
    return level, near_any(all_pairs - held, (GAP_CLOSE,)) or _thin_change(change)


# ---------------------------------------------------------------- every rule by the name the report gives it
RULES = {
    "vocabulary": VOCABULARY_RULE, "seed-interval": SEED_INTERVAL_RULE, "sd": SD_RULE, "tie": TIE_RULE,
    "divergence": DIVERGENCE_RULE, "step-size": STEP_SIZE_RULE,
    "fig2-small": FIG2_SMALL_RULE, "thm2": THM2_RULE,
    "rise": RISE_RULE.format(w=RISE_WINDOW, m=RISE_MARGIN), "below": BELOW_RULE, "unseen": UNSEEN_RULE,
    "cor1": COROLLARY1_RULE.format(r=COROLLARY1_RATIO), "growth": GROWTH_RULE.format(**GROWTH),
    "gate-ratio": GATE_RATIO_RULE, "decay": DECAY_RULE,
    "table1-numbers": TABLE1_NUMBERS_RULE.format(close=100 * TABLE1_CLOSE, loose=100 * TABLE1_LOOSE),
    "table1-pattern": TABLE1_PATTERN_RULE,
    "slope": SLOPE_RULE, "remark5-alpha": REMARK5_ALPHA_RULE,
    "thm4": THEOREM4_RULE.format(eps="0.25 and 0.1"),
    "m1-slope": M1_SLOPE_RULE, "logit-outlier": LOGIT_OUTLIER_RULE, "logit-clean": LOGIT_CLEAN_RULE,
    "signs": SIGNS_RULE, "phases": PHASES_RULE, "lemma6": LEMMA6_RULE,
    "gates": GATES_RULE,
    "ab-untrained": AB_UNTRAINED_RULE, "ab-closes": AB_CLOSES_RULE, "ab-heldout": AB_HELDOUT_RULE,
}

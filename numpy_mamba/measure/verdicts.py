"""The one vocabulary of every verdict in REPORT.md, and how a claim judged case by case (setting,
task group, seed, position, ...) becomes one verdict that names where it holds.

Every rule (``mechanism_verdicts.py``, ``error_verdicts.py``, the theory's and the ablation's) gives
each case one level: "full" (the claim, at its claimed size), "trend" (the claimed direction, not
the claimed size) or "none"; ``judge_cases`` turns the cases into one verdict:

    holds               every case holds
    holds in part       some cases hold (the verdict names which): a subset of the grid, never a
                        loosened size
    holds in trend      no case holds at the claimed size, some show the claimed direction
    does not hold here  no case shows even the direction

A case whose margin is within 10 % of its threshold is *borderline* (``near``); the verdict lists
those cases, so a thin pass or a thin failure is never shown as clear.  A rule that compares a
measured exponent or ratio with a claimed one does so with a stated tolerance (``EXPONENT_TOL`` for
a fitted exponent), and where a threshold can be met exactly, a value within ``ROUNDING`` of it is
on it (``at_most``, ``below``): the last bits of a number move with the CPU's vector instructions
and BLAS kernel, and must not decide a verdict.  Case names are strings or ``case(...)`` tuples of
(dimension, value) pairs, which ``describe`` folds into short phrases ("kappa_a' = 2, 4; every
labelling").
"""
from __future__ import annotations

from itertools import combinations, product
from typing import Mapping

import numpy as np

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
                   f"case whose margin is within {BORDERLINE:.0%} of its threshold is reported as borderline")


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
    return level, near(value - bound, bound)


def bound_rule(bound: float, trend_factor: float = 10.0, what: str = "the error") -> str:
    """The text of ``bound_case`` for one claim."""
    return (f"{what} <= {bound:g} holds; <= {trend_factor * bound:g} ({trend_factor:g} times the claimed size) holds in "
            "trend; above that fails")


def claim_row(key: str, title: str, paper: str, ours: str, verdict: dict, rule: str, see: list, detail: str = "",
              headline: tuple | None = None) -> dict:
    """One row of REPORT.md's results table (``runs.results``), as JSON-ready data.

    key : a stable short name ("fig2_small"); title : the claim as the paper states it; paper : the
    paper's number; ours : our number in the main setting with its interval; verdict : a
    ``judge_cases`` result, or {"level": "not run"}; rule : the name of its rule among the command's
    rules; see : [(text, link)] its figures and sections; detail : every number behind the verdict
    (the command's section prints it); headline : (what, paper, ours) for the end of the command's output.
    """
    level = verdict["level"]
    judged = level in LEVELS
    where = where_text(verdict) if judged else ""
    short = where_text(verdict, WHERE_LIMIT) if judged else ""
    if short != where:
        detail = f"Every case: {where}. " + detail
    return {"key": key, "claim": title, "paper": paper, "ours": ours, "level": level,
            "verdict": verdict_text(verdict) if judged else level, "where": short,
            "rule": rule, "see": [list(s) for s in see], "detail": detail,
            "headline": list(headline) if headline else None}

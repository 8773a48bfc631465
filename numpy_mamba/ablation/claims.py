"""The ablation's questions about the distance-2 gap, each a rule that can fail, judged per (model,
depth, test prompts) and returned as rows of REPORT.md's results table
(``measure.verdicts.claim_row``).  These are our hypotheses, not claims of the paper.

The gap of a run: distance-2 accuracy (tasks whose two patterns are two steps apart on the cycle
of Condition 1) against the lowest accuracy of the other task groups (training, reversed,
distance 3), seed means; a factor "closes" it when distance 2 is within 1 point of that lowest
group.  A change is measured when the 95% t-interval over seeds of the paired change excludes 0.
"""
from __future__ import annotations

from ..measure.verdicts import case, claim_row, judge_cases
from ..model import PAPER_MODELS as MODELS
from ..runs.step_size import RULES as STEP_RULES
from .settings import FACTOR_LABEL, MODEL_TEXT, TESTS

CLOSE = 0.01
GAP = ("the gap: distance-2 accuracy against the lowest of the other task groups (training, reversed, distance 3), "
       "seed means on the prompts of every task; closed when within 1 point. Cases: model x depth x test prompts "
       "(FQ, R, CQ at alpha = 0.5, clean)")
ABLATION_RULES = {
    **STEP_RULES,
    "ab-untrained": "training on the cycle creates the gap: the untrained model (initialisation) has no gap and its "
                    "distance-2 accuracy exceeds the trained baseline's (95% t-interval of the paired change above 0) "
                    "holds; the untrained model better at distance 2 (seed mean) holds in trend; otherwise fails. "
                    + GAP,
    "ab-closes": "a factor closes the gap: the factor's run has no gap and its distance-2 accuracy exceeds the "
                 "baseline's (95% t-interval of the paired change above 0) holds; a higher distance-2 accuracy (seed "
                 "mean) holds in trend; otherwise fails. " + GAP,
    "ab-heldout": "pairs kept out of all-pairs training are learned anyway: on prompts of the held-out pairs two "
                  "steps apart, the held-out arm's accuracy within 1 point of the all-pairs arm's (which trains on "
                  "them) holds; above the baseline's (95% t-interval of the paired change above 0) holds in trend; "
                  "otherwise fails. Cases: model x depth x test prompts"}


def _cell(result: dict, which: str, test: str, m: str, L: str, f: str, g: str):
    return result["table"].get(which, {}).get(test, {}).get(m, {}).get(L, {}).get(f, {}).get(g)


def gap(result: dict, test: str, m: str, L: str, f: str):
    """(distance-2 accuracy, lowest other group's accuracy) of one run (seed means), or None."""
    cell = lambda g: _cell(result, "all", test, m, L, f, g)  # noqa: E731
    d2, others = cell("distance_2"), [cell(g) for g in result["task_groups"] if g != "distance_2"]
    if d2 is None or d2["mean"] is None or any(o is None or o["mean"] is None for o in others):
        return None
    return d2["mean"], min(o["mean"] for o in others)


def _change(result: dict, which: str, test: str, m: str, L: str, f: str, g: str = "distance_2"):
    c = result["change_vs_baseline"].get(which, {}).get(test, {}).get(m, {}).get(L, {}).get(f, {}).get(g)
    return None if c is None or c["mean"] is None else c


def _measured_up(c) -> bool:
    return c is not None and c["t95"] is not None and c["mean"] - c["t95"] > 0


def factor_cases(result: dict, f: str) -> dict:
    """ab-closes (or ab-untrained for "untrained") per (model, depth, test): {case: level}."""
    cases = {}
    for m in MODELS:
        for L in ("1", "3"):
            for test in TESTS:
                g, c = gap(result, test, m, L, f), _change(result, "all", test, m, L, f)
                if g is None or c is None:
                    continue
                closed = g[0] >= g[1] - CLOSE
                level = "full" if closed and _measured_up(c) else "trend" if c["mean"] > 0 else "none"
                cases[case(("", MODEL_TEXT[m]), ("layers", L), ("", test))] = level
    return cases


def heldout_cases(result: dict) -> dict:
    """ab-heldout per (model, depth, test) on the held-out distance-2 prompts."""
    cases = {}
    for m in MODELS:
        for L in ("1", "3"):
            for test in TESTS:
                held, full = (_cell(result, "heldout", test, m, L, f, "distance_2") for f in ("heldout", "all_pairs"))
                c = _change(result, "heldout", test, m, L, "heldout")
                if held is None or full is None or held["mean"] is None or full["mean"] is None or c is None:
                    continue
                level = ("full" if held["mean"] >= full["mean"] - CLOSE else "trend" if _measured_up(c) else "none")
                cases[case(("", MODEL_TEXT[m]), ("layers", L), ("", test))] = level
    return cases


def _pct(cell) -> str:
    return "n/a" if cell is None or cell["mean"] is None else f"{100 * cell['mean']:.1f}"


def _d2_line(result: dict, which: str, factors: tuple, test: str = "FQ") -> str:
    """'Mamba 1 layer: a / b / c; ...' distance-2 accuracy (%) of ``factors`` at ``test``."""
    return "; ".join(f"{MODEL_TEXT[m]} {L} layer{'s' * (L == '3')}: " + " / ".join(
        _pct(_cell(result, which, test, m, L, f, "distance_2")) for f in factors) for m in MODELS for L in ("1", "3"))


def claims(result: dict) -> list:
    """The ablation's rows: the cycle creates the gap; all pairs, more steps, both, pre-norm close it; held-out pairs."""
    see = [("ablation.png", "ablation.png"), ("section", "#ablation-the-distance-2-gap")]
    rows = []
    head = ("Distance-2 accuracy (%) on FQ prompts, " + " / ".join(FACTOR_LABEL[f] for f in ("untrained", "baseline"))
            + ": " + _d2_line(result, "all", ("untrained", "baseline")) + ".")
    rows.append(claim_row("ab_untrained", "Ours: training on Condition 1's cycle creates the distance-2 gap",
                          "not in the paper", "FQ, distance 2, 3-layer Mamba: untrained " + _pct(
                              _cell(result, "all", "FQ", "mamba", "3", "untrained", "distance_2")) + ", trained "
                          + _pct(_cell(result, "all", "FQ", "mamba", "3", "baseline", "distance_2")),
                          judge_cases(factor_cases(result, "untrained")), "ab-untrained", see, head,
                          ("3-layer Mamba, FQ distance-2 accuracy (%): untrained -> trained on the cycle", "n/a",
                           f"{_pct(_cell(result, 'all', 'FQ', 'mamba', '3', 'untrained', 'distance_2'))} -> "
                           f"{_pct(_cell(result, 'all', 'FQ', 'mamba', '3', 'baseline', 'distance_2'))}")))
    for f, title in (("all_pairs", "training on all ordered pairs closes the gap"),
                     ("long", "more steps (T_long) close the gap"),
                     ("all_pairs_long", "all pairs and more steps together close the gap"),
                     ("prenorm", "a pre-norm stack closes the gap")):
        cases = factor_cases(result, f)
        if not cases:
            continue
        rows.append(claim_row(f"ab_{f}", f"Ours: {title}", "not in the paper",
                              "FQ, distance 2, 3-layer Mamba: baseline " + _pct(
                                  _cell(result, "all", "FQ", "mamba", "3", "baseline", "distance_2")) + f", {FACTOR_LABEL[f]} "
                              + _pct(_cell(result, "all", "FQ", "mamba", "3", f, "distance_2")),
                              judge_cases(cases), "ab-closes", see,
                              f"Distance-2 accuracy (%) on FQ prompts, baseline / {FACTOR_LABEL[f]}: "
                              + _d2_line(result, "all", ("baseline", f)) + "."))
    all3 = lambda f: _pct(_cell(result, "all", "FQ", "mamba", "3", f, "all"))  # noqa: E731
    rows[1]["headline"] = ["3-layer Mamba, Table 1 FQ (%): cycle / all pairs / all pairs + more steps", "99.84",
                           " / ".join(all3(f) for f in ("baseline", "all_pairs", "all_pairs_long"))]
    held = heldout_cases(result)
    if held:
        rows.append(claim_row("ab_heldout", "Ours: pairs kept out of all-pairs training are learned anyway",
                              "not in the paper", "held-out distance-2 pairs, FQ, 3-layer Mamba: held-out arm "
                              + _pct(_cell(result, "heldout", "FQ", "mamba", "3", "heldout", "distance_2"))
                              + ", all pairs " + _pct(_cell(result, "heldout", "FQ", "mamba", "3", "all_pairs", "distance_2"))
                              + ", baseline " + _pct(_cell(result, "heldout", "FQ", "mamba", "3", "baseline", "distance_2")),
                              judge_cases(held), "ab-heldout", see,
                              "Accuracy (%) on FQ prompts of the held-out pairs two steps apart, baseline / all pairs / "
                              "held-out arm / untrained: " + _d2_line(result, "heldout", ("baseline", "all_pairs", "heldout",
                                                                                         "untrained")) + ".",
                              ("3-layer Mamba, held-out distance-2 pairs, FQ (%): held-out arm vs all pairs", "n/a",
                               f"{_pct(_cell(result, 'heldout', 'FQ', 'mamba', '3', 'heldout', 'distance_2'))} vs "
                               f"{_pct(_cell(result, 'heldout', 'FQ', 'mamba', '3', 'all_pairs', 'distance_2'))}")))
    return rows

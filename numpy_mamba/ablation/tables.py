"""The number tables of the ablation's REPORT.md section, from the saved JSON: accuracy per task
group for every test, factor and depth (trained and untrained, prompts of every task and of the
held-out pairs), and every layer's mechanism (pattern terms and attention scores by step).
"""
from __future__ import annotations

import numpy as np

from ..model import PAPER_MODELS as MODELS
from .settings import FACTOR_LABEL, GROUP_LABEL, MODEL_TEXT

MECHANISM_PARTS = ("linear", "product", "via_middle", "via_ends", "via_other", "outside")


def pct(cell: dict, seeds: int) -> str:
    """'87.8 [84.9, 89.9]' (seed mean [min, max], %), with '(5 of 8 seeds)' where seeds are missing."""
    if cell is None or cell["mean"] is None:
        return "n/a"
    fewer = "" if cell["n_seeds"] == seeds else f" ({cell['n_seeds']} of {seeds} seeds)"
    return f"{100 * cell['mean']:.1f} [{100 * cell['min']:.1f}, {100 * cell['max']:.1f}]{fewer}"


def delta(cell: dict) -> str:
    """'+12.1 ± 1.2': a paired change in points with its 95% t-interval half-width."""
    if cell is None or cell["mean"] is None:
        return "n/a"
    half = "" if cell["t95"] is None else f" ± {100 * cell['t95']:.1f}"
    return f"{100 * cell['mean']:+.1f}{half}"


def accuracy_table(result: dict, test: str, which: str = "all") -> list:
    """Accuracy (%) per task group on one test (FQ, R, CQ or clean) and prompt set ("all" tasks or the
    "heldout" pairs), per model, depth and factor, with the paired change of distance-2 accuracy
    against the baseline of the same depth."""
    s = result["settings"]
    t = result["tests"][test]
    groups = [g for g in result["task_groups"] + ["all"]
              if any(g in f for m in result["table"][which][test].values() for L in m.values() for f in L.values())]
    what = (f"alpha = {t['alpha']:g}, outliers {t['placement']}" if t["alpha"] else "clean prompts (alpha = 0)")
    prompts = "every task of T" if which == "all" else "the held-out pairs only (" + ", ".join(
        f"({a}, {b})" for a, b in result["held_out"]) + ")"
    lines = ["", f"**{test}** ({what}; labels targeted to +1, kappa_a' = {t['kappa_a_prime']:g}, K' = {t['K_prime']:g}; "
             f"prompts from {prompts}): accuracy (%), mean over seeds [min, max]; last column: paired change of "
             "distance-2 accuracy against the baseline of the same depth (points, ± 95% t-interval over seeds).", "",
             "| model | layers | factor | " + " | ".join(GROUP_LABEL[g] for g in groups) + " | distance 2 vs baseline |",
             "|---|---|---|" + "---|" * (len(groups) + 1)]
    for m in MODELS:
        for L in ("1", "3"):
            for f, cell in result["table"][which][test][m].get(L, {}).items():
                change = result["change_vs_baseline"][which][test][m].get(L, {}).get(f, {}).get("distance_2")
                lines.append(f"| {MODEL_TEXT[m]} | {L} | {FACTOR_LABEL[f]} | " +
                             " | ".join(pct(cell.get(g), s["seeds"]) for g in groups)
                             + f" | {'' if f == 'baseline' else delta(change)} |")
    return lines


TABLE1_FACTORS = ("untrained", "baseline", "all_pairs", "all_pairs_long")
PAPER_TABLE1 = {"mamba": (99.84, 99.04, 73.28), "linear_transformer": (78.52, 78.28, 78.60)}    # Table 1, 3 layers
TABLE1_HEADING = "### Table 1 under both training sets"


def _pct1(cell) -> str:
    return "n/a" if cell is None or cell["mean"] is None else f"{100 * cell['mean']:.1f}"


def seeds_behind(result: dict, m: str, L: str, f: str, which: str = "all", test: str = "FQ") -> str:
    """' (5 of 8 seeds)' where runs of a factor diverged and are left out of its means, else ''."""
    cell = result["table"][which][test][m].get(L, {}).get(f, {}).get("all")
    n, seeds = (cell or {}).get("n_seeds"), result["settings"]["seeds"]
    return "" if n is None or n == seeds else f" ({n} of {seeds} seeds)"


def table1_table(result: dict) -> list:
    """Table 1's accuracy on all tasks (FQ / R / CQ, seed means) per model, depth and training set,
    the untrained model beside them and the paper's three-layer numbers on top."""
    tests = ("FQ", "R", "CQ")
    rows = [f"| {MODEL_TEXT[m]} (paper) | 3 | trained (tasks not stated) | " + " | ".join(f"{x:.2f}" for x in
                                                                                      PAPER_TABLE1[m]) + " | |"
            for m in MODELS]
    for m in MODELS:
        for L in ("1", "3"):
            for f in TABLE1_FACTORS:
                cells = [result["table"]["all"][t][m].get(L, {}).get(f, {}).get("all") for t in tests]
                if any(c is None for c in cells):
                    continue
                cells.append(result["table"]["all"]["FQ"][m][L][f].get("distance_2"))
                rows.append(f"| {MODEL_TEXT[m]} | {L} | {FACTOR_LABEL[f]}{seeds_behind(result, m, L, f)} | "
                            + " | ".join(_pct1(c) for c in cells) + " |")
    t = result["tests"]["FQ"]
    return [TABLE1_HEADING, "", f"Accuracy (%) on all tasks of T at alpha = {t['alpha']:g} (labels targeted to +1, "
            f"kappa_a' = {t['kappa_a_prime']:g}, K' = {t['K_prime']:g}), mean over seeds; training at p_a = "
            f"{result['settings']['p_a']:g} (Table 1's), on Condition 1's cycle (baseline) or every ordered pair, for "
            f"T = {result['settings']['T_short']} or {result['settings']['T_long']} steps; untrained: Algorithm 1's "
            "initialisation of the same runs. Last column: the pairs two steps apart on the cycle, FQ.", "",
            "| model | layers | training | FQ | R | CQ | distance 2, FQ |", "|---|---|---|---|---|---|---|"] + rows


def mean_over(cells: list, classes: list, k: int):
    """Mean of the seed means of the signed steps +k and -k (None if any is missing)."""
    values = [c["mean"] for c, step in zip(cells, classes) if abs(step) == k]
    return None if not values or any(v is None for v in values) else float(np.mean(values))


def _fmt(v) -> str:
    return "n/a" if v is None else f"{v:.3g}"


def mechanism_tables(result: dict) -> list:
    """Every layer's cross-pattern score S(a, b) by signed step with the parts of its distance-2 value,
    the attention scores on clean prompts by step, and how dW_B, dW_C move the pattern directions,
    per model, depth, factor and layer (at each factor's checkpoint)."""
    classes, parts = result["step_classes"], MECHANISM_PARTS
    head = "| model | layers | factor | layer | "
    lines = ["", "**Pattern terms by layer.** S(a, b) = (mu_b, 0)^T W_B^T W_C (mu_a, 0) with layer k's W_B, W_C, mean "
             "over the pairs of a signed step b - a and over seeds. With W = W^(0) + dW (W^(0) = delta [I_d 0]): S = "
             "init + linear + product; the product beta^2 (dW_B u_b)^T (dW_C u_a) split by the direction it passes "
             "through: u_c with c next to both a and b (two partner steps a -> c -> b), u_a or u_b, other patterns, "
             "the rest of R^m. Signed steps +1 and -1 are the two orders of a training pair. In layers 2 and 3 the "
             "input is H^(k-1), which carries P plus the earlier layers' outputs, so these terms describe the part of "
             "the score that reads the patterns themselves; the next table measures the scores on the layers' "
             "actual inputs.", "",
             head + " | ".join(f"S, step {c:+d}" if c else "S, step 0" for c in classes) + " | S(2) / S(0) | "
             "distance 2: " + " | ".join(p.replace("_", " ") for p in parts) + " |",
             "|---|---|---|---|" + "---|" * (len(classes) + 1 + len(parts))]
    scores = ["", "**Attention scores by layer on clean test prompts.** s_{i,l+1} = k_i^T q_{l+1} of layer k on its "
              "own input (H^(k-1), or RMSNorm(H^(k-1)) with pre-norm), mean over the context examples whose pattern is "
              "a signed step from the query's, and over seeds.", "",
              head + " | ".join(f"s, step {c:+d}" if c else "s, step 0" for c in classes) + " | s(2) / s(0) |",
              "|---|---|---|---|" + "---|" * (len(classes) + 1)]
    moves = ["", "**How the updates move the pattern directions**: u_c^T dW u_b by signed step c - b (mean over pairs "
             "and seeds), for dW_B and dW_C of each layer.", "",
             head + " | ".join(f"dW_B, step {c:+d}" for c in classes) + " | " +
             " | ".join(f"dW_C, step {c:+d}" for c in classes) + " |", "|---|---|---|---|" + "---|" * (2 * len(classes))]
    for m in MODELS:
        for L, factors in result["mechanism"][m].items():
            for f, mech in factors.items():
                for k, (terms, sc) in enumerate(zip(mech["terms"], mech["scores"]), start=1):
                    row = f"| {MODEL_TEXT[m]} | {L} | {FACTOR_LABEL[f]}{seeds_behind(result, m, L, f)} | {k} | "
                    S0, S2 = terms["S"][0]["mean"], mean_over(terms["S"], classes, 2)
                    ratio = None if S0 in (None, 0) or S2 is None else S2 / S0
                    lines.append(row + " | ".join(_fmt(c["mean"]) for c in terms["S"]) + f" | {_fmt(ratio)} | "
                                 + " | ".join(_fmt(mean_over(terms[t], classes, 2)) for t in parts) + " |")
                    s0, s2 = sc[0]["mean"], mean_over(sc, classes, 2)
                    scores.append(row + " | ".join(_fmt(c["mean"]) for c in sc) + " | "
                                  + _fmt(None if s0 in (None, 0) or s2 is None else s2 / s0) + " |")
                    moves.append(row + " | ".join(_fmt(c["mean"]) for c in terms["dW_B"] + terms["dW_C"]) + " |")
    return lines + scores + moves

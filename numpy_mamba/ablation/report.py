"""The "ablation" section of REPORT.md, written from the saved JSON, one part per function: the
question and the step sizes, what the numbers say (each bullet with its rule), accuracy per task
group, and layer 1's mechanism terms.
"""
from __future__ import annotations

import numpy as np

from ..model import PAPER_MODELS as MODELS
from ..runs.output import SMOKE
from ..runs.step_size import RULE
from .settings import FACTOR_LABEL, GROUP_LABEL, MODEL_TEXT, TESTS

MECHANISM_PARTS = ("linear", "product", "via_middle", "via_ends", "via_other", "outside")


def _pct(cell: dict, seeds: int) -> str:
    if cell["mean"] is None:
        return "n/a"
    fewer = "" if cell["n_seeds"] == seeds else f" ({cell['n_seeds']} of {seeds} seeds)"
    return f"{100 * cell['mean']:.1f} [{100 * cell['min']:.1f}, {100 * cell['max']:.1f}]{fewer}"


def _delta(cell: dict) -> str:
    if cell["mean"] is None:
        return "n/a"
    half = "" if cell["t95"] is None else f" ± {100 * cell['t95']:.1f}"
    return f"{100 * cell['mean']:+.1f}{half}"


def change_verdict(cell: dict) -> str:
    """Paired change in points with its 95% t-interval and what the interval says."""
    if cell["mean"] is None or cell["t95"] is None:
        return "n/a (fewer than 2 seeds)"
    lo, hi = 100 * (cell["mean"] - cell["t95"]), 100 * (cell["mean"] + cell["t95"])
    word = "raises" if lo > 0 else "lowers" if hi < 0 else "does not measurably change"
    return f"{word} it ({100 * cell['mean']:+.1f} points, 95% t-interval [{lo:+.1f}, {hi:+.1f}])"


def findings(result: dict) -> list:
    """Bullets, each with its rule: how every factor moves distance-2 accuracy on the FQ prompts
    (paired over seeds: "raises"/"lowers" when the 95% t-interval of the change excludes 0), whether
    it closes the gap (distance 2 within 1 point of the lowest other task group, seed means), and
    the sign of layer 1's S at distance 2 with the shares of the product term and of its middle path."""
    out, groups = [], [g for g in result["task_groups"] if g != "distance_2"]
    classes = result["step_classes"]
    for m in MODELS:
        for L in ("1", "3"):
            table = result["table"]["FQ"][m][L]
            for f, cell in table.items():
                d2, others = cell["distance_2"]["mean"], [cell[g]["mean"] for g in groups]
                if d2 is None or any(o is None for o in others):
                    continue
                low = min(others)
                closed = "closes the gap" if d2 >= low - 0.01 else "leaves a gap"
                head = f"{MODEL_TEXT[m]}, {L} layer{'s' * (L == '3')}, {FACTOR_LABEL[f]}:"
                change = ("" if f == "baseline" else
                          " " + change_verdict(result["change_vs_baseline"]["FQ"][m][L][f]["distance_2"]) + ";")
                mech = result["mechanism"][m][L][f]
                S2, S1 = _mean_over(mech["S"], classes, 2), _mean_over(mech["S"], classes, 1)
                prod, mid = _mean_over(mech["product"], classes, 2), _mean_over(mech["via_middle"], classes, 2)
                share = "" if not S2 else (f"; product term {prod / S2:.0%} of it, two partner steps "
                                           f"{mid / S2:.0%}")
                out.append(f"- {head} distance-2 FQ accuracy {100 * d2:.1f}% vs lowest other group "
                           f"{100 * low:.1f}%, {closed};{change} S(distance 2) = {S2:.3g} "
                           f"(S(distance 1) = {S1:.3g}){share}.")
    return out


def _mean_over(cells: list, classes: list, k: int):
    """Mean of the seed means of the signed steps +k and -k (None if any is missing)."""
    values = [c["mean"] for c, step in zip(cells, classes) if abs(step) == k]
    return None if any(v is None for v in values) else float(np.mean(values))


def report_section(result: dict) -> str:
    """The REPORT.md section of the ablation (Markdown), from the saved JSON."""
    lines = _question(result) + _step_sizes(result)
    lines += ["", "What the numbers say (rule in each bullet's terms: a change is \"raises\"/\"lowers\" when the 95% "
              "t-interval over seeds of the paired change excludes 0; a factor \"closes the gap\" when distance-2 FQ "
              "accuracy is within 1 point of the lowest other task group, seed means):", ""] + findings(result)
    for test in TESTS:
        lines += accuracy_table(result, test)
    return "\n".join(lines + mechanism_tables(result))


def _question(result: dict) -> list:
    """The section's title, the smoke stamp of a quick run, and the question with its design."""
    s = result["settings"]
    lines = ["## Ablation: the distance-2 gap (`python -m numpy_mamba ablation`)", ""]
    if s["quick"]:
        lines += [f"**{SMOKE}**", ""]
    return lines + [
        "Question: why do trained models miss Table 1's FQ prompts almost only on tasks whose two patterns are two "
        "steps apart on the cycle of Condition 1's training tasks? One factor at a time from the baseline "
        f"(Condition 1 cycle, T = {s['T_short']}, residual stack); {s['seeds']} seeds, each its own world, the same "
        "minibatch stream for every depth and factor and the same test prompts for every model (paired). "
        "Code: numpy_mamba/ablation/; figure: ablation.png; numbers: ablation.json.", ""]


def _step_sizes(result: dict) -> list:
    """The step-size rule, the delta and eta it chose per model and arm, and the runs that diverged."""
    s = result["settings"]
    lines = ["- Step size: " + RULE + "; per model and architecture, on a selection world with T = "
             f"{s['T_short']}, eta grid {', '.join(f'{e:g}' for e in s['eta_grid'])}; delta = 0.2 (Section 4) unless "
             "every eta diverges there, then the next of " + ", ".join(f"{d:g}" for d in s["deltas"]) + ". The all-pairs "
             "and longer runs keep the baseline's delta and eta.", ""]
    for m, arms in result["step"].items():
        for a, v in arms.items():
            failed = [f"{r['delta']:g}" for r in v["tried"] if r["chosen"] is None]
            note = f" (every eta diverged at delta = {', '.join(failed)})" if failed else ""
            lines.append(f"  - {MODEL_TEXT[m]}, {a.replace('_', ' ')}: delta = {v['delta']:g}, eta = {v['eta']:g}{note}")
    if result["diverged"]:
        lines += ["", "Diverged runs (their accuracy is missing from the cells after the step named): " +
                  "; ".join(f"seed {d['seed']} {d['model']} {d['arm']} tasks={d['tasks']} at step {d['diverged_at']}"
                            for d in result["diverged"])]
    return lines


def accuracy_table(result: dict, test: str) -> list:
    """Accuracy (%) per task group on one test of TESTS (FQ or clean), per model, depth and factor,
    with the paired change of distance-2 accuracy against the baseline of the same depth."""
    s, groups = result["settings"], result["task_groups"] + ["all"]
    what = ("Table 1's FQ prompts: alpha = 0.5, outliers farthest from the query, labels targeted to +1, "
            f"kappa_a' = {s['kappa_a_prime']:g}, K' = {s['K_prime']:g}") if test == "FQ" else "clean prompts (alpha = 0)"
    lines = ["", f"Accuracy (%) on {what}: mean over seeds [min, max]; last column: paired change of distance-2 "
             "accuracy against the baseline of the same depth (points, ± 95% t-interval over seeds).", "",
             "| model | layers | factor | " + " | ".join(GROUP_LABEL[g] for g in groups) + " | distance 2 vs baseline |",
             "|---|---|---|" + "---|" * (len(groups) + 1)]
    for m in MODELS:
        for L in ("1", "3"):
            for f, cell in result["table"][test][m][L].items():
                change = "" if f == "baseline" else _delta(result["change_vs_baseline"][test][m][L][f]["distance_2"])
                lines.append(f"| {MODEL_TEXT[m]} | {L} | {FACTOR_LABEL[f]} | " +
                             " | ".join(_pct(cell[g], s["seeds"]) for g in groups) + f" | {change} |")
    return lines


def mechanism_tables(result: dict) -> list:
    """Layer 1's S(a, b) by signed step with the parts of its distance-2 value, then how the updates
    dW_B, dW_C move the pattern directions, per model, depth and factor (end of each run)."""
    classes, parts = result["step_classes"], MECHANISM_PARTS
    lines = ["", "Mechanism: layer 1's cross-pattern score S(a, b) = (mu_b, 0)^T W_B^T W_C (mu_a, 0) at the end of each "
             "run, mean over the pairs of a signed step b - a and over seeds. With W = W^(0) + dW (W^(0) = delta [I_d 0]): "
             "S = init + linear + product, product = beta^2 (dW_B u_b)^T (dW_C u_a) split by the direction it passes "
             "through: u_c with c next to both a and b (two partner steps a -> c -> b: what the product predicts if "
             "dW_B and dW_C moved each pattern only along its cycle neighbours), u_a or u_b, other patterns, and the "
             "rest of R^m. Signed steps +1 and -1 are the two orders of a training pair (the training task and its "
             "reversed task hold the same two patterns).", "",
             "| model | layers | factor | " + " | ".join(f"S, step {c:+d}" if c else "S, step 0" for c in classes) +
             " | distance 2: " + " | ".join(p.replace("_", " ") for p in parts) + " |",
             "|---|---|---|" + "---|" * (len(classes) + len(parts))]
    moves = ["", "How the updates move the pattern directions: u_c^T dW u_b by signed step c - b (mean over pairs and "
             "seeds), for dW_B and dW_C of layer 1.", "",
             "| model | layers | factor | " + " | ".join(f"dW_B, step {c:+d}" for c in classes) + " | " +
             " | ".join(f"dW_C, step {c:+d}" for c in classes) + " |", "|---|---|---|" + "---|" * (2 * len(classes))]
    for m in MODELS:
        for L, factors in result["mechanism"][m].items():
            for f, terms in factors.items():
                d2 = {t: _mean_over(terms[t], classes, 2) for t in parts}
                head = f"| {MODEL_TEXT[m]} | {L} | {FACTOR_LABEL[f]} | "
                lines.append(head + " | ".join(_fmt(c["mean"]) for c in terms["S"]) + " | "
                             + " | ".join(_fmt(d2[t]) for t in parts) + " |")
                moves.append(head + " | ".join(_fmt(c["mean"]) for c in terms["dW_B"] + terms["dW_C"]) + " |")
    return lines + moves


def _fmt(v) -> str:
    return "n/a" if v is None else f"{v:.3g}"

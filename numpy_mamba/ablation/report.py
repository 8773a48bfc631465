"""The "ablation" section of REPORT.md, written from the saved JSON, one part per function: the
three-line opening, the question and its design, the step sizes, the claims in detail, what the
numbers support and where they do not settle it (each sentence from the numbers and rules), then
the tables (``tables.py``).
"""
from __future__ import annotations

from ..model import PAPER_MODELS as MODELS
from ..runs.output import SMOKE
from ..runs.claims import details, opening
from .claims import HEADING, claims, gap
from .settings import FACTOR_LABEL, MODEL_TEXT, TESTS
from .tables import accuracy_table, mean_over, mechanism_tables, seeds_behind, table1_table


def change_verdict(cell: dict) -> str:
    """Paired change in points with its 95% t-interval and what the interval says."""
    if cell is None or cell["mean"] is None or cell["t95"] is None:
        return "n/a (fewer than 2 seeds)"
    lo, hi = 100 * (cell["mean"] - cell["t95"]), 100 * (cell["mean"] + cell["t95"])
    word = "raises" if lo > 0 else "lowers" if hi < 0 else "does not measurably change"
    return f"{word} it ({100 * cell['mean']:+.1f} points, 95% t-interval [{lo:+.1f}, {hi:+.1f}])"


def findings(result: dict, test: str = "FQ") -> list:
    """One bullet per (model, depth, factor) on ``test``'s prompts: distance-2 accuracy against the
    lowest other group (gap closed or not), its paired change against the baseline, and every
    layer's S(2) / S(0) in weight space and s(2) / s(0) on the layers' inputs."""
    out, classes = [], result["step_classes"]
    for m in MODELS:
        for L in ("1", "3"):
            for f in result["table"]["all"][test][m].get(L, {}):
                g = gap(result, test, m, L, f)
                if g is None:
                    continue
                change = ("" if f == "baseline" else " " + change_verdict(
                    result["change_vs_baseline"]["all"][test][m][L][f]["distance_2"]) + ";")
                mech = result["mechanism"][m][L][f]
                layers = "; ".join(
                    f"layer {k}: S(2)/S(0) {_ratio(t['S'], classes)}, s(2)/s(0) {_ratio(sc, classes)}"
                    for k, (t, sc) in enumerate(zip(mech["terms"], mech["scores"]), start=1))
                out.append(f"- {MODEL_TEXT[m]}, {L} layer{'s' * (L == '3')}, {FACTOR_LABEL[f]}"
                           f"{seeds_behind(result, m, L, f, test=test)}: distance 2 "
                           f"{100 * g[0]:.1f}% vs lowest other group {100 * g[1]:.1f}%, "
                           f"{'no gap' if g[0] >= g[1] - 0.01 else 'a gap'};{change} {layers}.")
    return out


def _ratio(cells: list, classes: list) -> str:
    s0, s2 = cells[0]["mean"], mean_over(cells, classes, 2)
    return "n/a" if s0 in (None, 0) or s2 is None else f"{s2 / s0:+.2f}"


def report_section(result: dict) -> str:
    """The REPORT.md section of the ablation (Markdown), from the saved JSON."""
    rows = claims(result)
    s = result["settings"]
    first = (f"{s['seeds']} seeds per arm, factors {', '.join(FACTOR_LABEL[f] for f in result['factors'])}; "
             f"{result.get('seconds', 'n/a')} s wall time with --jobs {result.get('jobs', 'n/a')}.")
    lines = [HEADING, ""] + opening(first, rows) + [""]
    if s["quick"]:
        lines += [f"**{SMOKE}**", ""]
    lines += _question(result) + _step_sizes(result)
    lines += ["", "### Claims in detail"] + details(rows)
    lines += [""] + table1_table(result)
    lines += ["", "### What the numbers say", "", "Per model, depth and factor on Table 1's FQ prompts (gap and "
              "changes by the rules [ab-closes](#rule-ab-closes); S(2)/S(0): layer k's weight-space score at distance 2 "
              "over its score at distance 0; s(2)/s(0): the same ratio of the scores measured on the layer's own input, "
              "clean prompts):", ""] + findings(result)
    lines += ["", "### Accuracy by task group"]
    for test in TESTS:
        lines += accuracy_table(result, test)
    lines += ["", "### Held-out pairs"]
    for test in TESTS:
        lines += accuracy_table(result, test, "heldout")
    lines += ["", "### Mechanism by layer"]
    return "\n".join(lines + mechanism_tables(result))


def _question(result: dict) -> list:
    """The question and its design."""
    s = result["settings"]
    held = ", ".join(f"({a}, {b})" for a, b in result["held_out"])
    return [
        "Question: why do trained models miss Table 1's prompts mostly on tasks whose two patterns are two steps "
        "apart on the cycle of Condition 1's training tasks, and what changes that? From the baseline (Condition 1 "
        f"cycle, T = {s['T_short']}, residual stack) one factor at a time: the untrained model (Algorithm 1's "
        f"initialisation, step 0 of the same runs), training on every ordered pair of T, T = {s['T_long']} steps "
        "(the same runs continued), both together, every pair but held-out ones, and (three layers) a pre-norm "
        f"stack. Held-out pairs: {held}, one partner per pattern (two pairs two steps apart, one three steps apart), "
        "never trained on by the held-out arm, so its accuracy on them measures generalisation to tasks it never saw. "
        f"{s['seeds']} seeds, each its own world, the same initialisation and minibatch stream for every depth and "
        "factor and the same test prompts for every model (paired). Tests: Table 1's FQ, R and CQ prompts (alpha = "
        "0.5: FQ and CQ with exactly 10 of the 20 examples outliers, R with each example an outlier with probability "
        "1/2, a varying count) and clean prompts, from every task and from the held-out pairs only. Code: "
        "numpy_mamba/ablation/; "
        "figure: ablation.png; numbers: ablation.json.", ""]


def _step_sizes(result: dict) -> list:
    """The step-size rule, the delta and eta it chose per model and arm, and the runs that diverged."""
    s = result["settings"]
    lines = ["- Step size: the rule of numpy_mamba/runs/step_size.py (rule [step-size](#rule-step-size)); per model "
             "and architecture, on a selection world with T = "
             f"{s['T_short']}, eta grid {', '.join(f'{e:g}' for e in s['eta_grid'])}; delta = 0.2 (Section 4) unless "
             "every eta diverges there, then the next of " + ", ".join(f"{d:g}" for d in s["deltas"]) + ". The other "
             "task sets and the longer runs keep the baseline's delta and eta.", ""]
    for m, arms in result["step"].items():
        for a, v in arms.items():
            failed = [f"{r['delta']:g}" for r in v["tried"] if r["chosen"] is None]
            note = f" (every eta diverged at delta = {', '.join(failed)})" if failed else ""
            final = v["tried"][-1]
            ties = final.get("tied", [])
            etas = ", ".join(f"{t['eta']:g}" for t in ties)
            tie = (f"; {len(ties)} candidates tied at the lowest held-out loss (eta = {etas}), the smaller eta chosen"
                   if len(ties) > 1 else "")
            lines.append(f"  - {MODEL_TEXT[m]}, {a.replace('_', ' ')}: delta = {v['delta']:g}, eta = {v['eta']:g}"
                         f"{note}{tie}")
    if result["diverged"]:
        lines += ["", "Diverged runs (their accuracy is missing from the cells after the step named): " +
                  "; ".join(f"seed {d['seed']} {d['model']} {d['arm']} tasks={d['tasks']} at step {d['diverged_at']}"
                            for d in result["diverged"])]
    return lines

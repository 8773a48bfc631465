"""The "ablation" section of REPORT.md from the saved JSON, one part per function: the opening, the
question and the step sizes, the claims in detail, then the numbers (Table 1 under both training
sets, what they say, accuracy by task group, mechanism by layer).  Its sentences and table headers
are the snippets of templates/ablation.md; Python fills in the numbers and builds the table rows.
"""
from __future__ import annotations

from ..measure.rules import gap_closed
from ..model import PAPER_MODELS as MODELS
from ..runs.claims import details, opening
from ..runs.output import SMOKE
from ..runs.report import Template
from .one_run import TESTS
from .results import DEPTHS, FACTOR_LABEL, GROUP_LABEL, MODEL_TEXT, cell, gap, layers, mean_over, ratio

TEXT = Template(__package__, "ablation.md")
PAPER_TABLE1 = {"mamba": (99.84, 99.04, 73.28), "linear_transformer": (78.52, 78.28, 78.60)}    # Table 1, 3 layers
MECHANISM_PARTS = ("linear", "product", "via_middle", "via_ends", "via_other", "outside")


def heading(quick: bool) -> str:
    return TEXT("heading")                                  # a smoke run says so in the section's opening


def fewer(n, seeds: int) -> str:
    """' (5 of 8 seeds)' where runs diverged and are left out of a mean, else ''."""
    return "" if n is None or n == seeds else TEXT("fewer-seeds", n=n, seeds=seeds)


def seeds_behind(result: dict, m: str, L: str, f: str, test: str = "FQ") -> str:
    """``fewer`` for a factor's accuracy on all tasks."""
    return fewer((cell(result, "all", test, m, L, f, "all") or {}).get("n_seeds"), result["settings"]["seeds"])


def pct(c, seeds: int | None = None, spread: bool = False) -> str:
    """A seed mean in % ('87.8'; with ``spread`` '87.8 [84.9, 89.9]', its [min, max]), with ``fewer``
    seeds given ``seeds``; 'n/a' where not measured."""
    if c is None or c["mean"] is None:
        return "n/a"
    text = f"{100 * c['mean']:.1f}" + (f" [{100 * c['min']:.1f}, {100 * c['max']:.1f}]" if spread else "")
    return text + ("" if seeds is None else fewer(c["n_seeds"], seeds))


def change_verdict(c) -> str:
    """A paired change in points with its 95% t-interval and what the interval says."""
    if c is None or c["mean"] is None or c["t95"] is None:
        return TEXT("no-interval")
    lo, hi = 100 * (c["mean"] - c["t95"]), 100 * (c["mean"] + c["t95"])
    return TEXT("raises" if lo > 0 else "lowers" if hi < 0 else "unchanged", mean=100 * c["mean"], lo=lo, hi=hi)


def table(snippet: str, rows: list, **values) -> list:
    """A Markdown table: its header line (a template snippet), the line under it, its rows."""
    header = TEXT(snippet, **values)
    return [header, "|---" * (header.count("|") - 1) + "|", *rows]


def section(results: dict, run, rows: list, heads: list) -> str:
    """Heading, opening, smoke stamp, the question, the step sizes, the claims in detail, the numbers."""
    result = results["ablation"]
    s = result["settings"]
    first = TEXT("first", seeds=s["seeds"], factors=", ".join(FACTOR_LABEL[f] for f in result["factors"]),
                 seconds=result.get("seconds", "n/a"), jobs=result.get("jobs", "n/a"))
    lines = [heading(s["quick"]), "", *opening(first, rows, heads), ""]
    lines += [TEXT("smoke", smoke=SMOKE), ""] if s["quick"] else []
    lines += [TEXT("question", held=", ".join(f"({a}, {b})" for a, b in result["held_out"]), **s), ""]
    lines += step_sizes(result) + ["", TEXT("claims-heading"), *details(rows)]
    return "\n".join(lines + ["", report(results, run)])


def step_sizes(result: dict) -> list:
    """The step-size rule, the delta and eta it chose per model and arm, and the runs that diverged."""
    s, lines = result["settings"], []
    for m, arms in result["step"].items():
        for a, v in arms.items():
            failed = [f"{r['delta']:g}" for r in v["tried"] if r["chosen"] is None]
            ties = v["tried"][-1].get("tied", [])
            lines.append(TEXT("step", model=MODEL_TEXT[m], arm=a.replace("_", " "), delta=v["delta"], eta=v["eta"],
                              failed=TEXT("step-failed", deltas=", ".join(failed)) if failed else "",
                              tied=TEXT("step-tied", n=len(ties), etas=", ".join(f"{t['eta']:g}" for t in ties))
                              if len(ties) > 1 else ""))
    if result["diverged"]:
        lines += ["", TEXT("diverged", runs="; ".join(TEXT("diverged-run", **d) for d in result["diverged"]))]
    return [TEXT("step-size", T_short=s["T_short"], etas=", ".join(f"{e:g}" for e in s["eta_grid"]),
                 deltas=", ".join(f"{d:g}" for d in s["deltas"])), "", *lines]


def report(results: dict, run) -> str:
    """The numbers: Table 1 under both training sets, what they say, accuracy by task group (prompts of
    every task, then of the held-out pairs), the mechanism by layer."""
    result = results["ablation"]
    lines = table1(result) + ["", TEXT("findings"), "", *findings(result), "", TEXT("accuracy-heading")]
    lines += [line for test in TESTS for line in accuracy_table(result, test)] + ["", TEXT("heldout-heading")]
    lines += [line for test in TESTS for line in accuracy_table(result, test, "heldout")]
    return "\n".join(lines + ["", TEXT("mechanism-heading"), *mechanism_tables(result)])


def table1(result: dict) -> list:
    """Table 1's accuracy on all tasks (FQ / R / CQ, seed means) and on the distance-2 tasks (FQ) per
    model, depth and training set, the untrained model beside them, the paper's three-layer numbers on top."""
    s, t = result["settings"], result["tests"]["FQ"]
    rows = [TEXT("table1-paper", model=MODEL_TEXT[m], numbers=" | ".join(f"{x:.2f}" for x in PAPER_TABLE1[m]))
            for m in MODELS]
    for m in MODELS:
        for L in DEPTHS:
            for f in ("untrained", "baseline", "all_pairs", "all_pairs_long"):
                cells = [cell(result, "all", test, m, L, f, "all") for test in ("FQ", "R", "CQ")]
                if None not in cells:
                    cells.append(cell(result, "all", "FQ", m, L, f, "distance_2"))
                    rows.append(f"| {MODEL_TEXT[m]} | {L} | {FACTOR_LABEL[f]}{seeds_behind(result, m, L, f)} | "
                                + " | ".join(map(pct, cells)) + " |")
    return [TEXT("table1-heading"), "", TEXT("table1", **{**t, **s}), "", *table("table1-header", rows)]


def findings(result: dict, test: str = "FQ") -> list:
    """One bullet per (model, depth, factor) on ``test``'s prompts: distance 2 against the lowest other
    group (the gap), its paired change against the baseline, every layer's S(2) / S(0) and s(2) / s(0)."""
    out, classes = [], result["step_classes"]
    signed = lambda r: "n/a" if r is None else f"{r:+.2f}"  # noqa: E731
    for m in MODELS:
        for L in DEPTHS:
            for f in result["table"]["all"][test][m].get(L, {}):
                g, mech = gap(result, test, m, L, f), result["mechanism"][m][L][f]
                if g is None:
                    continue
                change = result["change_vs_baseline"]["all"][test][m][L][f]["distance_2"] if f != "baseline" else None
                out.append(TEXT("finding", model=MODEL_TEXT[m], layers=layers(L), factor=FACTOR_LABEL[f], d2=100 * g[0],
                                fewer=seeds_behind(result, m, L, f, test), lowest=100 * g[1],
                                gap=TEXT("no-gap" if gap_closed(*g) else "a-gap"),
                                change="" if f == "baseline" else f" {change_verdict(change)};", ratios="; ".join(
                                    TEXT("layer-ratios", k=k, S=signed(ratio(t["S"], classes)),
                                         s=signed(ratio(sc, classes)))
                                    for k, (t, sc) in enumerate(zip(mech["terms"], mech["scores"]), start=1))))
    return out


def accuracy_table(result: dict, test: str, which: str = "all") -> list:
    """Accuracy (%) per task group on one test and prompt set ("all" tasks or the "heldout" pairs), per
    model, depth and factor, with the paired change of distance-2 accuracy against the baseline."""
    t, found, rows = result["tests"][test], result["table"][which][test], []
    groups = [g for g in result["task_groups"] + ["all"] if any(g in f for m in found.values() for L in m.values()
                                                                 for f in L.values())]
    for m in MODELS:
        for L in DEPTHS:
            for f, cells in found[m].get(L, {}).items():
                c = result["change_vs_baseline"][which][test][m].get(L, {}).get(f, {}).get("distance_2")
                change = "" if f == "baseline" else "n/a" if c is None or c["mean"] is None else \
                    f"{100 * c['mean']:+.1f}" + ("" if c["t95"] is None else f" ± {100 * c['t95']:.1f}")
                rows.append(f"| {MODEL_TEXT[m]} | {L} | {FACTOR_LABEL[f]} | " + " | ".join(
                    pct(cells.get(g), result["settings"]["seeds"], spread=True) for g in groups) + f" | {change} |")
    prompts = TEXT("every-task") if which == "all" else TEXT("heldout-only", pairs=", ".join(
        f"({a}, {b})" for a, b in result["held_out"]))
    what = TEXT("with-outliers", **t) if t["alpha"] else TEXT("clean")
    return ["", TEXT("accuracy", test=test, what=what, prompts=prompts, **t), "",
            *table("accuracy-header", rows, groups=" | ".join(GROUP_LABEL[g] for g in groups))]


def mechanism_tables(result: dict) -> list:
    """Per model, depth, factor and layer (at the factor's checkpoint): S(a, b) by signed step with the
    parts of its distance-2 value, the attention scores on clean prompts by step, and how dW_B, dW_C
    move the pattern directions."""
    classes, terms, scores, moves = result["step_classes"], [], [], []
    fmt = lambda v: "n/a" if v is None else f"{v:.3g}"  # noqa: E731
    means = lambda cells: " | ".join(fmt(c["mean"]) for c in cells)  # noqa: E731
    for m in MODELS:
        for L, factors in result["mechanism"][m].items():
            for f, mech in factors.items():
                for k, (t, sc) in enumerate(zip(mech["terms"], mech["scores"]), start=1):
                    row = f"| {MODEL_TEXT[m]} | {L} | {FACTOR_LABEL[f]}{seeds_behind(result, m, L, f)} | {k} | "
                    terms.append(row + f"{means(t['S'])} | {fmt(ratio(t['S'], classes))} | "
                                 + " | ".join(fmt(mean_over(t[p], classes, 2)) for p in MECHANISM_PARTS) + " |")
                    scores.append(row + f"{means(sc)} | {fmt(ratio(sc, classes))} |")
                    moves.append(row + means(t["dW_B"] + t["dW_C"]) + " |")
    steps = lambda term, zero="0": " | ".join(TEXT("column", term=term, step=f"{c:+d}" if c else zero)  # noqa: E731
                                              for c in classes)
    return ["", TEXT("terms"), "", *table("terms-header", terms, steps=steps("S"),
                                          parts=" | ".join(p.replace("_", " ") for p in MECHANISM_PARTS)),
            "", TEXT("scores"), "", *table("scores-header", scores, steps=steps("s")),
            "", TEXT("moves"), "", *table("moves-header", moves, steps=f"{steps('dW_B', '+0')} | {steps('dW_C', '+0')}")]

"""Table 1 of the paper as numbers (Markdown: table1.md, table1_L3.md and the report) and as an image,
from a "table1" result of ``mechanism.py`` (one layer) or ``depth3.py`` (three layers): accuracy on
all tasks with its 95% interval over seeds, by task group beside it, for every outlier labelling
and kappa_a', the main setting (``common.main_table1``) picked out, trained against untrained."""
from __future__ import annotations

import textwrap
from pathlib import Path

from ..runs.report import Template
from .common import MODELS, ONE_LAYER_NOTE, SHORT, main_table1, md_table
from .corollaries import PAPER_TABLE1
from .plots import GREY, save, settings_line

TEXT = Template(__package__, "table1.md")
GROUP_KEYS = ("seen", "reversed", "distance_2", "distance_3")    # "seen" = the training tasks
GROUP_NAMES = {"seen": "training tasks", "reversed": "reversed pairs", "distance_2": "distance 2",
               "distance_3": "distance 3"}
HEADER = ["placement", "kappa_a'", "Mamba: paper", "Mamba: ours, all tasks (seed range)",
          "Mamba: ours, training / reversed / distance 2 / distance 3", "LT: paper",
          "LT: ours, all tasks (seed range)", "LT: ours, training / reversed / distance 2 / distance 3"]


def _acc(cell: dict, sep: str = " ") -> str:
    """'94.44 [93.7, 95.1]': accuracy (%) with its 95% interval over seeds (the pooled Clopper-Pearson
    interval for a result saved without it)."""
    seed = cell.get("seed_ci95")
    low, high = seed if seed and seed[0] is not None else cell["ci95"]
    return f"{100 * cell['rate']:.2f}{sep}[{100 * low:.1f}, {100 * high:.1f}]"


def _groups(cell: dict, digits: int = 1) -> str:
    """'100.0 / 100.0 / 87.2 / 100.0': accuracy (%) on training tasks / reversed pairs / distance 2 / distance 3."""
    return " / ".join("n/a" if cell[g]["rate"] is None else f"{100 * cell[g]['rate']:.{digits}f}"
                      for g in GROUP_KEYS if g in cell)


def _cells(result: dict):
    """(placement, kappa_a', {model: {labelling: cell}}) for every row of the tables."""
    for name in result["placements"]:
        for kappa in result["settings"]["kappa_a_primes"]:
            yield name, kappa, {m: {rule: result["accuracy"][m][rule][str(kappa)][name] for rule in result["label_rules"]}
                                for m in MODELS}


def labelling_rows(result: dict, rule: str) -> list:
    """One labelling, one row per (placement, kappa_a'): for each model the paper's accuracy, ours on
    all tasks with the seeds' range, and ours by task group (percent)."""
    return [[name, f"{kappa:g}"] + [x for m in MODELS for x in (
        f"{100 * PAPER_TABLE1[m][name]:.2f}", f"{100 * cell[m][rule]['all']['rate']:.2f} "
        f"({100 * cell[m][rule]['all']['seed_min']:.1f}-{100 * cell[m][rule]['all']['seed_max']:.1f})",
        _groups(cell[m][rule]))] for name, kappa, cell in _cells(result)]


def overview(result: dict, sep: str = " ") -> tuple:
    """(header, rows): one row per (placement, kappa_a'); the paper's two numbers, then our accuracy
    on all tasks with its 95% interval over seeds for Mamba and LT under each outlier labelling, and
    after it by task group (training / reversed / distance 2 / distance 3)."""
    header = ["placement", "kappa_a'", "paper: Mamba", "paper: LT"] + [
        f"{rule}: {SHORT[m]}" for rule in result["label_rules"] for m in MODELS]
    digits = 0 if sep == "\n" else 1
    return header, [[name, f"{kappa:g}"] + [f"{100 * PAPER_TABLE1[m][name]:.2f}" for m in MODELS]
                    + [_acc(cell[m][rule]["all"], sep) + f"{sep}({_groups(cell[m][rule], digits)})"
                       for rule in result["label_rules"] for m in MODELS] for name, kappa, cell in _cells(result)]


def main_rows(result: dict, main: tuple) -> tuple:
    """(header, rows) of the main setting (labelling, kappa_a'): per placement, the trained models and
    the same models untrained (initialisation), for each model the paper's accuracy, ours on all tasks
    [95% interval over seeds] and ours per task group."""
    rule, kappa_a_prime = main
    header = ["placement", "models"] + [x for m in MODELS for x in (
        f"{SHORT[m]}: paper", f"{SHORT[m]}: ours, all tasks", *(f"{SHORT[m]}: {GROUP_NAMES[g]}" for g in GROUP_KEYS))]
    rows = []
    for name in result["placements"]:
        for state, accuracy in (("trained", result["accuracy"]), ("untrained", result.get("untrained", {}).get("accuracy"))):
            if accuracy:
                cells = {m: accuracy[m][rule][str(float(kappa_a_prime))][name] for m in MODELS}
                rows.append([name, state] + [x for m in MODELS for x in (
                    f"{100 * PAPER_TABLE1[m][name]:.2f}" if state == "trained" else "", _acc(cells[m]["all"]),
                    *(f"{100 * cells[m][g]['rate']:.1f}" if g in cells[m] and cells[m][g]["rate"] is not None
                      else "n/a" for g in GROUP_KEYS))])
    return header, rows


def markdown(result: dict, layers: str, heading: bool = False) -> str:
    """Table 1 in Markdown: the main setting by task group beside the aggregate, trained and untrained,
    then every labelling and kappa_a' (with intervals and task groups), then one detailed table per
    labelling with the seeds' range.  ``layers``: "one" or "three" (which models the text names); ``heading``:
    the report's heading first."""
    s = result["settings"]
    main = main_table1(s)
    lines = ([TEXT(f"heading-{layers}", L=result.get("depth", 1)), ""] if heading else []) + [
        TEXT("intro", alpha=result["alpha"], K_prime=result["K_prime"], p_a=result["p_a"], models=TEXT(f"models-{layers}"),
             n_test=s["n_test"], seeds=s["seeds"]), "", TEXT("main", rule=main[0], kappa=main[1]), ""]
    lines += md_table(*main_rows(result, main)) + ["", TEXT("every"), ""] + md_table(*overview(result))
    for rule in result["label_rules"]:
        lines += ["", TEXT("labelling", rule=rule), ""] + md_table(HEADER, labelling_rows(result, rule))
    return "\n".join(lines)


def png(result: dict, path, label: str = "one-layer analogue", note: str = ONE_LAYER_NOTE) -> Path:
    """Table 1 as an image: on top accuracy (1 - eq (5)) [95% interval over seeds] at alpha = 0.5 for
    the FQ / R / CQ placements, every kappa_a' and outlier labelling, each cell with its accuracy by
    task group (training / reversed / distance 2 / distance 3) below it, the main setting
    (``common.main_table1``) in bold blue; below, the main setting per task group as bars, trained
    against untrained (the same models at initialisation)."""
    from matplotlib.figure import Figure
    header, rows = overview(result, sep="\n")
    table_h, bars_h = 0.78 * (len(rows) + 1) + 1.3, 4.2
    height = table_h + bars_h + 1.0
    fig = Figure(figsize=(16, height))
    ax = fig.add_axes((0.01, (bars_h + 1.0) / height, 0.98, (table_h - 0.7) / height))
    ax.axis("off")
    narrow = 0.055                                      # placement, kappa_a', the paper's two numbers
    widths = [narrow] * 4 + [(1 - 4 * narrow) / (len(header) - 4)] * (len(header) - 4)
    table = ax.table(cellText=rows, colLabels=[h.replace(": ", "\n") for h in header], cellLoc="center",
                     colWidths=widths, bbox=(0, 0, 1, 1))
    table.auto_set_font_size(False)
    table.set_fontsize(8.5)
    rule, kappa = main_table1(result["settings"])
    main_cols = [4 + 2 * result["label_rules"].index(rule) + i for i in (0, 1)]
    for (r, c), cell in table.get_celld().items():
        if r == 0:
            cell.set_facecolor("#DDDDDD")
        elif c < 4:
            cell.set_facecolor("#F2F2F2")
        if r > 0 and rows[r - 1][1] == f"{kappa:g}" and c in main_cols:
            cell.set_facecolor("#CFE3F5")
            cell.get_text().set_fontweight("bold")
    s = result["settings"]
    ax.set_title(f"Table 1 ({label}): ICL accuracy (%) [95% interval over seeds] at alpha = {result['alpha']}, all "
                 "tasks, and below it by task group (training / reversed / distance 2 / distance 3, rounded).\nFQ = outliers "
                 "farthest from the query, R = at random positions, CQ = closest to the query. Blue: main setting "
                 f"({rule} labels, kappa_a' = {kappa:g}; REPORT.md, \"Main setting\").", fontsize=10)
    bars = _bars(fig, result, (rule, kappa), (0.06, 0.9 / height, 0.92, (bars_h - 0.9) / height),
                 legend_y=(bars_h + 0.6) / height)
    fig.text(0.01, 0.05 / height, textwrap.fill(f"{note}.", 220) + "\n" + settings_line(
        result, f"{s['n_test']} test prompts per seed and cell, K' = {result['K_prime']:g}.") + "\nTask groups: "
        "training = the 6 training tasks (b = a+1 on the cycle of Condition 1), reversed = (a+1, a), distance 2 and 3 = "
        f"pairs 2 or 3 steps apart on the cycle, never trained on. Seed ranges: {Path(path).with_suffix('.md').name}.",
        fontsize=8, color=GREY, va="bottom")
    return save(fig, path, result, stamp_axes=bars)            # a quick run's watermark: on the bars, off the table


BAR_GROUPS = GROUP_KEYS + ("all",)
BAR_STYLE = {("mamba", "trained"): ("#0072B2", None), ("mamba", "untrained"): ("#0072B2", "//"),
             ("linear_transformer", "trained"): ("#E69F00", None), ("linear_transformer", "untrained"): ("#E69F00", "//")}


def _bars(fig, result: dict, main: tuple, rect: tuple, legend_y: float) -> list:
    """Bars of the main setting's accuracy per task group, one panel per placement: each model trained
    (solid) and untrained (hatched); bar = pooled accuracy, whiskers = min-max over seeds.  Returns the
    panels (axes)."""
    rule, kappa = main
    left, bottom, width, height = rect
    places = list(result["placements"])
    bar_w = 0.8 / len(BAR_STYLE)
    panels = []
    for q, place in enumerate(places):
        ax = fig.add_axes((left + q * width / len(places), bottom, width / len(places) - 0.02, height))
        panels.append(ax)
        for i, ((m, state), (color, hatch)) in enumerate(BAR_STYLE.items()):
            accuracy = result["accuracy"] if state == "trained" else result.get("untrained", {}).get("accuracy")
            if not accuracy:
                continue
            cell = accuracy[m][rule][f"{float(kappa)}"][place]
            mean = [100 * cell[g]["rate"] for g in BAR_GROUPS]
            low = [100 * cell[g]["seed_min"] for g in BAR_GROUPS]
            high = [100 * cell[g]["seed_max"] for g in BAR_GROUPS]
            x = [k + (i - 1.5) * bar_w for k in range(len(BAR_GROUPS))]
            ax.bar(x, mean, bar_w, color=color, hatch=hatch, alpha=0.9 if state == "trained" else 0.45,
                   edgecolor="white", label=f"{SHORT[m]} {state}")
            ax.errorbar(x, mean, yerr=[[a - b for a, b in zip(mean, low)], [b - a for a, b in zip(mean, high)]],
                        fmt="none", ecolor="black", lw=0.7, capsize=1.5)
        ax.set_xticks(range(len(BAR_GROUPS)), [GROUP_NAMES.get(g, "all tasks").replace(" tasks", "").replace(" pairs", "")
                                                for g in BAR_GROUPS], fontsize=8.5)
        ax.set_ylim(0, 104)
        ax.axhline(50, color=GREY, ls=":", lw=0.8)
        ax.set_title(f"{place}, main setting", fontsize=9)
        if q == 0:
            ax.set_ylabel("accuracy (%)")
            fig.legend(*ax.get_legend_handles_labels(), loc="center", ncol=4, fontsize=9,
                       bbox_to_anchor=(0.5, legend_y),
                       title=f"trained against untrained (Algorithm 1's initialisation), main setting; bars: pooled "
                             f"accuracy over {result['settings']['seeds']} seeds, whiskers: seed min-max",
                       title_fontsize=9)
    return panels

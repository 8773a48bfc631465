"""Table 1 of the paper as numbers and as an image, drawn from the "table1" results of
``mechanism.py`` (one layer) and of ``depth3.py`` (three layers): accuracy on all tasks with its
95% interval over seeds, by task group beside it, for every outlier labelling and kappa_a', the
main setting (``common.main_table1``) picked out.  ``tables.py`` writes the markdown."""
from __future__ import annotations

import textwrap
from pathlib import Path

from matplotlib.figure import Figure

from .common import MODELS, ONE_LAYER_NOTE, main_table1
from .plots import GREY, save, settings_line

PAPER_TABLE1 = {"mamba": {"FQ": 0.9984, "R": 0.9904, "CQ": 0.7328},
                "linear_transformer": {"FQ": 0.7852, "R": 0.7828, "CQ": 0.7860}}


GROUP_KEYS = ("seen", "reversed", "distance_2", "distance_3")    # "seen" = the training tasks


def table1_rows(result: dict, rule: str = "flip") -> list:
    """Detailed rows for one labelling, one per (placement, kappa_a'): for each model the paper's
    accuracy, ours on all tasks with the seeds' range, and ours by task group (percent)."""
    rows = []
    for name in result["placements"]:
        for kappa_a_prime in result["settings"]["kappa_a_primes"]:
            row = [name, f"{kappa_a_prime:g}"]
            for model in MODELS:
                cell = result["accuracy"][model][rule][str(kappa_a_prime)][name]
                a = cell["all"]
                row += [f"{100 * PAPER_TABLE1[model][name]:.2f}",
                        f"{100 * a['rate']:.2f} ({100 * a['seed_min']:.1f}-{100 * a['seed_max']:.1f})",
                        " / ".join(f"{100 * cell[g]['rate']:.1f}" for g in GROUP_KEYS if g in cell)]
            rows.append(row)
    return rows


TABLE1_HEADER = ["placement", "kappa_a'", "Mamba: paper", "Mamba: ours, all tasks (seed range)",
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


def table1_overview(result: dict, sep: str = " ", groups: bool = False) -> tuple:
    """(header, rows): one row per (placement, kappa_a'); the paper's two numbers, then our
    accuracy on all tasks with its 95% interval over seeds for Mamba and LT under each outlier
    labelling (``groups``: and below it, by task group: training / reversed / distance 2 / distance 3)."""
    header = ["placement", "kappa_a'", "paper: Mamba", "paper: LT"] + [
        f"{rule}: {'Mamba' if m == 'mamba' else 'LT'}" for rule in result["label_rules"] for m in MODELS]
    rows = []
    for name in result["placements"]:
        for kappa_a_prime in result["settings"]["kappa_a_primes"]:
            row = [name, f"{kappa_a_prime:g}"] + [f"{100 * PAPER_TABLE1[m][name]:.2f}" for m in MODELS]
            for rule in result["label_rules"]:
                for m in MODELS:
                    cell = result["accuracy"][m][rule][str(kappa_a_prime)][name]
                    row.append(_acc(cell["all"], sep) + (f"{sep}({_groups(cell, 0 if sep == chr(10) else 1)})"
                                                         if groups else ""))
            rows.append(row)
    return header, rows


def table1_main(result: dict, main: tuple) -> tuple:
    """(header, rows) of the main setting (labelling, kappa_a'): per placement, the trained models and
    the same models untrained (initialisation), for each model the paper's accuracy, ours on all tasks
    [95% interval over seeds] and ours per task group."""
    rule, kappa_a_prime = main
    header = ["placement", "models"]
    for m in MODELS:
        short = "Mamba" if m == "mamba" else "LT"
        header += [f"{short}: paper", f"{short}: ours, all tasks"] + [f"{short}: {GROUP_NAMES[g]}" for g in GROUP_KEYS]
    rows = []
    for name in result["placements"]:
        for state, accuracy in (("trained", result["accuracy"]), ("untrained", result.get("untrained", {}).get("accuracy"))):
            if not accuracy:
                continue
            row = [name, state]
            for m in MODELS:
                cell = accuracy[m][rule][str(float(kappa_a_prime))][name]
                row += [f"{100 * PAPER_TABLE1[m][name]:.2f}" if state == "trained" else "", _acc(cell["all"])]
                row += [f"{100 * cell[g]['rate']:.1f}" if g in cell and cell[g]["rate"] is not None else "n/a"
                        for g in GROUP_KEYS]
            rows.append(row)
    return header, rows


GROUP_NAMES = {"seen": "training tasks", "reversed": "reversed pairs", "distance_2": "distance 2",
               "distance_3": "distance 3"}


def table1_png(result: dict, path, label: str = "one-layer analogue", note: str = ONE_LAYER_NOTE) -> Path:
    """Table 1 as an image: on top accuracy (1 - eq (5)) [95% interval over seeds] at alpha = 0.5 for
    the FQ / R / CQ placements, every kappa_a' and outlier labelling, each cell with its accuracy by
    task group (training / reversed / distance 2 / distance 3) below it, the main setting
    (``common.main_table1``) in bold blue; below, the main setting per task group as bars, trained
    against untrained (the same models at initialisation)."""
    header, rows = table1_overview(result, sep="\n", groups=True)
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
    bars = _untrained_bars(fig, result, (rule, kappa), (0.06, 0.9 / height, 0.92, (bars_h - 0.9) / height),
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


def _untrained_bars(fig, result: dict, main: tuple, rect: tuple, legend_y: float) -> list:
    """Bars of the main setting's accuracy per task group, one panel per placement: each model trained
    (solid) and untrained (hatched); bar = pooled accuracy, whiskers = min-max over seeds.  Returns the
    panels (axes)."""
    rule, kappa = main
    left, bottom, width, height = rect
    places = list(result["placements"])
    seeds = result["settings"]["seeds"]
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
                   edgecolor="white", label=f"{'Mamba' if m == 'mamba' else 'LT'} {state}")
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
                             f"accuracy over {seeds} seeds, whiskers: seed min-max", title_fontsize=9)
    return panels

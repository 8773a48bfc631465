"""Table 1 of the paper as numbers and as an image, drawn from the "table1" results of
``mechanism.py`` (one layer) and of ``depth3.py`` (three layers): accuracy on all tasks with its
95% interval over seeds, by task group beside it, for every outlier labelling and kappa_a', the
main setting (``common.TABLE1_MAIN``) picked out.  ``tables.py`` writes the markdown."""
from __future__ import annotations

import textwrap
from pathlib import Path

from matplotlib.figure import Figure

from .common import MODELS, ONE_LAYER_NOTE, TABLE1_MAIN
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
    """(header, rows) of the main setting (labelling, kappa_a'): per placement, for each model the
    paper's accuracy, ours on all tasks [95% interval over seeds] and ours per task group."""
    rule, kappa_a_prime = main
    header = ["placement"]
    for m in MODELS:
        short = "Mamba" if m == "mamba" else "LT"
        header += [f"{short}: paper", f"{short}: ours, all tasks"] + [f"{short}: {GROUP_NAMES[g]}" for g in GROUP_KEYS]
    rows = []
    for name in result["placements"]:
        row = [name]
        for m in MODELS:
            cell = result["accuracy"][m][rule][str(float(kappa_a_prime))][name]
            row += [f"{100 * PAPER_TABLE1[m][name]:.2f}", _acc(cell["all"])]
            row += [f"{100 * cell[g]['rate']:.1f}" if g in cell and cell[g]["rate"] is not None else "n/a"
                    for g in GROUP_KEYS]
        rows.append(row)
    return header, rows


GROUP_NAMES = {"seen": "training tasks", "reversed": "reversed pairs", "distance_2": "distance 2",
               "distance_3": "distance 3"}


def table1_png(result: dict, path, label: str = "one-layer analogue", note: str = ONE_LAYER_NOTE) -> Path:
    """Table 1 as an image: accuracy (1 - eq (5)) [95% interval over seeds] at alpha = 0.5 for the FQ /
    R / CQ placements, every kappa_a' and outlier labelling, each cell with its accuracy by task group
    (training / reversed / distance 2 / distance 3) below it; the main setting (``common.TABLE1_MAIN``)
    in bold blue."""
    header, rows = table1_overview(result, sep="\n", groups=True)
    height = 0.78 * (len(rows) + 1) + 1.9
    fig = Figure(figsize=(16, height))
    ax = fig.add_axes((0.01, 0.0, 0.98, 1.0))
    ax.axis("off")
    narrow = 0.055                                      # placement, kappa_a', the paper's two numbers
    widths = [narrow] * 4 + [(1 - 4 * narrow) / (len(header) - 4)] * (len(header) - 4)
    table = ax.table(cellText=rows, colLabels=[h.replace(": ", "\n") for h in header], cellLoc="center",
                     colWidths=widths, bbox=(0, 1.2 / height, 1, 1 - 1.95 / height))
    table.auto_set_font_size(False)
    table.set_fontsize(8.5)
    main = f"{float(TABLE1_MAIN['kappa_a_prime']):g}"
    rules = result["label_rules"]
    main_cols = [4 + 2 * rules.index(TABLE1_MAIN["label_rule"]) + i for i in (0, 1)]
    for (r, c), cell in table.get_celld().items():
        if r == 0:
            cell.set_facecolor("#DDDDDD")
        elif c < 4:
            cell.set_facecolor("#F2F2F2")
        if r > 0 and rows[r - 1][1] == main and c in main_cols:
            cell.set_facecolor("#CFE3F5")
            cell.get_text().set_fontweight("bold")
    s = result["settings"]
    ax.set_title(f"Table 1 ({label}): ICL accuracy (%) [95% interval over seeds] at alpha = {result['alpha']}, all "
                 "tasks, and below it by task group (training / reversed / distance 2 / distance 3, rounded).\nFQ = outliers "
                 "farthest from the query, R = at random positions, CQ = closest to the query. Blue: main setting "
                 f"({TABLE1_MAIN['label_rule']} labels, kappa_a' = {main}), argued from the paper's numbers in REPORT.md.",
                 fontsize=10, y=1 - 0.6 / height)
    ax.text(0, 0.05 / height, textwrap.fill(f"{note}.", 220) + "\n" + settings_line(
        result, f"{s['n_test']} test prompts per seed and cell, K' = {result['K_prime']:g}.") + "\nTask groups: "
        "training = the 6 training tasks (b = a+1 on the cycle of Condition 1), reversed = (a+1, a), distance 2 and 3 = "
        f"pairs 2 or 3 steps apart on the cycle, never trained on. Seed ranges: {Path(path).with_suffix('.md').name}.",
        fontsize=8, color=GREY, va="bottom", transform=ax.transAxes)
    return save(fig, path, result)

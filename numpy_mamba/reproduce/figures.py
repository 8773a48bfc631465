"""Figures 3 and 4 and Table 1 of the paper, drawn from ``mechanism.py`` results, and their panels
(score curves, gates per position and per clean rank, Table 1 as an image), which the three-layer
figures of ``figures_depth3.py`` reuse for every layer.  The shared style lives in ``plots.py``.
"""
from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from ..runs.output import subplots
from .common import MODEL_LABEL, MODELS, ONE_LAYER_NOTE, TABLE1_MAIN
from .plots import CLEAN, GREY, OUTLIER, save, settings_line, training_curves
from ..runs.output import footnote


GROUP_STYLE = {"training": ("#D55E00", "-", "training partner (a training task)"),
               "reversed": ("#CC79A7", "--", "reversed training pair"),
               "distance_2": ("#56B4E9", "-", "2 steps apart (never a training task)"),
               "distance_3": ("#000000", ":", "3 steps apart (never a training task)")}
SCORE_LABEL = r"sum of attention scores $p_i^\top W_B^\top W_C\, p_{query}$"


def model_label(result: dict, model: str) -> str:
    """The model's name in a figure: eq (3)'s one-layer model, or for a stack's result (``results.view``
    sets "depth") the L-layer residual stack of stack.py, which is not eq (3)."""
    depth = result.get("depth", 1)
    if depth == 1:
        return MODEL_LABEL[model]
    return f"{depth}-layer " + ("Mamba stack" if model == "mamba" else "linear Transformer stack (G = 1)")


def score_panels(axes, result: dict, title: str = "{model}, $\\eta$ = {eta:g}") -> None:
    """Mamba's and the LT's attention-score sums against the SGD step into two axes (shared y-scale):
    same-pattern examples and, by task group, different-pattern ones; mean over prompts and seeds,
    min-max band over seeds."""
    for ax, model in zip(axes, MODELS):
        runs = result["per_seed"][model]
        steps = np.asarray(runs[0]["step"])
        curves = [("score_same", CLEAN, "-", r"same relevant pattern as the query ($i \in N_1$)")]
        curves += [(f"score_diff_{g}", *GROUP_STYLE[g]) for g in result.get("task_groups", []) if g in GROUP_STYLE
                   and f"score_diff_{g}" in runs[0]]
        for key, color, ls, name in curves:
            v = np.array([[np.nan if x is None else x for x in r[key]] for r in runs], dtype=float)  # (S, records)
            label = name if key == "score_same" else f"different pattern, task {name}"
            ax.plot(steps, np.nanmean(v, 0), color=color, ls=ls, label=label)
            ax.fill_between(steps, np.nanmin(v, 0), np.nanmax(v, 0), color=color, alpha=0.15, lw=0)
        ax.axhline(0, color=GREY, lw=0.8)
        ax.set_title(title.format(model=model_label(result, model), eta=result["eta"][model]))
        ax.set_xlabel("SGD step t")
        ax.grid(alpha=0.3)
    axes[1].sharey(axes[0])


def fig3(result: dict, path, title: str = "Figure 3 (one-layer analogue, Corollary 1)", note: str = ONE_LAYER_NOTE) -> Path:
    """Figure 3 (Corollary 1): sum of p_i^T W_B^T W_C p_query over same-pattern examples and, by
    the prompt's task group, over different-pattern examples, against the SGD step; mean over
    prompts and seeds with a min-max band over seeds (Mamba and LT on one shared y-scale); plus
    the training loss."""
    fig, axes = subplots(1, 3, figsize=(16, 6.6))
    score_panels(axes[:2], result)
    axes[0].set_ylabel(SCORE_LABEL + "\n(mean over the prompts of each group)")
    fig.legend(*axes[0].get_legend_handles_labels(), loc="lower center", ncol=3, fontsize=9,
               bbox_to_anchor=(0.5, 0.07))
    for model in MODELS:
        training_curves(axes[2], result["per_seed"][model], model, model_label(result, model))
    axes[2].set_yscale("symlog", linthresh=1e-2)
    axes[2].set_ylim(0, 1.5)
    axes[2].set_title(f"training loss at $p_a$ = {result['p_a']}")
    axes[2].set_xlabel("SGD step t")
    axes[2].set_ylabel("minibatch hinge loss (eq (4))")
    axes[2].grid(alpha=0.3)
    axes[2].legend(fontsize=9)
    s = result["settings"]
    fig.suptitle(f"{title}: attention scores on fixed test prompts during training; left and middle share "
                 "the y-axis")
    footnote(fig, settings_line(result, f"{s['n_probe']} fixed test prompts per seed: alpha = {result['alpha']}, "
                                  f"kappa_a' = {s['main_kappa_a_prime']:g}, K' = {s['main_K_prime']:g}, flipped "
                                  "outlier labels; lines: mean over prompts and seeds, bands: min-max over seeds."), note)
    fig.tight_layout(rect=(0, 0.2, 1, 0.97))
    return save(fig, path, result)


MIN_RANK_PROMPTS = 100      # ranks j held by fewer test prompts (pooled over seeds) are not shown


def clean_rank_curve(runs: list):
    """Ranks j = 1, 2, ... held by >= MIN_RANK_PROMPTS test prompts (pooled over seeds) whose mean
    clean gate G_{h(j),l+1} is positive in every seed (a log axis and fit need it; a gate that
    underflowed to 0 is left out), and those per-seed means, (S, n_ranks)."""
    rank = _stack(runs, "clean_rank_mean")
    enough = (np.sum([r["clean_rank_count"] for r in runs], axis=0) >= MIN_RANK_PROMPTS) & np.all(
        np.isfinite(rank) & (rank > 0), axis=0)
    return np.flatnonzero(enough) + 1, rank[:, enough]


def _stack(runs, key):
    return np.array([[np.nan if v is None else v for v in r[key]] for r in runs], dtype=float)


def gate_position_panel(ax, runs: list, channel: str = "") -> None:
    """Mean gate per context position on outlier and clean examples (points, min-max bars over seeds, log axis);
    ``channel`` ("d+1,") names the channel of a stack's gate in the axis label."""
    out, clean = _stack(runs, "outlier_mean"), _stack(runs, "clean_mean")     # (S, l)
    l = out.shape[1]
    position = np.arange(1, l + 1)
    for values, dx, color, marker, name in ((out, -0.15, OUTLIER, "v", "examples with an outlier"),
                                            (clean, 0.15, CLEAN, "o", "clean examples")):
        mean = np.nanmean(values, axis=0)
        ax.errorbar(position + dx, mean, yerr=[mean - np.nanmin(values, 0), np.nanmax(values, 0) - mean],
                    color=color, marker=marker, ls="none", ms=6, capsize=2, ecolor=GREY, label=name)
    ax.set_yscale("log")
    ax.set_xticks(position)
    ax.set_xlabel(f"context position i (the query is at l+1 = {l + 1}; distance from the query = {l + 1} - i)")
    ax.set_ylabel(f"mean gate $G_{{{channel}i,l+1}}(w)$" + (" (eq (3))" if not channel else "") + ", log scale")
    ax.set_title("gates per position (mean over prompts; bars: min-max over seeds)")
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=9.5, loc="upper left")


def fig4(result: dict, path, title: str = "Figure 4 (one-layer analogue)", note: str = ONE_LAYER_NOTE,
         channel: str = "") -> Path:
    """Figure 4 (Corollary 2): Mamba's gates G_{i,l+1} on outlier and clean examples at alpha = 0.3,
    per position (points with min-max bars over seeds, log axis) and per clean rank j."""
    runs = result["per_seed"]
    fig, axes = subplots(1, 2, figsize=(15, 5.6))
    gate_position_panel(axes[0], runs, channel)
    rank_panel(axes[1], runs, channel)
    s = result["settings"]
    fig.suptitle(f"{title}: Mamba's gates at alpha = {result['alpha']} (Corollary 2)")
    footnote(fig, settings_line(result, f"{s['n_test']} test prompts per seed, kappa_a' = {s['main_kappa_a_prime']:g}, "
                                  f"K' = {s['main_K_prime']:g}, flipped outlier labels, outliers at random positions."), note)
    fig.tight_layout(rect=(0, 0.08, 1, 0.97))
    return save(fig, path, result)


def rank_panel(ax, runs: list, channel: str = "") -> None:
    """Mean gate of the j-th closest clean example against j, with an exponential fit and eq (18)'s rate."""
    j, rank = clean_rank_curve(runs)
    if j.size == 0:
        ax.text(0.5, 0.5, f"no clean rank held by >= {MIN_RANK_PROMPTS} prompts\nwith a positive mean gate",
                ha="center", va="center", transform=ax.transAxes)
        return
    mean = rank.mean(axis=0)
    ax.plot(j, mean, "o-", color=CLEAN, label="clean example h(j), the j-th closest clean one to the query")
    ax.fill_between(j, rank.min(0), rank.max(0), color=CLEAN, alpha=0.2, lw=0)
    slope, intercept = np.polyfit(j, np.log(mean), 1)
    ax.plot(j, np.exp(intercept + slope * j), color=GREY, ls="--",
            label=f"fitted exponential: ratio {np.exp(slope):.2f} per step")
    ax.plot(j, mean[0] * 0.5 ** (j - 1), color="black", ls=":", label=r"$G_{h(1)} \cdot 2^{-(j-1)}$, the rate in eq (18)")
    ax.axhline(np.nanmean([r["outlier_gate_mean"] for r in runs]), color=OUTLIER, ls="-.",
               label="mean gate on outlier examples")
    ax.set_yscale("log")
    ax.set_xlabel(f"rank j of a clean example by distance from the query (ranks held by >= {MIN_RANK_PROMPTS} prompts)")
    ax.set_xticks(j)
    ax.set_ylabel(f"mean gate $G_{{{channel}h(j),l+1}}(w)$, log scale")
    ax.set_title("clean examples ranked by distance from the query (eq (18))")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=9)


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

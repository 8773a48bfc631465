"""Figures 3 and 4 of the paper, drawn from ``mechanism.py`` results, and their panels (score
curves, gates per position and per clean rank), which the three-layer figures of
``figures_depth3.py`` reuse for every layer.  Table 1 is drawn by ``figures_table1.py``; the shared
style lives in ``plots.py``.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..runs.output import subplots
from .common import MODEL_LABEL, MODELS, ONE_LAYER_NOTE
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
                                  f"{main_text(result)}, K' = {s['main_K_prime']:g}; lines: mean over prompts and seeds, "
                                  "bands: min-max over seeds."), note)
    fig.tight_layout(rect=(0, 0.2, 1, 0.97))
    return save(fig, path, result)


LABEL_WORD = {"flip": "flipped", "target": "targeted (+1)", "random": "random"}


def main_text(result: dict) -> str:
    """"targeted (+1) outlier labels, kappa_a' = 2": the main setting of a fig3 / fig4 result."""
    rule, kappa = result["main_setting"].split("/")
    return f"{LABEL_WORD[rule]} outlier labels, kappa_a' = {kappa}"


def main_profiles(result: dict) -> list:
    """The gate profiles of a fig4 result's main setting, one per seed."""
    return [r[result["main_setting"]] for r in result["per_seed"]]


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
    runs = main_profiles(result)
    fig, axes = subplots(1, 2, figsize=(15, 5.6))
    gate_position_panel(axes[0], runs, channel)
    rank_panel(axes[1], runs, channel)
    s = result["settings"]
    fig.suptitle(f"{title}: Mamba's gates at alpha = {result['alpha']} (Corollary 2)")
    footnote(fig, settings_line(result, f"{s['n_test']} test prompts per seed, {main_text(result)}, "
                                  f"K' = {s['main_K_prime']:g}, outliers at random positions."), note)
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

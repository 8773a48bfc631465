"""Figures 3 and 4 of the paper (one layer, from ``mechanism.py``) and their panels (score curves,
gates per position and per clean rank), and the three-layer figures of ``depth3.py`` drawn with the
same panels: Figures 3 and 4 for layer 1 (fig3_L3.png, fig4_L3.png), the paper's Appendix B Figures
5 and 6 for layers 2 and 3 (fig5.png, fig6.png).  The shared style lives in ``plots.py``.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..runs.output import footnote, subplots
from .common import MODEL_LABEL, MODELS, ONE_LAYER_NOTE, view
from .corollaries import MIN_RANK_PROMPTS, clean_rank_curve
from .plots import CLEAN, GREY, OUTLIER, save, settings_line, training_curves

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


# ---------------------------------------------------------------- the three-layer figures
def depth_note(result: dict) -> str:
    """The footnote of every three-layer figure: which models, and the delta and eta the rule chose."""
    chosen = ", ".join(f"{'Mamba' if m == 'mamba' else 'LT'} delta = {result['delta'][m]:g}, eta = {result['eta'][m]:g}"
                       for m in result["delta"])
    return (f"NOTE: {result['n_layers']}-layer models (stack.py: H^(k) = H^(k-1) + O^(k), F = H^(L)[d+1, l+1]; "
            f"our architecture); a layer's examples are the columns h_i of its input H^(k-1); delta and eta chosen "
            f"per model by the step-size rule: {chosen}")


def fig5(result: dict, path) -> Path:
    """Figure 5 (Appendix B): attention-score sums s_{i,l+1} of layers 2 and 3 on fixed test prompts
    during training, same-pattern vs different-pattern examples (by task group), one row per layer."""
    rows = range(2, result["n_layers"] + 1)
    fig, axes = subplots(len(rows), 2, figsize=(13, 5.2 * len(rows)), squeeze=False)
    for row, k in zip(axes, rows):
        score_panels(row, view(result, "fig3", k), title=f"layer {k}: {{model}}, $\\eta$ = {{eta:g}}")
        row[0].set_ylabel(f"layer {k}: {SCORE_LABEL}".replace("p_i", "h_i").replace("p_{query}", "h_{l+1}")
                          + "\n(mean over the prompts of each group)", fontsize=9)
    fig.legend(*axes[0][0].get_legend_handles_labels(), loc="lower center", ncol=3, fontsize=9,
               bbox_to_anchor=(0.5, 0.09 / len(rows)))
    fig.suptitle("Figure 5 (Appendix B): sums of attention scores in layers 2 and 3 of the three-layer models")
    s = result["settings"]
    return _finish(fig, path, result, "fig3", 0.2 / len(rows),
                   f"{s['n_probe']} fixed test prompts per seed (alpha = {result['alpha_fig3']}, "
                   f"{main_text(view(result, 'fig3', 2))}); lines: mean over prompts and seeds, bands: min-max over seeds.")


def fig6(result: dict, path) -> Path:
    """Figure 6 (Appendix B): the label-channel gates G_{d+1,i,l+1} of layers 2 and 3 of the Mamba
    stack on outlier and clean examples (alpha = 0.3), per position and per clean rank, one row per layer."""
    rows = range(2, result["n_layers"] + 1)
    fig, axes = subplots(len(rows), 2, figsize=(15, 5.4 * len(rows)), squeeze=False)
    for row, k in zip(axes, rows):
        runs = main_profiles(view(result, "fig4", k))
        gate_position_panel(row[0], runs, "d+1,")
        rank_panel(row[1], runs, "d+1,")
        for ax in row:
            ax.set_title(f"layer {k}: {ax.get_title()}", fontsize=10)
    fig.suptitle(f"Figure 6 (Appendix B): Mamba's gates in layers 2 and 3 at alpha = {result['alpha_fig4']}")
    s = result["settings"]
    return _finish(fig, path, result, "fig4", 0.1 / len(rows),
                   f"{s['n_test']} test prompts per seed, {main_text(view(result, 'fig4', 2))}; gate of the label "
                   "channel d+1 at the query column (the gate that moves F).")


def _finish(fig, path, result: dict, part: str, bottom: float, text: str) -> Path:
    """Footnote (settings and the three-layer note), layout above ``bottom``, save (smoke stamp if quick)."""
    footnote(fig, settings_line(view(result, part, 2), text), depth_note(result))
    fig.tight_layout(rect=(0, bottom, 1, 0.97))
    return save(fig, path, view(result, part, 2))

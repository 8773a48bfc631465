"""The figures of ``python -m numpy_mamba gates`` (compare.py), drawn from gates.json: the error
against alpha per labelling and kappa_a' (bars: ``compare.mean_and_halfwidth``), and the training
loss beside each gate's outlier share ratio."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..runs.output import footnote, save_figure, subplots
from .families import GATES

PAPER_LABELS = {"mamba": "Mamba (eq 3)", "linear_transformer": "linear Transformer"}
# Okabe-Ito colours and distinct markers, one per model in the order the comparison runs them
COLOURS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
MARKERS = ("o", "s", "^", "v", "D", "P", "X", "*")


def styles(models) -> dict:
    """{model: (colour, marker, label)} for the models of a comparison, in its order; a gate's label
    is its registry entry's (``families.GATES``)."""
    return {m: (COLOURS[k % len(COLOURS)], MARKERS[k % len(MARKERS)],
                PAPER_LABELS[m] if m in PAPER_LABELS else GATES[m].label) for k, m in enumerate(models)}


NOTE = "One-layer models, linear attention times each gate of Appendix E.6 (numpy_mamba/gates), Section 4 data"


def settings_footer(cfg: dict) -> str:
    """The settings every gates figure was made with, for its footer."""
    return (f"Training: d = {cfg['d']}, M1 = {cfg['M1']}, M2 = {cfg['M2']}, V = {cfg['V']}, beta = {cfg['beta']:g}, "
            f"delta = {cfg['delta']:g}, kappa_a = {cfg['kappa_a']:g}, p_a = {cfg['p_a']}, K = {cfg['K']}, "
            f"l_tr = {cfg['l_tr']}, eta = {cfg['eta']} (every model), B = {cfg['B']}, T = {cfg['T']}, "
            f"{len(cfg['seeds'])} seed(s). Test: l_ts = {cfg['l_ts']}, K' = {cfg['K_prime']:g}, "
            f"{cfg['n_test']} prompts per seed and point. Command: python -m numpy_mamba gates.")


def plot_error_vs_alpha(result, summary, path: Path, quick: bool = False) -> Path:
    cfg = result["settings"]
    kappas, alphas = cfg["kappa_a_prime"], np.asarray(cfg["alphas"])
    fig, axes = subplots(len(kappas), 3, figsize=(14, 4.2 * len(kappas)), sharey=True, squeeze=False)
    titles = {"flip": "(A) label flipping", "target": f"(B) targeted label {cfg['target']:+d}",
              "random": "(C) random labels"}
    style = styles(summary)
    for row, kappa in enumerate(kappas):
        for col, rule in enumerate(("flip", "target", "random")):
            ax, key = axes[row, col], f"kappa_a_prime={kappa:g}/{rule}"
            for k, (model, s) in enumerate(summary.items()):
                colour, marker, label = style[model]
                x = alphas + (k - (len(summary) - 1) / 2) * 0.004  # small offsets: bars stay visible
                ax.errorbar(x, s["error_mean"][key], yerr=s["error_halfwidth95"][key], color=colour,
                            marker=marker, ms=5, capsize=2, lw=1.5, label=label)
            ax.set_title(rf"{titles[rule]}, test outlier size $\kappa_a'$ = {kappa:g}")
            ax.set_xlabel(r"fraction of test examples with outliers, $\alpha$")
            ax.grid(alpha=0.3)
        axes[row, 0].set_ylabel("ICL test error (fraction of prompts)")
    axes[0, 0].legend(loc="upper left", fontsize=9)
    n = len(cfg["seeds"])
    bars = "95% t-interval over seeds" if n >= 2 else "95% Wilson binomial interval"
    fig.suptitle(rf"Gates of Appendix E.6 vs Mamba and the linear Transformer: test error vs $\alpha$" "\n"
                 rf"($l_{{tr}} = l_{{ts}}$ = {cfg['l_tr']}, $p_a$ = {cfg['p_a']}, $\eta$ = {cfg['eta']} for every model, "
                 f"{n} seed(s), {cfg['n_test']} test prompts each; bars: {bars})", fontsize=11)
    footnote(fig, settings_footer(cfg), NOTE)
    fig.tight_layout(rect=(0, 0.05 / len(kappas), 1, 1))
    return save_figure(fig, path, quick)


def plot_training(result, summary, path: Path, quick: bool = False) -> Path:
    cfg = result["settings"]
    fig, (ax, bx) = subplots(1, 2, figsize=(13, 4.5), gridspec_kw={"width_ratios": [3, 2]})
    steps = np.asarray(result["steps"])
    style = styles(result["models"])
    for model, r in result["models"].items():
        colour, marker, label = style[model]
        ax.plot(steps, np.mean(r["eval_loss"], axis=0), color=colour, lw=1.6, label=label)
    for eps in cfg["epsilons"]:
        ax.axhline(eps, color="grey", ls=":", lw=1)
    ax.set_yscale("log")
    ax.set_xlabel("SGD step t")
    ax.set_ylabel("hinge loss on a fixed set of training prompts")
    ax.set_title(f"(a) training loss (mean over {len(cfg['seeds'])} seed(s)); dotted: epsilons {cfg['epsilons']}")
    ax.legend(fontsize=9)
    ax.grid(alpha=0.3, which="both")
    names = list(summary)
    ratios = [summary[m]["gate_ratio_mean"] for m in names]
    bx.bar(range(len(names)), ratios, color=[style[m][0] for m in names], alpha=0.6)
    for k, m in enumerate(names):                                    # one point per seed: the seed spread
        per_seed = np.asarray(result["models"][m]["gate_ratio"], dtype=float)
        bx.plot(k + np.linspace(-0.15, 0.15, per_seed.size), per_seed, "o", color="black", ms=3.5,
                label="one seed" if k == 0 else None)
    bx.axhline(1.0, color="black", lw=1)
    bx.set_xticks(range(len(names)), [style[m][2].split(" (")[0] for m in names], rotation=30, ha="right")
    bx.set_ylabel("outliers' share of |terms|, gated / ungated")
    bx.set_title(f"(b) outlier suppression by the trained gate\n"
                 rf"($\alpha$ = 0.5, $\kappa_a'$ = {cfg['kappa_a_prime'][0]:g}; 1 = none; bar: mean over seeds)")
    bx.legend(fontsize=9, loc="lower left")
    footnote(fig, settings_footer(cfg), NOTE)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    return save_figure(fig, path, quick)

"""The figure style every ``reproduce`` figure shares (colours, the settings footer, saving with the
smoke stamp, training curves), and the figures of Figure 2 and of its factorial.  Figures 3-6 are in
``figures.py``, Table 1's image in ``table1.py``.

Colours: the Okabe-Ito palette (colour-blind safe).  Every figure carries a footnote saying which
model it shows and with which settings it was made.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.lines import Line2D

from ..data import SECTION4
from ..runs.output import footnote, save_figure, subplots
from .common import MODEL_LABEL, MODELS, curve, untrained_view

COLOR = {"mamba": "#0072B2", "linear_transformer": "#E69F00"}
OUTLIER, CLEAN, GREY = "#D55E00", "#009E73", "#555555"
FIG2_NOTE = "One-layer Mamba of eq (3) and one-layer linear Transformer, as in the paper's Figure 2"
PANEL_TITLE = {"flip": "(A) outlier labels flipped", "target": "(B) outlier labels targeted to +1",
               "random": "(C) outlier labels random"}


def _eta(result: dict) -> str:
    eta = result.get("eta")
    if isinstance(eta, dict):
        return (f"$\\eta$ chosen per model by the step-size rule: Mamba {eta['mamba']:g}, "
                f"LT {eta['linear_transformer']:g}")
    return f"$\\eta$ = {result['settings'].get('eta')}"


def settings_line(result: dict, extra: str = "") -> str:
    s = result["settings"]
    return (f"Training: $p_a$ = {result['p_a']}, {_eta(result)}, B = {s['B']}, T = {s['T']}, K = {s['K']}, "
            f"$\\kappa_a$ = {SECTION4.kappa_a:g}, l = {SECTION4.l_tr}; {s['seeds']} seeds. {extra}")


def save(fig, path, result: dict | None = None, tight: bool = False, stamp_axes=()) -> Path:
    """``runs.output.save_figure``: a quick run's figure (result["settings"]["quick"]) gets the smoke stamp,
    its watermark inside ``stamp_axes`` when given."""
    return save_figure(fig, path, bool(result and result.get("settings", {}).get("quick")), tight, stamp_axes)


def _theory_lines(ax, p_a: float) -> None:
    ax.axvline(0.5, color=GREY, ls=":", lw=1)
    ax.axvline(p_a, color=GREY, ls="-.", lw=1)
    ax.axhline(0.01, color="black", ls="--", lw=0.8)


def _band(ax, result, model, rule, subset, kappa_a_prime, K_prime, **style):
    """Pooled error against alpha with a band from the seeds' min to max."""
    alphas = np.asarray(result["settings"]["alphas"])
    args = (result, model, rule, subset, kappa_a_prime, K_prime)
    line, = ax.plot(alphas, curve(*args), **style)
    ax.fill_between(alphas, curve(*args, "seed_min"), curve(*args, "seed_max"), color=style["color"], alpha=0.15,
                    lw=0)
    return line


def fig2(result: dict, path, kappa_a_prime=None, K_prime=None) -> Path:
    """Figure 2 (A, B, C): test error (eq (5)) against alpha at one (kappa_a', K').

    Top row: all tasks, linear scale, with the same models untrained (dotted; at the main K').  Bottom
    row: tasks seen and never seen in training, symmetric-log scale so the paper's 0.01 level is
    readable.  Bands: min-max over seeds.
    """
    s = result["settings"]
    kappa_a_prime = s["main_kappa_a_prime"] if kappa_a_prime is None else kappa_a_prime
    K_prime = s["main_K_prime"] if K_prime is None else K_prime
    fig, axes = subplots(2, 3, figsize=(15, 9), sharex=True)
    for j, rule in enumerate(result["label_rules"]):
        top, bottom = axes[0, j], axes[1, j]
        for model in MODELS:
            c = COLOR[model]
            _band(top, result, model, rule, "all", kappa_a_prime, K_prime, color=c, marker="o", ms=4, lw=1.8,
                  label=f"{MODEL_LABEL[model]}, all tasks")
            if "untrained" in result and K_prime == result["untrained"]["K_prime"]:
                _band(top, untrained_view(result), model, rule, "all", kappa_a_prime, K_prime, color=c, ls=":", lw=1.3,
                      marker="x", ms=4, label=f"{MODEL_LABEL[model]} untrained (initialisation), all tasks")
            for subset, ls, mk, name in (("seen", "--", "s", "tasks seen in training"),
                                         ("unseen", ":", "^", "tasks never seen in training")):
                _band(bottom, result, model, rule, subset, kappa_a_prime, K_prime, color=c, ls=ls, marker=mk, ms=4,
                      lw=1.4, label=f"{MODEL_LABEL[model]}, {name}")
        for ax in (top, bottom):
            _theory_lines(ax, result["p_a"])
            ax.grid(alpha=0.3)
        top.set_title(PANEL_TITLE[rule])
        top.set_ylim(-0.02, 1.02)
        bottom.set_yscale("symlog", linthresh=0.01, linscale=0.5)
        bottom.set_ylim(0, 1.05)
        bottom.set_xlabel(r"$\alpha$, fraction of test context examples with an outlier")
    axes[0, 0].set_ylabel("ICL error (eq (5)), all tasks")
    axes[1, 0].set_ylabel("ICL error by task group (symlog scale)")
    handles, labels = [], []
    for ax in (axes[0, 0], axes[1, 0]):
        h, lab = ax.get_legend_handles_labels()
        handles, labels = handles + h, labels + lab
    handles += [Line2D([], [], color=GREY, ls=":"), Line2D([], [], color=GREY, ls="-."),
                Line2D([], [], color="black", ls="--", lw=0.8)]
    labels += [r"$\alpha$ = 1/2 (linear Transformer limit, Thm 4)",
               rf"$\alpha = p_a l_{{tr}} / l_{{ts}}$ = {result['p_a']} (Mamba guarantee, Thm 2)",
               "error = 0.01 (paper's claim)"]
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=9, bbox_to_anchor=(0.5, 0.045))
    fig.suptitle(rf"Figure 2: test error against the outlier fraction $\alpha$; $\kappa_a'$ = {kappa_a_prime:g}, "
                 f"K' = {K_prime:g}")
    footnote(fig, settings_line(result, f"{s['n_test']} test prompts per seed and point; lines: pooled "
                                  "error over seeds, bands: min-max over seeds."), FIG2_NOTE)
    fig.tight_layout(rect=(0, 0.15, 1, 0.98))
    return save(fig, path, result)


def fig2_sensitivity(result: dict, path) -> Path:
    """Error on all tasks against alpha for every kappa_a' (rows) and labelling (columns)."""
    s = result["settings"]
    alphas = np.asarray(s["alphas"])
    kappas, Ks = s["kappa_a_primes"], s["K_primes"]
    styles = ["-", "--", ":", "-."]
    fig, axes = subplots(len(kappas), 3, figsize=(14, 3.3 * len(kappas) + 0.8), sharex=True, sharey=True)
    axes = np.atleast_2d(axes)
    for i, kappa_a_prime in enumerate(kappas):
        for j, rule in enumerate(result["label_rules"]):
            ax = axes[i, j]
            for model in MODELS:
                for c, K_prime in enumerate(Ks):
                    ax.plot(alphas, curve(result, model, rule, "all", kappa_a_prime, K_prime), color=COLOR[model],
                            ls=styles[c % 4], marker="o", ms=3, label=f"{MODEL_LABEL[model]}, K' = {K_prime:g}")
            _theory_lines(ax, result["p_a"])
            ax.set_title(rf"{PANEL_TITLE[rule]}, $\kappa_a'$ = {kappa_a_prime:g}", fontsize=10)
            ax.grid(alpha=0.3)
            if i == len(kappas) - 1:
                ax.set_xlabel(r"$\alpha$ (test outlier fraction)")
            if j == 0:
                ax.set_ylabel("test error (all tasks)")
    handles, labels = axes[0, 0].get_legend_handles_labels()     # every panel draws the same lines
    handles += [Line2D([], [], color=GREY, ls=":"), Line2D([], [], color=GREY, ls="-."),
                Line2D([], [], color="black", ls="--", lw=0.8)]
    labels += [r"$\alpha$ = 1/2", rf"$\alpha = p_a$ = {result['p_a']}", "error = 0.01"]
    fig.legend(handles, labels, loc="lower center", ncol=4, fontsize=9, title="every panel:", title_fontsize=9,
               bbox_to_anchor=(0.5, 0.035))
    fig.suptitle(r"Figure 2, sensitivity: test outlier magnitude $\kappa_a'$ (rows) and irrelevant-pattern range K'")
    footnote(fig, settings_line(result, f"{s['n_test']} test prompts per seed and point, pooled over seeds."), FIG2_NOTE)
    fig.tight_layout(rect=(0, 0.12, 1, 0.98))
    return save(fig, path, result)


def training_curves(ax, runs: list, model: str, label: str) -> None:
    """Mean (and min-max band) over seeds of the minibatch hinge loss (eq (4)) against step."""
    steps = np.asarray(runs[0]["steps"] if "steps" in runs[0] else runs[0]["step"])
    loss = np.stack([r["loss_curve"] if "loss_curve" in r else r["loss"] for r in runs])
    ax.plot(steps, loss.mean(0), color=COLOR[model], label=label)
    ax.fill_between(steps, loss.min(0), loss.max(0), color=COLOR[model], alpha=0.2, lw=0)


def fig2_training(result: dict, path) -> Path:
    """Training loss of the Figure 2 runs (convergence check)."""
    fig, ax = subplots(figsize=(8, 4.8))
    for model in MODELS:
        training_curves(ax, result["training"][model], model, f"{MODEL_LABEL[model]}, $\\eta$ = {result['eta'][model]:g}")
    ax.set_yscale("symlog", linthresh=1e-2)
    ax.set_ylim(0, 1.5)
    ax.set_xlabel("SGD step t")
    ax.set_ylabel("minibatch hinge loss (eq (4))")
    ax.set_title("Figure 2 runs: training loss (mean over seeds, band: min-max)")
    ax.grid(alpha=0.3)
    ax.legend()
    footnote(fig, settings_line(result), FIG2_NOTE)
    fig.tight_layout(rect=(0, 0.1, 1, 0.97))
    return save(fig, path, result)


"""ablation.png, drawn from the saved "ablation" JSON: accuracy per task group for every factor
(rows 1-2), layer 1's S(a, b) along the long runs (row 3) and distance-2 accuracy along them (row 4).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..model import PAPER_MODELS as MODELS
from ..runs.output import footnote, save_figure, subplots
from .settings import FACTOR_LABEL, FACTORS, GROUP_LABEL, MODEL_TEXT, TESTS

BARS = [(1, f) for f in FACTORS[:3]] + [(3, f) for f in FACTORS]
BAR_COLOR = {"baseline": "#555555", "all_pairs": "#0072B2", "long": "#E69F00", "prenorm": "#CC79A7"}
CLASS_COLOR = {0: "#000000", 1: "#009E73", 2: "#D55E00", 3: "#56B4E9"}
MODEL_COLOR = {"mamba": "#0072B2", "linear_transformer": "#E69F00"}


def _settings_text(result: dict) -> str:
    s, paper = result["settings"], result["paper"]
    chosen = "; ".join(f"{MODEL_TEXT[m]} {a.replace('_', ' ')}: delta {v['delta']:g}, eta {v['eta']:g}"
                       for m, arms in result["step"].items() for a, v in arms.items())
    return (f"Training p_a = {s['p_a']}, B = {s['B']}, K = {s['K']}, kappa_a = {paper['kappa_a']:g}, l = {paper['l_tr']}; "
            f"baseline: Condition 1 cycle, T = {s['T_short']}, residual stack; more steps: T = {s['T_long']} (same runs "
            f"continued); {s['seeds']} seeds; tests: {s['n_test']} prompts per seed, targeted labels, kappa_a' = "
            f"{s['kappa_a_prime']:g}, K' = {s['K_prime']:g}. Step sizes (rule of step_size.py, delta = 0.2 first): {chosen}.")


def figure(result: dict, path) -> Path:
    """ablation.png: accuracy per task group for every factor (FQ and clean prompts, bars = seed mean,
    whiskers = seed min-max), S(a, b) by signed step along the long runs, and distance-2 accuracy
    along the long runs."""
    fig = subplots(4, 4, figsize=(18, 19))[0]
    for ax in fig.axes:
        ax.remove()
    grid = fig.add_gridspec(4, 4, hspace=0.38, wspace=0.3, bottom=0.07, top=0.925)
    _accuracy_bars(fig, grid, result)
    _score_curves(fig, grid, result)
    _distance2_curves(fig, grid, result)
    fig.suptitle("Ablation of the distance-2 gap: training task set, number of steps, pre-norm; per task group "
                 "(bars: mean over seeds, whiskers: min-max)", fontsize=12)
    footnote(fig, _settings_text(result), note="Residual stacks of stack.py (our architecture); pre-norm: "
             "H^(k) = H^(k-1) + O^(k)(RMSNorm(H^(k-1)))")
    return save_figure(fig, path, bool(result["settings"].get("quick")))


def _accuracy_bars(fig, grid, result: dict) -> None:
    """Rows 1-2: accuracy per task group on the FQ and the clean prompts, one bar per (depth, factor)."""
    groups = result["task_groups"] + ["all"]
    width = 0.8 / len(BARS)
    for row, test in enumerate(TESTS):
        for col, m in enumerate(MODELS):
            ax = fig.add_subplot(grid[row, 2 * col:2 * col + 2])
            for i, (L, f) in enumerate(BARS):
                cell = result["table"][test][m][str(L)][f]
                mean, lo, hi = (np.array([np.nan if cell[g][k] is None else 100 * cell[g][k] for g in groups])
                                for k in ("mean", "min", "max"))
                x = np.arange(len(groups)) + (i - (len(BARS) - 1) / 2) * width
                ax.bar(x, mean, width, color=BAR_COLOR[f], alpha=1.0 if L == 3 else 0.45,
                       hatch=None if L == 3 else "//", edgecolor="white", label=f"{L} layer{'s' * (L > 1)}: {FACTOR_LABEL[f]}")
                ax.errorbar(x, mean, yerr=[mean - lo, hi - mean], fmt="none", ecolor="black", lw=0.8, capsize=1.5)
            ax.set_xticks(np.arange(len(groups)), [GROUP_LABEL[g] for g in groups])
            ax.set_ylim(40, 101)
            ax.axhline(50, color="grey", ls=":", lw=0.8)
            ax.set_ylabel("accuracy (%)")
            what = ("Table 1's FQ prompts (alpha = 0.5, outliers farthest from the query)" if test == "FQ"
                    else "clean prompts (alpha = 0)")
            ax.set_title(f"{MODEL_TEXT[m]}: {what}", fontsize=10)
            if row == 0 and col == 0:
                fig.legend(*ax.get_legend_handles_labels(), loc="upper center", ncol=7, fontsize=9,
                           bbox_to_anchor=(0.5, 0.968))


def _score_curves(fig, grid, result: dict) -> None:
    """Row 3: layer 1's S(a, b) by distance along the long runs (seed mean), with the product term
    and its path through the middle pattern at distance 2."""
    classes = result["step_classes"]
    for col, (m, L) in enumerate((m, L) for m in MODELS for L in (1, 3)):
        ax = fig.add_subplot(grid[2, col])
        runs = [r for r in result["runs"] if r["model"] == m and r["arm"] == ("one_layer" if L == 1 else "three_layer")
                and r["tasks"] == "cycle"]
        step = np.asarray(runs[0]["trajectory"]["step"])
        full = [r for r in runs if len(r["trajectory"]["step"]) == len(step)]     # diverged runs stop early
        for name, style, label in (("terms_S", "-", "S, distance {k}"), ("terms_product", "--", "product term, distance 2"),
                                   ("terms_via_middle", ":", "product via the middle pattern, distance 2")):
            traj = np.mean([np.asarray(r["trajectory"][name]) for r in full], 0)           # (records, classes)
            for k in (1, 2, 3) if name == "terms_S" else (2,):
                cols = [i for i, c in enumerate(classes) if abs(c) == k]
                ax.plot(step, traj[:, cols].mean(1), style, color=CLASS_COLOR[k], lw=1.6, label=label.format(k=k))
        ax.axhline(0, color="grey", lw=0.6)
        ax.set_xlabel("SGD step (Condition 1 cycle)")
        ax.set_title(f"{MODEL_TEXT[m]}, {L} layer{'s' * (L > 1)}", fontsize=10)
        if col == 0:
            ax.set_ylabel("layer 1: S(a, b) = (mu_b,0)^T W_B^T W_C (mu_a,0)\n(mean over pairs at that distance, seeds)")
            ax.legend(fontsize=7, loc="lower left")


def _distance2_curves(fig, grid, result: dict) -> None:
    """Row 4: distance-2 accuracy at every checkpoint of the long runs (seed mean, min-max band)."""
    for col, test in enumerate(TESTS):
        ax = fig.add_subplot(grid[3, 2 * col:2 * col + 2])
        for m in MODELS:
            for L, ls in ((1, "--"), (3, "-")):
                c = result["accuracy_along_long_run"][m][str(L)]
                cur = c[f"{test}_distance_2"]
                ok = [i for i, v in enumerate(cur) if v["mean"] is not None]
                steps = np.asarray(c["step"])[ok]
                ax.plot(steps, [100 * cur[i]["mean"] for i in ok], ls, marker="o", ms=3,
                        color=MODEL_COLOR[m], label=f"{MODEL_TEXT[m]}, {L} layer{'s' * (L > 1)}")
                ax.fill_between(steps, [100 * cur[i]["min"] for i in ok], [100 * cur[i]["max"] for i in ok],
                                color=MODEL_COLOR[m], alpha=0.12)
        ax.set_xlabel("SGD step (Condition 1 cycle, residual stack)")
        ax.set_ylabel("distance-2 accuracy (%)")
        ax.set_title(f"distance-2 accuracy along training, {'FQ' if test == 'FQ' else 'clean'} prompts\n"
                     "(step 0: Algorithm 1's initialisation; line: seed mean, band: min-max)", fontsize=10)
        if test == "clean":
            ax.legend(fontsize=8, loc="lower left")

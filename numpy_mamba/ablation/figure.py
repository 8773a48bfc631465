"""ablation.png, drawn from the saved "ablation" JSON, one row per question: distance-2 accuracy for
every factor and test (row 1), on the held-out pairs (row 2), every layer's distance-2 score over
its distance-0 score (row 3) and distance-2 accuracy along the long runs (row 4).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..model import PAPER_MODELS as MODELS
from ..runs.output import footnote, save_figure, subplots
from .one_run import TESTS
from .results import FACTOR_LABEL, FACTORS, MODEL_TEXT, layers, ratio

FACTOR_COLOR = {"untrained": "#BBBBBB", "baseline": "#555555", "all_pairs": "#0072B2", "long": "#E69F00",
                "all_pairs_long": "#56B4E9", "heldout": "#009E73", "prenorm": "#CC79A7"}
MODEL_COLOR = {"mamba": "#0072B2", "linear_transformer": "#E69F00"}
PANELS = [(m, L) for m in MODELS for L in ("1", "3")]


def _settings_text(result: dict) -> str:
    s, paper = result["settings"], result["paper"]
    return (f"Training p_a = {s['p_a']}, B = {s['B']}, K = {s['K']}, kappa_a = {paper['kappa_a']:g}, l = {paper['l_tr']}; "
            f"baseline: Condition 1 cycle, T = {s['T_short']}, residual stack; more steps: T = {s['T_long']}; held-out "
            f"pairs {', '.join(f'({a},{b})' for a, b in result['held_out'])}; {s['seeds']} seeds; tests: {s['n_test']} "
            f"prompts per seed and test, targeted labels, kappa_a' = {s['kappa_a_prime']:g}, K' = {s['K_prime']:g}. "
            "Step sizes: every run its own, by the rule of step_size.py (delta = 0.2 first; listed in the report).")


def figure(results: dict, out: Path) -> list:
    """ablation.png: the four rows of the module docstring, one panel per (model, depth)."""
    fig, axes = subplots(4, 4, figsize=(20, 21))
    result = results["ablation"]
    s = result["settings"]
    for col, (m, L) in enumerate(PANELS):
        _bars(axes[0, col], result, "all", m, L, [f for f in FACTORS if f != "heldout"])
        _bars(axes[1, col], result, "heldout", m, L, ["untrained", "baseline", "all_pairs", "heldout"])
        _ratios(axes[2, col], result, m, L)
        axes[0, col].set_title(f"{MODEL_TEXT[m]}, {layers(L)}: distance-2 accuracy\n(prompts of every task)",
                               fontsize=10)
        axes[1, col].set_title(f"{MODEL_TEXT[m]}, {layers(L)}: held-out pairs two steps apart", fontsize=10)
    for col, test in enumerate(("FQ", "clean")):
        _curves(fig, axes[3, 2 * col:2 * col + 2], result, test)
    fig.suptitle(f"Ablation of the distance-2 gap ({s['seeds']} seeds; bars: mean over seeds, whiskers: min-max; a "
                 "bar with fewer seeds says how many)", fontsize=12)
    footnote(fig, _settings_text(result), note="Residual stacks of stack.py (our architecture); pre-norm: "
             "H^(k) = H^(k-1) + O^(k)(RMSNorm(H^(k-1)))")
    fig.tight_layout(rect=(0, 0.05, 1, 0.94), h_pad=6)
    for row in (0, 1, 2):                      # one legend per row, above its titles (the panels share it)
        handles = {lab: h for ax in axes[row] for h, lab in zip(*ax.get_legend_handles_labels())}
        fig.legend(handles.values(), handles.keys(), loc="lower center", ncol=min(len(handles), 7), fontsize=9,
                   bbox_to_anchor=(0.5, axes[row, 0].get_position().y1 + 0.022))
    return [save_figure(fig, out / "ablation.png", bool(s.get("quick")))]


def _bars(ax, result: dict, which: str, m: str, L: str, factors: list) -> None:
    """Distance-2 accuracy (%) per test (x) and factor (bars) of one model and depth."""
    seeds = result["settings"]["seeds"]
    present = [f for f in factors if f in result["table"][which]["FQ"][m].get(L, {})]
    width = 0.8 / max(len(present), 1)
    lows, notes = [], []
    for i, f in enumerate(present):
        cells = [result["table"][which][test][m][L][f].get("distance_2") for test in TESTS]
        mean = np.array([np.nan if c is None or c["mean"] is None else 100 * c["mean"] for c in cells])
        lo = np.array([np.nan if c is None or c["min"] is None else 100 * c["min"] for c in cells])
        hi = np.array([np.nan if c is None or c["max"] is None else 100 * c["max"] for c in cells])
        x = np.arange(len(TESTS)) + (i - (len(present) - 1) / 2) * width
        ax.bar(x, mean, width, color=FACTOR_COLOR[f], edgecolor="white", label=FACTOR_LABEL[f])
        ax.errorbar(x, mean, yerr=[mean - lo, hi - mean], fmt="none", ecolor="black", lw=0.8, capsize=1.5)
        lows.append(lo)
        for xi, c in zip(x, cells):
            if c is not None and c["n_seeds"] < seeds:
                notes.append((xi, f"{c['n_seeds']}/{seeds}"))
    bottom = _bottom(lows)
    for xi, note in notes:
        ax.text(xi, bottom + 1, note, rotation=90, ha="center", va="bottom", fontsize=7)
    ax.set_xticks(np.arange(len(TESTS)), list(TESTS))
    ax.set_ylim(bottom, 101)
    ax.axhline(50, color="grey", ls=":", lw=0.8)
    ax.set_ylabel("accuracy on distance-2 tasks (%)")


def _bottom(lows: list) -> float:
    """The accuracy axis starts at 40 %, or lower (by tens, down to 0) so that no bar or whisker is cut."""
    finite = [v for v in np.concatenate([np.ravel(x) for x in lows]) if np.isfinite(v)] if lows else []
    return float(min(40, max(0, 10 * np.floor((min(finite) - 2) / 10)))) if finite else 40.0


def _ratios(ax, result: dict, m: str, L: str) -> None:
    """Every layer's distance-2 score over its distance-0 score, in weight space (S, hatched) and on
    the layer's clean inputs (s, solid), for the untrained model, the baseline and all pairs."""
    classes = result["step_classes"]
    factors = [f for f in ("untrained", "baseline", "all_pairs", "prenorm") if f in result["mechanism"][m].get(L, {})]
    n_layers = len(result["mechanism"][m][L]["baseline"]["terms"])
    width = 0.8 / (2 * len(factors))
    for i, f in enumerate(factors):
        mech = result["mechanism"][m][L][f]
        for j, (kind, hatch) in enumerate((("terms", "//"), ("scores", None))):
            vals = []
            for k in range(n_layers):
                r = ratio(mech[kind][k]["S"] if kind == "terms" else mech[kind][k], classes)
                vals.append(np.nan if r is None else r)
            x = np.arange(n_layers) + (2 * i + j - (2 * len(factors) - 1) / 2) * width
            ax.bar(x, vals, width, color=FACTOR_COLOR[f], hatch=hatch, edgecolor="white",
                   label=f"{FACTOR_LABEL[f]}, {'S in weight space' if kind == 'terms' else 's on the inputs'}")
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_xticks(range(n_layers), [f"layer {k + 1}" for k in range(n_layers)])
    ax.set_ylabel("score at distance 2 / score at distance 0")
    ax.set_title(f"{MODEL_TEXT[m]}, {layers(L)}: distance-2 score by layer", fontsize=10)


def _curves(fig, axes, result: dict, test: str) -> None:
    """Distance-2 accuracy at every checkpoint of the long runs on the cycle and on all pairs."""
    for ax, tasks in zip(axes, ("cycle", "all")):
        for m in MODELS:
            for L, ls in (("1", "--"), ("3", "-")):
                c = result["accuracy_along_long_run"][m][L][tasks]
                cur = c[f"{test}_distance_2"]
                ok = [i for i, v in enumerate(cur) if v["mean"] is not None]
                steps = np.asarray(c["step"])[ok]
                ax.plot(steps, [100 * cur[i]["mean"] for i in ok], ls, marker="o", ms=3, color=MODEL_COLOR[m],
                        label=f"{MODEL_TEXT[m]}, {layers(L)}")
                ax.fill_between(steps, [100 * cur[i]["min"] for i in ok], [100 * cur[i]["max"] for i in ok],
                                color=MODEL_COLOR[m], alpha=0.12)
        ax.set_xlabel(f"SGD step (trained on {'the cycle' if tasks == 'cycle' else 'all pairs'})")
        ax.set_ylabel("distance-2 accuracy (%)")
        ax.set_ylim(_bottom([[100 * v["min"] for m in MODELS for L in ("1", "3")
                              for v in result["accuracy_along_long_run"][m][L][tasks][f"{test}_distance_2"]
                              if v["min"] is not None]]), 101)
        ax.set_title(f"distance 2, {test} prompts, trained on {'the cycle' if tasks == 'cycle' else 'all pairs'}\n"
                     "(step 0: initialisation; seed mean, band: min-max)", fontsize=10)
        ax.legend(fontsize=8, loc="lower right")

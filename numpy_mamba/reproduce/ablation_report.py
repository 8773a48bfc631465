"""The figure and the REPORT.md section of the ablation (``ablation.py``), drawn from its saved JSON."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..runs.output import footnote, subplots
from ..runs.output import SMOKE
from .ablation import FACTORS, TESTS
from .common import MODELS
from ..runs.step_size import RULE

# ---------------------------------------------------------------- figure
GROUP_LABEL = {"training": "training", "reversed": "reversed", "distance_2": "distance 2", "distance_3": "distance 3",
               "all": "all tasks"}
FACTOR_LABEL = {"baseline": "baseline", "all_pairs": "all pairs", "long": "more steps", "prenorm": "pre-norm"}
MODEL_TEXT = {"mamba": "Mamba", "linear_transformer": "linear Transformer"}
BARS = [(1, f) for f in FACTORS[:3]] + [(3, f) for f in FACTORS]
BAR_COLOR = {"baseline": "#555555", "all_pairs": "#0072B2", "long": "#E69F00", "prenorm": "#CC79A7"}
CLASS_COLOR = {0: "#000000", 1: "#009E73", 2: "#D55E00", 3: "#56B4E9"}


def _settings_text(result: dict) -> str:
    s = result["settings"]
    chosen = "; ".join(f"{MODEL_TEXT[m]} {a.replace('_', ' ')}: delta {v['delta']:g}, eta {v['eta']:g}"
                       for m, arms in result["step"].items() for a, v in arms.items())
    return (f"Training p_a = {s['p_a']}, B = {s['B']}, K = {s['K']}, kappa_a = 2, l = 20; baseline: Condition 1 cycle, "
            f"T = {s['T_short']}, residual stack; more steps: T = {s['T_long']} (same runs continued); {s['seeds']} seeds; "
            f"tests: {s['n_test']} prompts per seed, targeted labels, kappa_a' = {s['kappa_a_prime']:g}, K' = {s['K_prime']:g}. "
            f"Step sizes (rule of step_size.py, delta = 0.2 first): {chosen}.")


def figure(result: dict, path) -> Path:
    """ablation.png: accuracy per task group for every factor (FQ and clean prompts, bars = seed mean,
    whiskers = seed min-max), S(a, b) by signed step along the long runs, and distance-2 accuracy
    along the long runs."""
    from .plots import save
    groups = result["task_groups"] + ["all"]
    fig = subplots(4, 4, figsize=(18, 19))[0]
    for ax in fig.axes:
        ax.remove()
    grid = fig.add_gridspec(4, 4, hspace=0.38, wspace=0.3, bottom=0.07, top=0.925)
    width = 0.8 / len(BARS)
    for row, test in enumerate(TESTS):
        for col, m in enumerate(MODELS):
            ax = fig.add_subplot(grid[row, 2 * col:2 * col + 2])
            for i, (L, f) in enumerate(BARS):
                cell = result["table"][test][m][str(L)][f]
                mean = np.array([np.nan if cell[g]["mean"] is None else 100 * cell[g]["mean"] for g in groups])
                lo = np.array([np.nan if cell[g]["min"] is None else 100 * cell[g]["min"] for g in groups])
                hi = np.array([np.nan if cell[g]["max"] is None else 100 * cell[g]["max"] for g in groups])
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
    for col, test in enumerate(TESTS):
        ax = fig.add_subplot(grid[3, 2 * col:2 * col + 2])
        for m in MODELS:
            for L, ls in ((1, "--"), (3, "-")):
                c = result["accuracy_along_long_run"][m][str(L)]
                cur = c[f"{test}_distance_2"]
                ok = [i for i, v in enumerate(cur) if v["mean"] is not None]
                steps = np.asarray(c["step"])[ok]
                ax.plot(steps, [100 * cur[i]["mean"] for i in ok], ls, marker="o", ms=3,
                        color="#0072B2" if m == "mamba" else "#E69F00", label=f"{MODEL_TEXT[m]}, {L} layer{'s' * (L > 1)}")
                ax.fill_between(steps, [100 * cur[i]["min"] for i in ok], [100 * cur[i]["max"] for i in ok],
                                color="#0072B2" if m == "mamba" else "#E69F00", alpha=0.12)
        ax.set_xlabel("SGD step (Condition 1 cycle, residual stack)")
        ax.set_ylabel("distance-2 accuracy (%)")
        ax.set_title(f"distance-2 accuracy along training, {'FQ' if test == 'FQ' else 'clean'} prompts\n"
                     "(step 0: Algorithm 1's initialisation; line: seed mean, band: min-max)", fontsize=10)
        if test == "clean":
            ax.legend(fontsize=8, loc="lower left")
    fig.suptitle("Ablation of the distance-2 gap: training task set, number of steps, pre-norm; per task group "
                 "(bars: mean over seeds, whiskers: min-max)", fontsize=12)
    footnote(fig, _settings_text(result), note="Residual stacks of stack.py (our architecture); pre-norm: "
              "H^(k) = H^(k-1) + O^(k)(RMSNorm(H^(k-1)))")
    return save(fig, path, result)


# ---------------------------------------------------------------- report
def _pct(cell: dict, seeds: int) -> str:
    if cell["mean"] is None:
        return "n/a"
    fewer = "" if cell["n_seeds"] == seeds else f" ({cell['n_seeds']} of {seeds} seeds)"
    return f"{100 * cell['mean']:.1f} [{100 * cell['min']:.1f}, {100 * cell['max']:.1f}]{fewer}"


def _delta(cell: dict) -> str:
    if cell["mean"] is None:
        return "n/a"
    half = "" if cell["t95"] is None else f" ± {100 * cell['t95']:.1f}"
    return f"{100 * cell['mean']:+.1f}{half}"


def change_verdict(cell: dict) -> str:
    """Paired change in points with its 95% t-interval and what the interval says."""
    if cell["mean"] is None or cell["t95"] is None:
        return "n/a (fewer than 2 seeds)"
    lo, hi = 100 * (cell["mean"] - cell["t95"]), 100 * (cell["mean"] + cell["t95"])
    word = "raises" if lo > 0 else "lowers" if hi < 0 else "does not measurably change"
    return f"{word} it ({100 * cell['mean']:+.1f} points, 95% t-interval [{lo:+.1f}, {hi:+.1f}])"


def findings(result: dict) -> list:
    """Bullets, each with its rule: how every factor moves distance-2 accuracy on the FQ prompts
    (paired over seeds: "raises"/"lowers" when the 95% t-interval of the change excludes 0), whether
    it closes the gap (distance 2 within 1 point of the lowest other task group, seed means), and
    the sign of layer 1's S at distance 2 with the shares of the product term and of its middle path."""
    out, groups = [], [g for g in result["task_groups"] if g != "distance_2"]
    classes = result["step_classes"]
    for m in MODELS:
        for L in ("1", "3"):
            table = result["table"]["FQ"][m][L]
            for f, cell in table.items():
                d2, others = cell["distance_2"]["mean"], [cell[g]["mean"] for g in groups]
                if d2 is None or any(o is None for o in others):
                    continue
                low = min(others)
                closed = "closes the gap" if d2 >= low - 0.01 else "leaves a gap"
                head = f"{MODEL_TEXT[m]}, {L} layer{'s' * (L == '3')}, {FACTOR_LABEL[f]}:"
                change = ("" if f == "baseline" else
                          " " + change_verdict(result["change_vs_baseline"]["FQ"][m][L][f]["distance_2"]) + ";")
                mech = result["mechanism"][m][L][f]
                S2, S1 = _mean_over(mech["S"], classes, 2), _mean_over(mech["S"], classes, 1)
                prod, mid = _mean_over(mech["product"], classes, 2), _mean_over(mech["via_middle"], classes, 2)
                share = "" if not S2 else (f"; product term {prod / S2:.0%} of it, two partner steps "
                                           f"{mid / S2:.0%}")
                out.append(f"- {head} distance-2 FQ accuracy {100 * d2:.1f}% vs lowest other group "
                           f"{100 * low:.1f}%, {closed};{change} S(distance 2) = {S2:.3g} "
                           f"(S(distance 1) = {S1:.3g}){share}.")
    return out


def _mean_over(cells: list, classes: list, k: int):
    """Mean of the seed means of the signed steps +k and -k (None if any is missing)."""
    values = [c["mean"] for c, step in zip(cells, classes) if abs(step) == k]
    return None if any(v is None for v in values) else float(np.mean(values))


def report_section(result: dict) -> str:
    """The REPORT.md section of the ablation (Markdown), from the saved JSON."""
    s, groups = result["settings"], result["task_groups"] + ["all"]
    lines = ["## Ablation: the distance-2 gap (`python -m numpy_mamba ablation`)", ""]
    if s["quick"]:
        lines += [f"**{SMOKE}**", ""]
    lines += ["Question: why do trained models miss Table 1's FQ prompts almost only on tasks whose two patterns are two "
              "steps apart on the cycle of Condition 1's training tasks? One factor at a time from the baseline "
              f"(Condition 1 cycle, T = {s['T_short']}, residual stack); {s['seeds']} seeds, each its own world, the same "
              "minibatch stream for every depth and factor and the same test prompts for every model (paired). "
              "Code: numpy_mamba/reproduce/ablation.py; figure: ablation.png; numbers: ablation.json.", "",
              "- Step size: " + RULE + "; per model and architecture, on a selection world with T = "
              f"{s['T_short']}, eta grid {', '.join(f'{e:g}' for e in s['eta_grid'])}; delta = 0.2 (Section 4) unless "
              "every eta diverges there, then the next of " + ", ".join(f"{d:g}" for d in s["deltas"]) + ". The all-pairs "
              "and longer runs keep the baseline's delta and eta.", ""]
    for m, arms in result["step"].items():
        for a, v in arms.items():
            failed = [f"{r['delta']:g}" for r in v["tried"] if r["chosen"] is None]
            note = f" (every eta diverged at delta = {', '.join(failed)})" if failed else ""
            lines.append(f"  - {MODEL_TEXT[m]}, {a.replace('_', ' ')}: delta = {v['delta']:g}, eta = {v['eta']:g}{note}")
    if result["diverged"]:
        lines += ["", "Diverged runs (their accuracy is missing from the cells after the step named): " +
                  "; ".join(f"seed {d['seed']} {d['model']} {d['arm']} tasks={d['tasks']} at step {d['diverged_at']}"
                            for d in result["diverged"])]
    lines += ["", "What the numbers say (rule in each bullet's terms: a change is \"raises\"/\"lowers\" when the 95% "
              "t-interval over seeds of the paired change excludes 0; a factor \"closes the gap\" when distance-2 FQ "
              "accuracy is within 1 point of the lowest other task group, seed means):", ""] + findings(result)
    for test in TESTS:
        what = ("Table 1's FQ prompts: alpha = 0.5, outliers farthest from the query, labels targeted to +1, "
                f"kappa_a' = {s['kappa_a_prime']:g}, K' = {s['K_prime']:g}") if test == "FQ" else "clean prompts (alpha = 0)"
        lines += ["", f"Accuracy (%) on {what}: mean over seeds [min, max]; last column: paired change of distance-2 "
                  "accuracy against the baseline of the same depth (points, ± 95% t-interval over seeds).", "",
                  "| model | layers | factor | " + " | ".join(GROUP_LABEL[g] for g in groups) + " | distance 2 vs baseline |",
                  "|---|---|---|" + "---|" * (len(groups) + 1)]
        for m in MODELS:
            for L in ("1", "3"):
                for f, cell in result["table"][test][m][L].items():
                    change = "" if f == "baseline" else _delta(result["change_vs_baseline"][test][m][L][f]["distance_2"])
                    lines.append(f"| {MODEL_TEXT[m]} | {L} | {FACTOR_LABEL[f]} | " +
                                 " | ".join(_pct(cell[g], s["seeds"]) for g in groups) + f" | {change} |")
    classes = result["step_classes"]
    parts = ("linear", "product", "via_middle", "via_ends", "via_other", "outside")
    lines += ["", "Mechanism: layer 1's cross-pattern score S(a, b) = (mu_b, 0)^T W_B^T W_C (mu_a, 0) at the end of each "
              "run, mean over the pairs of a signed step b - a and over seeds. With W = W^(0) + dW (W^(0) = delta [I_d 0]): "
              "S = init + linear + product, product = beta^2 (dW_B u_b)^T (dW_C u_a) split by the direction it passes "
              "through: u_c with c next to both a and b (two partner steps a -> c -> b: what the product predicts if "
              "dW_B and dW_C moved each pattern only along its cycle neighbours), u_a or u_b, other patterns, and the "
              "rest of R^m. Signed steps +1 and -1 are the two orders of a training pair (the training task and its "
              "reversed task hold the same two patterns).", "",
              "| model | layers | factor | " + " | ".join(f"S, step {c:+d}" if c else "S, step 0" for c in classes) +
              " | distance 2: " + " | ".join(p.replace("_", " ") for p in parts) + " |",
              "|---|---|---|" + "---|" * (len(classes) + len(parts))]
    moves = ["", "How the updates move the pattern directions: u_c^T dW u_b by signed step c - b (mean over pairs and "
             "seeds), for dW_B and dW_C of layer 1.", "",
             "| model | layers | factor | " + " | ".join(f"dW_B, step {c:+d}" for c in classes) + " | " +
             " | ".join(f"dW_C, step {c:+d}" for c in classes) + " |", "|---|---|---|" + "---|" * (2 * len(classes))]
    fmt = lambda v: "n/a" if v is None else f"{v:.3g}"                       # noqa: E731
    for m in MODELS:
        for L, factors in result["mechanism"][m].items():
            for f, terms in factors.items():
                d2 = {t: _mean_over(terms[t], classes, 2) for t in parts}
                head = f"| {MODEL_TEXT[m]} | {L} | {FACTOR_LABEL[f]} | "
                lines.append(head + " | ".join(fmt(c["mean"]) for c in terms["S"]) + " | "
                             + " | ".join(fmt(d2[t]) for t in parts) + " |")
                moves.append(head + " | ".join(fmt(c["mean"]) for c in terms["dW_B"] + terms["dW_C"]) + " |")
    lines += moves
    return "\n".join(lines)



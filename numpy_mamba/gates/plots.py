"""Figures, JSON and the REPORT.md section of ``python -m numpy_mamba gates`` (compare.py).

Error bars: with two or more seeds, a 95% Student-t interval of the mean over seeds (it holds
the seed-to-seed spread of training and of the test draw); with one seed, a symmetric bar that
covers the 95% Wilson interval of the binomial test error on that seed's test prompts.
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from scipy.stats import t as student_t

from ..runs.output import SMOKE, footnote, save_figure, save_json, subplots, write_section
from ..runs.claims import opening, overflow_details, save_claims
from .claims import GATES_RULES, gates_claim
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


def mean_and_halfwidth(errors, n_test: int):
    """errors (seeds, alphas) -> mean (alphas,), 95% half-width (alphas,); see the module docstring."""
    errors = np.asarray(errors, dtype=float)
    mean = errors.mean(axis=0)
    n = errors.shape[0]
    if n >= 2:
        return mean, student_t.ppf(0.975, n - 1) * errors.std(axis=0, ddof=1) / np.sqrt(n)
    z, p = 1.96, mean
    centre = (p + z * z / (2 * n_test)) / (1 + z * z / n_test)
    half = z * np.sqrt(p * (1 - p) / n_test + z * z / (4 * n_test ** 2)) / (1 + z * z / n_test)
    return mean, np.maximum(np.abs(centre - mean) + half, 0.0)


def summarise(result: dict) -> dict:
    cfg = result["settings"]
    summary = {}
    for model, r in result["models"].items():
        s = {"error_mean": {}, "error_halfwidth95": {}}
        for key, errs in r["error"].items():
            s["error_mean"][key], s["error_halfwidth95"][key] = mean_and_halfwidth(errs, cfg["n_test"])
        s["converge_median"] = {}
        for eps, its in r["converge"].items():
            done = [i for i in its if i is not None]
            s["converge_median"][eps] = float(np.median(done)) if done else None
            s.setdefault("converged_runs", {})[eps] = f"{len(done)}/{len(its)}"
        s["gate_ratio_mean"] = float(np.mean(r["gate_ratio"]))
        for which in ("training", "unseen"):
            s[f"clean_error_{which}_tasks_mean"] = float(np.mean(r[f"clean_error_{which}_tasks"]))
        summary[model] = s
    return summary


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


def number(n: int) -> str:
    """n as the report writes it at the start of a sentence: "Six", or "12"."""
    words = ("No", "One", "Two", "Three", "Four", "Five", "Six", "Seven", "Eight", "Nine", "Ten")
    return words[n] if n < len(words) else str(n)


def _fmt(mean, half):
    return f"{mean:.3f} ± {half:.3f}"


def heading(quick: bool) -> str:
    """The section's heading (stamped for a smoke run)."""
    return "## Other gates of Appendix E.6 (python -m numpy_mamba gates)" + (f" -- {SMOKE}" if quick else "")


def report_markdown(result, summary, quick: bool = False, rows=(), heads=None) -> str:
    cfg = result["settings"]
    a_idx = cfg["alphas"].index(0.7) if 0.7 in cfg["alphas"] else len(cfg["alphas"]) - 1
    alpha = cfg["alphas"][a_idx]
    k2, k8 = cfg["kappa_a_prime"][0], cfg["kappa_a_prime"][-1]
    eps_hi, eps_lo = (str(e) for e in cfg["epsilons"])
    seconds = result.get("timings_seconds", {})
    first = (f"{number(len(summary))} one-layer models, {len(cfg['seeds'])} seed(s), the Figure 2 protocol"
             + (f"; {seconds['total']:.1f} s wall time with --jobs {seconds.get('workers (--jobs)', '?')}" if "total" in seconds
                else "") + ".")
    lines = [
        heading(quick), "",
        *opening(first, list(rows), heads), "",
        *([f"**{SMOKE}.** These outputs only show that the pipeline runs; do not read any number below as a "
           "result.", ""] if quick else []),
        f"{number(len(summary))} models trained on the same training prompts and seeds (Section 4: d = {cfg['d']}, M1 = "
        f"{cfg['M1']}, M2 = {cfg['M2']}, V = {cfg['V']}, beta = {cfg['beta']:g}, delta = {cfg['delta']}, "
        f"kappa_a = {cfg['kappa_a']:g}, p_a = {cfg['p_a']}, l_tr = l_ts = {cfg['l_tr']}; ours: eta = "
        f"{cfg['eta']} for every model, B = {cfg['B']}, T = {cfg['T']}, K = {cfg['K']}, K' = {cfg['K_prime']}). "
        f"One step size for all {number(len(summary)).lower()} keeps the runs identical but for the gate; it is not "
        "chosen per model by the step-size rule of the other sections, so a model that would train better at another step size is compared "
        f"at this one. Test outliers: kappa_a' = {k2:g} (the [main setting](#main-setting)) and {k8:g}. "
        f"{len(cfg['seeds'])} seed(s) x {cfg['n_test']} test prompts per point; ± is a 95% interval "
        f"({'t over seeds' if len(cfg['seeds']) > 1 else 'Wilson binomial'}). Settings and every number: "
        "`gates.json`; figures `gates_error_vs_alpha.png`, `gates_training.png`.", "",
        f"| model | error, alpha = {alpha} flip, kappa_a' = {k2:g} | same, kappa_a' = {k8:g} | error, "
        f"alpha = 0 | same, training / unseen tasks | steps to loss < {eps_hi} (runs) | steps to loss < {eps_lo} (runs) | gate's outlier share ratio | "
        "learned a, gamma, tau |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for model, s in summary.items():
        r = result["models"][model]
        scal = r["final_gate_scalars"]
        learned = ", ".join(f"{k} = {np.mean([d[k] for d in scal]):.3f}" for k in (scal[0] if scal else {}))
        row = [model]
        for kappa in (k2, k8):
            key = f"kappa_a_prime={kappa:g}/flip"
            row.append(_fmt(s["error_mean"][key][a_idx], s["error_halfwidth95"][key][a_idx]))
        key0 = f"kappa_a_prime={k2:g}/flip"
        row.append(_fmt(s["error_mean"][key0][0], s["error_halfwidth95"][key0][0]))
        row.append(f"{s['clean_error_training_tasks_mean']:.3f} / {s['clean_error_unseen_tasks_mean']:.3f}")
        for eps in (eps_hi, eps_lo):
            med = s["converge_median"][eps]
            row.append(f"{'never' if med is None else f'{med:.0f}'} ({s['converged_runs'][eps]})")
        row += [f"{s['gate_ratio_mean']:.3f}", learned or "-"]
        lines.append("| " + " | ".join(row) + " |")
    lines += ["", " ".join(_verdict(summary, cfg, a_idx, k) for k in cfg["kappa_a_prime"])
              + " (rule [gates](#rule-gates))", "", _clean_cost(summary, cfg, k2), "", MECHANISM, "",
              _checks_table(result["checks"]), *overflow_details(list(rows))]
    return "\n".join(lines)


def comparison_with_lt(summary, alpha_index: int, kappa: float) -> list:
    """The rule of the report's "Measured" line: at one alpha (flipped labels, test outlier size
    kappa), is each model's 95% error interval entirely below the linear Transformer's?
    Returns [(model, error mean, half-width, below: bool)] for every model but the LT, and the
    LT's (mean, half-width) last as ("linear_transformer", mean, half-width, None)."""
    key = f"kappa_a_prime={kappa:g}/flip"
    lt = summary["linear_transformer"]
    lt_m, lt_h = lt["error_mean"][key][alpha_index], lt["error_halfwidth95"][key][alpha_index]
    rows = []
    for model, s in summary.items():
        if model != "linear_transformer":
            m, h = s["error_mean"][key][alpha_index], s["error_halfwidth95"][key][alpha_index]
            rows.append((model, m, h, bool(m + h < lt_m - lt_h)))
    return rows + [("linear_transformer", lt_m, lt_h, None)]


def _verdict(summary, cfg, a_idx, kappa) -> str:
    *rows, (_, lt_m, lt_h, _) = comparison_with_lt(summary, a_idx, kappa)
    better = [f"{model} ({m:.3f})" for model, m, _, below in rows if below]
    same = [f"{model} ({m:.3f})" for model, m, _, below in rows if not below]
    return (f"Measured (alpha = {cfg['alphas'][a_idx]}, flip, kappa_a' = {kappa:g}): intervals entirely below the "
            f"linear Transformer's {lt_m:.3f} ± {lt_h:.3f}: {', '.join(better) or 'none'}; not below it: "
            f"{', '.join(same) or 'none'}.")


def _clean_cost(summary, cfg, kappa) -> str:
    key = f"kappa_a_prime={kappa:g}/flip"
    lt_m, lt_h = summary["linear_transformer"]["error_mean"][key][0], summary["linear_transformer"]["error_halfwidth95"][key][0]
    worse = [f"{m} ({s['error_mean'][key][0]:.3f}; training tasks {s['clean_error_training_tasks_mean']:.3f}, "
             f"unseen tasks {s['clean_error_unseen_tasks_mean']:.3f})"
             for m, s in summary.items() if s["error_mean"][key][0] - s["error_halfwidth95"][key][0] > lt_m + lt_h]
    return (f"Clean prompts (alpha = 0): models whose error interval lies above the linear Transformer's "
            f"{lt_m:.3f} ± {lt_h:.3f}: {', '.join(worse) or 'none'}.")


MECHANISM = (
    "Why (read with the table): a gate can suppress an outlier example i only if the weight on "
    "example i depends on p_i itself. Mamba's G_i = sigma(w^T p_i) prod_{j>i}(1 - sigma(w^T p_j)) "
    "has the input gate sigma(w^T p_i), and GLA's key gate sigma(W p_i)^{1/tau} multiplies k_i = W_B p_i; "
    "both can learn w (or W) along the outlier directions v* and close the gate on those examples. "
    "The ratio column measures this on test prompts (alpha = 0.5): the outlier examples' share of "
    "sum_i |G_i s_i| divided by their share of sum_i |s_i| (same attention, gate removed); 1 means the "
    "gate does not single out outliers. Mamba-2 and Gated Retention weight example i by prod_{j=i+1}^{l+1} gamma_j: "
    "only tokens after i enter, so an outlier at i is never down-weighted by its own content; it only "
    "makes the model forget the examples before it. RetNet's gamma^{l+1-i} does not look at the input "
    "at all, so it cannot single out outliers; with gamma trainable SGD drives it to about 1, i.e. to "
    "the linear Transformer. Hence the prediction: Mamba and GLA beat the linear Transformer at large "
    "alpha, the three decay gates do not. Any departure of the decay gates' ratio from 1 can only come "
    "from outliers changing how much the examples before them are forgotten, not from selecting the "
    "outlier example.")


def _checks_table(checks) -> str:
    lines = ["Consistency checks run by the same command (small seeded problems, d = 4, l = 1, 3, 6):", "",
             "| gate | max abs(recurrent - closed) | max gradcheck relative error per parameter |", "|---|---|---|"]
    for model, c in checks.items():
        errs = ", ".join(f"{k} {v:.1e}" for k, v in c["max_gradcheck_rel_err"].items())
        lines.append(f"| {model} | {c['max_abs_recurrent_minus_closed']:.1e} | {errs} |")
    return "\n".join(lines)


def write_outputs(result: dict, out: Path, quick: bool = False, start: float | None = None) -> list:
    """Figures, gates.json and the "gates" section of REPORT.md into ``out``.  With ``start`` (a
    time.perf_counter() reading), the run's elapsed time is taken once the figures are drawn and
    stated in the JSON and the report, the number the terminal prints too."""
    out.mkdir(parents=True, exist_ok=True)
    summary = summarise(result)
    for model, s in summary.items():
        for field in ("error_mean", "error_halfwidth95"):
            for key, v in s[field].items():
                if not np.all(np.isfinite(v)):
                    raise ValueError(f"{model} {field} {key} holds a NaN: refusing to report it.")
    paths = [plot_error_vs_alpha(result, summary, out / "gates_error_vs_alpha.png", quick),
             plot_training(result, summary, out / "gates_training.png", quick)]
    if start is not None:
        result.setdefault("timings_seconds", {})["total"] = round(time.perf_counter() - start, 1)
    paths.append(save_json(out / "gates.json", {**result, "summary": summary, "quick": quick}))
    claim = gates_claim(summary, result["settings"]["alphas"], result["settings"]["kappa_a_prime"],
                        result["settings"]["kappa_a_prime"][0])
    claim["row"]["headline"] = None
    rows = [claim["row"]]
    paths.append(save_claims(out, "gates", rows, GATES_RULES, quick, headlines=claim["headlines"], heading=heading(quick)))
    paths.append(write_section(out / "REPORT.md", "gates", report_markdown(result, summary, quick, rows,
                                                                         claim["headlines"])))
    return paths

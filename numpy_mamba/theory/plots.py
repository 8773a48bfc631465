"""Figures of ``python -m numpy_mamba theory`` (one PNG per claim, Okabe-Ito colours)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..cli.output import subplots

BLUE, ORANGE, GREEN, VERMILION, PURPLE, SKY = "#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9"
COLOR = {"mamba": BLUE, "linear_transformer": ORANGE}
LABEL = {"mamba": "Mamba", "linear_transformer": "linear Transformer"}


def _plain_log_ticks(ax, axes="xy"):
    """Log axes with plain-number major ticks and no crowded minor labels."""
    from matplotlib.ticker import NullFormatter, ScalarFormatter
    for name in axes:
        axis = getattr(ax, f"{name}axis")
        if getattr(ax, f"get_{name}scale")() == "log":
            fmt = ScalarFormatter()
            fmt.set_scientific(False)
            axis.set_major_formatter(fmt)
            axis.set_minor_formatter(NullFormatter())


def _scatter_T(ax, x, T_by_seed, color, label, jitter=0.0):
    for k, T in enumerate(T_by_seed):
        pts = [(xi * (1 + jitter * (k - 1)), t) for xi, t in zip(x, T) if t is not None and t >= 1]
        if pts:
            xs, ts = zip(*pts)
            ax.plot(xs, ts, "o", color=color, alpha=0.6, ms=4, label=label if k == 0 else None)
    med = [np.median([T[i] for T in T_by_seed if T[i] is not None]) if any(T[i] is not None for T in T_by_seed)
           else np.nan for i in range(len(x))]
    ax.plot(x, med, "-", color=color, lw=1.5)


def convergence(res_p, res_l, path: Path) -> Path:
    """theory_convergence.png: steps to eps vs 1/(1-p_a) and vs l_tr, and T_M / T_T vs l_tr (Theorems 1, 3)."""
    fig, axes = subplots(1, 3, figsize=(15, 4.4))
    ax = axes[0]
    x = res_p["x_inv_one_minus_p_a"]
    for model in ("mamba", "linear_transformer"):
        sl = res_p["slope"][model]
        lab = f"{LABEL[model]} (slope {sl['mean']:.2f} ± {sl['sd']:.2f})" if sl["mean"] is not None else LABEL[model]
        _scatter_T(ax, x, res_p["T"][model], COLOR[model], lab)
    ax.plot(x, np.asarray(x) / x[0] * np.nanmedian([T[0] for T in res_p["T"]["mamba"] if T[0]]), ":", color="grey",
            label="slope 1 (claim)")
    ax.set(xscale="log", yscale="log", xlabel="1 / (1 - p_a)", ylabel=f"steps until held-out loss < {res_p['settings']['eps']}",
           title=f"Theorems 1, 3: T vs p_a (l_tr = {res_p['settings']['l_tr']})")
    ax.legend(fontsize=8)
    ax = axes[1]
    for model in ("mamba", "linear_transformer"):
        sl = res_l["slope"][model]
        lab = f"{LABEL[model]} (slope {sl['mean']:.2f} ± {sl['sd']:.2f})" if sl["mean"] is not None else LABEL[model]
        _scatter_T(ax, res_l["l_tr"], res_l["T"][model], COLOR[model], lab)
    ax.set(xscale="log", yscale="log", xlabel="l_tr (context examples in training prompts)",
           ylabel="steps until held-out loss < eps", title=f"T vs l_tr (p_a = {res_l['settings']['p_a']})")
    ax.legend(fontsize=8)
    ax = axes[2]
    sl = res_l["slope"]["ratio"]
    lab = f"measured (slope {sl['mean']:.2f} ± {sl['sd']:.2f})" if sl["mean"] is not None else "measured"
    _scatter_T(ax, res_l["l_tr"], res_l["ratio_T_M_over_T_T"], GREEN, lab)
    l = np.asarray(res_l["l_tr"], float)
    first = [r[0] for r in res_l["ratio_T_M_over_T_T"] if r[0]]
    if first:
        ax.plot(l, l / l[0] * np.median(first), ":", color="grey", label="slope 1 (claim: T_M / T_T ~ l_tr)")
    ax.set(xscale="log", yscale="log", xlabel="l_tr", ylabel="T_M / T_T", title="Ratio of iterations, Mamba / linear Transformer")
    ax.legend(fontsize=8)
    for a in axes:
        _plain_log_ticks(a)
    axes[0].set_xticks(x, [f"{v:.3g}" for v in x])
    for a in axes[1:]:
        a.set_xticks(res_l["l_tr"], [str(v) for v in res_l["l_tr"]])
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return path


def tolerated(res, lt_need, path: Path) -> Path:
    """theory_alpha.png: error vs alpha, alpha* vs p_a l_tr / l_ts, and l_ts needed vs (1/2 - alpha)^-2 alpha (Theorems 2, 4)."""
    s = res["settings"]
    fig, axes = subplots(1, 3, figsize=(15, 4.4))
    ax = axes[0]
    l_show, seed0 = s["l_ts_grid"][min(1, len(s["l_ts_grid"]) - 1)], s["seeds"][0]
    styles = {s["kappa_a_prime"][0]: "-", s["kappa_a_prime"][-1]: "--"}
    for r in res["runs"]:
        if r["l_ts"] == l_show and r["seed"] == seed0 and r["errors"] is not None and r["p_a"] == max(s["p_a_train"][r["model"]]):
            ax.plot(s["alphas"], r["errors"], styles[r["kappa_a_prime"]], color=COLOR[r["model"]],
                    label=f"{LABEL[r['model']]}, kappa_a' = {r['kappa_a_prime']:g}")
    ax.axhline(s["threshold"], color="grey", lw=0.8, ls=":", label=f"threshold {s['threshold']}")
    ax.axvline(0.5, color="black", lw=0.8, ls=":")
    ax.set(xlabel="alpha (fraction of test examples with outliers)", ylabel="test error, eq (5)",
           title=f"Test error vs alpha (l_ts = {l_show}, seed {seed0})", ylim=(0, 1))
    ax.legend(fontsize=8)
    ax = axes[1]
    markers = {s["kappa_a_prime"][0]: "o", s["kappa_a_prime"][-1]: "s"}
    for r in res["runs"]:
        if r["alpha_star"] is None:
            continue
        x = r["p_a"] * s["l_tr"] / r["l_ts"]
        ax.plot(x * (1.06 if r["model"] == "linear_transformer" else 1.0), r["alpha_star"], markers[r["kappa_a_prime"]],
                color=COLOR[r["model"]], alpha=0.6, ms=5, mfc="none" if r["kappa_a_prime"] != s["kappa_a_prime"][0] else None)
    xs = np.geomspace(0.05, 3, 100)
    ax.plot(xs, np.minimum(1, xs), "-", color="grey", lw=1, label="Theorem 2 (c): min(1, p_a l_tr / l_ts)")
    ax.axhline(0.5, color=ORANGE, lw=1, ls="--", label="Theorem 4 (c): 1/2")
    for model in ("mamba", "linear_transformer"):
        ax.plot([], [], "o", color=COLOR[model], label=f"{LABEL[model]} (circle: kappa_a' = {s['kappa_a_prime'][0]:g}, "
                                                       f"open square: {s['kappa_a_prime'][-1]:g})")
    ax.set(xscale="log", xlabel="p_a l_tr / l_ts", ylabel=f"largest alpha with error <= {s['threshold']}",
           title="Tolerated outlier fraction alpha*", ylim=(0, 1.02))
    ax.legend(fontsize=7, loc="lower right")
    _plain_log_ticks(ax)
    ax = axes[2]
    for k, r in enumerate(lt_need["runs"]):
        pts = [(x, n) for x, n in zip(r["x"], r["l_ts_needed"]) if n is not None]
        if pts:
            ax.plot(*zip(*pts), "o-", color=ORANGE, alpha=0.6, label="linear Transformer (one line per seed)" if k == 0 else None)
    sl = lt_need["slope"]
    if sl["mean"] is not None:
        ax.plot([], [], " ", label=f"slope {sl['mean']:.2f} ± {sl['sd']:.2f} (claim 1)")
    ax.set(xscale="log", yscale="log", xlabel="(1/2 - alpha)^-2 alpha", ylabel=f"smallest l_ts with error <= {s['threshold']}",
           title="Theorem 4 (d): context needed as alpha -> 1/2")
    ax.legend(fontsize=8)
    _plain_log_ticks(ax)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return path


def attention(res, path: Path) -> Path:
    """theory_attention.png: histograms of the attention sums of Corollary 1, eq (16)."""
    fig, ax = subplots(figsize=(7.5, 4.6))
    same = np.concatenate([r["same"] for r in res["runs"]])
    diff = np.concatenate([r["different"] for r in res["runs"]])
    dist = np.concatenate([r["distance"] for r in res["runs"]])
    bins = np.linspace(min(same.min(), diff.min()), max(same.max(), diff.max()), 60)
    ax.hist(same, bins, color=BLUE, alpha=0.6, label="same relevant pattern as the query (N_1)")
    colors = {1: VERMILION, 2: GREEN, 3: PURPLE}
    for k in np.unique(dist):
        what = "forms a training task" if k == 1 else "no training task"
        ax.hist(diff[dist == k], bins, color=colors.get(int(k), SKY), alpha=0.55,
                label=f"different pattern, {int(k)} step(s) apart on the task cycle ({what})")
    ax.axvline(1.0, color="grey", ls=":", lw=1, label="Theta(1) reference: 1")
    s = res["settings"]
    ax.set(xlabel="sum of attention scores p_i^T W_B^T W_C p_query over the group", ylabel="testing prompts",
           title=f"Corollary 1 (Mamba, p_a = {s['cor1_p_a']}, l_ts = {s['l_ts']}, alpha = {s['alpha']})")
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return path


def gates(res, path: Path) -> Path:
    """theory_gates.png: outlier gates vs M1 (17), gates by clean rank (18), w^T p vs -log M1 (37)."""
    fig, axes = subplots(1, 3, figsize=(15, 4.4))
    M1 = np.asarray(res["M1"])
    ax = axes[0]
    for r in res["runs"]:
        ax.plot(r["M1"], r["test"]["G_outlier"], "o", color=VERMILION, alpha=0.6)
        ax.plot(r["M1"], r["test"]["G_clean"], "s", color=BLUE, alpha=0.6)
    ax.plot([], [], "o", color=VERMILION, label=f"outlier examples (slope {res['slope_G_outlier_vs_M1']:.2f})")
    ax.plot([], [], "s", color=BLUE, label="clean examples")
    ax.plot(M1, 1.0 / M1, ":", color="grey", label="1 / M1 (a poly(M1)^-1)")
    ax.set(xscale="log", yscale="log", xlabel="M1 (relevant patterns)", ylabel="mean gate G_{i,l+1} on test prompts",
           title="Corollary 2 (i): gates on outlier examples")
    ax.legend(fontsize=8)
    ax.set_xticks(M1, [str(m) for m in M1])
    ax = axes[1]
    J = res["settings"]["decay_J"]
    for r in res["runs"]:
        g = [v for v in r["test"]["clean_rank_gate"][:J] if v is not None]
        ax.plot(np.arange(1, len(g) + 1), g, "-", color=BLUE, alpha=0.35)
    j = np.arange(1, J + 1)
    g0 = np.median([r["test"]["clean_rank_gate"][0] for r in res["runs"]])
    ax.plot(j, g0 * 2.0 ** -(j - 1), "--", color="black", label="G_h(1) * 2^-(j-1) (claimed lower-bound rate)")
    d = res["decay_rate_per_rank"]
    ax.plot([], [], "-", color=BLUE, label=f"measured, one line per run (rate {d['mean']:.2f} ± {d['sd']:.2f} bits/rank)")
    ax.set(yscale="log", xlabel="j (j-th closest clean example to the query)", ylabel="mean gate G_h(j)",
           title="Corollary 2 (ii): local bias")
    ax.legend(fontsize=8)
    ax = axes[2]
    lo = [res["logit_outlier_by_M1"][k] for k in res["logit_outlier_by_M1"]]
    lc = [res["logit_clean_by_M1"][k] for k in res["logit_clean_by_M1"]]
    ax.plot(M1, lo, "o-", color=VERMILION, label="w^T p, examples with outliers")
    ax.plot(M1, lc, "s-", color=BLUE, label="w^T p, clean examples")
    ax.plot(M1, -np.log(M1), ":", color="grey", label="-log M1 (Lemma 5, eq (37))")
    ax.set(xscale="log", xlabel="M1", ylabel="mean w^T p on training prompts", title="Lemma 5 after training")
    ax.legend(fontsize=8)
    ax.set_xticks(M1, [str(m) for m in M1])
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return path


def trajectory(res, path: Path) -> Path:
    """theory_lemmas.png: projections of w^(t) - w^(0), mean w^T p, and the Lemma 6 sum along training."""
    h = {k: np.asarray(v) for k, v in res["history"].items()}
    t = h["step"]
    fig, axes = subplots(1, 3, figsize=(15, 4.4))
    ax = axes[0]
    for key, color, name, lw in (("nu", GREEN, "(nu_k / beta)^T", 0.6), ("mu", BLUE, "(mu_j / beta)^T", 0.8),
                                 ("v_star", VERMILION, "v*_s^T", 1.2)):
        d = h[f"proj_{key}"] - h[f"proj_{key}"][0]
        for k in range(d.shape[1]):
            ax.plot(t, d[:, k], color=color, lw=lw, label=f"{name} (w^(t) - w^(0))" if k == 0 else None)
    ax.axhline(0, color="black", lw=0.5)
    ax.set(xlabel="SGD step t", ylabel="projection of w^(t) - w^(0)", title="Lemmas 4-5: what training adds to w")
    ax.legend(fontsize=8)
    ax = axes[1]
    ax.plot(t, h["wp_outlier"], color=VERMILION, label="examples with outliers")
    ax.plot(t, h["wp_clean"], color=BLUE, label="clean examples")
    ax.plot(t, h["wp_query"], color=PURPLE, ls="--", label="query")
    ax.axhline(res["final"]["minus_log_M1"], color="grey", ls=":", label="-log M1")
    ax.set(xlabel="SGD step t", ylabel="mean w^T p on a fixed training batch", title="Lemmas 4-5: gate logits")
    ax.legend(fontsize=8)
    ax = axes[2]
    colors = [SKY, BLUE, PURPLE, VERMILION]
    for c, l in zip(colors, res["settings"]["lemma6_l_grid"]):
        ax.plot(t, h[f"lemma6_mean_l{l}"], color=c, label=f"mean, l = {l}")
        ax.plot(t, h[f"lemma6_p95_l{l}"], color=c, ls=":", lw=0.8)
    if "lemma6" in res:
        ax.axvline(res["lemma6"]["window_t"], color="grey", ls="--", lw=1, label="end of Lemma 6's range (constants 1)")
    ax.set(xlabel="SGD step t", ylabel="sum_i G_i (l - i + 1)", title="Lemma 6 (dotted: 95th percentile)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return path

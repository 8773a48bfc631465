"""Figures of ``python -m numpy_mamba theory`` (one PNG per claim, Okabe-Ito colours).

Every figure carries a footer with the settings it was made with (training p_a, eta, step caps,
test kappa_a', K', number of prompts, seeds); a ``--quick`` run's figures are stamped as smoke runs.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..data import SECTION4
from ..runs.output import subplots
from ..runs.output import footnote, save_figure
from .measure import LABEL_WORD

BLUE, ORANGE, GREEN, VERMILION, PURPLE, SKY = "#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9"
COLOR = {"mamba": BLUE, "linear_transformer": ORANGE}
LABEL = {"mamba": "Mamba", "linear_transformer": "linear Transformer"}
NOTE = "Theory check with the one-layer model of eq (3) (linear Transformer: every gate G = 1), world of Section 4"
P_A_MARKER = {0.3: "D", 0.6: "o", 0.4: "^", 0.0: "v", 0.2: "<", 0.7: ">", 0.8: "p"}
GROUP_STYLE = {0: (VERMILION, "training partner (a training task)"), 1: (PURPLE, "reversed training pair"),
               2: (SKY, "2 steps apart (never a training task)"), 3: ("black", "3 steps apart (never a training task)")}


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


def _eta(eta) -> str:
    """A footer's step size: one number, or the step-size rule's choice per model and p_a (or per M1)."""
    if not isinstance(eta, dict):
        return f"eta = {eta}"
    short = {"mamba": "Mamba", "linear_transformer": "LT"}
    if all(isinstance(v, dict) for v in eta.values()):
        parts = [f"{short.get(m, m)} " + ", ".join(f"{e:g} (p_a {p})" for p, e in by.items()) for m, by in eta.items()]
    else:
        parts = [", ".join(f"{e:g} (M1 {M1})" for M1, e in eta.items())]
    return "eta chosen by the step-size rule: " + "; ".join(parts)


def _finish(fig, path: Path, settings: dict, footer: str, bottom: float = 0.13) -> Path:
    """Footer with the settings, layout, the smoke stamp of a quick run, save."""
    footnote(fig, footer, NOTE)
    fig.tight_layout(rect=(0, bottom, 1, 0.95))
    return save_figure(fig, path, bool(settings.get("quick")))


def _scatter_T(ax, x, T_by_seed, color, label, T_max=None, jitter=0.0):
    """Steps to eps per seed (points) and their median (line); a run that never reached eps is
    drawn as an open triangle at T_max (the cap), not dropped."""
    for k, T in enumerate(T_by_seed):
        pts = [(xi * (1 + jitter * (k - 1)), t) for xi, t in zip(x, T) if t is not None and t >= 1]
        if pts:
            xs, ts = zip(*pts)
            ax.plot(xs, ts, "o", color=color, alpha=0.6, ms=4, label=label if k == 0 else None)
    missed = [xi * (1 + jitter * (k - 1)) for k, T in enumerate(T_by_seed) for xi, t in zip(x, T) if t is None]
    if missed and T_max is not None:
        ax.plot(missed, [T_max] * len(missed), "^", color=color, mfc="none", ms=9, mew=1.5,
                label=f"{label.split(' (')[0]}: eps not reached in {T_max} steps (drawn at the cap)")
    med = [np.median([T[i] for T in T_by_seed if T[i] is not None]) if any(T[i] is not None for T in T_by_seed)
           else np.nan for i in range(len(x))]
    ax.plot(x, med, "-", color=color, lw=1.5)


def _slope_label(model, sl):
    return f"{LABEL[model]} (slope {sl['mean']:.2f} ± {sl['sd']:.2f})" if sl["mean"] is not None else LABEL[model]


def convergence(res_p, res_l, path: Path) -> Path:
    """theory_convergence.png: steps to eps vs 1/(1-p_a) and vs l_tr, and T_M / T_T vs l_tr (Theorems 1, 3)."""
    sp, sl_ = res_p["settings"], res_l["settings"]
    fig, axes = subplots(1, 3, figsize=(16, 6.4))
    ax = axes[0]
    x = res_p["x_inv_one_minus_p_a"]
    for model in ("mamba", "linear_transformer"):
        _scatter_T(ax, x, res_p["T"][model], COLOR[model], _slope_label(model, res_p["slope"][model]),
                   T_max=sp["T_max"][model])
    ax.plot(x, np.asarray(x) / x[0] * np.nanmedian([T[0] for T in res_p["T"]["mamba"] if T[0]]), ":", color="grey",
            label="slope 1 (claim)")
    ax.set(xscale="log", yscale="log", xlabel=r"$1 / (1 - p_a)$", ylabel=f"steps until held-out loss < {sp['eps']}",
           title=rf"Theorems 1, 3: T vs $p_a$ ($l_{{tr}}$ = {sp['l_tr']})")
    ax = axes[1]
    for model in ("mamba", "linear_transformer"):
        _scatter_T(ax, res_l["l_tr"], res_l["T"][model], COLOR[model], _slope_label(model, res_l["slope"][model]),
                   T_max=sl_["T_max"][model])
    ax.set(xscale="log", yscale="log", xlabel=r"$l_{tr}$ (context examples in training prompts)",
           ylabel=f"steps until held-out loss < {sl_['eps']}", title=rf"T vs $l_{{tr}}$ ($p_a$ = {sl_['p_a']})")
    ax = axes[2]
    sl = res_l["slope"]["ratio"]
    lab = f"measured (slope {sl['mean']:.2f} ± {sl['sd']:.2f})" if sl["mean"] is not None else "measured"
    _scatter_T(ax, res_l["l_tr"], res_l["ratio_T_M_over_T_T"], GREEN, lab)
    l = np.asarray(res_l["l_tr"], float)
    first = [r[0] for r in res_l["ratio_T_M_over_T_T"] if r[0]]
    if first:
        ax.plot(l, l / l[0] * np.median(first), ":", color="grey", label=r"slope 1 (claim: $T_M / T_T \sim l_{tr}$)")
    missing = sum(r is None for row in res_l["ratio_T_M_over_T_T"] for r in row)
    if missing:
        ax.plot([], [], " ", label=f"{missing} (l_tr, seed) runs without a ratio (a model did not reach eps)")
    ax.set(xscale="log", yscale="log", xlabel=r"$l_{tr}$", ylabel=r"$T_M / T_T$",
           title="Ratio of iterations, Mamba / linear Transformer")
    for a in axes:
        _plain_log_ticks(a)
        a.legend(fontsize=8.5, loc="upper center", bbox_to_anchor=(0.5, -0.14))
    axes[0].set_xticks(x, [f"{v:.3g}" for v in x])
    for a in axes[1:]:
        a.set_xticks(res_l["l_tr"], [str(v) for v in res_l["l_tr"]])
    footer = (f"Left: p_a in {sp['p_a_grid']}, l_tr = {sp['l_tr']}. Middle, right: l_tr in {sl_['l_tr_grid']}, "
              f"p_a = {sl_['p_a']}. Both: eta = {sp['eta']}, delta = {sp['delta']}, B = {sp['B']}, kappa_a = {SECTION4.kappa_a:g}, "
              f"eps = {sp['eps']} on 128 fixed held-out training prompts (checked before every step); step caps "
              f"Mamba {sp['T_max']['mamba']}, linear Transformer {sp['T_max']['linear_transformer']}; "
              f"{len(sp['seeds'])} seeds (points), line: median over the seeds that reached eps.")
    return _finish(fig, path, sp, footer, bottom=0.07)


def tolerated(res, lt_need, path: Path) -> Path:
    """theory_alpha.png: error vs alpha, alpha* vs p_a l_tr / l_ts, and l_ts needed vs (1/2 - alpha)^-2 alpha (Theorems 2, 4)."""
    s = res["settings"]
    fig, axes = subplots(1, 3, figsize=(16, 6.6))
    ax = axes[0]
    l_show, seed0 = s["l_ts_grid"][min(1, len(s["l_ts_grid"]) - 1)], s["seeds"][0]
    styles = {s["kappa_a_prime"][0]: "-", s["kappa_a_prime"][-1]: "--"}
    for r in res["runs"]:
        if r["l_ts"] == l_show and r["seed"] == seed0 and r["errors"] is not None and r["p_a"] == max(s["p_a_train"][r["model"]]):
            ax.plot(s["alphas"], r["errors"], styles[r["kappa_a_prime"]], color=COLOR[r["model"]],
                    label=rf"{LABEL[r['model']]}, $\kappa_a'$ = {r['kappa_a_prime']:g}")
    ax.axhline(s["threshold"], color="grey", lw=0.8, ls=":", label=f"threshold {s['threshold']}")
    ax.axvline(0.5, color="black", lw=0.8, ls=":")
    ax.set(xlabel=r"$\alpha$ (fraction of test examples with outliers)", ylabel="test error, eq (5)",
           title=rf"Test error vs $\alpha$ ($l_{{ts}}$ = {l_show}, seed {seed0}, training $p_a$ = 0.6)", ylim=(0, 1))
    ax.legend(fontsize=8.5)
    ax = axes[1]
    k0 = s["kappa_a_prime"][0]
    for r in res["runs"]:
        if r["alpha_star"] is None:
            continue
        x = r["p_a"] * s["l_tr"] / r["l_ts"]
        ax.plot(x * (1.06 if r["model"] == "linear_transformer" else 1.0), r["alpha_star"],
                P_A_MARKER.get(r["p_a"], "o"), color=COLOR[r["model"]], alpha=0.6, ms=5,
                mfc=None if r["kappa_a_prime"] == k0 else "none")
    xs = np.geomspace(0.05, 3, 100)
    ax.plot(xs, np.minimum(1, xs), "-", color="grey", lw=1, label=r"Theorem 2 (c): $\min(1, p_a l_{tr} / l_{ts})$")
    ax.axhline(0.5, color=ORANGE, lw=1, ls="--", label=r"$\alpha$ = 1/2: Theorem 4 (c) covers $\alpha$ < 1/2 only")
    for model in ("mamba", "linear_transformer"):
        for p_a in s["p_a_train"][model]:
            ax.plot([], [], P_A_MARKER.get(p_a, "o"), color=COLOR[model], label=rf"{LABEL[model]}, trained at $p_a$ = {p_a}")
    ax.plot([], [], "o", color="grey", label=rf"filled: $\kappa_a'$ = {k0:g}; open: {s['kappa_a_prime'][-1]:g}")
    ax.set(xscale="log", xlabel=r"$p_a l_{tr} / l_{ts}$", ylabel=rf"$\alpha^*$: largest $\alpha$ with error <= {s['threshold']}",
           title=r"Tolerated outlier fraction $\alpha^*$ (one point per seed)", ylim=(0, 1.02))
    ax.legend(fontsize=8.5, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2)
    _plain_log_ticks(ax)
    ax = axes[2]
    for k, r in enumerate(lt_need["runs"]):
        pts = [(x, n) for x, n in zip(r["x"], r["l_ts_needed"]) if n is not None]
        if pts:
            ax.plot(*zip(*pts), "o-", color=ORANGE, alpha=0.6, label="linear Transformer (one line per seed)" if k == 0 else None)
    sl = lt_need["slope"]
    if sl["mean"] is not None:
        ax.plot([], [], " ", label=f"slope {sl['mean']:.2f} ± {sl['sd']:.2f} (claim 1)")
    ax.set(xscale="log", yscale="log", xlabel=r"$(1/2 - \alpha)^{-2}\,\alpha$",
           ylabel=rf"smallest $l_{{ts}}$ with error <= {s['threshold']}", title=r"Theorem 4 (d): context needed as $\alpha \to 1/2$")
    ax.legend(fontsize=8.5)
    _plain_log_ticks(ax)
    footer = (f"Training: T = {s['T']}, {_eta(s['eta'])}, delta = {s['delta']}, B = {s['B']}, l_tr = {s['l_tr']}, kappa_a = {SECTION4.kappa_a:g}; "
              f"p_a: Mamba {s['p_a_train']['mamba']}, linear Transformer {s['p_a_train']['linear_transformer']}; "
              f"{len(s['seeds'])} seeds. Test (Definition 2): kappa_a' in {s['kappa_a_prime']}, K' = {s['K_prime']:g}, Section 4's v', "
              f"{LABEL_WORD[s['label_rule']]} outlier labels, {s['B_test']} prompts per point, l_ts in {s['l_ts_grid']}; alpha grid step "
              f"{s['alphas'][1] - s['alphas'][0]:.2g}. Right: p_a = {s['lt_p_a']}, kappa_a' = {s['kappa_a_prime'][0]:g}, "
              f"l_ts up to {s['lt_l_ts_grid'][-1]}.")
    return _finish(fig, path, s, footer, bottom=0.07)


def attention(res, path: Path) -> Path:
    """theory_attention.png: histograms of the attention sums of Corollary 1, eq (16), by task group."""
    fig, ax = subplots(figsize=(9, 6))
    same = np.concatenate([r["same"] for r in res["runs"]])
    diff = np.concatenate([r["different"] for r in res["runs"]])
    group = np.concatenate([r["group"] for r in res["runs"]]).astype(int)
    bins = np.linspace(min(same.min(), diff.min()), max(same.max(), diff.max()), 60)
    ax.hist(same, bins, color=BLUE, alpha=0.5, label=r"same relevant pattern as the query ($i \in N_1$)")
    for k in np.unique(group):
        color, what = GROUP_STYLE.get(int(k), (GREEN, f"group {k}"))
        ax.hist(diff[group == k], bins, color=color, histtype="step", lw=2, label=f"different pattern, task: {what}")
    c = res.get("corollary1")
    if c:
        ax.axvline(c["threshold"], color="grey", ls="--", lw=1,
                   label=f"rule's threshold: {c['ratio']:g} x median same-pattern sum")
    ax.axvline(1.0, color="grey", ls=":", lw=1, label=r"$\Theta(1)$ reference: 1")
    s = res["settings"]
    ax.set(xlabel=r"sum of attention scores $p_i^\top W_B^\top W_C\, p_{query}$ over the group",
           ylabel="testing prompts", title=rf"Corollary 1 (Mamba trained at $p_a$ = {s['cor1_p_a']})")
    ax.set_ylim(0, 1.65 * ax.get_ylim()[1])                        # room for the legend above the bars
    ax.legend(fontsize=8.5, loc="upper left")
    footer = (f"Training: p_a = {s['cor1_p_a']}, T = {s['T']}, {_eta(s['eta'])}, delta = {s['delta']}, B = {s['B']}, "
              f"l_tr = {s['l_tr']}. Test: l_ts = {s['l_ts']}, alpha = {s['alpha']}, kappa_a' = {min(s['kappa_a_prime']):g}, K' = {s['K_prime']:g}, {LABEL_WORD[s['label_rule']]} labels, "
              f"{s['B_test']} prompts x {len(res['runs'])} seeds, pooled.")
    return _finish(fig, path, s, footer, bottom=0.1)


def gates(res, path: Path) -> Path:
    """theory_gates.png: outlier gates vs M1 (17), gates by clean rank (18), w^T p vs -log M1 (37)."""
    s = res["settings"]
    fig, axes = subplots(1, 3, figsize=(16, 5.6))
    M1 = np.asarray(res["M1"])
    ax = axes[0]
    for r in res["runs"]:
        ax.plot(r["M1"], r["test"]["G_outlier"], "o", color=VERMILION, alpha=0.6)
        ax.plot(r["M1"], r["test"]["G_clean"], "s", color=BLUE, alpha=0.6)
    ax.plot([], [], "o", color=VERMILION, label=f"outlier examples (slope {res['slope_G_outlier_vs_M1']:.2f})")
    ax.plot([], [], "s", color=BLUE, label="clean examples")
    ax.plot(M1, 1.0 / M1, ":", color="grey", label=r"$1 / M_1$ (a poly$(M_1)^{-1}$)")
    ax.set(xscale="log", yscale="log", xlabel=r"$M_1$ (relevant patterns)", ylabel=r"mean gate $G_{i,l+1}$ on test prompts",
           title="Corollary 2 (i): gates on outlier examples")
    ax.legend(fontsize=8.5)
    ax.set_xticks(M1, [str(m) for m in M1])
    ax = axes[1]
    J = s["decay_J"]
    for r in res["runs"]:
        g = [v for v in r["test"]["clean_rank_gate"][:J] if v is not None]
        ax.plot(np.arange(1, len(g) + 1), g, "-", color=BLUE, alpha=0.35)
    j = np.arange(1, J + 1)
    g0 = np.median([r["test"]["clean_rank_gate"][0] for r in res["runs"]])
    ax.plot(j, g0 * 2.0 ** -(j - 1), "--", color="black", label=r"$G_{h(1)} \cdot 2^{-(j-1)}$ (claimed lower-bound rate)")
    d = res["decay_rate_per_rank"]
    ax.plot([], [], "-", color=BLUE, label=f"measured, one line per run (rate {d['mean']:.2f} ± {d['sd']:.2f} bits/rank)")
    ax.set(yscale="log", xlabel="j (j-th closest clean example to the query)", ylabel=r"mean gate $G_{h(j)}$",
           title="Corollary 2 (ii): local bias")
    ax.legend(fontsize=8.5)
    ax = axes[2]
    lo = [res["logit_outlier_by_M1"][k] for k in res["logit_outlier_by_M1"]]
    lc = [res["logit_clean_by_M1"][k] for k in res["logit_clean_by_M1"]]
    ax.plot(M1, lo, "o-", color=VERMILION, label=r"$w^\top p$, examples with outliers")
    ax.plot(M1, lc, "s-", color=BLUE, label=r"$w^\top p$, clean examples")
    ax.plot(M1, -np.log(M1), ":", color="grey", label=r"$-\log M_1$ (Lemma 5, eq (37))")
    ax.set(xscale="log", xlabel=r"$M_1$", ylabel=r"mean $w^\top p$ on training prompts", title="Lemma 5 after training")
    ax.legend(fontsize=8.5)
    ax.set_xticks(M1, [str(m) for m in M1])
    fig.suptitle(rf"Corollary 2 and Lemma 5: Mamba trained at $p_a$ = {s['p_a']}, tested at $\kappa_a'$ = 2, "
                 rf"$\alpha$ = {s['alpha']} (reproduce's fig4: $p_a$ = 0.4, $\kappa_a'$ = 8, so its values differ)")
    footer = (f"Training: p_a = {s['p_a']}, T = {s['T']}, {_eta(s['eta'])}, delta = {s['delta']}, B = {s['B']}, "
              f"l_tr = {s['l_tr']}, kappa_a = {SECTION4.kappa_a:g}, M1 in {s['M1_grid']} (one world each), {len(s['seeds'])} seeds. "
              f"Test (Definition 2): kappa_a' = {s['kappa_a_prime']:g}, K' = {s['K_prime']:g}, {LABEL_WORD[s['label_rule']]} labels, alpha = {s['alpha']}, l_ts = {s['l_ts']}, "
              f"{s['B_test']} prompts per run; w^T p on {s['B_test']} training prompts.")
    return _finish(fig, path, s, footer)


def trajectory(res, path: Path) -> Path:
    """theory_lemmas.png: projections of w^(t) - w^(0), mean w^T p, and the Lemma 6 sum along training."""
    s = res["settings"]
    h = {k: np.asarray(v) for k, v in res["history"].items()}
    t = h["step"]
    fig, axes = subplots(1, 3, figsize=(16, 5.4))
    ax = axes[0]
    for key, color, name, lw in (("nu", GREEN, r"$(\nu_k / \beta)^\top$", 0.6), ("mu", BLUE, r"$(\mu_j / \beta)^\top$", 0.8),
                                 ("v_star", VERMILION, r"$v_s^{*\top}$", 1.2)):
        d = h[f"proj_{key}"] - h[f"proj_{key}"][0]
        for k in range(d.shape[1]):
            ax.plot(t, d[:, k], color=color, lw=lw, label=f"{name}" + r"$(w^{(t)} - w^{(0)})$" if k == 0 else None)
    ax.axhline(0, color="black", lw=0.5)
    ax.set(xlabel="SGD step t", ylabel=r"projection of $w^{(t)} - w^{(0)}$", title="Lemmas 4-5: what training adds to w")
    ax.legend(fontsize=8.5)
    ax = axes[1]
    ax.plot(t, h["wp_outlier"], color=VERMILION, label="examples with outliers")
    ax.plot(t, h["wp_clean"], color=BLUE, label="clean examples")
    ax.plot(t, h["wp_query"], color=PURPLE, ls="--", label="query")
    ax.axhline(res["final"]["minus_log_M1"], color="grey", ls=":", label=r"$-\log M_1$")
    ax.set(xlabel="SGD step t", ylabel=r"mean $w^\top p$ on a fixed training batch", title="Lemmas 4-5: gate logits")
    ax.legend(fontsize=8.5)
    ax = axes[2]
    colors = [SKY, BLUE, PURPLE, VERMILION]
    for c, l in zip(colors, s["lemma6_l_grid"]):
        ax.plot(t, h[f"lemma6_mean_l{l}"], color=c, label=f"mean, l = {l}")
        ax.plot(t, h[f"lemma6_p95_l{l}"], color=c, ls=":", lw=0.8)
    if "lemma6" in res:
        ax.axvspan(0, res["lemma6"]["window_t"], color="grey", alpha=0.2, lw=0,
                   label=f"Lemma 6's range: t <= t* = {res['lemma6']['window_t']:.0f}\n(Lemma 4's first phase)")
        if "window_constants_1" in res["lemma6"]:
            ax.axvspan(0, res["lemma6"]["window_constants_1"], facecolor="none", edgecolor="grey", hatch="//", lw=0,
                       label=f"with every constant 1:\nt <= {res['lemma6']['window_constants_1']:.0f}")
    ax.set_xscale("symlog", linthresh=10)                           # so the lemma's short range is visible
    ax.set(xlabel="SGD step t (linear up to 10, log beyond)", ylabel=r"$G_1 l + G_2 (l-1) + \ldots + G_l$ (Lemma 6 sum)",
           title="Lemma 6 (dotted: 95th percentile)")
    ax.legend(fontsize=8.5, loc="center left")                     # where only the shading is: no curve behind it
    footer = (f"One Mamba run: seed {s['seed']}, p_a = {s['p_a']}, kappa_a = {s.get('kappa_a', 2.0):g}, T = {s['T']}, "
              f"eta = {s['eta']}, delta = {s['delta']}, B = {s['B']}, l_tr = {s['l_tr']}; recorded every "
              f"{s['record_every']} steps on {s['B_held']} fixed training prompts (Lemma 6: {s['B_held']} prompts per l).")
    return _finish(fig, path, s, footer, bottom=0.1)

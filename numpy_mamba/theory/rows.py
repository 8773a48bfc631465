"""The theory section's rows of REPORT.md's results table (``measure.rules.claim_row``), one per
claim, from judged results (``claims.judge``), with the rules they cite written once (``RULES``)."""
from __future__ import annotations

import numpy as np

from ..measure.rules import COROLLARY1_RULE, EXPONENT_TOL, SD_RULE, THEOREM4_RULE
from ..runs.claims import claim_row
from ..runs.step_size import RULES as STEP_RULES
from .claims import ALPHA_RULES, SLOPE_RULE, THM4D_TOL
from .verdicts import GATE_RULES, TRAJECTORY_RULES

RULES = {"slope": SLOPE_RULE.format(tol=EXPONENT_TOL) + f". Theorem 4 (d): within {THM4D_TOL:g}, its l_ts grid being "
                                                         "coarser",
         **ALPHA_RULES, "thm4": THEOREM4_RULE.format(eps="0.25 and 0.1"), "cor1": COROLLARY1_RULE.format(r=0.1),
         **GATE_RULES, **TRAJECTORY_RULES, **STEP_RULES, "sd": SD_RULE}
SECTIONS = {"convergence": "#theorems-1-and-3-iterations-to-converge", "alpha": "#theorems-2-and-4-tolerated-outlier-fraction",
            "cor1": "#corollary-1-attention-concentrates-on-same-pattern-examples",
            "gates": "#corollary-2-and-lemma-5-gates", "lemmas": "#lemmas-4-6-along-training"}


def _pm(sl) -> str:
    return "n/a" if sl is None or sl.get("mean") is None else f"{sl['mean']:.2f} ± {sl['sd']:.2f} ({len(sl['per_seed'])} seeds)"


def _see(png: str, part: str) -> list:
    return [(png, png), ("section", SECTIONS[part])]


def rows(results: dict) -> list:
    """Every claim of the theory section, judged."""
    return _convergence_rows(results) + _alpha_rows(results) + _mechanism_rows(results)


def _convergence_rows(results: dict) -> list:
    p, l = results["convergence_p_a"], results["convergence_l_tr"]
    see = _see("theory_convergence.png", "convergence")
    return [claim_row("thm1", "Thm 1, eq (9): Mamba's steps to converge T_M = Theta((1-p_a)^-1)",
                      "slope 1 of log T_M on log 1/(1-p_a)", f"slope {_pm(p['slope']['mamba'])}", p["judged"]["mamba"],
                      "slope", see, headline=("Thm 1: slope of log T_M on log 1/(1-p_a)", "1",
                                              f"{p['slope']['mamba']['mean']:.2f}" if p["slope"]["mamba"]["mean"] is not None
                                              else "n/a")),
            claim_row("thm3", "Thm 3, eq (14): the linear Transformer's steps T_T = Theta((1-p_a)^-1)",
                      "slope 1 of log T_T on log 1/(1-p_a)", f"slope {_pm(p['slope']['linear_transformer'])}",
                      p["judged"]["linear_transformer"], "slope", see),
            claim_row("remark4", "Remark 4: T_M / T_T = Theta(l_tr)", "slope 1 of log(T_M/T_T) on log l_tr",
                      f"slope {_pm(l['slope']['ratio'])}", l["judged"]["ratio"], "slope", see)]


def _alpha_rows(results: dict) -> list:
    a, lt = results["alpha"], results["lt_context"]
    see = _see("theory_alpha.png", "alpha")
    s, excess = a["settings"], a.get("theorem2_excess", {})
    key = f"p_a = {s['cor1_p_a']:g}, kappa_a' = {min(s['kappa_a_prime']):g}, l_ts = {s['l_ts']}"
    main = excess.get(key) or next(iter(excess.values()), None)
    corr = "n/a" if a.get("mamba_alpha_star_vs_predicted_corr") is None else f"{a['mamba_alpha_star_vs_predicted_corr']:+.2f}"
    ours = (f"{key if key in excess else next(iter(excess))}: error added by outliers up to alpha = "
            f"{main['alphas'][-1]:g}: {main['worst']:.3f}; alpha* and bound correlate at {corr}") if main else "n/a"
    out = []
    if "mamba" in a.get("judged", {}):
        out.append(claim_row("thm2", "Thm 2 (c), theory grid: Mamba's error <= eps for alpha < min(1, p_a l_tr / l_ts)",
                             "error <= eps where (c) and (d) hold", ours, a["judged"]["mamba"], "thm2-alpha", see,
                             headline=(f"Thm 2 (c): error added by outliers below the bound, {key}", "<= eps = 0.01",
                                       f"{main['worst']:.3f}" if main else "n/a")))
    if "remark5" in a.get("judged", {}):
        out.append(claim_row("remark5_alpha", "Remark 5: Mamba tolerates more outliers than the linear Transformer",
                             "Mamba's alpha* above the LT's", f"largest alpha*: Mamba {a['mamba_alpha_star_max']:.2f}, "
                             f"LT {a['lt_alpha_star_max']:.2f}", a["judged"]["remark5"], "remark5-alpha", see))
    if "linear_transformer" in a.get("judged", {}):
        worst = max(a["theorem4"]["by_eps"].values(), key=lambda r: r["eps"])["worst"]
        out.append(claim_row("thm4", "Thm 4: the linear Transformer's error <= eps where (b)-(d) hold",
                             "error <= eps (a sufficient condition)", f"highest interval end {worst['high']:.3f} at "
                             f"eps = {max(a['theorem4']['by_eps'].values(), key=lambda r: r['eps'])['eps']:g}",
                             a["judged"]["linear_transformer"], "thm4", see))
    if "judged" in lt:
        out.append(claim_row("thm4d", "Thm 4 (d), eq (15): context needed l_ts = Theta((1/2-alpha)^-2 alpha)",
                             "slope 1 of log l_ts on log((1/2-alpha)^-2 alpha)", f"slope {_pm(lt['slope'])}",
                             lt["judged"], "slope", see,
                             headline=("Thm 4 (d): slope of log l_ts on log((1/2-alpha)^-2 alpha)", "1",
                                       f"{lt['slope']['mean']:.2f}" if lt["slope"]["mean"] is not None else "n/a")))
    return out


def _mechanism_rows(results: dict) -> list:
    att, g, t = results["attention"], results["gates"], results["trajectory"]
    out = []
    if "corollary1" in att:
        c = att["corollary1"]
        out.append(claim_row("cor1_theory", "Cor 1 (theory run): attention concentrates on same-pattern examples",
                             "sum over N_1 >= Theta(1); rest <= Theta((1-p_a)^-1 eps)", f"median same {c['median_same']:.1f}; "
                             "other: " + ", ".join(f"{k.replace('_', ' ')} {v['median_different']:+.1f}"
                                                   for k, v in c["by_group"].items()), c, "cor1",
                             _see("theory_attention.png", "cor1")))
    see = _see("theory_gates.png", "gates")
    ratio6 = g["gate_ratio"]["ratio_range_by_M1"].get(6, g["gate_ratio"]["ratio_range_by_M1"].get("6"))
    decay = list(g["decay_by_M1"].values())
    for key, title, paper, ours, rule, head in (
            ("cor2_outlier_gates", "Cor 2 (i), eq (17): outlier gates fall as M1 grows", "O(poly(M1)^-1)",
             f"slope {g['slope_G_outlier_vs_M1']:.2f} of log G on log M1", "m1-slope", None),
            ("cor2_gate_ratio", "Cor 2 (i), eq (17): outlier gate <= clean gate / M1 at each position", "<= 1/M1",
             f"M1 = 6: {ratio6[0]:.2f}-{ratio6[1]:.2f}" if ratio6 else "n/a", "gate-ratio",
             ("Cor 2 (i): outlier / clean gate at M1 = 6", "<= 0.167", f"{ratio6[0]:.2f}-{ratio6[1]:.2f}") if ratio6 else None),
            ("cor2_local_bias", "Cor 2 (ii), eq (18): clean gates decay no faster than 2^-(j-1)", "<= 1 bit per rank",
             f"{np.mean([d['bits_per_rank'] for d in decay]):.2f} bits per rank (mean over M1)" if decay else "n/a",
             "decay", None),
            ("lemma5_outlier_logits", "Lemma 5, eq (37): w^T p <= -log M1 on outlier examples", "<= -log M1",
             "w^T p " + ", ".join(f"{v:.1f}" for v in g["logit_outlier_by_M1"].values()), "logit-outlier", None),
            ("lemma5_clean_logits", "Lemma 5, eq (38): w^T p of order 1 on clean examples", ">~ -Theta(1)",
             "w^T p " + ", ".join(f"{v:.1f}" for v in g["logit_clean_by_M1"].values()), "logit-clean", None)):
        out.append(claim_row(key, title, paper, ours, g["judged"][key], rule, see, headline=head))
    see = _see("theory_lemmas.png", "lemmas")
    out += [claim_row("lemma4_signs", "Lemma 4: signs of w's projections (v*, mu < 0; nu small)", "v*^T w, mu^T w < 0",
                      f"v* {t['final']['v_star']:.2f}, mu {t['final']['mu']:.2f}, |nu| {t['final']['abs_nu']:.3f}",
                      t["judged"]["lemma4_signs"], "signs", see),
            claim_row("lemma4_5_phases", "Lemmas 4-5: w^T v* falls in two phases", "slow, fast, then log t",
                      f"t* = {t['phases']['v_star']['t_star']:.0f}", t["judged"]["lemma4_5_two_phases"], "phases", see),
            claim_row("lemma6", "Lemma 6, eq (39): sum_i G_i (l - i + 1) <= Theta(1) in the first phase", "Theta(1)",
                      "largest " + ", ".join(f"{v['max_mean_in_window']:.2f}" for v in t["lemma6"]["by_l"].values())
                      + f" (t <= {t['lemma6']['window_t']:.0f})", t["judged"]["lemma6_in_window"], "lemma6", see)]
    return out

"""Verdicts for the claims of the paper's Section 4, each from a rule written in its row.

Every function takes one experiment's JSON-ready result and returns table rows
[claim, paper, ours, verdict]; verdicts are "reproduced", "partly" or "not".
"""
from __future__ import annotations

import numpy as np

from .fig2 import point
from .figures import PAPER_TABLE1, clean_rank_curve

RULES = ("flip", "target", "random")


def _r(e) -> float:
    return float("nan") if e["rate"] is None else e["rate"]


def _fig2_claims(res: dict) -> list:
    s = res["settings"]
    alphas = np.asarray(s["alphas"])
    main = f"kappa_a' = {s['main_kappa_a_prime']:g}, K' = {s['main_K_prime']:g}"
    low_kappa = min(s["kappa_a_primes"])
    at = {r: {sub: _r(point(res, "mamba", r, sub, 0.8)) for sub in ("all", "seen", "unseen")} for r in RULES}
    at2 = {r: _r(point(res, "mamba", r, "all", 0.8, low_kappa)) for r in RULES}
    ok_all = [at[r]["all"] <= 0.01 for r in RULES]
    ok_seen = [at[r]["seen"] <= 0.01 for r in RULES]
    verdict = ("reproduced" if all(ok_all) else "partly" if any(ok_all) or all(ok_seen) else "not")
    reason = ""
    if not all(ok_all):
        worse = np.mean([at[r]["unseen"] - at[r]["seen"] for r in RULES])
        reason = (" Most of the error is on tasks never seen in training." if worse > 0.01 else "")
        reason += (f" On tasks seen in training the claim holds in {sum(ok_seen)} of 3 labellings.")
        reason += (f" With kappa_a' = {low_kappa:g} (allowed by Thm 2) the all-task error is "
                   + ", ".join(f"{at2[r]:.3f}" for r in RULES) + ".")
    rows = [["Fig 2: Mamba's error < 0.01 with alpha close to 0.8 (A flip, B target, C random)",
             "< 0.01 at alpha ~ 0.8 in all three",
             f"alpha = 0.8, {main}: all tasks " + ", ".join(f"{at[r]['all']:.3f}" for r in RULES)
             + "; seen " + ", ".join(f"{at[r]['seen']:.3f}" for r in RULES)
             + "; unseen " + ", ".join(f"{at[r]['unseen']:.3f}" for r in RULES) + " (A, B, C)",
             f"**{verdict}** (rule: all-task error <= 0.01 in A, B and C; partly if in some, or on seen tasks "
             f"in all).{reason}"]]
    a_in = alphas[alphas < s["p_a_fig2"] - 1e-9].max()
    inside = [_r(point(res, "mamba", r, "all", a_in)) for r in RULES]
    v = "reproduced" if max(inside) <= 0.01 else "partly" if max(inside) <= 0.1 else "not"
    rows.append([f"Thm 2: Mamba's error <= eps for alpha < min(1, p_a l_tr / l_ts) = {s['p_a_fig2']:g}",
                 "guarantee only up to alpha < 0.6, below Fig 2's alpha ~ 0.8",
                 f"alpha = {a_in:g}: " + ", ".join(f"{x:.3f}" for x in inside) + " (A, B, C)",
                 f"**{v}** (rule: <= 0.01 reproduced, <= 0.1 partly)"])
    above = alphas > 0.5 + 1e-9
    lt_min = {r: min(_r(point(res, "linear_transformer", r, "all", a)) for a in alphas[above]) for r in RULES}
    lt_low = {r: _r(point(res, "linear_transformer", r, "all", 0.3)) for r in RULES}
    big = [lt_min[r] >= 0.1 for r in RULES]
    v = "reproduced" if all(big) else "partly" if any(big) else "not"
    rows.append(["Fig 2: the linear Transformer's error is large as soon as alpha > 1/2",
                 "large for alpha > 1/2 (A, B, C)",
                 "smallest LT error over alpha > 1/2: " + ", ".join(f"{lt_min[r]:.3f}" for r in RULES)
                 + "; at alpha = 0.3: " + ", ".join(f"{lt_low[r]:.3f}" for r in RULES) + " (A, B, C)",
                 f"**{v}** (rule: >= 0.1, ten times the paper's 0.01 level, at every alpha > 1/2 in A, B, C)"
                 + (" The LT's error is not small below 1/2 either." if min(lt_low.values()) > 0.05 else "")])
    better = [all(_r(point(res, "mamba", r, "all", a)) < _r(point(res, "linear_transformer", r, "all", a))
                  for a in alphas[above]) for r in RULES]
    v = "reproduced" if all(better) else "partly" if any(better) else "not"
    rows.append(["Remark 5 / Fig 2: Mamba tolerates more outliers than the linear Transformer",
                 "Mamba's error below LT's for alpha > 1/2",
                 "Mamba below LT at every alpha > 1/2 in: " + (", ".join(r for r, b in zip(RULES, better) if b) or "none"),
                 f"**{v}** (rule: pooled error lower at every alpha > 1/2, per labelling)"])
    seen0 = _r(point(res, "mamba", "flip", "seen", 0.0))
    unseen0 = _r(point(res, "mamba", "flip", "unseen", 0.0))
    lt_unseen0 = _r(point(res, "linear_transformer", "flip", "unseen", 0.0))
    v = "reproduced" if unseen0 <= 0.01 else "partly" if unseen0 <= 0.1 else "not"
    rows.append(["Thms 1-2: generalisation to tasks never seen in training",
                 "error <= eps on all tasks of T, seen or not",
                 f"alpha = 0 (no outliers), {main}: Mamba seen {seen0:.3f}, unseen {unseen0:.3f}; LT unseen "
                 f"{lt_unseen0:.3f}",
                 f"**{v}** (rule: unseen-task error <= 0.01 reproduced, <= 0.1 partly)"])
    return rows


def _fig3_claims(res: dict) -> list:
    runs = res["per_seed"]["mamba"]
    same = np.array([r["score_same"] for r in runs])                       # (S, records)
    diff = np.array([r["score_diff"] for r in runs])
    s0, s1, d0, d1 = same[:, 0].mean(), same[:, -1].mean(), diff[:, 0].mean(), diff[:, -1].mean()
    gap_grows = bool(np.all(same[:, -1] - diff[:, -1] > same[:, 0] - diff[:, 0]))
    ok = s1 >= 1 and gap_grows and d1 <= 0.1 * s1
    lt = res["per_seed"]["linear_transformer"]
    lt_s1 = np.mean([r["score_same"][-1] for r in lt])
    lt_d1 = np.mean([r["score_diff"][-1] for r in lt])
    return [["Fig 3 / Corollary 1: attention concentrates on examples with the query's pattern; the gap grows",
             "sum over N_1 >= Theta(1); sum over the rest <= Theta((1-p_a)^-1 eps); gap grows in training",
             f"Mamba, step 0 -> {runs[0]['step'][-1]}: same {s0:.2f} -> {s1:.2f}, different {d0:.2f} -> {d1:.2f} "
             f"(mean over prompts and seeds); LT at the end: same {lt_s1:.2f}, different {lt_d1:.2f}",
             f"**{'reproduced' if ok else 'partly'}** (rule: final same-sum >= 1, gap larger at the end in every "
             "seed, final different-sum <= 0.1 x same-sum; a negative different-sum satisfies Corollary 1's "
             "upper bound)"]]


def _fig4_claims(res: dict) -> list:
    runs = res["per_seed"]
    out_mean = np.mean([r["outlier_gate_mean"] for r in runs])
    out_max = np.max([r["outlier_gate_max"] for r in runs])
    clean_mean = np.mean([r["clean_gate_mean"] for r in runs])
    per_pos_out = np.array([[np.nan if v is None else v for v in r["outlier_mean"]] for r in runs])
    per_pos_clean = np.array([[np.nan if v is None else v for v in r["clean_mean"]] for r in runs])
    ratio = np.nanmean(per_pos_out, 0) / np.nanmean(per_pos_clean, 0)        # (l,) outlier / clean
    M1 = res["paper"]["M1"]
    below_everywhere = bool(np.all(ratio[np.isfinite(ratio)] < 1))
    v1 = ("reproduced" if out_mean <= M1 ** -2 and below_everywhere
          else "partly" if out_mean <= 1 / M1 else "not")
    j, rank = clean_rank_curve(runs)
    log_mean = np.log(rank.mean(axis=0))
    slope, intercept = np.polyfit(j, log_mean, 1)
    r2 = 1 - np.sum((log_mean - intercept - slope * j) ** 2) / np.sum((log_mean - log_mean.mean()) ** 2)
    above_bound = bool(np.all(log_mean >= log_mean[0] + (j - 1) * np.log(0.5) - 1e-12))
    v2 = "reproduced" if r2 >= 0.9 and slope < 0 and above_bound else "partly"
    return [["Fig 4 / Corollary 2 (i): gates on outlier examples are near zero",
             "G_{i,l+1} <= O(poly(M1)^-1) on outlier examples (red bars very small)",
             f"mean outlier gate {out_mean:.1e} (max {out_max:.2f}); mean clean gate {clean_mean:.1e}; outlier / "
             f"clean gate at the same position: {np.nanmin(ratio):.2f} to {np.nanmax(ratio):.2f}",
             f"**{v1}** (rule: mean outlier gate <= 1/M1^2 = {M1 ** -2:.3f} and below the clean gate at every "
             f"position; partly if <= 1/M1)"],
            ["Fig 4 / Corollary 2 (ii): clean gates decay about exponentially with distance from the query",
             "G_{h(j),l+1} >= Theta(2^-(j-1)) (green bars decay exponentially)",
             f"log-linear fit over ranks j = 1..{j[-1]}: ratio {np.exp(slope):.2f} per step, R^2 = {r2:.3f}; "
             f"G_h(j) >= G_h(1) 2^-(j-1) at every j: {above_bound}",
             f"**{v2}** (rule: R^2 >= 0.9, decaying, and never below the 2^-(j-1) rate)"]]


def _table1_claims(res: dict) -> list:
    k = str(res["settings"]["main_kappa_a_prime"])
    acc = {m: {p: res["accuracy"][m]["flip"][k][p]["all"]["rate"] for p in ("FQ", "R", "CQ")}
           for m in ("mamba", "linear_transformer")}
    fmt = lambda m: " / ".join(f"{100 * acc[m][p]:.2f}" for p in ("FQ", "R", "CQ"))  # noqa: E731
    paper = lambda m: " / ".join(f"{100 * PAPER_TABLE1[m][p]:.2f}" for p in ("FQ", "R", "CQ"))  # noqa: E731
    close = all(abs(acc[m][p] - PAPER_TABLE1[m][p]) <= 0.02 for m in acc for p in acc[m])
    m_sens = acc["mamba"]["CQ"] == min(acc["mamba"].values()) and acc["mamba"]["FQ"] - acc["mamba"]["CQ"] >= 0.1
    lt_flat = max(acc["linear_transformer"].values()) - min(acc["linear_transformer"].values()) <= 0.05
    m_better = acc["mamba"]["FQ"] > acc["linear_transformer"]["FQ"] and acc["mamba"]["R"] > acc["linear_transformer"]["R"]
    n_ok = sum([m_sens, lt_flat, m_better])
    low = str(min(res["settings"]["kappa_a_primes"]))
    other = "; ".join(
        f"{rule}, kappa_a' = {float(kk):g}: Mamba " + " / ".join(
            f"{100 * res['accuracy']['mamba'][rule][kk][p]['all']['rate']:.1f}" for p in ("FQ", "R", "CQ"))
        + ", LT " + " / ".join(
            f"{100 * res['accuracy']['linear_transformer'][rule][kk][p]['all']['rate']:.1f}" for p in ("FQ", "R", "CQ"))
        for rule in res["label_rules"] for kk in dict.fromkeys((low, k)) if (rule, kk) != ("flip", k))
    acc_low = {p: res["accuracy"]["mamba"]["flip"][low][p]["all"]["rate"] for p in ("FQ", "R", "CQ")}
    low_sens = acc_low["CQ"] == min(acc_low.values()) and acc_low["FQ"] - acc_low["CQ"] >= 0.1
    lt_half = all(abs(acc["linear_transformer"][p] - 0.5) < 0.05 for p in acc["linear_transformer"])
    why = (" With flipped labels and alpha = 1/2, half the context votes each way, so the LT is at chance "
           "(Theorem 4 needs alpha < 1/2)." if lt_half else "")
    return [["Table 1 numbers (alpha = 0.5; FQ / R / CQ)",
             f"Mamba {paper('mamba')} %, LT {paper('linear_transformer')} % (three-layer)",
             f"Mamba {fmt('mamba')} %, LT {fmt('linear_transformer')} % (one layer, flipped labels, "
             f"kappa_a' = {float(k):g})",
             f"**{'reproduced' if close else 'not'}** (rule: every cell within 2 points; the paper's models have "
             f"three layers and it does not give kappa_a', K' or the labelling).{why} Other settings (FQ / R / CQ, "
             f"%): {other}."],
            ["Table 1 pattern: Mamba is sensitive to outlier position (CQ worst), the LT much less; Mamba beats "
             "the LT at FQ and R", "FQ 99.84 > R 99.04 >> CQ 73.28 for Mamba; LT within 0.3 points",
             f"Mamba CQ worst by >= 10 points: {m_sens}; LT spread <= 5 points: {lt_flat}; Mamba > LT at FQ and "
             f"R: {m_better}",
             f"**{'reproduced' if n_ok == 3 else 'partly' if n_ok else 'not'}** (rule: all three hold; partly if "
             f"some do). At kappa_a' = {float(low):g} (flipped labels) Mamba's CQ is worst by >= 10 points: "
             f"{low_sens} (FQ / R / CQ = " + " / ".join(f"{100 * acc_low[p]:.1f}" for p in ("FQ", "R", "CQ"))
             + " %): plausibly, weaker test outliers are less suppressed by the gate, so where they sit matters."]]

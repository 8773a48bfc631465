"""Theorems 1-4 and Remark 5 judged: the verdict rules of the theory section on the measured
numbers of ``theorems.py``, in the vocabulary of ``measure.verdicts``.  ``judge`` applies those
that need more than one experiment (Theorem 4 reads the error curves of two), once the results are
in: after a run, and on the saved JSON of ``theory --replot``; ``summary`` collects every headline
number and verdict of the section (theory_summary.json, the terminal's closing lines).
"""
from __future__ import annotations

import numpy as np

from ..measure.error_verdicts import THEOREM4_RULE, theorem4_kappa_bound, theorem4_sufficient
from ..measure.verdicts import where_it_holds, where_text, word


def slope_verdict(slope_mean, slope_sd, claim, tol=0.25, n=1) -> str:
    """A fitted slope against the exponent a theorem claims (eqs (9), (14), (15)): 'holds' if the
    mean slope over n seeds is within max(tol, 2 standard errors) of the claim; 'holds in trend' if
    it has the claim's sign; otherwise 'does not hold here'."""
    if slope_mean is None:
        return "not measured (too few converged runs)"
    if abs(slope_mean - claim) <= max(tol, 2 * slope_sd / np.sqrt(max(n, 1))):
        return word("full")
    return word("trend") if np.sign(slope_mean) == np.sign(claim) and claim != 0 else word("none")


def convergence_verdict(grid, T_by_seed, slope: dict, label: str = "p_a") -> tuple[str, str]:
    """Eqs (9), (14): T = Theta((1-p_a)^-1 ...) claims a finite T at every grid value, growing with
    the slope claimed.  The slope verdict (``slope_verdict``) is taken where runs reached eps; a grid value
    where no seed reached eps (T = None) is a failure of the claim there, so the verdict becomes
    "holds in part" (or "does not hold here") and the detail names where.  Returns (verdict, detail)."""
    slope_v = slope_verdict(slope["mean"], slope["sd"], slope["claim"], n=len(slope["per_seed"]))
    n_seeds = len(T_by_seed)
    reached = [sum(T[k] is not None for T in T_by_seed) for k in range(len(grid))]
    never = [g for g, r in zip(grid, reached) if r == 0]
    some = [f"{g} ({r}/{n_seeds} seeds)" for g, r in zip(grid, reached) if 0 < r < n_seeds]
    fit_on = [g for g, r in zip(grid, reached) if r > 0]
    detail = f"slope {slope_v} on {label} = {', '.join(map(str, fit_on))}"
    if some:
        detail += f"; eps reached in only some seeds at {label} = {', '.join(some)}"
    if not never:
        return slope_v, detail
    detail += f"; no seed reached eps at {label} = {', '.join(map(str, never))} (T infinite there, against the claim)"
    return (word("part") if slope_v in (word("full"), word("trend")) else word("none")), detail


def judge_tolerated(out: dict, lt_context: dict | None = None) -> dict:
    """Verdicts of Theorem 2 (c), Theorem 4 and Remark 5 from ``out["runs"]``, case by case.

    Theorem 2: in each (p_a, kappa_a', l_ts) case, alpha* >= min(1, p_a l_tr / l_ts) (less one grid
    step) in every seed.  Remark 5: in each case trained at the linear Transformer's p_a, Mamba's
    alpha* > the linear Transformer's in every seed.  "holds" if in every case, "holds in part" if in
    some (``measure.verdicts.where_it_holds``); out["verdict_detail"] names the cases.  Theorem 4:
    ``judge_theorem4`` on the linear Transformer's error curves (and ``lt_context``'s, if given)."""
    s = out["settings"]
    step = float(np.min(np.diff(s["alphas"])))
    mamba = [r for r in out["runs"] if r["model"] == "mamba" and r["alpha_star"] is not None]
    lt = [r for r in out["runs"] if r["model"] != "mamba" and r["alpha_star"] is not None]
    key = lambda r: (r["p_a"], r["kappa_a_prime"], r["l_ts"])  # noqa: E731
    name = lambda k: f"p_a = {k[0]}, kappa_a' = {k[1]:g}, l_ts = {k[2]}"  # noqa: E731
    thm2 = {}
    for r in mamba:
        thm2[name(key(r))] = thm2.get(name(key(r)), True) and r["alpha_star"] >= r["predicted"] - step
    lt_star = {(*key(r), r["seed"]): r["alpha_star"] for r in lt}
    rem5 = {}
    for r in mamba:
        if (*key(r), r["seed"]) in lt_star:
            rem5[name(key(r))] = rem5.get(name(key(r)), True) and r["alpha_star"] > lt_star[(*key(r), r["seed"])]
    out["verdict"], out["verdict_detail"] = {}, {}
    for claim, cases in (("mamba", thm2), ("remark5", rem5)):
        if cases:
            w = where_it_holds(cases)
            out["verdict"][claim], out["verdict_detail"][claim] = word(w["level"]), where_text(w)
        else:
            out["verdict"][claim] = "not measured"
    return judge_theorem4(out, lt_context)


def theorem4_cells(out: dict, lt_context: dict | None = None) -> list:
    """The linear Transformer's error counts per (kappa_a', l_ts, alpha), seeds stacked, from the
    error curves of ``tolerated_alpha`` and, if given, of ``lt_context_needed`` (alpha near 1/2, long
    contexts); runs that diverged have no curve and are left out (Theorem 4 assumes training
    converged, Theorem 3)."""
    s, found = out["settings"], {}
    for r in out["runs"]:
        if r["model"] == "mamba" or r.get("errors") is None:
            continue
        for alpha, e in zip(s["alphas"], r["errors"]):
            found.setdefault((r["kappa_a_prime"], r["l_ts"], alpha), []).append(e)
    if lt_context is not None:
        c = lt_context["settings"]
        for r in lt_context.get("runs", []):
            for alpha, row in zip(c["lt_alphas"], r["errors"]):
                for l_ts, e in zip(c["lt_l_ts_grid"], row):
                    found.setdefault((c["kappa_a_prime"][0], l_ts, alpha), []).append(e)
    if not found:
        return []
    B = s["B_test"]
    return [{"kappa_a_prime": k, "l_ts": l, "alpha": a, "wrong": np.round(np.asarray(e) * B), "n": np.full(len(e), B)}
            for (k, l, a), e in sorted(found.items())]


def judge_theorem4(out: dict, lt_context: dict | None = None) -> dict:
    """Theorem 4 as stated (``measure.error_verdicts.THEOREM4_RULE``, eps = the alpha* threshold): a
    small error wherever conditions (b)-(d) hold.  Adds out["theorem4"], out["verdict"]
    ["linear_transformer"] and its detail.  The linear Transformer's alpha* above 1/2 or not is
    left unjudged here: the theorem does not say the error is large at alpha >= 1/2."""
    s, c = out["settings"], out.get("theorem4_constants")
    cells = theorem4_cells(out, lt_context)
    if c is None or not cells:
        out["verdict"]["linear_transformer"] = "not measured"
        return out
    eps = s["threshold"]
    p_a = min(s["p_a_train"]["linear_transformer"])
    bound = theorem4_kappa_bound(c["V"], c["beta"], p_a, c["kappa_a"], c["L"], s["l_tr"], eps)
    r = theorem4_sufficient(cells, eps, c["M1"], bound)
    out["theorem4"] = dict(r, eps=eps, kappa_bound=bound, rule=THEOREM4_RULE.format(eps=eps))
    if r["level"] is None:
        out["verdict"]["linear_transformer"] = "not measured (no measured cell meets conditions (b)-(d))"
        return out
    out["verdict"]["linear_transformer"] = word(r["level"])
    out["verdict_detail"]["linear_transformer"] = (
        f"{r['claimed']} measured cells meet (b)-(d); {where_text(r)}; highest interval end {r['worst']['high']:.3f} "
        f"(error {r['worst']['rate']:.3f}) at {r['worst']['cell']}")
    return out


def judge(results: dict) -> dict:
    """Theorems 1 and 3 (``convergence_verdict``) and Theorems 2, 4 and Remark 5 (``judge_tolerated``,
    with the error curves of ``lt_context``) on ``results`` ({experiment: result}) as measured or
    as saved; adds the verdicts to the results (applying it twice changes nothing)."""
    p = results["convergence_p_a"]
    for model in p["T"]:
        p["verdict"][model], p.setdefault("verdict_detail", {})[model] = convergence_verdict(
            p["settings"]["p_a_grid"], p["T"][model], p["slope"][model])
    judge_tolerated(results["alpha"], results.get("lt_context"))
    return results


def summary(results) -> dict:
    """The headline numbers and verdicts, one entry per claim (also saved as JSON)."""
    p, l, a = results["convergence_p_a"], results["convergence_l_tr"], results["alpha"]
    g, t = results["gates"], results["trajectory"]
    return {
        "thm1_slope_T_M_vs_inv_1_minus_p_a": p["slope"]["mamba"], "thm1_verdict": p["verdict"]["mamba"],
        "thm3_slope_T_T_vs_inv_1_minus_p_a": p["slope"]["linear_transformer"],
        "thm3_verdict": p["verdict"]["linear_transformer"],
        "slope_T_M_vs_l_tr": l["slope"]["mamba"], "slope_T_T_vs_l_tr": l["slope"]["linear_transformer"],
        "slope_ratio_vs_l_tr": l["slope"]["ratio"], "ratio_verdict": l["verdict"]["ratio"],
        "thm1_detail": p.get("verdict_detail", {}).get("mamba"),
        "thm3_detail": p.get("verdict_detail", {}).get("linear_transformer"),
        "thm2_fraction_meeting_bound": a["mamba_fraction_meeting_bound"], "thm2_verdict": a["verdict"]["mamba"],
        "thm2_detail": a.get("verdict_detail", {}).get("mamba"),
        "remark5_verdict": a["verdict"].get("remark5"), "remark5_detail": a.get("verdict_detail", {}).get("remark5"),
        "step_size_chosen": a["settings"].get("eta"),
        "thm4_max_alpha_star": a["lt_alpha_star_max"], "thm4_verdict": a["verdict"]["linear_transformer"],
        "thm4_detail": a.get("verdict_detail", {}).get("linear_transformer"),
        "thm4d_slope": results["lt_context"]["slope"], "thm4d_verdict": results["lt_context"]["verdict"],
        "cor1_verdict": results["attention"].get("verdict"),
        "cor1_by_task_group": results["attention"].get("corollary1"),
        "thm1_slope_low_p_a": p["slope"].get("mamba_low_p_a"), "thm3_slope_low_p_a": p["slope"].get("linear_transformer_low_p_a"),
        "cor2_slope_G_outlier_vs_M1": g["slope_G_outlier_vs_M1"], "cor2_decay_bits_per_rank": g["decay_rate_per_rank"]["mean"],
        "cor2_lemma5_verdicts": g["verdict"], "cor2_gate_ratio_detail": g.get("verdict_detail", {}).get("cor2_gate_ratio"),
        "lemma4_6_verdicts": t["verdict"],
    }

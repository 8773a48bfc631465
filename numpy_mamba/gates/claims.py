"""The gates' question as a rule that can fail, judged per (gate, kappa_a') and returned as a row
of REPORT.md's results table (``measure.rules.claim_row``).  Appendix E.6 only says the analysis
extends to these gates; the prediction judged here is ours (the report's "Why"): a gate can single
out an outlier example only if the weight of example i depends on p_i itself.
"""
from __future__ import annotations

from ..measure.rules import case, judge_cases
from ..runs.claims import claim_row

INPUT_GATES = ("mamba", "gla")              # the weight of example i reads p_i (predicted below the LT)
GATES_RULES = {
    "gates": "per gate and kappa_a' at alpha = 0.7 with flipped labels (the Figure 2 protocol): for a gate whose weight "
             "on example i reads p_i (Mamba, GLA), its 95% interval over seeds entirely below the linear "
             "Transformer's holds and a lower mean holds in trend; for a decay gate (Mamba-2, RetNet, Gated "
             "Retention), an interval not entirely below the linear Transformer's holds; otherwise fails"}


def gates_claim(summary: dict, alphas: list, kappas: list, main_kappa: float) -> dict:
    """The row of the gates' prediction from the gates' summary (``plots.summarise``), at alpha = 0.7."""
    a = alphas.index(0.7) if 0.7 in alphas else len(alphas) - 1
    cases, main = {}, {}
    for kappa in kappas:
        key = f"kappa_a_prime={kappa:g}/flip"
        lt_m, lt_h = (summary["linear_transformer"][f][key][a] for f in ("error_mean", "error_halfwidth95"))
        for model, s in summary.items():
            if model == "linear_transformer":
                continue
            m, h = s["error_mean"][key][a], s["error_halfwidth95"][key][a]
            below = m + h < lt_m - lt_h
            level = (("full" if below else "trend" if m < lt_m else "none") if model in INPUT_GATES else
                     ("full" if not below else "none"))
            cases[case(("", model), ("kappa_a'", kappa))] = level
            if kappa == main_kappa:
                main[model] = m
        if kappa == main_kappa:
            main["linear_transformer"] = lt_m
    ours = ", ".join(f"{m} {v:.3f}" for m, v in main.items())
    heads = [(f"{m} vs linear Transformer error, alpha = {alphas[a]}, flip, kappa_a' = {main_kappa:g}", "n/a (E.6 gives "
              "no number)", f"{main[m]:.3f} vs {main['linear_transformer']:.3f}") for m in ("mamba", "gla", "mamba2")
             if m in main]
    row = claim_row("gates", "Ours (App. E.6 gates): gates that read their own example (Mamba, GLA) beat the linear "
                    "Transformer at alpha = 0.7, the decay gates (Mamba-2, RetNet, Gated Retention) do not",
                    "E.6: the analysis extends (no number)", f"error at alpha = {alphas[a]}, flip, kappa_a' = "
                    f"{main_kappa:g}: {ours}", judge_cases(cases), "gates",
                    [("gates_error_vs_alpha.png", "gates_error_vs_alpha.png"), ("training", "gates_training.png"),
                     ("section", "#other-gates-of-appendix-e6-python--m-numpy_mamba-gates")])
    return {"row": row, "headlines": heads}

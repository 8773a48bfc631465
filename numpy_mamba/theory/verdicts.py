"""The theory's rules on the gates (Corollary 2 and Lemma 5 across M1) and on one training run
(Lemmas 4-6), each judged case by case (M1 values, seeds, projections, context lengths) in the
vocabulary of ``measure.rules`` and written next to its function (``GATE_RULES``,
``TRAJECTORY_RULES``).  ``judge_gates`` and ``judge_trajectory`` add the verdicts to a result,
after a run and on the saved JSON of ``theory --replot`` alike.
"""
from __future__ import annotations

import numpy as np

from ..measure.rules import DECAY_RULE, GATE_RATIO_RULE, clean_gate_decay, gate_ratio
from ..measure.rules import (EXPONENT_TOL, EXPONENT_WHY, ROUNDING, at_most, below, combine, judge_cases, near,
                                verdict_text, where_text)

LOGIT_TOL = 0.25        # eq (37) is met within this, in w^T p (GATE_RULES["logit-outlier"] says why)
GATE_RULES = {
    "m1-slope": "eq (17) across M1, per seed: the least-squares slope of log(mean gate on outlier test examples) on "
                f"log M1 at most -1 within {EXPONENT_TOL:g} (falling at least like poly(M1)^-1 with poly(M1) = M1), "
                f"i.e. <= {EXPONENT_TOL - 1:g}, holds; a negative slope holds in trend; otherwise fails (a slope "
                f"within {ROUNDING:g} of 0 is flat). " + EXPONENT_WHY,
    "gate-ratio": GATE_RATIO_RULE,
    "decay": DECAY_RULE,
    "logit-outlier": "eq (37), per M1: the seed mean of the mean w^T p on training examples with outliers at most "
                     f"-log M1 within {LOGIT_TOL:g}, i.e. <= -log M1 + {LOGIT_TOL:g}, holds; < 0 (the gate closing, "
                     f"not by the claimed size) holds in trend; otherwise fails. The tolerance {LOGIT_TOL:g} puts the "
                     f"outlier's gate factor sigma(w^T p) within a factor e^{LOGIT_TOL:g} = {np.exp(LOGIT_TOL):.2f} of "
                     "1/M1, about how far the seeds' mean w^T p spread",
    "logit-clean": "eq (38), per seed: the mean w^T p on clean training examples spread over M1 by less than 1 (of order "
                   "1, not growing with M1) holds; above the outlier examples' w^T p at every M1 holds in trend; "
                   "otherwise fails"}
TRAJECTORY_RULES = {
    "signs": "Lemma 4, per projection of the change of w at the end of the run: v*^T w and (mu/beta)^T w at most -0.1 "
             "holds, below 0 holds in trend; |nu/beta^T w| below half the smaller of the two holds, below it holds "
             "in trend; otherwise fails",
    "phases": "Lemmas 4-5, per curve (v*^T w and mu^T w): before the steepest step t* a fit a t + b t^3 with b < 0 "
              "and R^2 > 0.9, and after 2 t* a falling log t fit better than a straight line, holds; one of the two "
              "phases holds in trend; otherwise fails",
    "lemma6": "eq (39) over the lemma's range of t, per context length l: the largest mean sum_i G_i (l - i + 1) <= 3 "
              "(Theta(1) with constant 3) holds; <= 6 holds in trend; otherwise fails. The range: Lemma 6's is Lemma "
              "4's (the same expression in t), the first phase of training, in which v*^T w falls slowly; it ends at "
              "the steepest fall of v*^T w, t*, measured on the same run (rule phases). With every constant 1 the "
              "expression would end it within the first few dozen steps, a small fraction of the phase it describes: "
              "that reading checks the initialisation only"}


def judge_gates(g: dict) -> dict:
    """Corollary 2 (eqs (17), (18)) and Lemma 5 (eqs (37), (38)) across M1, from the raw per-run
    numbers of a gates result; adds g["verdict"], g["verdict_detail"], g["judged"] and g["gate_ratio"]."""
    s, runs = g["settings"], g["runs"]
    M1s = s["M1_grid"]
    ratio = {}
    for M1 in M1s:
        mine = [r["test_by_position"] for r in runs if r["M1"] == M1]
        ratio[f"M1 = {M1}"] = gate_ratio([r["outlier_mean"] for r in mine], [r["clean_mean"] for r in mine], M1)
    decay, decay_cases, decay_border = {}, {}, []
    for M1 in M1s:
        ranks = np.array([[np.nan if v is None else v for v in r["test"]["clean_rank_gate"][:s["decay_J"]]]
                          for r in runs if r["M1"] == M1], dtype=float)
        mean = np.nanmean(ranks, axis=0)
        keep = np.isfinite(mean) & (mean > 0)
        name = f"M1 = {M1}"
        if keep.sum() < 2:
            decay_cases[name] = "none"
            continue
        decay[M1] = clean_gate_decay(np.arange(1, mean.size + 1)[keep], mean[keep])
        decay_cases[name] = decay[M1]["level"]
        if decay[M1]["borderline"]:
            decay_border.append(name)
    judged = {"cor2_outlier_gates": m1_slope(g["slope_G_outlier_vs_M1_per_seed"]), "cor2_gate_ratio": combine(ratio),
              "cor2_local_bias": judge_cases(decay_cases, decay_border),
              "lemma5_outlier_logits": outlier_logits(g["logit_outlier_by_M1"], M1s),
              "lemma5_clean_logits": clean_logits(runs, s["seeds"], M1s)}
    g["judged"] = judged
    g["verdict"] = {k: verdict_text(v) for k, v in judged.items()}
    g["verdict_detail"] = {k: where_text(v) for k, v in judged.items()}
    g["gate_ratio"] = {"by_M1": {M1: ratio[f"M1 = {M1}"] for M1 in M1s},
                       "ratio_range_by_M1": {M1: [min(x for x in r["ratio"] if x is not None),
                                                  max(x for x in r["ratio"] if x is not None)]
                                             for M1, r in ((M1, ratio[f"M1 = {M1}"]) for M1 in M1s)
                                             if any(x is not None for x in r["ratio"])}}
    g["decay_by_M1"] = decay
    return g


def m1_slope(per_seed) -> dict:
    """Eq (17) across M1 (``GATE_RULES["m1-slope"]``): per_seed the seeds' least-squares slopes of log G
    on log M1 (``theory.measure.fit_slope``).  Returns ``judge_cases``' verdict over the seeds."""
    steepest = EXPONENT_TOL - 1                     # the claimed exponent -1, within the tolerance
    cases = {f"seed {k}": "full" if at_most(x, steepest) else "trend" if below(x, 0.0) else "none"
             for k, x in enumerate(per_seed)}
    return judge_cases(cases, [f"seed {k}" for k, x in enumerate(per_seed) if near(x - steepest, EXPONENT_TOL)])


def outlier_logits(logit_by_M1: dict, M1s) -> dict:
    """Eq (37) per M1 (``GATE_RULES["logit-outlier"]``): logit_by_M1 {M1: seed mean of the mean w^T p on
    training examples with outliers}.  Returns ``judge_cases``' verdict over the M1."""
    cases, borderline = {}, []
    for M1 in M1s:
        x, bound, name = logit_by_M1[_k(logit_by_M1, M1)], LOGIT_TOL - np.log(M1), f"M1 = {M1}"
        cases[name] = "full" if x <= bound else "trend" if x < 0 else "none"
        if near(x - bound, np.log(M1)):
            borderline.append(name)
    return judge_cases(cases, borderline)


def clean_logits(runs: list, seeds, M1s) -> dict:
    """Eq (38) per seed (``GATE_RULES["logit-clean"]``): runs [{"M1", "seed", "train": {"logit_clean",
    "logit_outlier"}}], the mean w^T p on clean and outlier training examples of each run.  Returns
    ``judge_cases``' verdict over the seeds."""
    cases = {}
    for seed in seeds:
        mine = {r["M1"]: r["train"] for r in runs if r["seed"] == seed}
        clean = [mine[M1]["logit_clean"] for M1 in M1s]
        cases[f"seed {seed}"] = ("full" if np.ptp(clean) < 1 else "trend" if all(
            mine[M1]["logit_clean"] > mine[M1]["logit_outlier"] for M1 in M1s) else "none")
    return judge_cases(cases)


def _k(mapping: dict, M1):
    """The key of M1 in a dict that may have come back from JSON (string keys)."""
    return M1 if M1 in mapping else str(M1)


def judge_trajectory(t: dict, v, mu, nu, l6: dict) -> dict:
    """Lemmas 4-6 on one run (``TRAJECTORY_RULES``): v, mu, nu the final changes of the projections of
    w (nu as |.|); l6 {l: largest mean of eq (39) in the window}.  Adds t["verdict"], t["judged"]."""
    signs = {"v*^T w": "full" if v <= -0.1 else "trend" if v < 0 else "none",
             "mu^T w": "full" if mu <= -0.1 else "trend" if mu < 0 else "none",
             "|nu^T w|": ("full" if nu < 0.5 * min(abs(v), abs(mu)) else "trend" if nu < min(abs(v), abs(mu))
                          else "none")}
    phases = {}
    for name, ph in t["phases"].items():
        one = ph["phase1_b"] < 0 and (ph["phase1_r2"] or 0) > 0.9
        two = ph.get("phase2_log_slope", 0) < 0 and ph.get("phase2_r2_log", 0) > ph.get("phase2_r2_linear", 1)
        phases[name] = "full" if one and two else "trend" if one or two else "none"
    lemma6 = {f"l = {l}": "full" if x <= 3 else "trend" if x <= 6 else "none" for l, x in l6.items()}
    border6 = [f"l = {l}" for l, x in l6.items() if near(x - 3, 3)]
    judged = {"lemma4_signs": judge_cases(signs), "lemma4_5_two_phases": judge_cases(phases),
              "lemma6_in_window": judge_cases(lemma6, border6)}
    t["judged"] = judged
    t["verdict"] = {k: verdict_text(x) for k, x in judged.items()}
    t["verdict_detail"] = {k: where_text(x) for k, x in judged.items()}
    return t

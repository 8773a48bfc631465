"""Corollary 2 and Lemma 5 across M1: Mamba trained on worlds with M1 relevant patterns; on testing
prompts the mean gate on outlier examples (eq (17): O(poly(M1)^-1)) and the gate of the j-th closest
clean example (eq (18): >= Theta(2^-(j-1))); on training prompts w^T p with outliers (eq (37): <~ -log
M1) and without (eq (38): >~ -Theta(1)).  Writes theory_gates.json and theory_gates.png.

eta is chosen for each M1 by the step-size rule of ``runs/step_size.py`` (``selection``) on selection
worlds of that M1 and streams [k, SELECTION_STREAM, 100 + M1, ...] of their own; one unit per (M1, seed).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from functools import partial

import numpy as np

from ..data import SECTION4, make_world, testing_batch, training_batch
from ..fused import network
from ..measure.gates import gate_profile, gate_statistics
from ..measure.rules import (clean_gate_decay, clean_logits, combine, gate_ratio, judge_cases, m1_slope, outlier_logits,
                             sample_sd, verdict_text, where_text)
from ..runs.claims import claim_row
from ..runs.report import Template
from ..runs.runner import Unit
from ..runs.step_size import selection_plan
from ..sgd import TrainConfig, train
from .measure import ETA_GRID, LABEL_WORD, Recorded, fit_slope, header, rounded
from .tolerance import SELECTION_STREAM, selection_world

NAME, FILES = "Corollary 2 / Lemma 5 vs M1, with its step sizes", ("theory_gates",)
RULES = ("m1-slope", "gate-ratio", "decay", "logit-outlier", "logit-clean")
OUTPUTS = "theory_gates        Corollary 2 and Lemma 5 across M1: gates and w^T p -> theory_gates.json, theory_gates.png"
TEXT = Template(__package__, "gates.md")


@dataclass(frozen=True)
class GatesVsM1(Recorded):
    """Worlds of each M1 (Section 4's other sizes); eta per M1 by the step-size rule (once chosen:
    {str(M1): eta}); test prompts (Definition 2) of the main setting (REPORT.md); the clean gates'
    decay fitted over the ``decay_J`` closest clean examples."""

    d: int = SECTION4.d
    M2: int = SECTION4.M2
    V: int = SECTION4.V
    beta: float = SECTION4.beta
    world_seed: int = 0
    M1_grid: tuple = (2, 3, 4, 6, 9, 12, 17)
    seeds: tuple = (0, 1, 2, 3)
    T: int = 1500
    B: int = 64
    delta: float = SECTION4.delta
    l_tr: int = SECTION4.l_tr
    p_a: float = 0.6
    eta_grid: tuple = ETA_GRID
    select_seeds: tuple = (0,)
    n_heldout: int = 2048
    B_test: int = 1000
    l_ts: int = SECTION4.l_ts
    alpha: float = 0.3
    kappa_a_prime: float = 2.0
    K_prime: float = 1.5
    label_rule: str = "flip"
    decay_J: int = 6
    quick: bool = False
    eta: dict | None = None


FULL = GatesVsM1()
QUICK = GatesVsM1(M1_grid=(2, 4), seeds=(0,), T=100, B_test=100, eta_grid=(0.05, 0.2), n_heldout=128, quick=True)


def selection(s: GatesVsM1, chosen: dict) -> dict:
    """eta for Mamba at each M1 over s.eta_grid, on s.select_seeds; the experiment's T, B, delta, l_tr, p_a."""
    plans = {}
    for M1 in s.M1_grid:
        params = {"d": s.d, "M1": M1, "M2": s.M2, "V": s.V, "beta": s.beta}
        config = TrainConfig(T=s.T, B=s.B, eta=s.eta_grid[0], l_tr=s.l_tr, p_a=s.p_a, delta=s.delta)
        plans[f"mamba M1={M1}"] = selection_plan({"eta": s.eta_grid}, s.select_seeds, partial(selection_world, params),
                                                 config, network("mamba"), s.n_heldout, (SELECTION_STREAM, 100 + M1, 1),
                                                 f"theory step size, mamba, M1 = {M1}")
    return plans


def with_eta(s: GatesVsM1, chosen: dict) -> GatesVsM1:
    """The settings with the eta chosen at each M1, {str(M1): eta}."""
    return replace(s, eta={str(M1): chosen[f"mamba M1={M1}"]["chosen"]["eta"] for M1 in s.M1_grid})


def M1_run(s: GatesVsM1, M1: int, seed: int) -> dict:
    """Mamba trained on a world with M1 relevant patterns at the step size the rule chose for that M1
    (s.eta[str(M1)]), and its gates on test and training prompts (``measure.gates``)."""
    world = make_world(d=s.d, M1=M1, M2=s.M2, V=s.V, beta=s.beta, rng=s.world_seed)
    config = TrainConfig(T=s.T, B=s.B, eta=s.eta[str(M1)], l_tr=s.l_tr, p_a=s.p_a, delta=s.delta)
    params, _ = train(world, config, network("mamba"), rng=np.random.default_rng([seed, 4, M1]))
    test = testing_batch(world, s.B_test, s.l_ts, alpha=s.alpha, K_prime=s.K_prime, kappa_a_prime=s.kappa_a_prime,
                         label_rule=s.label_rule, rng=np.random.default_rng([seed, 12]))
    tr = training_batch(world, s.B_test, s.l_tr, p_a=s.p_a, rng=np.random.default_rng([seed, 13]))
    profile = gate_profile(params, test)
    return {"M1": M1, "seed": seed, "test": gate_statistics(params, test), "train": gate_statistics(params, tr),
            "test_by_position": {k: profile[k] for k in ("outlier_mean", "clean_mean")}}


def units(s: GatesVsM1, chosen: dict) -> list:
    """One ``M1_run`` per (M1, seed)."""
    s = with_eta(s, chosen)
    return [Unit((M1, seed), f"Corollary 2 M1={M1} seed {seed}", M1_run, (s, M1, seed))
            for M1 in s.M1_grid for seed in s.seeds]


def assemble(s: GatesVsM1, chosen: dict, found: dict, run) -> dict:
    """theory_gates.json: every run's gates, the slopes across M1, the clean gates' decay, w^T p by
    M1, the verdicts, and the step-size rule's records per M1."""
    s = with_eta(s, chosen)
    runs = list(found.values())
    out = {"settings": s.to_dict(), "M1": list(s.M1_grid), "runs": runs}
    G_out = [r["test"]["G_outlier"] for r in runs]
    per_seed = [fit_slope(s.M1_grid, [r["test"]["G_outlier"] for r in runs if r["seed"] == seed])[0] for seed in s.seeds]
    decay = []              # of the gates on the j-th closest clean example: log2 G_{h(j)} = a - c (j - 1), j <= J
    for r in runs:
        g = np.asarray([v for v in r["test"]["clean_rank_gate"][:s.decay_J] if v is not None and v > 0])
        decay.append(-np.polyfit(np.arange(len(g)), np.log2(g), 1)[0])
    logit_out, logit_clean = ({M1: float(np.mean([r["train"][key] for r in runs if r["M1"] == M1])) for M1 in s.M1_grid}
                              for key in ("logit_outlier", "logit_clean"))
    out.update({
        "slope_G_outlier_vs_M1": fit_slope([r["M1"] for r in runs], G_out)[0], "slope_G_outlier_vs_M1_per_seed": per_seed,
        "slope_sigma_outlier_vs_M1": fit_slope([r["M1"] for r in runs], [r["test"]["sigma_outlier"] for r in runs])[0],
        "gate_ratio_outlier_to_clean": {M1: round(float(np.mean([r["test"]["G_outlier"] / r["test"]["G_clean"]
                                                                 for r in runs if r["M1"] == M1])), 3)
                                        for M1 in s.M1_grid},
        "decay_rate_per_rank": {"mean": float(np.mean(decay)), "sd": sample_sd(decay), "per_run": decay,
                                "claim": "<= 1 (gates decay no faster than 2^-(j-1))"},
        "logit_outlier_by_M1": logit_out, "logit_clean_by_M1": logit_clean,
        "minus_log_M1": {M1: -float(np.log(M1)) for M1 in s.M1_grid},
        "slope_logit_outlier_vs_log_M1": float(np.polyfit(np.log(s.M1_grid), list(logit_out.values()), 1)[0]),
    })
    judge_gates(out)
    out["step_size"] = {str(M1): chosen[f"mamba M1={M1}"] for M1 in s.M1_grid}
    return {"theory_gates": {**header(run), **out}}


def judge(results: dict) -> None:
    """Corollary 2 and Lemma 5 (``judge_gates``), into the JSON."""
    judge_gates(results["theory_gates"])


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


# ---------------------------------------------------------------- what is written from the JSON
def figure(results: dict, out) -> list:
    """theory_gates.png (``plots.gates``)."""
    from . import plots                                     # matplotlib only when drawing
    return [plots.gates(results["theory_gates"], out / "theory_gates.png")]


def claims(results: dict) -> list:
    """Corollary 2 (i) across M1 and at each M1, Corollary 2 (ii), Lemma 5's two logits."""
    if "theory_gates" not in results:
        return []
    g = results["theory_gates"]
    see = [("theory_gates.png", "theory_gates.png"), ("section", "#corollary-2-and-lemma-5-gates")]
    ratio6 = g["gate_ratio"]["ratio_range_by_M1"].get(6, g["gate_ratio"]["ratio_range_by_M1"].get("6"))
    decay = list(g["decay_by_M1"].values())
    return [claim_row(key, title, paper, ours, g["judged"][key], rule, see, headline=head)
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
         "w^T p " + ", ".join(f"{v:.1f}" for v in g["logit_clean_by_M1"].values()), "logit-clean", None))]


def report(results: dict, run) -> str:
    """The step size at each M1, and the verdicts of eqs (17), (18), (37), (38) with their numbers."""
    g = results["theory_gates"]
    s, v, why = g["settings"], g["verdict"], g["verdict_detail"]
    held = {M1: min(r["mean"] for r in sel["candidates"] if r["mean"] is not None) for M1, sel in g["step_size"].items()}
    sigmoid = g["slope_sigma_outlier_vs_M1"] >= 0 and g["slope_G_outlier_vs_M1"] < 0
    return TEXT("body", **s, n_seeds=len(s["seeds"]), n_select=len(s["select_seeds"]), labels=LABEL_WORD[s["label_rule"]],
                etas=", ".join(TEXT("eta", M1=M1, eta=eta, held=held[M1]) for M1, eta in s["eta"].items()), g=g,
                per_seed=[round(x, 2) for x in g["slope_G_outlier_vs_M1_per_seed"]], verdict=v, why=why,
                ratio=rounded(g["gate_ratio_outlier_to_clean"], 3), sigmoid=TEXT("sigmoid") if sigmoid else "",
                ranges=rounded({k: "-".join(f"{x:.3f}" for x in r) for k, r in g["gate_ratio"]["ratio_range_by_M1"].items()}),
                decay=rounded({M1: TEXT("decay", bits=d["bits_per_rank"], r2=d["r2"]) for M1, d in g["decay_by_M1"].items()}),
                logit_outlier=rounded(g["logit_outlier_by_M1"]), minus_log_M1=rounded(g["minus_log_M1"]),
                slope_logit=g.get("slope_logit_outlier_vs_log_M1", float("nan")), logit_clean=rounded(g["logit_clean_by_M1"]))

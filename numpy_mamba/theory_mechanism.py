"""The mechanism of the trained Mamba (Section 3.5) and the lemmas behind it, measured:
Corollary 1 (attention sums, eq (16)), Corollary 2 (gates, eqs (17), (18)), Lemmas 4-5
(projections of w and w^T p, eqs (33)-(38)) and Lemma 6 (eq (39)).
"""
from __future__ import annotations

import numpy as np

from .data import World, make_world, testing_batch, training_batch
from .sgd import TrainConfig, train
from .theory_runs import fit_slope, gate_statistics, lemma6_sum, projections, score_sums


def attention_sums(world: World, s: dict, models: dict, progress=print) -> dict:
    """Corollary 1: per testing prompt, the sum of attention scores over same-pattern examples
    (claim >= Theta(1)) and over different-pattern examples (claim <= Theta((1-p_a)^-1 eps))."""
    out = {"settings": s, "runs": []}
    for (model, p_a, seed), params in models.items():
        if model != "mamba" or params is None or p_a != s["cor1_p_a"]:
            continue
        batch = testing_batch(world, s["B_test"], s["l_ts"], alpha=s["alpha"], rng=np.random.default_rng([seed, 11]))
        same, diff = score_sums(params, batch)
        out["runs"].append({"seed": seed, "same": same.tolist(), "different": diff.tolist(),
                            "median_same": float(np.median(same)), "median_abs_different": float(np.median(np.abs(diff))),
                            "fraction_same_at_least_1": float(np.mean(same >= 1.0))})
    if out["runs"]:
        ms = float(np.mean([r["median_same"] for r in out["runs"]]))
        md = float(np.mean([r["median_abs_different"] for r in out["runs"]]))
        out["mean_median_same"], out["mean_median_abs_different"] = ms, md
        out["verdict"] = ("holds" if ms >= 1.0 and md <= 0.1 * ms else
                          "holds in trend" if ms > md else "does not hold here")
    progress(f"  Corollary 1: {out.get('verdict')}")
    return out


def gates_vs_M1(s: dict, progress=print) -> dict:
    """Corollary 2 and Lemma 5 across M1: train Mamba on a world with M1 relevant patterns and
    measure, on testing prompts, the mean gate on outlier examples (claim O(poly(M1)^-1)), the
    gate of the j-th closest clean example (claim >= Theta(2^-(j-1))), and on training prompts
    w^T p with outliers (claim <~ -log M1) and without (claim >~ -Theta(1))."""
    out = {"settings": s, "M1": s["M1_grid"], "runs": []}
    for M1 in s["M1_grid"]:
        world = make_world(d=s["d"], M1=M1, M2=s["M2"], V=s["V"], beta=s["beta"], rng=s["world_seed"])
        for seed in s["seeds"]:
            config = TrainConfig(T=s["T"], B=s["B"], eta=s["eta"], l_tr=s["l_tr"], p_a=s["p_a"], delta=s["delta"])
            params, _ = train(world, config, "mamba", rng=np.random.default_rng([seed, 4, M1]))
            test = testing_batch(world, s["B_test"], s["l_ts"], alpha=s["alpha"], rng=np.random.default_rng([seed, 12]))
            tr = training_batch(world, s["B_test"], s["l_tr"], p_a=s["p_a"], rng=np.random.default_rng([seed, 13]))
            st, sr = gate_statistics(params, test), gate_statistics(params, tr)
            out["runs"].append({"M1": M1, "seed": seed, "test": st, "train": sr})
        progress(f"  Corollary 2 / Lemma 5: M1 = {M1} done")
    runs = out["runs"]
    G_out = [r["test"]["G_outlier"] for r in runs]
    slope_G = fit_slope([r["M1"] for r in runs], G_out)[0]
    # decay of gates on the j-th closest clean example: fit log2 G_{h(j)} = a - c (j - 1), j <= J
    J = s["decay_J"]
    decay = []
    for r in runs:
        g = np.asarray([v for v in r["test"]["clean_rank_gate"][:J] if v is not None])
        decay.append(-np.polyfit(np.arange(len(g)), np.log2(g), 1)[0])
    logit_out = {M1: float(np.mean([r["train"]["logit_outlier"] for r in runs if r["M1"] == M1])) for M1 in s["M1_grid"]}
    logit_clean = {M1: float(np.mean([r["train"]["logit_clean"] for r in runs if r["M1"] == M1])) for M1 in s["M1_grid"]}
    out.update({
        "slope_G_outlier_vs_M1": slope_G,
        "decay_rate_per_rank": {"mean": float(np.mean(decay)), "sd": float(np.std(decay)), "per_run": decay,
                                "claim": "<= 1 (gates decay no faster than 2^-(j-1))"},
        "logit_outlier_by_M1": logit_out, "logit_clean_by_M1": logit_clean,
        "minus_log_M1": {M1: -float(np.log(M1)) for M1 in s["M1_grid"]},
    })
    out["verdict"] = {
        "cor2_outlier_gates": ("holds" if slope_G < 0 and max(G_out) < 0.1 else
                               "holds in trend" if slope_G < 0 else "does not hold here"),
        "cor2_local_bias": "holds" if np.mean(decay) <= 1.0 + 2 * np.std(decay) else "does not hold here",
        "lemma5_outlier_logits": ("holds" if all(logit_out[M] <= -np.log(M) for M in s["M1_grid"]) else
                                  "holds in trend" if all(v < 0 for v in logit_out.values()) else "does not hold here"),
        "lemma5_clean_logits": ("holds" if np.ptp(list(logit_clean.values())) < 1.0 else "holds in trend"),
    }
    return out


def training_trajectory(world: World, s: dict, progress=print) -> dict:
    """Lemmas 4-6 along one training run: projections of w on v*_s, mu_j, nu_k; mean w^T p on a
    fixed batch for examples with / without outliers and the query; and the Lemma 6 sum
    sum_i G_{i,l+1}(w)(l - i + 1) on fixed batches of several context lengths l."""
    held = training_batch(world, s["B_held"], s["l_tr"], p_a=s["p_a"], rng=np.random.default_rng([s["seed"], 21]))
    l6 = {l: training_batch(world, s["B_held"], l, p_a=s["p_a"], rng=np.random.default_rng([s["seed"], 22, l]))
          for l in s["lemma6_l_grid"]}
    mask_out = np.zeros(held.P.shape[::2], bool)
    mask_out[:, :-1] = held.outlier
    mask_clean = np.zeros_like(mask_out)
    mask_clean[:, :-1] = ~held.outlier

    def record(step, params):
        a = np.einsum("d,bdl->bl", params.w, held.P)
        rec = {f"proj_{k}": v for k, v in projections(world, params.w).items()}
        rec.update({"wp_outlier": float(a[mask_out].mean()), "wp_clean": float(a[mask_clean].mean()),
                    "wp_query": float(a[:, -1].mean())})
        for l, b in l6.items():
            v = lemma6_sum(params.w, b.P)
            rec[f"lemma6_mean_l{l}"], rec[f"lemma6_p95_l{l}"] = float(v.mean()), float(np.quantile(v, 0.95))
        return rec

    config = TrainConfig(T=s["T"], B=s["B"], eta=s["eta"], l_tr=s["l_tr"], p_a=s["p_a"], delta=s["delta"])
    _, hist = train(world, config, "mamba", rng=np.random.default_rng([s["seed"], 20]),
                    record_every=s["record_every"], record=record)
    out = analyse_trajectory({"settings": s, "history": {k: np.asarray(v).tolist() for k, v in hist.items()}},
                             world.M1)
    progress(f"  Lemmas 4-6 trajectory: {out['verdict']}")
    return out


def analyse_trajectory(out: dict, M1: int) -> dict:
    """Phase rates, final values and verdicts of Lemmas 4-6 from a recorded ``out["history"]``
    (also rerun by ``theory --replot``).  Adds "phase_rates", "final", "lemma6_max_of_mean", "verdict"."""
    s, hist = out["settings"], out["history"]
    step = np.asarray(hist["step"], float)
    # the lemmas describe what training adds to w^(0) ~ N(0, I/(d+1)); measure the change
    change = {k: np.asarray(hist[f"proj_{k}"]) - np.asarray(hist[f"proj_{k}"])[0] for k in ("v_star", "mu", "nu")}
    v, mu, nu = change["v_star"].mean(axis=1), change["mu"].mean(axis=1), np.abs(change["nu"]).mean(axis=1)
    n = len(step)
    early = slice(0, max(3, n // 20))
    late = slice(n // 2, n)
    rate = lambda y, sl: float(np.polyfit(step[sl], y[sl], 1)[0])
    out["phase_rates"] = {"v_star_early": rate(v, early), "v_star_late": rate(v, late),
                          "mu_early": rate(mu, early), "mu_late": rate(mu, late)}
    out["final"] = {"v_star": float(v[-1]), "mu": float(mu[-1]), "abs_nu": float(nu[-1]),
                    "wp_outlier": hist["wp_outlier"][-1], "wp_clean": hist["wp_clean"][-1],
                    "minus_log_M1": -float(np.log(M1))}
    l6_max = {l: float(np.max(hist[f"lemma6_mean_l{l}"])) for l in s["lemma6_l_grid"]}
    out["lemma6_max_of_mean"] = l6_max
    two_phase = out["phase_rates"]["v_star_early"] < 0 and abs(out["phase_rates"]["v_star_late"]) < 0.2 * abs(out["phase_rates"]["v_star_early"])
    signs = v[-1] < 0 and mu[-1] < 0 and nu[-1] < min(abs(v[-1]), abs(mu[-1]))
    out["verdict"] = {
        "lemma4_signs": "holds" if signs else "does not hold here",
        "lemma4_5_two_phases": "holds" if two_phase else "holds in trend" if out["phase_rates"]["v_star_early"] < 0 else "does not hold here",
        "lemma6": ("holds" if max(l6_max.values()) <= 3.0 and np.ptp(list(l6_max.values())) <= 1.0 else
                   "holds in trend" if max(l6_max.values()) < min(s["lemma6_l_grid"]) else "does not hold here"),
    }
    return out

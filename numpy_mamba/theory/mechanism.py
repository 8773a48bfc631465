"""The mechanism of the trained Mamba (Section 3.5) and the lemmas behind it, measured:
Corollary 1 (attention sums, eq (16)), Corollary 2 (gates, eqs (17), (18)), Lemmas 4-5
(projections of w and w^T p, eqs (33)-(38)) and Lemma 6 (eq (39)).

As in theorems.py, each experiment returns a ``Plan`` of independent units and their assembly,
and its verdicts are computed where the results are assembled.
"""
from __future__ import annotations

from functools import partial

import numpy as np

from ..runs.jobs import Plan, Unit
from ..data import World, make_world, testing_batch, training_batch
from ..measure.attention import score_sums
from ..measure.gates import gate_profile, gate_statistics
from ..measure.tasks import task_group_names, task_groups
from ..measure.rules import corollary1, sample_sd, verdict_text
from ..fused import network
from ..sgd import TrainConfig, train
from .settings import GatesVsM1, Tolerance, Trajectory
from .theorems import trained
from .measure import fit_slope, lemma6_sum, projections
from .verdicts import judge_gates, judge_trajectory


def _attention_run(world: World, s: Tolerance, seed: int):
    """One unit of ``attention_sums``: the Mamba of ``tolerated_alpha`` at p_a = ``cor1_p_a``
    (trained again from the same seed stream, so the same parameters) on testing prompts."""
    params, _ = trained(world, s, "mamba", s.cor1_p_a, seed)
    if params is None:
        return None
    batch = testing_batch(world, s.B_test, s.l_ts, alpha=s.alpha, K_prime=s.K_prime, kappa_a_prime=s.kappa_a_prime[0],
                          label_rule=s.label_rule, rng=np.random.default_rng([seed, 11]))
    same, diff = score_sums(params, batch)
    a, b = batch.task[:, 0], batch.task[:, 1]
    dist = np.minimum((a - b) % world.M1, (b - a) % world.M1)
    by_dist = {int(k): {"median_different": float(np.median(diff[dist == k])), "n": int(np.sum(dist == k))}
               for k in np.unique(dist)}
    return {"seed": seed, "same": same.tolist(), "different": diff.tolist(), "distance": dist.tolist(),
            "group": task_groups(batch.task, world.M1).tolist(),
            "median_same": float(np.median(same)), "different_by_distance": by_dist,
            "fraction_same_at_least_1": float(np.mean(same >= 1.0)),
            "fraction_different_below_tenth_of_median_same": float(np.mean(diff <= 0.1 * np.median(same)))}


def attention_sums(world: World, s: Tolerance) -> Plan:
    """Corollary 1, eq (16): per testing prompt, the sum of attention scores over same-pattern
    examples (claim >= Theta(1)) and over different-pattern examples (claim <= Theta((1-p_a)^-1
    eps), a signed upper bound).  The different-pattern sums are split by how far the two
    patterns of the prompt's task are apart on the cycle of training tasks (Condition 1):
    distance 1 = they form a training task (Lemma 3 (26): pushed negative), >= 2 = they do not
    (Lemma 3 (25): claimed untouched)."""
    seeds = s.seeds if s.cor1_p_a in s.p_a_train["mamba"] else []
    return Plan([Unit(seed, f"Corollary 1 seed {seed}", _attention_run, (world, s, seed)) for seed in seeds],
                partial(_attention_sums, s, world.M1))


def _attention_sums(s: Tolerance, M1: int, measured: dict) -> dict:
    out = {"settings": s.to_dict(), "runs": [r for r in measured.values() if r is not None]}
    if out["runs"]:
        judge_attention(out, M1)
    return out


def judge_attention(out: dict, M1: int) -> dict:
    """Corollary 1's verdict by the rule shared with the reproduce section
    (``measure.rules.corollary1``: part (a) inside every task group's case), on every
    prompt of every seed pooled.  Adds out["corollary1"] (medians by task group) and out["verdict"]."""
    cat = lambda key: np.concatenate([np.asarray(r[key]) for r in out["runs"]])  # noqa: E731
    c = corollary1(cat("same"), cat("different"), cat("group").astype(int), task_group_names(M1))
    out["corollary1"] = c
    out["mean_median_same"] = float(np.mean([r["median_same"] for r in out["runs"]]))
    out["verdict"] = {"corollary1": verdict_text(c)}
    return out


def _M1_run(s: GatesVsM1, M1: int, seed: int) -> dict:
    """One unit of ``gates_vs_M1``: train Mamba on a world with M1 relevant patterns at the step
    size the rule chose for that M1 (s.eta[str(M1)], ``step_sizes.gates_step_size_plans``), measure its gates."""
    world = make_world(d=s.d, M1=M1, M2=s.M2, V=s.V, beta=s.beta, rng=s.world_seed)
    config = TrainConfig(T=s.T, B=s.B, eta=s.eta[str(M1)], l_tr=s.l_tr, p_a=s.p_a, delta=s.delta)
    params, _ = train(world, config, network("mamba"), rng=np.random.default_rng([seed, 4, M1]))
    test = testing_batch(world, s.B_test, s.l_ts, alpha=s.alpha, K_prime=s.K_prime, kappa_a_prime=s.kappa_a_prime,
                         label_rule=s.label_rule, rng=np.random.default_rng([seed, 12]))
    tr = training_batch(world, s.B_test, s.l_tr, p_a=s.p_a, rng=np.random.default_rng([seed, 13]))
    profile = gate_profile(params, test)
    return {"M1": M1, "seed": seed, "test": gate_statistics(params, test), "train": gate_statistics(params, tr),
            "test_by_position": {k: profile[k] for k in ("outlier_mean", "clean_mean")}}


def gates_vs_M1(s: GatesVsM1) -> Plan:
    """Corollary 2 and Lemma 5 across M1: train Mamba on a world with M1 relevant patterns and
    measure, on testing prompts, the mean gate on outlier examples (claim O(poly(M1)^-1)), the
    gate of the j-th closest clean example (claim >= Theta(2^-(j-1))), and on training prompts
    w^T p with outliers (claim <~ -log M1) and without (claim >~ -Theta(1)).  One unit per (M1, seed)."""
    units = [Unit((M1, seed), f"Corollary 2 M1={M1} seed {seed}", _M1_run, (s, M1, seed))
             for M1 in s.M1_grid for seed in s.seeds]
    return Plan(units, partial(_gates_vs_M1, s))


def _gates_vs_M1(s: GatesVsM1, measured: dict) -> dict:
    out = {"settings": s.to_dict(), "M1": list(s.M1_grid), "runs": list(measured.values())}
    runs = out["runs"]
    G_out = [r["test"]["G_outlier"] for r in runs]
    slope_G = fit_slope([r["M1"] for r in runs], G_out)[0]
    per_seed = [fit_slope(s.M1_grid, [r["test"]["G_outlier"] for r in runs if r["seed"] == seed])[0]
                for seed in s.seeds]
    slope_sigma = fit_slope([r["M1"] for r in runs], [r["test"]["sigma_outlier"] for r in runs])[0]
    # decay of gates on the j-th closest clean example: fit log2 G_{h(j)} = a - c (j - 1), j <= J
    J = s.decay_J
    decay = []
    for r in runs:
        g = np.asarray([v for v in r["test"]["clean_rank_gate"][:J] if v is not None and v > 0])
        decay.append(-np.polyfit(np.arange(len(g)), np.log2(g), 1)[0])
    logit_out = {M1: float(np.mean([r["train"]["logit_outlier"] for r in runs if r["M1"] == M1])) for M1 in s.M1_grid}
    logit_clean = {M1: float(np.mean([r["train"]["logit_clean"] for r in runs if r["M1"] == M1])) for M1 in s.M1_grid}
    out.update({
        "slope_G_outlier_vs_M1": slope_G, "slope_G_outlier_vs_M1_per_seed": per_seed,
        "slope_sigma_outlier_vs_M1": slope_sigma,
        "gate_ratio_outlier_to_clean": {M1: round(float(np.mean([r["test"]["G_outlier"] / r["test"]["G_clean"]
                                                                 for r in runs if r["M1"] == M1])), 3)
                                        for M1 in s.M1_grid},
        "decay_rate_per_rank": {"mean": float(np.mean(decay)), "sd": sample_sd(decay), "per_run": decay,
                                "claim": "<= 1 (gates decay no faster than 2^-(j-1))"},
        "logit_outlier_by_M1": logit_out, "logit_clean_by_M1": logit_clean,
        "minus_log_M1": {M1: -float(np.log(M1)) for M1 in s.M1_grid},
        "slope_logit_outlier_vs_log_M1": float(np.polyfit(np.log(s.M1_grid), list(logit_out.values()), 1)[0]),
    })
    return judge_gates(out)


def _trajectory_run(world: World, s: Trajectory) -> dict:
    """The one unit of ``training_trajectory``: the training run and its record."""
    held = training_batch(world, s.B_held, s.l_tr, p_a=s.p_a, rng=np.random.default_rng([s.seed, 21]))
    l6 = {l: training_batch(world, s.B_held, l, p_a=s.p_a, rng=np.random.default_rng([s.seed, 22, l]))
          for l in s.lemma6_l_grid}
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

    config = TrainConfig(T=s.T, B=s.B, eta=s.eta, l_tr=s.l_tr, p_a=s.p_a, delta=s.delta, kappa_a=s.kappa_a)
    _, hist = train(world, config, network("mamba"), rng=np.random.default_rng([s.seed, 20]),
                    record_every=s.record_every, record=record)
    return {"settings": s.to_dict(), "history": {k: np.asarray(v).tolist() for k, v in hist.items()}}


def training_trajectory(world: World, s: Trajectory) -> Plan:
    """Lemmas 4-6 along one training run: projections of w on v*_s, mu_j, nu_k; mean w^T p on a
    fixed batch for examples with / without outliers and the query; and the Lemma 6 sum
    sum_i G_{i,l+1}(w)(l - i + 1) on fixed batches of several context lengths l."""
    return Plan([Unit("run", "Lemmas 4-6 trajectory", _trajectory_run, (world, s))],
                lambda measured: analyse_trajectory(measured["run"], world.M1, world.beta, world.V))


def _r2(y, fit) -> float:
    return float(1.0 - np.sum((y - fit) ** 2) / max(np.sum((y - np.mean(y)) ** 2), 1e-300))


def _phases(step, y) -> dict:
    """Split a decreasing curve at its steepest point t*.  Phase 1 (t <= t*): least squares
    y - y_0 = a t + b t^3, the shape of eqs (33)-(34).  Phase 2 (t >= 2 t*): y = c + k log t (the
    -log(2 + t gamma) of eqs (163), (171)) against a straight line y = c' + k' t."""
    k_star = int(np.argmin(np.gradient(y, step)))
    t_star = float(step[k_star])
    one = step <= t_star
    A = np.stack([step[one], step[one] ** 3], axis=1)
    coef = np.linalg.lstsq(A, y[one] - y[0], rcond=None)[0] if one.sum() >= 3 else np.array([np.nan, np.nan])
    r2_one = _r2(y[one] - y[0], A @ coef) if one.sum() >= 3 else None
    two = step >= max(2 * t_star, step[1])
    res = {"t_star": t_star, "phase1_a": float(coef[0]), "phase1_b": float(coef[1]), "phase1_r2": r2_one}
    if two.sum() >= 4:
        lg, lin = np.polyfit(np.log(step[two]), y[two], 1), np.polyfit(step[two], y[two], 1)
        res.update(phase2_log_slope=float(lg[0]), phase2_r2_log=_r2(y[two], np.polyval(lg, np.log(step[two]))),
                   phase2_r2_linear=_r2(y[two], np.polyval(lin, step[two])))
    return res


def lemma6_window(s: dict, M1: int, beta: float, V: int) -> float:
    """The range of t in Lemmas 4 and 6 with every constant set to 1 (the verdict uses the measured
    end of Lemma 4's first phase instead, ``analyse_trajectory``):
    min{eta^-1 beta^-2 kappa_a^-1 (1-p_a)^-1 V, eta^-1 M1^(2/3) ((1-p_a) beta)^(-2/3) (kappa_a (1-p_a))^(-1/3) V^(1/3)}."""
    eta, p, kappa = s["eta"], s["p_a"], s["kappa_a"]
    return float(min(V / (eta * beta ** 2 * kappa * (1 - p)),
                     M1 ** (2 / 3) * ((1 - p) * beta) ** (-2 / 3) * (kappa * (1 - p)) ** (-1 / 3) * V ** (1 / 3) / eta))


def analyse_trajectory(out: dict, M1: int, beta: float = 3.0, V: int = 3) -> dict:
    """Phases, final values and verdicts of Lemmas 4-6 from a recorded ``out["history"]`` (also
    rerun by ``theory --replot``).  Adds "phases", "final", "lemma6", "verdict"."""
    s, hist = out["settings"], out["history"]
    step = np.asarray(hist["step"], float)
    # the lemmas describe what training adds to w^(0) ~ N(0, I/(d+1)); measure the change
    change = {k: np.asarray(hist[f"proj_{k}"]) - np.asarray(hist[f"proj_{k}"])[0] for k in ("v_star", "mu", "nu")}
    v, mu, nu = change["v_star"].mean(axis=1), change["mu"].mean(axis=1), np.abs(change["nu"]).mean(axis=1)
    out["phases"] = {"v_star": _phases(step, v), "mu": _phases(step, mu)}
    out["final"] = {"v_star": float(v[-1]), "mu": float(mu[-1]), "abs_nu": float(nu[-1]),
                    "wp_outlier": hist["wp_outlier"][-1], "wp_clean": hist["wp_clean"][-1],
                    "minus_log_M1": -float(np.log(M1))}
    # Lemma 6 holds for t in Lemma 4's range (the same expression): the first phase, which ends at the
    # steepest fall of v*^T w; with every constant 1 that expression gives a far shorter range
    t_w, t_one = out["phases"]["v_star"]["t_star"], lemma6_window(s, M1, beta, V)
    inside = step <= max(t_w, step[1])
    l6 = {str(l): {"max_mean_in_window": float(np.max(np.asarray(hist[f"lemma6_mean_l{l}"])[inside])),
                   "max_mean_constants_1": float(np.max(np.asarray(hist[f"lemma6_mean_l{l}"])[step <= max(t_one, step[1])])),
                   "max_mean_whole_run": float(np.max(hist[f"lemma6_mean_l{l}"])),
                   "final_mean": float(hist[f"lemma6_mean_l{l}"][-1])} for l in s["lemma6_l_grid"]}
    out["lemma6"] = {"window_t": t_w, "window_constants_1": t_one, "by_l": l6}
    whole = [x["max_mean_whole_run"] for x in l6.values()]
    out["lemma6"]["outside_window"] = (
        f"not claimed there; stays Theta(1) (at most {max(whole):.2f})" if max(whole) <= 3.0 and whole[-1] / whole[0] <= 2.0
        else f"not claimed there; grows with l (max {whole[0]:.2f} at l = {s['lemma6_l_grid'][0]}, {whole[-1]:.2f} at "
             f"l = {s['lemma6_l_grid'][-1]}), not Theta(1)")
    judge_trajectory(out, float(v[-1]), float(mu[-1]), float(nu[-1]), {l: x["max_mean_in_window"] for l, x in l6.items()})
    out["lemma6"]["checked_steps"] = int(np.sum(inside))
    out["lemma6"]["total_steps"] = int(step[-1])
    return out

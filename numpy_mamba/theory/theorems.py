"""Theorems 1-4 measured: iterations to converge (eqs (9), (14)) and the tolerated outlier
fraction (Theorem 2 (c), Theorem 4 (c), (d)), with eta chosen per model by the step-size rule.

Each experiment takes the world and its settings (``settings.py``) and returns a ``Plan``:
independent units (one training run each, seeded by its own seed stream) and how to assemble their
results into a plain dict of settings, raw measurements and fitted slopes, ready for JSON; the
verdicts are added by ``claims.judge`` once every result is in.  ``runs.jobs.run_plans`` runs the units, in worker processes or not.
"""
from __future__ import annotations

from functools import partial

import numpy as np

from ..data import SECTION4, SECTION4_TEST_OUTLIERS, World
from ..model import PAPER_MODELS as MODELS
from ..fused import network
from ..measure.rules import sample_sd
from ..runs.jobs import Plan, Unit
from ..sgd import DivergenceError, TrainConfig, train
from .measure import error_curve, fit_slope, largest_tolerated, steps_to_epsilon
from .settings import ConvergenceVsLtr, ConvergenceVsPa, Tolerance


def _per_seed_slopes(x, T_by_seed) -> list:
    slopes = []
    for T in T_by_seed:                                     # T: list over x, None if not reached
        keep = [k for k, t in enumerate(T) if t is not None and t >= 1]
        if len(keep) >= 3:
            slopes.append(fit_slope(np.asarray(x)[keep], np.asarray(T, dtype=object)[keep].astype(float))[0])
    return slopes


def _summary(slopes):
    if not slopes:
        return None, None
    return float(np.mean(slopes)), sample_sd(slopes)


def _steps_units(world: World, s: ConvergenceVsPa | ConvergenceVsLtr, grid_key: str) -> list:
    """One ``steps_to_epsilon`` unit per (model, seed, grid value) of ``s.p_a_grid`` or ``s.l_tr_grid``."""
    units = []
    for model in MODELS:
        for seed in s.seeds:
            for v in getattr(s, grid_key):
                setting = {"p_a": v, "l_tr": s.l_tr} if grid_key == "p_a_grid" else {"p_a": s.p_a, "l_tr": v}
                units.append(Unit((model, seed, v), f"steps to eps {model} {grid_key[:-5]}={v} seed {seed}",
                                  steps_to_epsilon, (world, network(model)),
                                  dict(setting, eta=s.eta, delta=s.delta, eps=s.eps,
                                       T_max=s.T_max[model], seed=seed, B=s.B)))
    return units


def convergence_vs_p_a(world: World, s: ConvergenceVsPa) -> Plan:
    """Theorems 1 and 3: T_M, T_T = Theta((1 - p_a)^-1 ...).  Slope of log T on log 1/(1-p_a)."""
    return Plan(_steps_units(world, s, "p_a_grid"), partial(_convergence_vs_p_a, s))


def _convergence_vs_p_a(s: ConvergenceVsPa, measured: dict) -> dict:
    grid, seeds = s.p_a_grid, s.seeds
    x = [1.0 / (1.0 - p) for p in grid]
    out = {"settings": s.to_dict(), "x_inv_one_minus_p_a": x, "T": {}, "slope": {}, "verdict": {}}
    for model in MODELS:
        T, last = [], []
        for seed in seeds:
            runs = [measured[(model, seed, p)] for p in grid]
            T.append([r["T"] for r in runs])
            last.append([r["loss_end"] for r in runs])
        out.setdefault("loss_end", {})[model] = last
        slopes = _per_seed_slopes(x, T)
        mean, sd = _summary(slopes)
        out["T"][model] = T
        out["slope"][model] = {"per_seed": slopes, "mean": mean, "sd": sd, "claim": 1.0}
        # the same fit on the low-p_a end only (p_a <= low_p_a_max), where no loss floor is near eps
        low = [k for k, p in enumerate(grid) if p <= s.low_p_a_max]
        low_slopes = _per_seed_slopes([x[k] for k in low], [[row[k] for k in low] for row in T])
        lmean, lsd = _summary(low_slopes)
        out["slope"][model + "_low_p_a"] = {"per_seed": low_slopes, "mean": lmean, "sd": lsd, "claim": 1.0}
    return out


def convergence_vs_l_tr(world: World, s: ConvergenceVsLtr) -> Plan:
    """Theorem 3 vs 1: T_M / T_T = Theta(l_tr).  Slopes of log T_M, log T_T, log(T_M/T_T) on log l_tr
    (claims 0, -1 and +1)."""
    return Plan(_steps_units(world, s, "l_tr_grid"), partial(_convergence_vs_l_tr, s))


def _convergence_vs_l_tr(s: ConvergenceVsLtr, measured: dict) -> dict:
    grid, seeds = s.l_tr_grid, s.seeds
    out = {"settings": s.to_dict(), "l_tr": list(grid), "T": {}, "slope": {}, "verdict": {}}
    for model in MODELS:
        out["T"][model] = [[measured[(model, seed, l)]["T"] for l in grid] for seed in seeds]
    ratio = [[(m / t if (m is not None and t is not None and t >= 1) else None) for m, t in zip(rm, rt)]
             for rm, rt in zip(out["T"]["mamba"], out["T"]["linear_transformer"])]
    out["ratio_T_M_over_T_T"] = ratio
    for key, series, claim in (("mamba", out["T"]["mamba"], 0.0),
                               ("linear_transformer", out["T"]["linear_transformer"], -1.0),
                               ("ratio", ratio, 1.0)):
        slopes = _per_seed_slopes(grid, series)
        mean, sd = _summary(slopes)
        out["slope"][key] = {"per_seed": slopes, "mean": mean, "sd": sd, "claim": claim}
    return out


def trained(world: World, s: Tolerance, model: str, p_a: float, seed: int):
    """Algorithm 1 with the settings ``s`` at training outlier fraction ``p_a``, seed stream
    [seed, 3], the step size the rule chose, s.eta[model][str(p_a)]: (params, final minibatch
    loss), or (None, the error message) if it diverged."""
    config = TrainConfig(T=s.T, B=s.B, eta=s.eta[model][str(p_a)], l_tr=s.l_tr, p_a=p_a, delta=s.delta)
    try:
        params, history = train(world, config, network(model), rng=np.random.default_rng([seed, 3]))
    except DivergenceError as exc:
        return None, str(exc)
    return params, float(np.mean(history["loss"][-10:]))


def _alpha_run(world: World, s: Tolerance, model: str, p_a: float, seed: int) -> list:
    """One unit of ``tolerated_alpha``: train, then the error curves at every kappa_a' and l_ts."""
    alphas, thr = s.alphas, s.threshold
    params, final_loss = trained(world, s, model, p_a, seed)
    runs = []
    for kappa in s.kappa_a_prime:
        for l_ts in s.l_ts_grid:
            err = (error_curve(world, network(model), params, alphas=alphas, l_ts=l_ts, kappa_a_prime=kappa,
                               B_test=s.B_test, seed=seed, K_prime=s.K_prime, label_rule=s.label_rule)
                   if params is not None else None)
            runs.append({
                "model": model, "p_a": p_a, "seed": seed, "kappa_a_prime": kappa, "l_ts": l_ts,
                "final_train_loss": final_loss, "errors": err,
                "alpha_star": largest_tolerated(alphas, err, thr) if err is not None else None,
                "predicted": min(1.0, p_a * s.l_tr / l_ts)})
    return runs


def tolerated_alpha(world: World, s: Tolerance) -> Plan:
    """Theorems 2 and 4: the largest alpha at which the test error stays below ``threshold``,
    against p_a l_tr / l_ts for Mamba (claim: alpha* >= min(1, p_a l_tr / l_ts)) and against 1/2
    for the linear Transformer (claim: alpha* < 1/2).  One unit per (model, p_a, seed)."""
    keys = [(model, p_a, seed) for model in MODELS for p_a in s.p_a_train[model] for seed in s.seeds]
    units = [Unit(k, f"tolerated alpha {k[0]} p_a={k[1]} seed {k[2]}", _alpha_run, (world, s, *k)) for k in keys]
    # Theorem 4's (b) and (d) need M1, V, beta, kappa_a and L (eq (11): the smallest coefficient sum of v')
    constants = {"M1": world.M1, "V": world.V, "beta": world.beta, "kappa_a": SECTION4.kappa_a,
                 "L": float(SECTION4_TEST_OUTLIERS.sum(axis=1).min())}
    return Plan(units, partial(_tolerated_alpha, s, keys, constants))


def _tolerated_alpha(s: Tolerance, keys: list, constants: dict, measured: dict) -> dict:
    alphas = s.alphas
    out = {"settings": s.to_dict(), "runs": [r for k in keys for r in measured[k]], "verdict": {},
           "theorem4_constants": constants}
    mamba = [r for r in out["runs"] if r["model"] == "mamba" and r["alpha_star"] is not None]
    lt = [r for r in out["runs"] if r["model"] != "mamba" and r["alpha_star"] is not None]
    step = float(np.min(np.diff(alphas)))
    above = [r["alpha_star"] >= r["predicted"] - step for r in mamba]
    out["mamba_fraction_meeting_bound"] = float(np.mean(above)) if above else None
    out["mamba_alpha_star_vs_predicted_corr"] = (float(np.corrcoef([r["predicted"] for r in mamba],
                                                                   [r["alpha_star"] for r in mamba])[0, 1])
                                                 if len(mamba) > 2 else None)
    out["lt_alpha_star_max"] = max((r["alpha_star"] for r in lt), default=None)
    out["mamba_alpha_star_max"] = max((r["alpha_star"] for r in mamba), default=None)
    out["mamba_alpha_star_by_l_ts"] = {l: float(np.mean([r["alpha_star"] for r in mamba if r["l_ts"] == l]))
                                       for l in s.l_ts_grid if any(r["l_ts"] == l for r in mamba)}
    # the comparison of Remark 5: Mamba vs linear Transformer on the same (p_a, kappa_a', l_ts, seed)
    lt_key = {(r["p_a"], r["kappa_a_prime"], r["l_ts"], r["seed"]): r["alpha_star"] for r in lt}
    pairs = [(r["alpha_star"], lt_key[k]) for r in mamba
             if (k := (r["p_a"], r["kappa_a_prime"], r["l_ts"], r["seed"])) in lt_key]
    out["fraction_mamba_above_lt"] = float(np.mean([m > t for m, t in pairs])) if pairs else None
    return out


def _lt_context_run(world: World, s: Tolerance, seed: int):
    """One unit of ``lt_context_needed``: the linear Transformer of ``tolerated_alpha`` at p_a =
    ``lt_p_a`` (trained again from the same seed stream, so the same parameters), then its
    error at every alpha and l_ts.  None if training diverged."""
    model = "linear_transformer"
    params, _ = trained(world, s, model, s.lt_p_a, seed)
    if params is None:
        return None
    need, errs = [], []
    for alpha in s.lt_alphas:
        e = [float(error_curve(world, network(model), params, alphas=[alpha], l_ts=l, kappa_a_prime=s.kappa_a_prime[0],
                               B_test=s.B_test, seed=seed, K_prime=s.K_prime, label_rule=s.label_rule)[0])
             for l in s.lt_l_ts_grid]
        ok = [l for l, v in zip(s.lt_l_ts_grid, e) if v <= s.threshold]
        need.append(ok[0] if ok else None)
        errs.append(e)
    return {"seed": seed, "l_ts_needed": need, "errors": errs, "x": [(0.5 - a) ** -2 * a for a in s.lt_alphas]}


def lt_context_needed(world: World, s: Tolerance) -> Plan:
    """Theorem 4 (d), eq (15): the smallest l_ts at which the linear Transformer's test error is
    below ``threshold``, for alpha -> 1/2; claim l_ts ~ (1/2 - alpha)^-2 alpha (slope 1)."""
    seeds = s.seeds if s.lt_p_a in s.p_a_train["linear_transformer"] else []
    return Plan([Unit(seed, f"LT context needed seed {seed}", _lt_context_run, (world, s, seed)) for seed in seeds],
                partial(_lt_context_needed, s))


def _lt_context_needed(s: Tolerance, measured: dict) -> dict:
    out = {"settings": s.to_dict(), "alphas": list(s.lt_alphas), "l_ts_grid": list(s.lt_l_ts_grid),
           "runs": [r for r in measured.values() if r is not None]}
    slopes = []
    for r in out["runs"]:
        keep = [k for k, n in enumerate(r["l_ts_needed"]) if n is not None]
        if len(keep) >= 3:
            slopes.append(fit_slope(np.asarray(r["x"])[keep],
                                    np.asarray([r["l_ts_needed"][k] for k in keep], float))[0])
    mean, sd = _summary(slopes)
    out["slope"] = {"per_seed": slopes, "mean": mean, "sd": sd, "claim": 1.0}
    return out

"""Theorems 1-4 measured: iterations to converge (eqs (9), (14)) and the tolerated outlier
fraction (Theorem 2 (c), Theorem 4 (c), (d)), with eta chosen per model by the step-size rule.

Each function takes the world and a settings dict (see ``theory.SETTINGS``) and returns a
``Plan``: independent units (one training run each, seeded by its own seed stream) and how to
assemble their results into a plain dict of settings, raw measurements, fitted slopes and a
verdict, ready for JSON.  ``runs.jobs.run_plans`` runs the units, in worker processes or not.
"""
from __future__ import annotations

from functools import partial

import numpy as np

from ..model import PAPER_MODELS as MODELS
from ..network import network
from ..runs.jobs import Plan, Unit
from ..data import SECTION4_TEST_OUTLIERS, World
from ..sgd import DivergenceError, TrainConfig, train
from ..measure.error_verdicts import THEOREM4_RULE, theorem4_kappa_bound, theorem4_sufficient
from ..measure.verdicts import where_it_holds, where_text, word
from .measure import error_curve, fit_slope, largest_tolerated, steps_to_epsilon
from .step_sizes import eta_for

def _verdict(slope_mean, slope_sd, claim, tol=0.25, n=1) -> str:
    """'holds' if the mean slope is within max(tol, 2 standard errors) of the claim; 'holds in
    trend' if it has the claim's sign; otherwise 'does not hold here'."""
    if slope_mean is None:
        return "not measured (too few converged runs)"
    if abs(slope_mean - claim) <= max(tol, 2 * slope_sd / np.sqrt(max(n, 1))):
        return word("full")
    return word("trend") if np.sign(slope_mean) == np.sign(claim) and claim != 0 else word("none")


def convergence_verdict(grid, T_by_seed, slope: dict, label: str = "p_a") -> tuple[str, str]:
    """Eqs (9), (14): T = Theta((1-p_a)^-1 ...) claims a finite T at every grid value, growing with
    the slope claimed.  The slope verdict (``_verdict``) is taken where runs reached eps; a grid value
    where no seed reached eps (T = None) is a failure of the claim there, so the verdict becomes
    "holds in part" (or "does not hold here") and the detail names where.  Returns (verdict, detail)."""
    slope_v = _verdict(slope["mean"], slope["sd"], slope["claim"], n=len(slope["per_seed"]))
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
    return float(np.mean(slopes)), float(np.std(slopes, ddof=1)) if len(slopes) > 1 else 0.0


def _steps_units(world: World, s: dict, grid_key: str) -> list:
    """One ``steps_to_epsilon`` unit per (model, seed, grid value) of ``s[grid_key]`` (p_a or l_tr)."""
    units = []
    for model in MODELS:
        for seed in s["seeds"]:
            for v in s[grid_key]:
                setting = {"p_a": v, "l_tr": s["l_tr"]} if grid_key == "p_a_grid" else {"p_a": s["p_a"], "l_tr": v}
                units.append(Unit((model, seed, v), f"steps to eps {model} {grid_key[:-5]}={v} seed {seed}",
                                  steps_to_epsilon, (world, network(model)),
                                  dict(setting, eta=s["eta"], delta=s["delta"], eps=s["eps"],
                                       T_max=s["T_max"][model], seed=seed, B=s["B"])))
    return units


def convergence_vs_p_a(world: World, s: dict) -> Plan:
    """Theorems 1 and 3: T_M, T_T = Theta((1 - p_a)^-1 ...).  Slope of log T on log 1/(1-p_a)."""
    return Plan(_steps_units(world, s, "p_a_grid"), partial(_convergence_vs_p_a, s))


def _convergence_vs_p_a(s: dict, measured: dict) -> dict:
    grid, seeds = s["p_a_grid"], s["seeds"]
    x = [1.0 / (1.0 - p) for p in grid]
    out = {"settings": s, "x_inv_one_minus_p_a": x, "T": {}, "slope": {}, "verdict": {}}
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
        out["verdict"][model], out.setdefault("verdict_detail", {})[model] = convergence_verdict(
            grid, T, out["slope"][model])
        # the same fit on the low-p_a end only (p_a <= low_p_a_max), where no loss floor is near eps
        low = [k for k, p in enumerate(grid) if p <= s["low_p_a_max"]]
        low_slopes = _per_seed_slopes([x[k] for k in low], [[row[k] for k in low] for row in T])
        lmean, lsd = _summary(low_slopes)
        out["slope"][model + "_low_p_a"] = {"per_seed": low_slopes, "mean": lmean, "sd": lsd, "claim": 1.0}
    return out


def convergence_vs_l_tr(world: World, s: dict) -> Plan:
    """Theorem 3 vs 1: T_M / T_T = Theta(l_tr).  Slopes of log T_M, log T_T, log(T_M/T_T) on log l_tr
    (claims 0, -1 and +1)."""
    return Plan(_steps_units(world, s, "l_tr_grid"), partial(_convergence_vs_l_tr, s))


def _convergence_vs_l_tr(s: dict, measured: dict) -> dict:
    grid, seeds = s["l_tr_grid"], s["seeds"]
    out = {"settings": s, "l_tr": grid, "T": {}, "slope": {}, "verdict": {}}
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
    out["verdict"]["ratio"] = _verdict(out["slope"]["ratio"]["mean"], out["slope"]["ratio"]["sd"], 1.0,
                                       n=len(out["slope"]["ratio"]["per_seed"]))
    return out


def trained(world, s, model, p_a, seed):
    """Algorithm 1 with the settings ``s`` at training outlier fraction ``p_a``, seed stream
    [seed, 3], step size ``eta_for(s, model, p_a)``: (params, final minibatch loss), or (None, the
    error message) if it diverged."""
    config = TrainConfig(T=s["T"], B=s["B"], eta=eta_for(s, model, p_a), l_tr=s["l_tr"], p_a=p_a, delta=s["delta"])
    try:
        params, history = train(world, config, network(model), rng=np.random.default_rng([seed, 3]))
    except DivergenceError as exc:
        return None, str(exc)
    return params, float(np.mean(history["loss"][-10:]))


def _alpha_run(world: World, s: dict, model: str, p_a: float, seed: int) -> list:
    """One unit of ``tolerated_alpha``: train, then the error curves at every kappa_a' and l_ts."""
    alphas, thr = s["alphas"], s["threshold"]
    params, final_loss = trained(world, s, model, p_a, seed)
    runs = []
    for kappa in s["kappa_a_prime"]:
        for l_ts in s["l_ts_grid"]:
            err = (error_curve(world, network(model), params, alphas=alphas, l_ts=l_ts, kappa_a_prime=kappa,
                               B_test=s["B_test"], seed=seed) if params is not None else None)
            runs.append({
                "model": model, "p_a": p_a, "seed": seed, "kappa_a_prime": kappa, "l_ts": l_ts,
                "final_train_loss": final_loss, "errors": err,
                "alpha_star": largest_tolerated(alphas, err, thr) if err is not None else None,
                "predicted": min(1.0, p_a * s["l_tr"] / l_ts)})
    return runs


def tolerated_alpha(world: World, s: dict) -> Plan:
    """Theorems 2 and 4: the largest alpha at which the test error stays below ``threshold``,
    against p_a l_tr / l_ts for Mamba (claim: alpha* >= min(1, p_a l_tr / l_ts)) and against 1/2
    for the linear Transformer (claim: alpha* < 1/2).  One unit per (model, p_a, seed)."""
    keys = [(model, p_a, seed) for model in MODELS for p_a in s["p_a_train"][model] for seed in s["seeds"]]
    units = [Unit(k, f"tolerated alpha {k[0]} p_a={k[1]} seed {k[2]}", _alpha_run, (world, s, *k)) for k in keys]
    # Theorem 4's (b) and (d) need M1, V, beta, kappa_a and L (eq (11): the smallest coefficient sum of v')
    constants = {"M1": world.M1, "V": world.V, "beta": world.beta, "kappa_a": TrainConfig.kappa_a,
                 "L": float(SECTION4_TEST_OUTLIERS.sum(axis=1).min())}
    return Plan(units, partial(_tolerated_alpha, s, keys, constants))


def _tolerated_alpha(s: dict, keys: list, constants: dict, measured: dict) -> dict:
    alphas = s["alphas"]
    out = {"settings": s, "runs": [r for k in keys for r in measured[k]], "verdict": {},
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
                                       for l in s["l_ts_grid"] if any(r["l_ts"] == l for r in mamba)}
    # the comparison of Remark 5: Mamba vs linear Transformer on the same (p_a, kappa_a', l_ts, seed)
    lt_key = {(r["p_a"], r["kappa_a_prime"], r["l_ts"], r["seed"]): r["alpha_star"] for r in lt}
    pairs = [(r["alpha_star"], lt_key[k]) for r in mamba
             if (k := (r["p_a"], r["kappa_a_prime"], r["l_ts"], r["seed"])) in lt_key]
    out["fraction_mamba_above_lt"] = float(np.mean([m > t for m, t in pairs])) if pairs else None
    return judge_tolerated(out)


def _lt_context_run(world: World, s: dict, seed: int):
    """One unit of ``lt_context_needed``: the linear Transformer of ``tolerated_alpha`` at p_a =
    ``lt_p_a`` (trained again from the same seed stream, so the same parameters), then its
    error at every alpha and l_ts.  None if training diverged."""
    model = "linear_transformer"
    params, _ = trained(world, s, model, s["lt_p_a"], seed)
    if params is None:
        return None
    need, errs = [], []
    for alpha in s["lt_alphas"]:
        e = [float(error_curve(world, network(model), params, alphas=[alpha], l_ts=l, kappa_a_prime=s["kappa_a_prime"][0],
                               B_test=s["B_test"], seed=seed)[0]) for l in s["lt_l_ts_grid"]]
        ok = [l for l, v in zip(s["lt_l_ts_grid"], e) if v <= s["threshold"]]
        need.append(ok[0] if ok else None)
        errs.append(e)
    return {"seed": seed, "l_ts_needed": need, "errors": errs, "x": [(0.5 - a) ** -2 * a for a in s["lt_alphas"]]}


def lt_context_needed(world: World, s: dict) -> Plan:
    """Theorem 4 (d), eq (15): the smallest l_ts at which the linear Transformer's test error is
    below ``threshold``, for alpha -> 1/2; claim l_ts ~ (1/2 - alpha)^-2 alpha (slope 1)."""
    seeds = s["seeds"] if s["lt_p_a"] in s["p_a_train"]["linear_transformer"] else []
    return Plan([Unit(seed, f"LT context needed seed {seed}", _lt_context_run, (world, s, seed)) for seed in seeds],
                partial(_lt_context_needed, s))


def _lt_context_needed(s: dict, measured: dict) -> dict:
    out = {"settings": s, "alphas": s["lt_alphas"], "l_ts_grid": s["lt_l_ts_grid"],
           "runs": [r for r in measured.values() if r is not None]}
    slopes = []
    for r in out["runs"]:
        keep = [k for k, n in enumerate(r["l_ts_needed"]) if n is not None]
        if len(keep) >= 3:
            slopes.append(fit_slope(np.asarray(r["x"])[keep],
                                    np.asarray([r["l_ts_needed"][k] for k in keep], float))[0])
    mean, sd = _summary(slopes)
    out["slope"] = {"per_seed": slopes, "mean": mean, "sd": sd, "claim": 1.0}
    out["verdict"] = _verdict(mean, sd, 1.0, tol=0.35, n=len(slopes))
    return out

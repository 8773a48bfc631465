"""Theorems 2 and 4 and Remark 5, the tolerated outlier fraction: models trained at each p_a, tested
(Definition 2) at every alpha, kappa_a' and l_ts.  Theorem 2 (c) is judged on the error the outliers add
where it covers a cell, Theorem 4 as the sufficient condition it states, Remark 5 on alpha* (the largest
alpha before the error passes ``threshold``), Theorem 4 (d) on the context the linear Transformer needs
as alpha -> 1/2 (eq (15)).  Writes theory_alpha.json (alpha, lt_context, step_size) and theory_alpha.png.

eta per model and training p_a is chosen by the step-size rule of ``runs/step_size.py`` (``selection``,
which Corollary 1 asks for too) on worlds from default_rng([k, SELECTION_STREAM, 9]) and streams [k,
SELECTION_STREAM, ...] that no experiment uses: the rule never sees an experiment's prompts.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from functools import partial

import numpy as np

from ..data import SECTION4, SECTION4_TEST_OUTLIERS, World, make_world
from ..fused import network
from ..measure.rules import (THEOREM4_RULE, THM4D_TOL, case, case_name, judge_cases, remark5_case, sample_sd,
                             slope_verdict, theorem2_excess, theorem4_judged, verdict_text, where_text)
from ..model import PAPER_MODELS as MODELS
from ..runs.claims import claim_row
from ..runs.report import Template
from ..runs.runner import Unit
from ..runs.step_size import selection_plan, table_rows
from ..sgd import DivergenceError, TrainConfig, train
from .measure import (ETA_GRID, LABEL_WORD, WORLD, Recorded, error_curve, header, largest_tolerated, pm, rounded,
                      seeds_text, slopes, world)

NAME, FILES = "Theorems 2/4 and Remark 5, with the step sizes", ("theory_alpha",)
RULES = ("slope", "thm2", "remark5-alpha", "thm4")
OUTPUTS = ("theory_alpha        Theorems 2, 4 (d) and Remark 5: tolerated outlier fraction, context needed "
           "-> theory_alpha.json, theory_alpha.png")
TEXT = Template(__package__, "tolerance.md")
SELECTION_STREAM = 30


@dataclass(frozen=True)
class Tolerance(Recorded):
    """Theorems 2 and 4, Remark 5 and Corollary 1: models trained at each p_a of ``p_a_train``
    (eta per model and p_a by the step-size rule over ``eta_grid`` on ``select_seeds`` with
    ``n_heldout`` held-out prompts; ``eta`` once chosen: {model: {str(p_a): eta}}), tested on
    ``B_test`` prompts per point; alpha* is the largest alpha before the error exceeds
    ``threshold``; Theorem 4 (d) at ``lt_p_a`` over ``lt_alphas`` and ``lt_l_ts_grid``; Corollary 1
    at p_a = ``cor1_p_a``, l_ts, alpha and the first kappa_a' (the main setting, REPORT.md).  Test
    prompts (Definition 2): K', outlier labels ``label_rule``, every kappa_a' of ``kappa_a_prime``."""

    T: int = 1500
    B: int = 64
    eta_grid: tuple = ETA_GRID
    select_seeds: tuple = (0, 1, 2)
    n_heldout: int = 2048
    delta: float = SECTION4.delta
    l_tr: int = SECTION4.l_tr
    seeds: tuple = (0, 1, 2, 3, 4)
    p_a_train: dict = field(default_factory=lambda: {"mamba": (0.3, 0.6), "linear_transformer": (0.6,)})
    kappa_a_prime: tuple = (2.0, 8.0)
    K_prime: float = 1.5
    label_rule: str = "flip"
    l_ts_grid: tuple = (10, 20, 40, 80)
    alphas: tuple = tuple(round(0.05 * k, 2) for k in range(20))
    threshold: float = 0.25
    B_test: int = 1000
    lt_p_a: float = 0.6
    lt_alphas: tuple = (0.2, 0.3, 0.35, 0.4, 0.425, 0.45, 0.475)
    lt_l_ts_grid: tuple = (5, 7, 10, 14, 20, 28, 40, 57, 80, 113, 160, 226, 320, 453, 640)
    cor1_p_a: float = 0.6
    l_ts: int = SECTION4.l_ts
    alpha: float = 0.3
    quick: bool = False
    eta: dict | None = None


FULL = Tolerance()
QUICK = Tolerance(T=150, seeds=(0,), kappa_a_prime=(2.0,), l_ts_grid=(10, 20), B_test=100, eta_grid=(0.05, 0.2),
                  select_seeds=(0,), n_heldout=128, alphas=(0.0, 0.3, 0.6, 0.9),
                  p_a_train={"mamba": (0.6,), "linear_transformer": (0.6,)}, lt_alphas=(0.2, 0.3, 0.4),
                  lt_l_ts_grid=(5, 20, 80), quick=True)


# ---------------------------------------------------------------- the step size
def selection_world(params: dict, k: int) -> World:
    """Selection seed ``k``'s world of ``params`` (d, M1, M2, V, beta), from stream [k, SELECTION_STREAM, 9]."""
    return make_world(**params, rng=np.random.default_rng([k, SELECTION_STREAM, 9]))


def selection(s: Tolerance, chosen: dict) -> dict:
    """eta for each model and training p_a by the rule of ``runs/step_size.py`` over s.eta_grid, on
    s.select_seeds, scored on s.n_heldout held-out training prompts; the experiments' T, B, delta, l_tr.
    {"model p_a=x": Plan} (Corollary 1 asks the same)."""
    plans = {}
    for m, model in enumerate(MODELS):
        for p_a in s.p_a_train[model]:
            config = TrainConfig(T=s.T, B=s.B, eta=s.eta_grid[0], l_tr=s.l_tr, p_a=p_a, delta=s.delta)
            plans[f"{model} p_a={p_a}"] = selection_plan(
                {"eta": s.eta_grid}, s.select_seeds, partial(selection_world, WORLD), config, network(model),
                s.n_heldout, (SELECTION_STREAM, round(100 * p_a), m + 1), f"theory step size, {model}, p_a = {p_a}")
    return plans


def step_sizes(s: Tolerance, chosen: dict) -> dict:
    """The rule's records {model: {str(p_a): record}} from ``selection``'s choices."""
    return {model: {str(p_a): chosen[f"{model} p_a={p_a}"] for p_a in s.p_a_train[model]} for model in MODELS}


def with_eta(s: Tolerance, chosen: dict) -> Tolerance:
    """The settings with the chosen eta, {model: {str(p_a): eta}}."""
    return replace(s, eta={m: {p: r["chosen"]["eta"] for p, r in by.items()} for m, by in step_sizes(s, chosen).items()})


# ---------------------------------------------------------------- the units
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


def alpha_run(world: World, s: Tolerance, model: str, p_a: float, seed: int) -> list:
    """Theorems 2 and 4, one model at one p_a and seed: train, then the error curve at every kappa_a'
    and l_ts, and alpha*, against p_a l_tr / l_ts for Mamba (claim: alpha* >= min(1, p_a l_tr / l_ts))."""
    params, final_loss = trained(world, s, model, p_a, seed)
    runs = []
    for kappa in s.kappa_a_prime:
        for l_ts in s.l_ts_grid:
            err = (error_curve(world, network(model), params, alphas=s.alphas, l_ts=l_ts, kappa_a_prime=kappa,
                               B_test=s.B_test, seed=seed, K_prime=s.K_prime, label_rule=s.label_rule)
                   if params is not None else None)
            runs.append({
                "model": model, "p_a": p_a, "seed": seed, "kappa_a_prime": kappa, "l_ts": l_ts,
                "final_train_loss": final_loss, "errors": err,
                "alpha_star": largest_tolerated(s.alphas, err, s.threshold) if err is not None else None,
                "predicted": min(1.0, p_a * s.l_tr / l_ts)})
    return runs


def lt_context_run(world: World, s: Tolerance, seed: int):
    """Theorem 4 (d), eq (15): the linear Transformer of ``alpha_run`` at p_a = ``lt_p_a`` (trained
    again from the same seed stream, so the same parameters), its error at every alpha and l_ts, and
    the smallest l_ts at which it is below ``threshold`` (claim: l_ts ~ (1/2 - alpha)^-2 alpha).
    None if training diverged."""
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


def units(s: Tolerance, chosen: dict) -> list:
    """One unit per (model, p_a, seed), and one per seed for the context Theorem 4 (d) needs."""
    s, the_world = with_eta(s, chosen), world()
    keys = [(model, p_a, seed) for model in MODELS for p_a in s.p_a_train[model] for seed in s.seeds]
    lt_seeds = s.seeds if s.lt_p_a in s.p_a_train["linear_transformer"] else []
    return ([Unit(("alpha", *k), f"tolerated alpha {k[0]} p_a={k[1]} seed {k[2]}", alpha_run, (the_world, s, *k))
             for k in keys]
            + [Unit(("lt", seed), f"LT context needed seed {seed}", lt_context_run, (the_world, s, seed))
               for seed in lt_seeds])


def assemble(s: Tolerance, chosen: dict, found: dict, run) -> dict:
    """theory_alpha.json: the runs and alpha* ("alpha"), the context needed ("lt_context"), the rule's records."""
    s = with_eta(s, chosen)
    alpha = tolerated(s, [r for k, runs in found.items() if k[0] == "alpha" for r in runs])
    lt = {"settings": s.to_dict(), "alphas": list(s.lt_alphas), "l_ts_grid": list(s.lt_l_ts_grid),
          "runs": [r for k, r in found.items() if k[0] == "lt" and r is not None]}
    lt["slope"] = slopes([(0.5 - a) ** -2 * a for a in s.lt_alphas], [r["l_ts_needed"] for r in lt["runs"]], 1.0)
    return {"theory_alpha": {**header(run), "alpha": alpha, "lt_context": lt, "step_size": step_sizes(s, chosen)}}


def tolerated(s: Tolerance, runs: list) -> dict:
    """alpha* against the bound: how often Mamba meets it, how they correlate, Mamba against the linear
    Transformer on the same (p_a, kappa_a', l_ts, seed) (Remark 5); and the constants Theorem 4's (b)
    and (d) need: M1, V, beta, kappa_a and L (eq (11): the smallest coefficient sum of v')."""
    constants = {"M1": WORLD["M1"], "V": WORLD["V"], "beta": WORLD["beta"], "kappa_a": SECTION4.kappa_a,
                 "L": float(SECTION4_TEST_OUTLIERS.sum(axis=1).min())}
    out = {"settings": s.to_dict(), "runs": runs, "verdict": {}, "theorem4_constants": constants}
    mamba = [r for r in runs if r["model"] == "mamba" and r["alpha_star"] is not None]
    lt = [r for r in runs if r["model"] != "mamba" and r["alpha_star"] is not None]
    step = float(np.min(np.diff(s.alphas)))
    above = [r["alpha_star"] >= r["predicted"] - step for r in mamba]
    out["mamba_fraction_meeting_bound"] = float(np.mean(above)) if above else None
    out["mamba_alpha_star_vs_predicted_corr"] = (float(np.corrcoef([r["predicted"] for r in mamba],
                                                                   [r["alpha_star"] for r in mamba])[0, 1])
                                                 if len(mamba) > 2 else None)
    out["lt_alpha_star_max"] = max((r["alpha_star"] for r in lt), default=None)
    out["mamba_alpha_star_max"] = max((r["alpha_star"] for r in mamba), default=None)
    out["mamba_alpha_star_by_l_ts"] = {l: float(np.mean([r["alpha_star"] for r in mamba if r["l_ts"] == l]))
                                       for l in s.l_ts_grid if any(r["l_ts"] == l for r in mamba)}
    lt_key = {(r["p_a"], r["kappa_a_prime"], r["l_ts"], r["seed"]): r["alpha_star"] for r in lt}
    pairs = [(r["alpha_star"], lt_key[k]) for r in mamba
             if (k := (r["p_a"], r["kappa_a_prime"], r["l_ts"], r["seed"])) in lt_key]
    out["fraction_mamba_above_lt"] = float(np.mean([m > t for m, t in pairs])) if pairs else None
    return out


# ---------------------------------------------------------------- the verdicts
def judge(results: dict) -> None:
    """Theorem 4 (d) (rule slope, within ``THM4D_TOL``), Theorems 2, 4 and Remark 5 (``judge_tolerated``)."""
    a = results["theory_alpha"]
    lt, sl = a["lt_context"], a["lt_context"]["slope"]
    v = slope_verdict(list(sl["per_seed"]) + [None] * (len(lt["runs"]) - len(sl["per_seed"])), sl["claim"], THM4D_TOL)
    lt["verdict"], lt["verdict_detail"], lt["judged"] = verdict_text(v), where_text(v), v
    judge_tolerated(a["alpha"], lt)


def judge_tolerated(out: dict, lt_context: dict | None = None) -> dict:
    """Verdicts of Theorem 2 (c), Theorem 4 and Remark 5 from ``out["runs"]``, case by case:
    Theorem 2 in each (p_a, kappa_a', l_ts) case (rule thm2); Remark 5 in each case trained at
    the linear Transformer's p_a (rule remark5-alpha); Theorem 4 by ``judge_theorem4`` on the linear
    Transformer's error curves (and ``lt_context``'s).  Adds out["verdict"], out["verdict_detail"],
    out["judged"], out["theorem2_excess"]."""
    s = out["settings"]
    M1 = out.get("theorem4_constants", {}).get("M1", SECTION4.M1)
    mamba = [r for r in out["runs"] if r["model"] == "mamba" and r["alpha_star"] is not None]
    lt = {(r["p_a"], r["kappa_a_prime"], r["l_ts"], r["seed"]): r["alpha_star"]
          for r in out["runs"] if r["model"] != "mamba" and r["alpha_star"] is not None}
    by_case = {}
    for r in mamba:
        by_case.setdefault((r["p_a"], r["kappa_a_prime"], r["l_ts"]), []).append(r)
    thm2, rem5, border, border5, excess = {}, {}, [], [], {}
    for (p_a, kappa, l_ts), runs in by_case.items():
        name = case(("p_a", p_a), ("kappa_a'", kappa), ("l_ts", l_ts))
        excess[case_name(name)] = e = theorem2_excess(s["alphas"], [r["errors"] for r in runs], runs[0]["predicted"],
                                                      l_ts, M1)
        thm2[name] = e["level"]
        border += [name] * e["borderline"]
        pairs = [(r["alpha_star"], lt[(p_a, kappa, l_ts, r["seed"])]) for r in runs if (p_a, kappa, l_ts, r["seed"]) in lt]
        if pairs:
            rem5[name], thin = remark5_case(pairs)
            border5 += [name] * thin
    out["verdict"], out["verdict_detail"], out["judged"] = {}, {}, {}
    out["theorem2_excess"] = excess
    for claim, cases, bl in (("mamba", thm2, border), ("remark5", rem5, border5)):
        if cases:
            v = judge_cases(cases, bl)
            out["verdict"][claim], out["verdict_detail"][claim], out["judged"][claim] = verdict_text(v), where_text(v), v
        else:
            out["verdict"][claim] = "not run"
    return judge_theorem4(out, lt_context)


def theorem4_cells(out: dict, lt_context: dict | None = None) -> list:
    """The linear Transformer's error counts per (kappa_a', l_ts, alpha), seeds stacked, from the
    error curves of ``alpha_run`` and, if given, of ``lt_context_run`` (alpha near 1/2, long
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
    """Theorem 4 as stated (``measure.rules.theorem4_judged``) at the alpha* threshold and at 0.1 where
    that is smaller: a small error wherever conditions (b)-(d) hold.  Its alpha* above 1/2 or not is left
    unjudged: the theorem does not say the error is large at alpha >= 1/2."""
    s, c = out["settings"], out.get("theorem4_constants")
    cells = theorem4_cells(out, lt_context)
    if c is None or not cells:
        out["verdict"]["linear_transformer"] = "not run"
        return out
    eps = tuple(dict.fromkeys((s["threshold"], min(0.1, s["threshold"]))))
    by_eps, v, detail = theorem4_judged(cells, c, min(s["p_a_train"]["linear_transformer"]), s["l_tr"], eps)
    out["theorem4"] = {"by_eps": by_eps, "rule": THEOREM4_RULE.format(eps=", ".join(f"{e:g}" for e in eps))}
    if v is None:
        out["verdict"]["linear_transformer"] = "not run"
        return out
    out["verdict"]["linear_transformer"], out["judged"]["linear_transformer"] = verdict_text(v), v
    out["verdict_detail"]["linear_transformer"] = detail
    return out


# ---------------------------------------------------------------- what is written from the JSON
def figure(results: dict, out) -> list:
    """theory_alpha.png (``plots.tolerated``)."""
    from . import plots                                     # matplotlib only when drawing
    a = results["theory_alpha"]
    return [plots.tolerated(a["alpha"], a["lt_context"], out / "theory_alpha.png")]


SEE = [("theory_alpha.png", "theory_alpha.png"), ("section", "#theorems-2-and-4-tolerated-outlier-fraction")]


def claims(results: dict) -> list:
    """Theorem 2 (c), Remark 5, Theorem 4 and Theorem 4 (d), each where it was judged."""
    if "theory_alpha" not in results:
        return []
    a, lt = results["theory_alpha"]["alpha"], results["theory_alpha"]["lt_context"]
    s, excess = a["settings"], a.get("theorem2_excess", {})
    key = f"p_a = {s['cor1_p_a']:g}, kappa_a' = {min(s['kappa_a_prime']):g}, l_ts = {s['l_ts']}"
    main = excess.get(key) or next(iter(excess.values()), None)
    r = a.get("mamba_alpha_star_vs_predicted_corr")
    corr = "n/a" if r is None else f"{r:+.2f}"
    ours = (f"{key if key in excess else next(iter(excess))}: largest error up to alpha = {main['alphas'][-1]:g}: "
            f"{main['worst_error']:.3f}, of which the outliers add {main['worst']:.3f}; alpha* and bound correlate at "
            f"{corr}") if main else "n/a"
    out, judged = [], a.get("judged", {})
    if "mamba" in judged:
        out.append(claim_row("thm2", "Thm 2 (c), theory grid: Mamba's error <= eps for alpha < min(1, p_a l_tr / l_ts)",
                             "error <= eps where (c) and (d) hold", ours, judged["mamba"], "thm2", SEE,
                             headline=(f"Thm 2 (c): Mamba's largest error below the bound, {key}", "<= eps = 0.01",
                                       f"{main['worst_error']:.3f}" if main else "n/a")))
    if "remark5" in judged:
        out.append(claim_row("remark5_alpha", "Remark 5: Mamba tolerates more outliers than the linear Transformer",
                             "Mamba's alpha* above the LT's", f"largest alpha*: Mamba {a['mamba_alpha_star_max']:.2f}, "
                             f"LT {a['lt_alpha_star_max']:.2f}", judged["remark5"], "remark5-alpha", SEE))
    if "linear_transformer" in judged:
        strict = max(a["theorem4"]["by_eps"].values(), key=lambda r: r["eps"])
        out.append(claim_row("thm4", "Thm 4: the linear Transformer's error <= eps where (b)-(d) hold",
                             "error <= eps (a sufficient condition)", f"highest interval end {strict['worst']['high']:.3f} "
                             f"at eps = {strict['eps']:g}", judged["linear_transformer"], "thm4", SEE))
    if "judged" in lt:
        mean = lt["slope"]["mean"]
        out.append(claim_row("thm4d", "Thm 4 (d), eq (15): context needed l_ts = Theta((1/2-alpha)^-2 alpha)",
                             "slope 1 of log l_ts on log((1/2-alpha)^-2 alpha)", f"slope {seeds_text(lt['slope'])}",
                             lt["judged"], "slope", SEE,
                             headline=("Thm 4 (d): slope of log l_ts on log((1/2-alpha)^-2 alpha)", "1",
                                       f"{mean:.2f}" if mean is not None else "n/a")))
    return out


def alpha_table(a: dict) -> list:
    """Per (model, p_a, kappa_a', l_ts): the bound, the alphas Theorem 2 covers, the error the outliers add there, alpha*."""
    s, excess, rows = a["settings"], a.get("theorem2_excess", {}), []
    for model, p_a, kappa, l_ts in sorted({(r["model"], r["p_a"], r["kappa_a_prime"], r["l_ts"]) for r in a["runs"]}):
        stars = [r["alpha_star"] for r in a["runs"] if (r["model"], r["p_a"], r["kappa_a_prime"], r["l_ts"]) ==
                 (model, p_a, kappa, l_ts) and r["alpha_star"] is not None]
        x = p_a * s["l_tr"] / l_ts
        e = excess.get(f"p_a = {p_a:g}, kappa_a' = {kappa:g}, l_ts = {l_ts}") if model == "mamba" else None
        covered, worst, added = ((f"0 to {e['alphas'][-1]:g}", f"{e['worst_error']:.3f}", f"{e['worst']:.3f}") if e
                                 else ("none (Thm 4 is judged below)", "-", "-"))
        star = f"{np.mean(stars):.2f} ± {sample_sd(stars):.2f}" if stars else "diverged"
        rows.append(f"| {model} | {p_a} | {kappa:g} | {l_ts} | {x:.2f} | {min(1.0, x) if model == 'mamba' else '-'} | "
                    f"{covered} | {worst} | {added} | {star} |")
    return rows


def step_tables(step_size: dict) -> list:
    """Every candidate's held-out loss per selection seed, per model and training p_a."""
    blocks = []
    for model, by_p in (step_size or {}).items():
        for p_a, sel in by_p.items():
            seeds = " | ".join(TEXT("seed-column", k=k) for k in sel["seeds"])
            head = TEXT("step-table", model=model, p_a=p_a, seeds=seeds, dashes="---|" * (len(sel["seeds"]) + 2))
            blocks.append("\n".join([head, *("| " + " | ".join(row) + " |" for row in table_rows(sel))]))
    return blocks


def report(results: dict, run) -> str:
    """Training, the alpha* table, the step sizes, and the verdicts of Theorems 2, 4 and Remark 5."""
    a, lt = results["theory_alpha"]["alpha"], results["theory_alpha"]["lt_context"]
    s, detail, corr = a["settings"], a.get("verdict_detail", {}), a.get("mamba_alpha_star_vs_predicted_corr")
    etas = "; ".join(TEXT("eta", model=model, p_a=p_a, eta=s["eta"][model][str(p_a)])
                     for model, grid in s["p_a_train"].items() for p_a in grid)
    by_l = list(a["mamba_alpha_star_by_l_ts"].values())
    words = "" if corr is None else TEXT("corr-none" if abs(corr) < 0.3 else "corr-up" if corr > 0 else "corr-down")
    head = TEXT("head", **s, n_select=len(s["select_seeds"]), etas=etas, labels=LABEL_WORD[s["label_rule"]])
    bullets = TEXT("bullets", thm2=a["verdict"]["mamba"], thm2_detail=detail.get("mamba", ""),
                   mamba_max=a["mamba_alpha_star_max"], by_l_ts=rounded(a["mamba_alpha_star_by_l_ts"]),
                   trend=TEXT("flat" if by_l[-1] >= by_l[0] - 0.05 else "falls"),
                   corr="n/a" if corr is None else f"{corr:+.2f}", corr_words=words,
                   above="n/a" if a["fraction_mamba_above_lt"] is None else f"{a['fraction_mamba_above_lt']:.0%}",
                   remark5=a["verdict"].get("remark5", "n/a"), remark5_detail=detail.get("remark5", ""),
                   thm4=a["verdict"]["linear_transformer"], thm4_detail=detail.get("linear_transformer", ""),
                   lt_max=a["lt_alpha_star_max"], threshold=s["threshold"], lt_alphas=s["lt_alphas"],
                   needed=json.dumps([r["l_ts_needed"] for r in lt["runs"]]), longest=s["lt_l_ts_grid"][-1],
                   slope=pm(lt["slope"]), thm4d=lt["verdict"], thm4d_detail=lt["verdict_detail"])
    table = "\n".join([TEXT("table-header"), *alpha_table(a)])
    return "\n\n".join([head, table, *step_tables(results["theory_alpha"].get("step_size")), bullets])

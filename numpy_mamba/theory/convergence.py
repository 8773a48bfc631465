"""Theorems 1 and 3, iterations to converge: the steps until the held-out loss falls below eps,
for Mamba and the linear Transformer, against the training outlier fraction p_a (eqs (9), (14):
T = Theta((1-p_a)^-1)) and against the training context length l_tr (Remark 4: T_M / T_T = Theta(l_tr)).

Writes theory_convergence.json (both grids) and theory_convergence.png.  One unit per (grid, model,
seed, grid value): ``measure.steps_to_epsilon``.  One small eta for both models: the claims are step
counts, which scale as 1/eta (eqs (9), (14)), so eta is part of what they compare, and a small one
gives the counts resolution.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np

from ..data import SECTION4
from ..fused import network
from ..measure.rules import EXPONENT_TOL, convergence_verdict, slope_verdict, verdict_text, where_text
from ..model import PAPER_MODELS as MODELS
from ..runs.claims import claim_row
from ..runs.report import Template
from ..runs.runner import Unit
from .measure import Recorded, header, pm, rounded, seeds_text, slopes, steps_to_epsilon, world

NAME, FILES, RULES = "Theorems 1/3 vs p_a and l_tr", ("theory_convergence",), ("slope",)
OUTPUTS = ("theory_convergence  Theorems 1, 3 and Remark 4: steps to converge against p_a and l_tr "
           "-> theory_convergence.json, theory_convergence.png")
TEXT = Template(__package__, "convergence.md")


@dataclass(frozen=True)
class Convergence(Recorded):
    """Iterations to converge: a small delta, so that the linear Transformer does not start below
    eps, and a small eta, so that the step counts have resolution (the paper gives neither); T_max
    per model; the training seeds."""

    eta: float = 0.01
    delta: float = 0.02
    eps: float = 0.1
    B: int = 64
    T_max: dict = field(default_factory=lambda: {"mamba": 8000, "linear_transformer": 1500})
    seeds: tuple = (0, 1, 2, 3, 4)


@dataclass(frozen=True)
class VsPa(Convergence):
    """Against p_a (at Section 4's l_tr); the fit is repeated on p_a <= low_p_a_max, where no loss
    floor is near eps."""

    p_a_grid: tuple = (0.0, 0.2, 0.4, 0.6, 0.7, 0.8)
    l_tr: int = SECTION4.l_tr
    low_p_a_max: float = 0.4
    quick: bool = False


@dataclass(frozen=True)
class VsLtr(Convergence):
    """Against l_tr (at p_a = 0.4)."""

    l_tr_grid: tuple = (5, 10, 20, 40, 80)
    p_a: float = 0.4
    quick: bool = False


@dataclass(frozen=True)
class Grids:
    """The experiment's two grids: against p_a and against l_tr."""

    p_a: VsPa = VsPa()
    l_tr: VsLtr = VsLtr()


FULL = Grids()
QUICK_T_MAX = {"mamba": 600, "linear_transformer": 200}
QUICK = Grids(VsPa(eta=0.05, seeds=(0,), T_max=QUICK_T_MAX, p_a_grid=(0.0, 0.4, 0.6), quick=True),
              VsLtr(eta=0.05, seeds=(0,), T_max=QUICK_T_MAX, l_tr_grid=(5, 10, 20), quick=True))


def units(s: Grids, chosen: dict) -> list:
    """One ``steps_to_epsilon`` unit per grid, model, seed and grid value."""
    the_world, out = world(), []
    for grid, g in (("p_a", s.p_a), ("l_tr", s.l_tr)):
        for model in MODELS:
            for seed in g.seeds:
                for v in getattr(g, f"{grid}_grid"):
                    setting = {"p_a": v, "l_tr": g.l_tr} if grid == "p_a" else {"p_a": g.p_a, "l_tr": v}
                    out.append(Unit((grid, model, seed, v), f"steps to eps {model} {grid}={v} seed {seed}",
                                    steps_to_epsilon, (the_world, network(model)),
                                    dict(setting, eta=g.eta, delta=g.delta, eps=g.eps, T_max=g.T_max[model], seed=seed,
                                         B=g.B)))
    return out


def assemble(s: Grids, chosen: dict, found: dict, run) -> dict:
    """theory_convergence.json: the steps per seed and their slopes, against p_a and against l_tr."""
    mine = lambda grid: {k[1:]: v for k, v in found.items() if k[0] == grid}       # noqa: E731
    return {"theory_convergence": {**header(run), "p_a": vs_p_a(s.p_a, mine("p_a")), "l_tr": vs_l_tr(s.l_tr, mine("l_tr"))}}


def vs_p_a(s: VsPa, found: dict) -> dict:
    """Theorems 1 and 3: T_M, T_T = Theta((1 - p_a)^-1 ...): slopes of log T on log 1/(1-p_a)."""
    grid = s.p_a_grid
    x = [1.0 / (1.0 - p) for p in grid]
    out = {"settings": s.to_dict(), "x_inv_one_minus_p_a": x, "T": {}, "slope": {}, "verdict": {}}
    low = [k for k, p in enumerate(grid) if p <= s.low_p_a_max]      # where no loss floor is near eps
    for model in MODELS:
        runs = [[found[(model, seed, p)] for p in grid] for seed in s.seeds]
        out.setdefault("loss_end", {})[model] = [[r["loss_end"] for r in row] for row in runs]
        out["T"][model] = T = [[r["T"] for r in row] for row in runs]
        out["slope"][model] = slopes(x, T, 1.0)
        out["slope"][model + "_low_p_a"] = slopes([x[k] for k in low], [[row[k] for k in low] for row in T], 1.0)
    return out


def vs_l_tr(s: VsLtr, found: dict) -> dict:
    """Theorem 3 against 1: T_M / T_T = Theta(l_tr): slopes of log T_M, log T_T, log(T_M/T_T) on log
    l_tr (claims 0, -1 and +1)."""
    grid = s.l_tr_grid
    out = {"settings": s.to_dict(), "l_tr": list(grid), "T": {}, "slope": {}, "verdict": {}}
    for model in MODELS:
        out["T"][model] = [[found[(model, seed, l)]["T"] for l in grid] for seed in s.seeds]
    out["ratio_T_M_over_T_T"] = ratio = [
        [(m / t if (m is not None and t is not None and t >= 1) else None) for m, t in zip(rm, rt)]
        for rm, rt in zip(out["T"]["mamba"], out["T"]["linear_transformer"])]
    for key, series, claim in (("mamba", out["T"]["mamba"], 0.0),
                               ("linear_transformer", out["T"]["linear_transformer"], -1.0), ("ratio", ratio, 1.0)):
        out["slope"][key] = slopes(grid, series, claim)
    return out


def judge(results: dict) -> None:
    """Theorems 1 and 3 (``convergence_verdict``) and Remark 4's ratio (rule slope), into the JSON."""
    p, l = results["theory_convergence"]["p_a"], results["theory_convergence"]["l_tr"]
    p["verdict"], p["verdict_detail"], p["judged"] = {}, {}, {}
    for model in p["T"]:
        p["verdict"][model], p["verdict_detail"][model], p["judged"][model] = convergence_verdict(
            p["settings"]["p_a_grid"], p["T"][model], p["slope"][model])
    sl = l["slope"]["ratio"]
    v = slope_verdict(list(sl["per_seed"]) + [None] * (len(l["T"]["mamba"]) - len(sl["per_seed"])), sl["claim"],
                      EXPONENT_TOL)
    l["verdict"], l["verdict_detail"], l["judged"] = {"ratio": verdict_text(v)}, {"ratio": where_text(v)}, {"ratio": v}


# ---------------------------------------------------------------- what is written from the JSON
def figure(results: dict, out) -> list:
    """theory_convergence.png (``plots.convergence``)."""
    from . import plots                                     # matplotlib only when drawing
    c = results["theory_convergence"]
    return [plots.convergence(c["p_a"], c["l_tr"], out / "theory_convergence.png")]


SEE = [("theory_convergence.png", "theory_convergence.png"), ("section", "#theorems-1-and-3-iterations-to-converge")]


def claims(results: dict) -> list:
    """Theorems 1 and 3 (slope against 1/(1-p_a)) and Remark 4 (slope of the ratio against l_tr)."""
    if "theory_convergence" not in results:
        return []
    p, l = results["theory_convergence"]["p_a"], results["theory_convergence"]["l_tr"]
    mean = p["slope"]["mamba"]["mean"]
    return [claim_row("thm1", "Thm 1, eq (9): Mamba's steps to converge T_M = Theta((1-p_a)^-1)",
                      "slope 1 of log T_M on log 1/(1-p_a)", f"slope {seeds_text(p['slope']['mamba'])}",
                      p["judged"]["mamba"], "slope", SEE, headline=("Thm 1: slope of log T_M on log 1/(1-p_a)", "1",
                                              f"{mean:.2f}" if mean is not None else "n/a")),
            claim_row("thm3", "Thm 3, eq (14): the linear Transformer's steps T_T = Theta((1-p_a)^-1)",
                      "slope 1 of log T_T on log 1/(1-p_a)", f"slope {seeds_text(p['slope']['linear_transformer'])}",
                      p["judged"]["linear_transformer"], "slope", SEE),
            claim_row("remark4", "Remark 4: T_M / T_T = Theta(l_tr)", "slope 1 of log(T_M/T_T) on log l_tr",
                      f"slope {seeds_text(l['slope']['ratio'])}", l["judged"]["ratio"], "slope", SEE)]


def medians(T_by_seed) -> list:
    """Per grid value the median T over the seeds that reached eps (None where none did)."""
    return [int(np.median([t for t in c if t is not None])) if any(t is not None for t in c) else None
            for c in zip(*T_by_seed)]


def report(results: dict, run) -> str:
    """Steps to converge against p_a and l_tr, the slopes and their verdicts."""
    p, l = results["theory_convergence"]["p_a"], results["theory_convergence"]["l_tr"]
    s = p["settings"]
    # where the linear Transformer never reached eps, the held-out loss it ended at
    ends = [(g, e) for T, E in zip(p["T"]["linear_transformer"], p.get("loss_end", {}).get("linear_transformer", []))
            for g, t, e in zip(s["p_a_grid"], T, E) if t is None and e is not None]
    by = {g: round(float(np.min([e for gg, e in ends if gg == g])), 3) for g, _ in ends}
    floor = TEXT("floor", T_max=s["T_max"]["linear_transformer"], by=rounded(by, 3)) if ends else ""
    slope = {**p["slope"], **{f"l_{k}": v for k, v in l["slope"].items()}}
    return TEXT("body", **s, n_seeds=len(s["seeds"]), slope={k: pm(v) for k, v in slope.items()}, verdict=p["verdict"],
                detail=p["verdict_detail"], lt_T=json.dumps(p["T"]["linear_transformer"]), floor=floor,
                median={m: medians(T) for m, T in p["T"].items()}, l_p_a=l["settings"]["p_a"], l_verdict=l["verdict"],
                l_detail=l["verdict_detail"])

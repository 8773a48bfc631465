"""Lemmas 4-6 along one Mamba training run: the projections of w on v*_s, mu_j, nu_k (Lemma 4's
signs, eqs (33)-(36), and Lemmas 4-5's two phases), the mean w^T p on a fixed batch for examples with
and without outliers and the query (eqs (37), (38)), and Lemma 6's sum sum_i G_{i,l+1}(w)(l - i + 1)
(eq (39)) on fixed batches of several context lengths l.

Writes theory_lemmas.json and theory_lemmas.png.  One unit: the run, recorded every ``record_every``
steps; its phases, final values and verdicts are computed from the record (``analyse_trajectory``),
after a run and on ``--replot`` alike.  One small eta: Lemma 6's window is a number of steps.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..data import SECTION4, World, training_batch
from ..fused import network
from ..measure.rules import lemmas_judged, verdict_text, where_text
from ..runs.claims import claim_row
from ..runs.report import Template
from ..runs.runner import Unit
from ..sgd import TrainConfig, train
from .measure import WORLD, Recorded, header, lemma6_sum, projections, rounded, world

NAME, FILES, RULES = "Lemmas 4-6 trajectory", ("theory_lemmas",), ("signs", "phases", "lemma6")
OUTPUTS = "theory_lemmas       Lemmas 4-6 along one training run -> theory_lemmas.json, theory_lemmas.png"
TEXT = Template(__package__, "lemmas.md")


@dataclass(frozen=True)
class Trajectory(Recorded):
    """One Mamba run, recorded every ``record_every`` steps on ``B_held`` fixed prompts; Lemma 6's sum
    at every context length of ``lemma6_l_grid``."""

    T: int = 2000
    B: int = 64
    eta: float = 0.02
    delta: float = SECTION4.delta
    l_tr: int = SECTION4.l_tr
    p_a: float = 0.6
    kappa_a: float = SECTION4.kappa_a
    seed: int = 0
    B_held: int = 256
    record_every: int = 10
    lemma6_l_grid: tuple = (10, 20, 40, 80)
    quick: bool = False


FULL = Trajectory()
QUICK = Trajectory(T=100, B_held=64, record_every=10, lemma6_l_grid=(10, 20), quick=True)


def trajectory_run(world: World, s: Trajectory) -> dict:
    """The training run and its record: projections of w, mean w^T p, Lemma 6's sum (mean, 95th percentile)."""
    held = training_batch(world, s.B_held, s.l_tr, p_a=s.p_a, rng=np.random.default_rng([s.seed, 21]))
    l6 = {l: training_batch(world, s.B_held, l, p_a=s.p_a, rng=np.random.default_rng([s.seed, 22, l]))
          for l in s.lemma6_l_grid}
    mask_out = np.zeros(held.P.shape[::2], bool)
    mask_out[:, :-1] = held.outlier
    mask_clean = np.zeros_like(mask_out)
    mask_clean[:, :-1] = ~held.outlier

    def record(step, params):
        a = np.einsum("d,bdl->bl", params.w, held.P)                     # w^T p_i, (B, l+1)
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


def units(s: Trajectory, chosen: dict) -> list:
    """The one run."""
    return [Unit("run", "Lemmas 4-6 trajectory", trajectory_run, (world(), s))]


def assemble(s: Trajectory, chosen: dict, found: dict, run) -> dict:
    """theory_lemmas.json: the settings and the record (its analysis: ``judge``)."""
    return {"theory_lemmas": {**header(run), **found["run"]}}


def judge(results: dict) -> None:
    """Lemmas 4-6 from the record (``analyse_trajectory``), into the JSON."""
    analyse_trajectory(results["theory_lemmas"], WORLD["M1"], WORLD["beta"], WORLD["V"])


def r2(y, fit) -> float:
    """The coefficient of determination of ``fit`` for ``y``."""
    return float(1.0 - np.sum((y - fit) ** 2) / max(np.sum((y - np.mean(y)) ** 2), 1e-300))


def phases(step, y) -> dict:
    """Split a decreasing curve at its steepest point t*.  Phase 1 (t <= t*): least squares
    y - y_0 = a t + b t^3, the shape of eqs (33)-(34).  Phase 2 (t >= 2 t*): y = c + k log t (the
    -log(2 + t gamma) of eqs (163), (171)) against a straight line y = c' + k' t."""
    k_star = int(np.argmin(np.gradient(y, step)))
    t_star = float(step[k_star])
    one = step <= t_star
    A = np.stack([step[one], step[one] ** 3], axis=1)                 # (n, 2)
    coef = np.linalg.lstsq(A, y[one] - y[0], rcond=None)[0] if one.sum() >= 3 else np.array([np.nan, np.nan])
    r2_one = r2(y[one] - y[0], A @ coef) if one.sum() >= 3 else None
    two = step >= max(2 * t_star, step[1])
    res = {"t_star": t_star, "phase1_a": float(coef[0]), "phase1_b": float(coef[1]), "phase1_r2": r2_one}
    if two.sum() >= 4:
        lg, lin = np.polyfit(np.log(step[two]), y[two], 1), np.polyfit(step[two], y[two], 1)
        res.update(phase2_log_slope=float(lg[0]), phase2_r2_log=r2(y[two], np.polyval(lg, np.log(step[two]))),
                   phase2_r2_linear=r2(y[two], np.polyval(lin, step[two])))
    return res


def lemma6_window(s: dict, M1: int, beta: float, V: int) -> float:
    """The range of t in Lemmas 4 and 6 with every constant set to 1 (the verdict uses the measured
    end of Lemma 4's first phase instead, ``analyse_trajectory``):
    min{eta^-1 beta^-2 kappa_a^-1 (1-p_a)^-1 V, eta^-1 M1^(2/3) ((1-p_a) beta)^(-2/3) (kappa_a (1-p_a))^(-1/3) V^(1/3)}."""
    eta, p, kappa = s["eta"], s["p_a"], s["kappa_a"]
    return float(min(V / (eta * beta ** 2 * kappa * (1 - p)),
                     M1 ** (2 / 3) * ((1 - p) * beta) ** (-2 / 3) * (kappa * (1 - p)) ** (-1 / 3) * V ** (1 / 3) / eta))


def analyse_trajectory(out: dict, M1: int, beta: float = 3.0, V: int = 3) -> dict:
    """Phases, final values and verdicts of Lemmas 4-6 from a recorded ``out["history"]``.  Adds
    "phases", "final", "lemma6", "judged", "verdict", "verdict_detail"."""
    s, hist = out["settings"], out["history"]
    step = np.asarray(hist["step"], float)
    # the lemmas describe what training adds to w^(0) ~ N(0, I/(d+1)); measure the change
    change = {k: np.asarray(hist[f"proj_{k}"]) - np.asarray(hist[f"proj_{k}"])[0] for k in ("v_star", "mu", "nu")}
    v, mu, nu = change["v_star"].mean(axis=1), change["mu"].mean(axis=1), np.abs(change["nu"]).mean(axis=1)
    out["phases"] = {"v_star": phases(step, v), "mu": phases(step, mu)}
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
    out["lemma6"]["edge"] = window_edge(hist, step, inside, s["lemma6_l_grid"])
    return out


def window_edge(hist: dict, step, inside, grid) -> dict:
    """How much Lemma 6's verdict rests on where its range ends: per l, whether the largest mean inside
    sits on the range's last record ("at_last"), and the first record after the range where some l's
    mean passes the rule's 3 ("cross_t", None if none does), with every l's mean there ("cross")."""
    k = int(np.sum(inside))                               # the first record after the range
    means = {str(l): np.asarray(hist[f"lemma6_mean_l{l}"], dtype=float) for l in grid}
    over = [i for i in range(k, len(step)) if any(m[i] > 3.0 for m in means.values())]
    return {"at_last": {l: bool(np.argmax(m[:k]) == k - 1) for l, m in means.items()},
            "cross_t": float(step[over[0]]) if over else None,
            "cross": {l: float(m[over[0]]) for l, m in means.items()} if over else {}}


def fragile(six: dict) -> str:
    """The words that say Lemma 6 holds on a knife edge where it does: the sums still rising at the
    range's last record and passing the rule's 3 soon after; "" otherwise."""
    edge = six.get("edge", {})
    if not edge.get("cross_t") or not any(edge["at_last"].values()):
        return ""
    over = {l: x for l, x in edge["cross"].items() if x > 3.0}
    return TEXT("knife-edge", t=six["window_t"], cross_t=edge["cross_t"], after=edge["cross_t"] - six["window_t"],
                values=", ".join(f"{x:.2f}" for x in over.values()), ls=", ".join(over))


def judge_trajectory(t: dict, v, mu, nu, l6: dict) -> dict:
    """Lemmas 4-6 on one run (``measure.rules.lemmas_judged``): v, mu, nu the final changes of the
    projections of w (nu as |.|); l6 {l: largest mean of eq (39) in the window}.  Adds t["judged"],
    t["verdict"], t["verdict_detail"]."""
    t["judged"] = lemmas_judged(t["phases"], v, mu, nu, l6)
    t["verdict"] = {k: verdict_text(x) for k, x in t["judged"].items()}
    t["verdict_detail"] = {k: where_text(x) for k, x in t["judged"].items()}
    return t


# ---------------------------------------------------------------- what is written from the JSON
def figure(results: dict, out) -> list:
    """theory_lemmas.png (``plots.trajectory``)."""
    from . import plots                                     # matplotlib only when drawing
    return [plots.trajectory(results["theory_lemmas"], out / "theory_lemmas.png")]


def claims(results: dict) -> list:
    """Lemma 4's signs, Lemmas 4-5's two phases, Lemma 6 in its window."""
    if "theory_lemmas" not in results:
        return []
    t = results["theory_lemmas"]
    see = [("theory_lemmas.png", "theory_lemmas.png"), ("section", "#lemmas-4-6-along-training")]
    return [claim_row("lemma4_signs", "Lemma 4: signs of w's projections (v*, mu < 0; nu small)", "v*^T w, mu^T w < 0",
                      f"v* {t['final']['v_star']:.2f}, mu {t['final']['mu']:.2f}, |nu| {t['final']['abs_nu']:.3f}",
                      t["judged"]["lemma4_signs"], "signs", see),
            claim_row("lemma4_5_phases", "Lemmas 4-5: w^T v* falls in two phases", "slow, fast, then log t",
                      f"t* = {t['phases']['v_star']['t_star']:.0f}", t["judged"]["lemma4_5_two_phases"], "phases", see),
            claim_row("lemma6", "Lemma 6, eq (39): sum_i G_i (l - i + 1) <= Theta(1) in the first phase", "Theta(1)",
                      "largest " + ", ".join(f"{v['max_mean_in_window']:.2f}" for v in t["lemma6"]["by_l"].values())
                      + f" (t <= {t['lemma6']['window_t']:.0f})" + fragile(t["lemma6"]), t["judged"]["lemma6_in_window"],
                      "lemma6", see)]


def report(results: dict, run) -> str:
    """The run, Lemma 4's signs, the two phases' fits, the final w^T p, Lemma 6 inside and outside its range."""
    t = results["theory_lemmas"]
    s, ph, six = t["settings"], t["phases"]["v_star"], t["lemma6"]
    by_l = lambda key: rounded({k: r.get(key, r["max_mean_in_window"]) for k, r in six["by_l"].items()})  # noqa: E731
    return TEXT("body", **s, final=t["final"], verdict=t["verdict"], why=t["verdict_detail"], ph=ph,
                linear=ph["phase1_a"] * ph["t_star"], cubic=ph["phase1_b"] * ph["t_star"] ** 3,
                r2_one=ph["phase1_r2"] if ph["phase1_r2"] is None else round(ph["phase1_r2"], 3),
                log_slope=ph.get("phase2_log_slope", float("nan")), r2_log=ph.get("phase2_r2_log", float("nan")),
                r2_linear=ph.get("phase2_r2_linear", float("nan")), window=six["window_t"],
                checked=six.get("checked_steps", "n/a"), in_window=by_l("max_mean_in_window"),
                window_1=six.get("window_constants_1", 0), in_window_1=by_l("max_mean_constants_1"),
                whole=by_l("max_mean_whole_run"), outside=six["outside_window"], edge=fragile(six))

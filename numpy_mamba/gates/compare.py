"""The experiment of ``python -m numpy_mamba gates``: every gate of Appendix E.6 against Mamba and
the linear Transformer, trained on the same prompts with the same seeds (Section 4 settings), tested
like Figure 2 (error against the outlier fraction alpha, three labellings), plus iterations to
converge and how strongly each trained gate weights outlier examples against clean ones.

Writes gates.json, gates_error_vs_alpha.png, gates_training.png and the "gates" section of REPORT.md.
One unit per (seed, model): it trains the model on the seed's minibatch stream and tests it on the
seed's test prompts, which every model of that seed shares (they come from the seed's own streams).
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass

import numpy as np

from ..data import SECTION4, make_world, testing_batch, training_batch
from ..fused import network as paper_network
from ..gradcheck import gradcheck
from ..loss import hinge
from ..measure.rules import case, gates_case, judge_cases
from ..model import PAPER_MODELS, scores
from ..runs.claims import claim_row, opening, overflow_details
from ..runs.output import SMOKE
from ..runs.report import Template
from ..runs.runner import Unit
from ..sgd import TrainConfig, train
from .attention import gate_values, key_gated_scores, network
from .families import GATES
from .scan import gate_recurrent_forward

NAME, FILES, RULES = "gates", ("gates",), ("gates",)
OUTPUTS = ("gates               Mamba-2, RetNet, Gated Retention, GLA against Mamba and the linear Transformer (App. E.6) "
           "-> gates.json, gates_error_vs_alpha.png, gates_training.png")
LABELLINGS = ("flip", "target", "random")
TEXT = Template(__package__, "gates.md")


def models() -> tuple:
    """The models compared: the paper's two, then every gate of the registry ``GATES``."""
    return PAPER_MODELS + tuple(GATES)


def model_network(model: str):
    """The Network trained for ``model``: the paper's (fused) or the gate's."""
    return paper_network(model) if model in PAPER_MODELS else network(model)


@dataclass(frozen=True)
class GatesSettings:
    """What the comparison chooses that the paper leaves open (Section 4 gives d, M1, M2, V, beta,
    delta, kappa_a, l_tr = l_ts: ``data.SECTION4``).  Training: p_a, K, one step size eta for
    every model, B, T, the seeds; testing (Definition 2): K', kappa_a', the alphas, ``target`` for
    targeted labels, n_test prompts per point; n_eval training prompts on which the loss is
    recorded every ``record_every`` steps; ``epsilons``: the losses whose first crossing is counted."""

    p_a: float = 0.6
    K: float = 0.5
    K_prime: float = 1.5
    kappa_a_prime: tuple = (2.0, 8.0)
    eta: float = 0.02
    B: int = 64
    T: int = 2000
    seeds: tuple = tuple(range(8))
    alphas: tuple = tuple(round(0.1 * k, 1) for k in range(10))
    n_test: int = 1000
    n_eval: int = 512
    record_every: int = 10
    epsilons: tuple = (0.1, 0.02)
    target: int = 1

    def to_dict(self) -> dict:
        """Every setting of the run as its JSON records it: Section 4's, then ours."""
        return json.loads(json.dumps({**asdict(SECTION4), **asdict(self)}))


FULL = GatesSettings()
QUICK = GatesSettings(B=32, T=120, seeds=(0,), alphas=(0.0, 0.5, 0.7), n_test=200, n_eval=128)


def settings(quick: bool, seeds=None) -> GatesSettings:
    """FULL or QUICK; its seeds are a tuple of their own (``--seeds`` does not apply)."""
    return QUICK if quick else FULL


# ---------------------------------------------------------------- the units
def consistency_checks(seed: int = 0) -> dict:
    """Recurrent-vs-closed max |difference| and per-parameter gradcheck errors, small seeded problems."""
    out = {}
    for k, model in enumerate(GATES):
        rng = np.random.default_rng([seed, 99, k])
        net, diff, errs = network(model), 0.0, {}
        for l in (1, 3, 6):
            base = net.init(4, rng)
            params = type(base)(*(np.asarray(a) + (rng.normal(0, 0.5, np.shape(a)) if a.ndim else 0.0)
                                  for a in map(np.asarray, base)))
            P = rng.normal(0, 1, (4, 5, l + 1))
            P[:, -1, :l] = rng.choice([-1.0, 1.0], size=(4, l))
            P[:, -1, l] = 0.0
            z = rng.choice([-1.0, 1.0], size=4)
            diff = max(diff, float(np.max(np.abs(net.output(params, P) - gate_recurrent_forward(params, P, model)))))
            report = gradcheck(lambda q: net.value_and_gradients(q, P, z)[0], params,
                               net.value_and_gradients(params, P, z)[1])
            errs = {f: max(errs.get(f, 0.0), e) for f, e in report.rel_err.items()}
        out[model] = {"max_abs_recurrent_minus_closed": diff, "max_gradcheck_rel_err": errs}
    return out


def gate_weight_ratio(model, params, batch) -> float:
    """How much the trained gate shrinks the outliers' share of the output, on test prompts.

    share(t) = sum over outlier examples of |t_i| / sum over all context examples of |t_i|, pooled
    over the batch, for the gated terms t_i = G_i s_i (GLA: the key-gated score of eq (198)) and for
    the same attention without its gate, t_i = s_i.  Returns share(gated) / share(ungated): 1 means
    the gate does not single out outliers, < 1 means it suppresses them.
    """
    G = gate_values(model, params, batch.P)
    s = scores(params, batch.P)                                     # (B, l+1)
    gated = key_gated_scores(params, batch.P, G) if G.ndim == 3 else G * s
    out = batch.outlier                                             # (B, l) context examples

    def share(t):
        t = np.abs(t[:, :-1])
        return t[out].sum() / t.sum()

    return float(share(gated) / share(s))


def train_model(world, cfg: GatesSettings, seed: int, model: str, eval_batch) -> tuple:
    """Algorithm 1 for ``model`` from its initialisation on seed ``seed``'s minibatch stream (the
    same for every model); record the loss (eq (4)) on ``eval_batch``.  Returns (params, history)."""
    config = TrainConfig(T=cfg.T, B=cfg.B, eta=cfg.eta, l_tr=SECTION4.l_tr, p_a=cfg.p_a, K=cfg.K,
                         kappa_a=SECTION4.kappa_a, delta=SECTION4.delta)
    net = model_network(model)
    params0 = net.init(world.d, np.random.default_rng([seed, 1]), delta=SECTION4.delta)

    def record(step, params):
        loss = float(np.mean(hinge(net.F(params, eval_batch.P), eval_batch.z)))
        scalars = {f: float(getattr(params, f)) for f in ("a", "gamma", "tau") if f in params._fields}
        return {"eval_loss": loss, **scalars}

    return train(world, config, net, rng=np.random.default_rng([seed, 2]), params=params0,
                 record_every=cfg.record_every, record=record)


def test_model(world, cfg: GatesSettings, seed: int, model: str, params) -> dict:
    """A trained model on seed ``seed``'s testing prompts (Definition 2), the same for every model:
    {"gate_ratio", "clean_error_training_tasks", "clean_error_unseen_tasks", "error": {"kappa_a_prime=K/rule":
    [error per alpha]}}."""
    misclassified = model_network(model).misclassified
    ratio_batch = testing_batch(world, cfg.n_test, SECTION4.l_ts, alpha=0.5, K_prime=cfg.K_prime,
                                kappa_a_prime=cfg.kappa_a_prime[0], rng=np.random.default_rng([seed, 5]))
    out = {"gate_ratio": gate_weight_ratio(model, params, ratio_batch), "error": {}}
    for k, which in enumerate(("training", "unseen")):             # alpha = 0: where clean errors occur
        tasks = world.training_tasks() if which == "training" else world.unseen_tasks()
        clean = testing_batch(world, cfg.n_test, SECTION4.l_ts, alpha=0.0, K_prime=cfg.K_prime,
                              tasks=tasks, rng=np.random.default_rng([seed, 6, k]))
        out[f"clean_error_{which}_tasks"] = float(np.mean(misclassified(params, clean.P, clean.z)))
    for ki, kappa in enumerate(cfg.kappa_a_prime):
        for li, rule in enumerate(LABELLINGS):
            out["error"][f"kappa_a_prime={kappa:g}/{rule}"] = [float(np.mean(misclassified(params, b.P, b.z))) for b in (
                testing_batch(world, cfg.n_test, SECTION4.l_ts, alpha=alpha, K_prime=cfg.K_prime, kappa_a_prime=kappa,
                              label_rule=rule, target=cfg.target, rng=np.random.default_rng([seed, 4, ki, li, ai]))
                for ai, alpha in enumerate(cfg.alphas))]
    return out


def model_unit(cfg: GatesSettings, seed: int, model: str) -> dict:
    """One unit: ``model`` trained on seed ``seed``'s world (Section 4, stream [seed, 0]), its loss
    recorded on the seed's fixed training prompts, then tested (``test_model``)."""
    world = make_world(rng=np.random.default_rng([seed, 0]))
    eval_batch = training_batch(world, cfg.n_eval, SECTION4.l_tr, p_a=cfg.p_a, K=cfg.K, kappa_a=SECTION4.kappa_a,
                                rng=np.random.default_rng([seed, 3]))
    params, history = train_model(world, cfg, seed, model, eval_batch)
    return {"history": history, **test_model(world, cfg, seed, model, params)}


def units(cfg: GatesSettings, chosen: dict) -> list:
    """One unit per seed and model, and the consistency checks."""
    return [Unit((seed, m), f"{m} seed {seed}", model_unit, (cfg, seed, m)) for seed in cfg.seeds for m in models()] \
        + [Unit("checks", "consistency checks", consistency_checks)]


def iterations_to(history: dict, eps: float):
    """First recorded step whose loss on the fixed training-prompt set is below eps (None: never)."""
    below = np.nonzero(np.asarray(history["eval_loss"]) < eps)[0]
    return int(history["step"][below[0]]) if below.size else None


def assemble(cfg: GatesSettings, chosen: dict, found: dict, run) -> dict:
    """gates.json: settings, steps, per model its errors (seeds, alphas) per key, convergence steps,
    loss curves, gate ratios and learned gate scalars, the consistency checks and the summary of
    ``summarise``; a NaN anywhere in the summary is an error."""
    results = {m: {"error": {}, "converge": {str(e): [] for e in cfg.epsilons}, "eval_loss": [],
                   "gate_ratio": [], "final_gate_scalars": [], "clean_error_training_tasks": [],
                   "clean_error_unseen_tasks": []} for m in models()}
    for seed in cfg.seeds:
        for model in models():
            r, t = results[model], found[(seed, model)]
            history = t["history"]
            r["eval_loss"].append(history["eval_loss"])
            for eps in cfg.epsilons:
                r["converge"][str(eps)].append(iterations_to(history, eps))
            r["final_gate_scalars"].append({k: float(history[k][-1]) for k in ("a", "gamma", "tau") if k in history})
            for field in ("gate_ratio", "clean_error_training_tasks", "clean_error_unseen_tasks"):
                r[field].append(t[field])
            for key, errors in t["error"].items():
                r["error"].setdefault(key, []).append(errors)
    for r in results.values():
        r["error"] = {key: np.asarray(errors) for key, errors in r["error"].items()}     # (seeds, alphas)
    result = {"settings": cfg.to_dict(), "steps": found[(cfg.seeds[-1], models()[-1])]["history"]["step"],
              "models": results, "checks": found["checks"],
              "timings_seconds": {"workers (--jobs)": run.jobs, "total": run.wall}}
    return {"gates": {**result, "summary": summarise(result), "quick": run.quick}}


def mean_and_halfwidth(errors, n_test: int):
    """errors (seeds, alphas) -> mean (alphas,), 95% half-width (alphas,): with two or more seeds the
    Student t interval of the mean over seeds (it holds the seed-to-seed spread of training and of the
    test draw); with one seed a symmetric bar that covers the 95% Wilson interval of the binomial
    test error on that seed's test prompts."""
    from scipy.stats import t as student_t
    errors = np.asarray(errors, dtype=float)
    mean = errors.mean(axis=0)
    n = errors.shape[0]
    if n >= 2:
        return mean, student_t.ppf(0.975, n - 1) * errors.std(axis=0, ddof=1) / np.sqrt(n)
    z, p = 1.96, mean
    centre = (p + z * z / (2 * n_test)) / (1 + z * z / n_test)
    half = z * np.sqrt(p * (1 - p) / n_test + z * z / (4 * n_test ** 2)) / (1 + z * z / n_test)
    return mean, np.maximum(np.abs(centre - mean) + half, 0.0)


def summarise(result: dict) -> dict:
    """Per model: error mean and 95% half-width per key, median steps to each eps (and runs that got
    there), mean gate ratio, mean clean errors."""
    cfg, summary = result["settings"], {}
    for model, r in result["models"].items():
        s = {"error_mean": {}, "error_halfwidth95": {}, "converge_median": {}, "converged_runs": {}}
        for key, errs in r["error"].items():
            s["error_mean"][key], s["error_halfwidth95"][key] = mean_and_halfwidth(errs, cfg["n_test"])
            if not np.all(np.isfinite(s["error_mean"][key])) or not np.all(np.isfinite(s["error_halfwidth95"][key])):
                raise ValueError(f"{model} error {key} holds a NaN: refusing to report it.")
        for eps, its in r["converge"].items():
            done = [i for i in its if i is not None]
            s["converge_median"][eps] = float(np.median(done)) if done else None
            s["converged_runs"][eps] = f"{len(done)}/{len(its)}"
        s["gate_ratio_mean"] = float(np.mean(r["gate_ratio"]))
        for which in ("training", "unseen"):
            s[f"clean_error_{which}_tasks_mean"] = float(np.mean(r[f"clean_error_{which}_tasks"]))
        summary[model] = s
    return summary


# ---------------------------------------------------------------- what is written from the JSON
def figure(results: dict, out) -> list:
    """gates_error_vs_alpha.png and gates_training.png (``plots.py``)."""
    from . import plots                                     # matplotlib only when drawing
    res = results["gates"]
    return [plots.plot_error_vs_alpha(res, res["summary"], out / "gates_error_vs_alpha.png", res["quick"]),
            plots.plot_training(res, res["summary"], out / "gates_training.png", res["quick"])]


def _alpha_index(alphas: list) -> int:
    return alphas.index(0.7) if 0.7 in alphas else len(alphas) - 1


def comparison_with_lt(summary: dict, a: int, kappa: float) -> list:
    """At alpha index ``a`` (flipped labels, test outlier size ``kappa``), each model's error mean and
    95% half-width, and whether that interval lies entirely below the linear Transformer's:
    [(model, mean, half-width, below)] for every model but the LT, then ("linear_transformer", mean,
    half-width, None)."""
    key = f"kappa_a_prime={kappa:g}/flip"
    cell = {m: (s["error_mean"][key][a], s["error_halfwidth95"][key][a]) for m, s in summary.items()}
    lt_m, lt_h = cell["linear_transformer"]
    return [(m, c[0], c[1], bool(c[0] + c[1] < lt_m - lt_h)) for m, c in cell.items() if m != "linear_transformer"] \
        + [("linear_transformer", lt_m, lt_h, None)]


def claims(results: dict) -> list:
    """The row of the gates' prediction (rule gates), judged per (gate, kappa_a') at alpha = 0.7."""
    if "gates" not in results:
        return []
    cfg, summary = results["gates"]["settings"], results["gates"]["summary"]
    a, main_kappa = _alpha_index(cfg["alphas"]), cfg["kappa_a_prime"][0]
    cases, borderline, main = {}, [], {}
    for kappa in cfg["kappa_a_prime"]:
        *rows, (_, lt_m, lt_h, _) = comparison_with_lt(summary, a, kappa)
        for model, m, h, _ in rows:
            name = case(("", model), ("kappa_a'", kappa))
            cases[name], thin = gates_case(model, m, h, lt_m, lt_h)
            borderline += [name] * thin
        if kappa == main_kappa:
            main = {**{model: m for model, m, _, _ in rows}, "linear_transformer": lt_m}
    ours = ", ".join(f"{m} {v:.3f}" for m, v in main.items())
    return [claim_row("gates", "Ours (App. E.6 gates): gates that read their own example (Mamba, GLA) beat the linear "
                      "Transformer at alpha = 0.7, the decay gates (Mamba-2, RetNet, Gated Retention) do not",
                      "E.6: the analysis extends (no number)", f"error at alpha = {cfg['alphas'][a]}, flip, kappa_a' = "
                      f"{main_kappa:g}: {ours}", judge_cases(cases, borderline), "gates",
                      [("gates_error_vs_alpha.png", "gates_error_vs_alpha.png"), ("training", "gates_training.png"),
                       ("section", "#other-gates-of-appendix-e6-python--m-numpy_mamba-gates")], kind="ours")]


def headlines(results: dict) -> list:
    """Mamba, GLA and Mamba-2 against the linear Transformer at alpha = 0.7, flipped labels, main kappa_a'."""
    if "gates" not in results:
        return []
    cfg, summary = results["gates"]["settings"], results["gates"]["summary"]
    a, kappa = _alpha_index(cfg["alphas"]), cfg["kappa_a_prime"][0]
    error = {m: s["error_mean"][f"kappa_a_prime={kappa:g}/flip"][a] for m, s in summary.items()}
    return [(f"{m} vs linear Transformer error, alpha = {cfg['alphas'][a]}, flip, kappa_a' = {kappa:g}", "n/a (E.6 gives "
             "no number)", f"{error[m]:.3f} vs {error['linear_transformer']:.3f}") for m in ("mamba", "gla", "mamba2")
            if m in error]


def number(n: int) -> str:
    """n as the report writes it at the start of a sentence: "Six", or "12"."""
    words = ("No", "One", "Two", "Three", "Four", "Five", "Six", "Seven", "Eight", "Nine", "Ten")
    return words[n] if n < len(words) else str(n)


def heading(quick: bool) -> str:
    """The section's heading (stamped for a smoke run)."""
    return TEXT("heading") + (f" -- {SMOKE}" if quick else "")


def _table_row(model: str, s: dict, r: dict, cfg: dict, a: int) -> str:
    fmt = lambda key, k: f"{s['error_mean'][key][k]:.3f} ± {s['error_halfwidth95'][key][k]:.3f}"  # noqa: E731
    k_main, k_high = cfg["kappa_a_prime"][0], cfg["kappa_a_prime"][-1]
    scalars = r["final_gate_scalars"]
    learned = ", ".join(f"{k} = {np.mean([d[k] for d in scalars]):.3f}" for k in (scalars[0] if scalars else {}))
    cells = [model, fmt(f"kappa_a_prime={k_main:g}/flip", a), fmt(f"kappa_a_prime={k_high:g}/flip", a),
             fmt(f"kappa_a_prime={k_main:g}/flip", 0),
             f"{s['clean_error_training_tasks_mean']:.3f} / {s['clean_error_unseen_tasks_mean']:.3f}"]
    for eps in (str(e) for e in cfg["epsilons"]):
        median = s["converge_median"][eps]
        cells.append(f"{'never' if median is None else f'{median:.0f}'} ({s['converged_runs'][eps]})")
    return "| " + " | ".join(cells + [f"{s['gate_ratio_mean']:.3f}", learned or "-"]) + " |"


def report(results: dict, run) -> str:
    """The section's body: the set-up, the comparison table, the measured verdict lines, clean prompts,
    why (the mechanism), the consistency checks."""
    res = results["gates"]
    cfg, summary = res["settings"], res["summary"]
    a = _alpha_index(cfg["alphas"])
    k_main, k_high = cfg["kappa_a_prime"][0], cfg["kappa_a_prime"][-1]
    eps_hi, eps_lo = (str(e) for e in cfg["epsilons"])
    head = TEXT("setup", models=number(len(summary)), models_lower=number(len(summary)).lower(), k_main=k_main,
                k_high=k_high, seeds=len(cfg["seeds"]), interval="t over seeds" if len(cfg["seeds"]) > 1 else "Wilson binomial",
                **{k: cfg[k] for k in ("d", "M1", "M2", "V", "beta", "delta", "kappa_a", "p_a", "l_tr", "eta", "B", "T",
                                       "K", "K_prime", "n_test")})
    table = [TEXT("table-header", alpha=cfg["alphas"][a], k_main=k_main, k_high=k_high, eps_hi=eps_hi, eps_lo=eps_lo)]
    table += [_table_row(m, s, res["models"][m], cfg, a) for m, s in summary.items()]
    measured = []
    for kappa in cfg["kappa_a_prime"]:
        *rows, (_, lt_m, lt_h, _) = comparison_with_lt(summary, a, kappa)
        measured.append(TEXT("measured", alpha=cfg["alphas"][a], kappa=kappa, lt_error=lt_m, lt_halfwidth=lt_h,
                             below=", ".join(f"{m} ({e:.3f})" for m, e, _, below in rows if below) or "none",
                             not_below=", ".join(f"{m} ({e:.3f})" for m, e, _, below in rows if not below) or "none"))
    *_, (_, lt_m, lt_h, _) = comparison_with_lt(summary, 0, k_main)
    key = f"kappa_a_prime={k_main:g}/flip"
    worse = [f"{m} ({s['error_mean'][key][0]:.3f}; training tasks {s['clean_error_training_tasks_mean']:.3f}, "
             f"unseen tasks {s['clean_error_unseen_tasks_mean']:.3f})" for m, s in summary.items()
             if s["error_mean"][key][0] - s["error_halfwidth95"][key][0] > lt_m + lt_h]
    checks = [f"| {m} | {c['max_abs_recurrent_minus_closed']:.1e} | "
              + ", ".join(f"{k} {v:.1e}" for k, v in c["max_gradcheck_rel_err"].items()) + " |"
              for m, c in res["checks"].items()]
    return "\n\n".join([head, "\n".join(table), " ".join(measured) + TEXT("measured-end"),
                        TEXT("clean", lt_error=lt_m, lt_halfwidth=lt_h, worse=", ".join(worse) or "none"),
                        TEXT("why"), "\n".join([TEXT("checks"), *checks])])


def section(results: dict, run, rows: list, heads: list) -> str:
    """The "gates" section: heading, opening, the smoke stamp of a quick run, the body, the claims
    whose cases overflow the results table."""
    res = results["gates"]
    seconds = res.get("timings_seconds", {})
    wall = (TEXT("wall", total=seconds["total"], jobs=seconds.get("workers (--jobs)", "?"))
            if seconds.get("total") is not None else "")
    first = TEXT("first", models=number(len(res["summary"])), seeds=len(res["settings"]["seeds"]), wall=wall)
    lines = [heading(res["quick"]), "", *opening(first, rows, heads), ""]
    if res["quick"]:
        lines += [TEXT("smoke", smoke=SMOKE), ""]
    return "\n".join(lines + [report(results, run), *overflow_details(rows)])

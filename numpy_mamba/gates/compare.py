"""``python -m numpy_mamba gates``: every gate of Appendix E.6 against Mamba and the linear
Transformer, trained on the same prompts with the same seeds (Section 4 settings), tested like
Figure 2 (error against the outlier fraction alpha, three labellings), plus iterations to converge
and how strongly each trained gate weights outlier examples against clean ones.

Writes figures/gates_error_vs_alpha.png, figures/gates_training.png, figures/gates.json and the
"gates" section of figures/REPORT.md.  ``--quick`` is a seconds-long smoke run (tests).
``--jobs N`` trains N models at a time in worker processes (same numbers for every N).
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from ..runs.args import help_text
from ..runs.jobs import Unit, add_jobs_argument, run_units
from ..runs.claims import write_results
from ..runs.staging import run_staged
from ..runs.summary import print_claims_summary
from ..data import SECTION4, make_world, testing_batch, training_batch
from .families import GATES
from .scan import gate_recurrent_forward
from ..gradcheck import gradcheck
from ..loss import hinge
from ..model import PAPER_MODELS, scores
from ..fused import network as paper_network
from .attention import gate_values, key_gated_scores, network
from ..sgd import TrainConfig, train

LABELLINGS = ("flip", "target", "random")


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


def _world(seed: int):
    """Seed ``seed``'s world of Section 4 (stream [seed, 0])."""
    return make_world(rng=np.random.default_rng([seed, 0]))


def _eval_batch(world, cfg: GatesSettings, seed: int):
    return training_batch(world, cfg.n_eval, SECTION4.l_tr, p_a=cfg.p_a, K=cfg.K, kappa_a=SECTION4.kappa_a,
                          rng=np.random.default_rng([seed, 3]))


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


def train_unit(cfg: GatesSettings, seed: int, model: str) -> tuple:
    """One unit of ``run``: ``train_model`` for one model on seed ``seed``'s world, its loss
    recorded on the seed's fixed training prompts (the same for every model)."""
    world = _world(seed)
    return train_model(world, cfg, seed, model, _eval_batch(world, cfg, seed))


def iterations_to(history: dict, eps: float):
    """First recorded step whose loss on the fixed training-prompt set is below eps (None: never)."""
    below = np.nonzero(history["eval_loss"] < eps)[0]
    return int(history["step"][below[0]]) if below.size else None


def _test_unit(cfg: GatesSettings, seed: int, trained: dict) -> dict:
    """One unit of ``run``: every trained model of one seed on the same testing prompts (Definition 2).
    Returns {model: {"gate_ratio", "clean_error_training_tasks", "clean_error_unseen_tasks",
    "error": {"kappa_a_prime=K/rule": [error per alpha]}}}."""
    world = _world(seed)
    out = {model: {"error": {}} for model in trained}
    ratio_batch = testing_batch(world, cfg.n_test, SECTION4.l_ts, alpha=0.5, K_prime=cfg.K_prime,
                                kappa_a_prime=cfg.kappa_a_prime[0], rng=np.random.default_rng([seed, 5]))
    for model, params in trained.items():
        out[model]["gate_ratio"] = gate_weight_ratio(model, params, ratio_batch)
    for k, which in enumerate(("training", "unseen")):           # alpha = 0: where clean errors occur
        tasks = world.training_tasks() if which == "training" else world.unseen_tasks()
        clean = testing_batch(world, cfg.n_test, SECTION4.l_ts, alpha=0.0, K_prime=cfg.K_prime,
                              tasks=tasks, rng=np.random.default_rng([seed, 6, k]))
        for model, params in trained.items():
            out[model][f"clean_error_{which}_tasks"] = float(np.mean(model_network(model).misclassified(
                params, clean.P, clean.z)))
    for ki, kappa in enumerate(cfg.kappa_a_prime):
        for li, rule in enumerate(LABELLINGS):
            key = f"kappa_a_prime={kappa:g}/{rule}"
            for ai, alpha in enumerate(cfg.alphas):
                batch = testing_batch(world, cfg.n_test, SECTION4.l_ts, alpha=alpha, K_prime=cfg.K_prime,
                                      kappa_a_prime=kappa, label_rule=rule, target=cfg.target,
                                      rng=np.random.default_rng([seed, 4, ki, li, ai]))
                for model, params in trained.items():
                    out[model]["error"].setdefault(key, []).append(
                        float(np.mean(model_network(model).misclassified(params, batch.P, batch.z))))
    return out


def run(cfg: GatesSettings, jobs: int = 1, progress=True) -> dict:
    """The Section 4.1 / Figure 2 protocol for every model of ``models()``.

    Per seed: one world (Section 3.2), every model trained by Algorithm 1 on the same minibatches
    (one unit per seed and model), then tested on the same testing prompts (Definition 2) for
    each kappa_a', labelling and alpha (one unit per seed), ``jobs`` units at a time.
    Returns plain data: errors (seeds, alphas) per key, convergence steps, loss curves, gate ratios.
    """
    seeds, names = cfg.seeds, models()
    trained = run_units([Unit((seed, m), f"train {m} seed {seed}", train_unit, (cfg, seed, m))
                         for seed in seeds for m in names], jobs, "gates: training", progress)
    tests = [Unit(seed, f"test seed {seed}", _test_unit, (cfg, seed, {m: trained[(seed, m)][0] for m in names}))
             for seed in seeds]
    tested = run_units(tests + [Unit("checks", "consistency checks", consistency_checks)], jobs,
                       "gates: testing", progress)
    results = {m: {"error": {}, "converge": {str(e): [] for e in cfg.epsilons}, "eval_loss": [],
                   "gate_ratio": [], "final_gate_scalars": [], "clean_error_training_tasks": [],
                   "clean_error_unseen_tasks": []} for m in names}
    for seed in seeds:
        for model in names:
            r, (_, history), t = results[model], trained[(seed, model)], tested[seed][model]
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
    steps = trained[(seeds[-1], names[-1])][1]["step"]
    return {"settings": cfg.to_dict(), "steps": steps, "models": results, "checks": tested["checks"]}


def main(argv=None) -> int:
    """Entry point of ``python -m numpy_mamba gates [--quick] [--out DIR] [--quiet]``."""
    parser = argparse.ArgumentParser(prog="python -m numpy_mamba gates", description=help_text(__doc__),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="tiny smoke run (seconds); for tests")
    parser.add_argument("--out", default=None,
                        help="output folder (default figures/; with --quick a new temporary folder, so a "
                             "smoke run never overwrites the committed results)")
    parser.add_argument("--quiet", action="store_true",
                        help="no progress on stderr (otherwise one line per finished unit, with time left)")
    add_jobs_argument(parser)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    cfg = QUICK if args.quick else FULL
    out = Path(args.out or (tempfile.mkdtemp(prefix="gates_quick_") if args.quick else "figures"))

    def work(stage):
        from .plots import write_outputs                      # matplotlib only when writing
        result = run(cfg, jobs=args.jobs, progress=not args.quiet)
        result["timings_seconds"] = {"workers (--jobs)": args.jobs}
        if not args.quiet:
            print(f"[gates] writing figures, JSON and the report section of {out}", file=sys.stderr, flush=True)
        write_outputs(result, stage.dir, quick=args.quick, start=start)   # states one elapsed time
        write_results(stage.report, out, stage.dir)

    code = run_staged("gates", out, work)
    if code != 0:
        return code
    saved = json.loads((out / "gates.json").read_text())
    print_claims_summary("gates", out / "claims_gates.json", out, saved["timings_seconds"]["total"], quick=args.quick,
                         report=out / "REPORT.md")
    return 0

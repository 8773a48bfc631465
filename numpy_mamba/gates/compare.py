"""``python -m numpy_mamba gates``: every gate of Appendix E.6 against Mamba and the linear
Transformer, trained on the same prompts with the same seeds (Section 4 settings), tested like
Figure 2 (error against the outlier fraction alpha, three labellings), plus iterations to converge
and how strongly each trained gate weights outlier examples against clean ones.

Writes figures/gates_error_vs_alpha.png, figures/gates_training.png, figures/gates.json and the
"gates" section of figures/REPORT.md.  ``--quick`` is a seconds-long smoke run (tests).
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from .._models import PAPER_MODELS
from ..data import make_world, testing_batch, training_batch
from .families import GATES
from .scan import gate_recurrent_forward
from ..gradcheck import gradcheck
from ..gradients import gradients
from ..loss import hinge, hinge_loss, zero_one_error
from ..model import forward, init_for, output, scores
from .attention import gate_values, key_gated_scores
from ..sgd import Progress, TrainConfig, train

LABELLINGS = ("flip", "target", "random")
MODELS = PAPER_MODELS + tuple(GATES)                # the six models compared


def settings(quick: bool) -> dict:
    """Every setting of the run; saved beside the results.  Section 4 where the paper gives one."""
    full = dict(d=30, M1=6, M2=10, V=3, beta=3.0, delta=0.2, kappa_a=2.0, l_tr=20, l_ts=20, p_a=0.6,
                K=0.5, K_prime=1.5, kappa_a_prime=[2.0, 8.0], eta=0.02,
                B=64, T=2000, seeds=list(range(8)), alphas=[round(0.1 * k, 1) for k in range(10)],
                n_test=1000, n_eval=512, record_every=10, epsilons=[0.1, 0.02], target=1)
    if quick:
        full.update(B=32, T=120, seeds=[0], alphas=[0.0, 0.5, 0.7], n_test=200, n_eval=128)
    return full


def consistency_checks(seed: int = 0) -> dict:
    """Recurrent-vs-closed max |difference| and per-parameter gradcheck errors, small seeded problems."""
    out = {}
    for k, model in enumerate(GATES):
        rng = np.random.default_rng([seed, 99, k])
        diff, errs = 0.0, {}
        for l in (1, 3, 6):
            base = init_for(model, 4, None, 0.2, rng)
            params = type(base)(*(np.asarray(a) + (rng.normal(0, 0.5, np.shape(a)) if a.ndim else 0.0)
                                  for a in map(np.asarray, base)))
            P = rng.normal(0, 1, (4, 5, l + 1))
            P[:, -1, :l] = rng.choice([-1.0, 1.0], size=(4, l))
            P[:, -1, l] = 0.0
            z = rng.choice([-1.0, 1.0], size=4)
            diff = max(diff, float(np.max(np.abs(forward(params, P, model) - gate_recurrent_forward(params, P, model)))))
            report = gradcheck(lambda q: hinge_loss(q, P, z, model), params, gradients(params, P, z, model))
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


def train_all(world, cfg: dict, seed: int, progress: bool) -> dict:
    """Train every model from its Algorithm 1 init on the same minibatch stream; record eval loss."""
    eval_batch = training_batch(world, cfg["n_eval"], cfg["l_tr"], p_a=cfg["p_a"], K=cfg["K"],
                                kappa_a=cfg["kappa_a"], rng=np.random.default_rng([seed, 3]))
    runs = {}
    for model in MODELS:
        config = TrainConfig(T=cfg["T"], B=cfg["B"], eta=cfg["eta"],
                             l_tr=cfg["l_tr"], p_a=cfg["p_a"], K=cfg["K"], kappa_a=cfg["kappa_a"],
                             delta=cfg["delta"])
        params0 = init_for(model, world.d, None, cfg["delta"], np.random.default_rng([seed, 1]))

        def record(step, params, model=model):
            loss = float(np.mean(hinge(output(model, params, eval_batch.P), eval_batch.z)))
            scalars = {f: float(getattr(params, f)) for f in ("a", "gamma", "tau") if f in params._fields}
            return {"eval_loss": loss, **scalars}

        bar = Progress(cfg["T"], f"seed {seed} {model}") if progress else False
        params, history = train(world, config, model, rng=np.random.default_rng([seed, 2]), params=params0,
                                record_every=cfg["record_every"], record=record, progress=bar)
        runs[model] = (params, history)
    return runs


def iterations_to(history: dict, eps: float):
    """First recorded step whose loss on the fixed training-prompt set is below eps (None: never)."""
    below = np.nonzero(history["eval_loss"] < eps)[0]
    return int(history["step"][below[0]]) if below.size else None


def run(cfg: dict, progress: bool = False) -> dict:
    """The Section 4.1 / Figure 2 protocol for all of ``MODELS``, seed by seed.

    Per seed: one world (Section 3.2), every model trained by Algorithm 1 on the same minibatches,
    then tested on the same testing prompts (Definition 2) for each kappa_a', labelling and alpha.
    Returns plain data: errors (seeds, alphas) per key, convergence steps, loss curves, gate ratios.
    """
    results = {m: {"error": {}, "converge": {str(e): [] for e in cfg["epsilons"]}, "eval_loss": [],
                   "gate_ratio": [], "final_gate_scalars": [], "clean_error_training_tasks": [],
                   "clean_error_unseen_tasks": []} for m in MODELS}
    steps = None
    for seed in cfg["seeds"]:
        world = make_world(cfg["d"], cfg["M1"], cfg["M2"], cfg["V"], cfg["beta"], rng=np.random.default_rng([seed, 0]))
        runs = train_all(world, cfg, seed, progress)
        for model, (params, history) in runs.items():
            r = results[model]
            steps = history["step"]
            r["eval_loss"].append(history["eval_loss"])
            for eps in cfg["epsilons"]:
                r["converge"][str(eps)].append(iterations_to(history, eps))
            r["final_gate_scalars"].append({k: float(history[k][-1]) for k in ("a", "gamma", "tau") if k in history})
        ratio_batch = testing_batch(world, cfg["n_test"], cfg["l_ts"], alpha=0.5, K_prime=cfg["K_prime"],
                                    kappa_a_prime=cfg["kappa_a_prime"][0], rng=np.random.default_rng([seed, 5]))
        for model, (params, _) in runs.items():
            results[model]["gate_ratio"].append(gate_weight_ratio(model, params, ratio_batch))
        for k, which in enumerate(("training", "unseen")):           # alpha = 0: where clean errors occur
            tasks = world.training_tasks() if which == "training" else world.unseen_tasks()
            clean = testing_batch(world, cfg["n_test"], cfg["l_ts"], alpha=0.0, K_prime=cfg["K_prime"],
                                  tasks=tasks, rng=np.random.default_rng([seed, 6, k]))
            for model, (params, _) in runs.items():
                results[model][f"clean_error_{which}_tasks"].append(zero_one_error(output(model, params, clean.P), clean.z))
        for ki, kappa in enumerate(cfg["kappa_a_prime"]):
            for li, rule in enumerate(LABELLINGS):
                key = f"kappa_a_prime={kappa:g}/{rule}"
                for ai, alpha in enumerate(cfg["alphas"]):
                    batch = testing_batch(world, cfg["n_test"], cfg["l_ts"], alpha=alpha, K_prime=cfg["K_prime"],
                                          kappa_a_prime=kappa, label_rule=rule, target=cfg["target"],
                                          rng=np.random.default_rng([seed, 4, ki, li, ai]))
                    for model, (params, _) in runs.items():
                        errs = results[model]["error"].setdefault(key, np.zeros((len(cfg["seeds"]), len(cfg["alphas"]))))
                        errs[cfg["seeds"].index(seed), ai] = zero_one_error(output(model, params, batch.P), batch.z)
    return {"settings": cfg, "steps": steps, "models": results}


def main(argv=None) -> int:
    """Entry point of ``python -m numpy_mamba gates [--quick] [--out DIR] [--quiet]``."""
    parser = argparse.ArgumentParser(prog="python -m numpy_mamba gates", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="tiny smoke run (seconds); for tests")
    parser.add_argument("--out", default=None,
                        help="output folder (default figures/; with --quick a new temporary folder, so a "
                             "smoke run never overwrites the committed results)")
    parser.add_argument("--quiet", action="store_true",
                        help="no training progress on stderr (a full run prints step, loss, elapsed, time left)")
    args = parser.parse_args(argv)
    from .plots import write_outputs                          # matplotlib only when writing
    start = time.perf_counter()
    cfg = settings(args.quick)
    result = run(cfg, progress=not (args.quiet or args.quick))
    result["checks"] = consistency_checks()
    result["seconds"] = time.perf_counter() - start
    out = Path(args.out or (tempfile.mkdtemp(prefix="gates_quick_") if args.quick else "figures"))
    paths = write_outputs(result, out, quick=args.quick)
    print(f"gates: {len(MODELS)} models x {len(cfg['seeds'])} seeds in {result['seconds']:.1f}s")
    for path in paths:
        print(f"  wrote {path}")
    return 0

"""``python -m numpy_mamba ablation``: why three-layer Mamba misses Table 1's FQ cell on one task group.

With targeted outlier labels at kappa_a' = 2 the trained models are right on almost every test
prompt except those of tasks whose two patterns are two steps apart on the cycle of Condition 1's
training tasks (task groups: ``measure.tasks.task_groups``).  This ablation varies one factor at a time
from a baseline (the Condition 1 cycle T_tr, T_short SGD steps, the residual stack of stack.py) at
one and three layers, for Mamba and the linear Transformer, over several seeds:

    all_pairs : train on every ordered pair of T (which satisfies Condition 1 too) instead of T_tr
    long      : T_long steps instead of T_short (the same run, continued: its first T_short steps
                are the baseline, so the two differ only in the number of steps)
    prenorm   : three layers only, H^(k) = H^(k-1) + O^(k)(RMSNorm(H^(k-1))) (stack.py, rmsnorm.py)

and measures the accuracy per task group on Table 1's FQ prompts (alpha = 0.5, outliers farthest
from the query, labels targeted to +1, kappa_a' = 2) and on clean prompts (alpha = 0).

Mechanism (Corollary 1): the learned cross-pattern score S(a, b) = (mu_b, 0)^T W_B^T W_C (mu_a, 0)
(``measure.attention.pattern_scores``; layer 1's W_B, W_C in a stack) by the signed step b - a on the cycle,
during training, split with W = W^(0) + dW (W^(0) = delta [I_d 0], Algorithm 1) into the initial
term, the terms linear in dW and the product dW_B^T dW_C; the product is split further by the
pattern direction u_c it passes through (see ``pattern_terms``).

delta = 0.2 (Section 4) wherever it trains: the step-size rule of step_size.py (``choose``) runs
at delta = 0.2 over ``eta_grid``; only if every eta diverges there does it run at the next delta
of (0.2, 0.1, 0.05).  It runs per model and architecture on a selection world, on held-out
training prompts only, with the baseline's T_short steps.  Streams: selection as depth3.py
(default_rng([k, 8, 40, model + 1, n_layers, ...])); seed s's world is ``world_for(s)``, training
default_rng([s, 11, 0, model]) (the same minibatch stream at every depth and factor), test prompts
default_rng([s, 11, 1, setting]) (the same prompts for every model, depth and factor: paired).
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np
from scipy.stats import t as t_dist

from ..runs.args import positive_int
from ..runs.jobs import Plan, Unit, add_jobs_argument, run_plans
from ..runs.output import SMOKE, write_section
from ..runs.staging import run_staged
from ..data import testing_batch
from ..loss import misclassified
from ..network import Network, network
from ..sgd import DivergenceError, TrainConfig, train
from ..measure.tasks import task_group_names, task_groups
from .common import MODELS, PAPER, save_result, selection_world, world_for
from ..runs.step_size import RULE, choose, heldout_loss

STREAM = 11
ARMS = {"one_layer": (1, False), "three_layer": (3, False), "three_layer_prenorm": (3, True)}
FACTORS = ("baseline", "all_pairs", "long", "prenorm")
TESTS = {"FQ": dict(alpha=0.5, placement="farthest"), "clean": dict(alpha=0.0, placement="random")}
TERMS = ("S", "init", "linear", "product", "via_ends", "via_middle", "via_other", "outside", "dW_B", "dW_C")
TRACKED = ("S", "linear", "product", "via_middle")          # terms recorded along training
PAPER_M1 = PAPER["M1"]


@dataclass(frozen=True)
class AblationSettings:
    """Run size and the choices the paper leaves open (theirs: ``common.PAPER``)."""

    seeds: int = 8
    T_short: int = 500
    T_long: int = 3000
    checkpoint_every: int = 500      # accuracy on the test prompts every this many steps
    record_every: int = 50           # mechanism terms every this many steps
    B: int = 64
    p_a: float = 0.4                 # Table 1's training setting (p_a_mechanism of reproduce)
    K: float = 0.5
    deltas: tuple = (0.2, 0.1, 0.05)
    eta_grid: tuple = (0.003, 0.01, 0.03, 0.1, 0.3, 1.0)
    select_seeds: int = 1
    n_heldout: int = 1024
    n_test: int = 2000
    kappa_a_prime: float = 2.0
    K_prime: float = 1.5
    target: int = 1
    quick: bool = False

    def __post_init__(self):
        if not (self.T_short % self.checkpoint_every == 0 == self.T_long % self.checkpoint_every
                and self.checkpoint_every % self.record_every == 0 and self.T_short < self.T_long):
            raise ValueError(f"need T_short < T_long, both multiples of checkpoint_every, itself a multiple of "
                             f"record_every; got T_short = {self.T_short}, T_long = {self.T_long}, checkpoint_every = "
                             f"{self.checkpoint_every}, record_every = {self.record_every}.")

    def to_dict(self) -> dict:
        return asdict(self)

    def config(self, model_eta: float, delta: float, T: int, tasks: str = "cycle") -> TrainConfig:
        return TrainConfig(T=T, B=self.B, eta=model_eta, l_tr=PAPER["l_tr"], p_a=self.p_a, K=self.K,
                           kappa_a=PAPER["kappa_a"], delta=delta, tasks=tasks)


FULL = AblationSettings()
QUICK = AblationSettings(seeds=2, T_short=4, T_long=8, checkpoint_every=4, record_every=2, eta_grid=(0.01, 0.1),
                         n_heldout=32, n_test=60, quick=True)


def arm_network(model: str, arm: str) -> Network:
    """The Network an arm trains: eq (3) at one layer, the residual or pre-norm stack at three."""
    n_layers, prenorm = ARMS[arm]
    return network(model, n_layers, prenorm)


# ---------------------------------------------------------------- mechanism
def step_classes(M1: int) -> list:
    """Signed steps b - a on the cycle, in reporting order: [0, 1, -1, 2, -2, ...]; M1 = 6: up to 3."""
    out = [0]
    for k in range(1, M1 // 2 + 1):
        out += [k] if 2 * k == M1 else [k, -k]
    return out


def pattern_terms(world, W_B, W_C, delta: float) -> dict:
    """S(a, b) = (mu_b, 0)^T W_B^T W_C (mu_a, 0) and its parts, each averaged over the pairs (a, b)
    of every signed step b - a (``step_classes``): {term: [value per class]}.

    With u_a = (mu_a, 0) / beta, W^(0) = delta [I_d 0] and dW = W - W^(0) (W_B, W_C (m, d+1), m = d+1):
        S       = beta^2 (W_B u_b)^T (W_C u_a)
        init    = beta^2 delta^2 [a = b]
        linear  = beta^2 delta (u_b^T dW_C u_a + u_a^T dW_B u_b)
        product = beta^2 (dW_B u_b)^T (dW_C u_a) = sum over an orthonormal basis of R^m, split into
          via_ends   : directions u_a and u_b          (one dW step straight from a to b)
          via_middle : u_c with c next to both a and b  (two partner steps a -> c -> b)
          via_other  : the other pattern directions u_c
          outside    : the rest of R^m (nu, v*, label, unused directions)
    via_middle is what the product predicts if dW_B and dW_C moved each u_a only along u_a and its
    cycle neighbours (the partner directions of eqs (93), (118)): then it is the whole distance-2 product.
    Also how the updates move pattern directions, by signed step c - b:
        dW_B[c, b] = u_c^T dW_B u_b,   dW_C[c, b] = u_c^T dW_C u_b.
    """
    M1, beta2 = world.M1, world.beta ** 2
    U = np.zeros((M1, world.d + 1))
    U[:, :-1] = world.mu / world.beta                                      # rows u_a: (M1, d+1)
    W0 = np.zeros_like(W_B)
    W0[np.arange(world.d), np.arange(world.d)] = delta
    KB, KC, K0 = W_B @ U.T, W_C @ U.T, W0 @ U.T                            # columns W u_a: (m, M1)
    dB, dC = KB - K0, KC - K0
    terms = {"S": beta2 * KB.T @ KC, "init": beta2 * K0.T @ K0,            # [b, a]: (M1, M1)
             "linear": beta2 * (K0.T @ dC + dB.T @ K0), "product": beta2 * dB.T @ dC}
    Um = U if W_B.shape[0] == U.shape[1] else np.zeros((M1, W_B.shape[0]))   # u_c as directions of R^m
    via = beta2 * (Um @ dB)[:, :, None] * (Um @ dC)[:, None, :]            # [c, b, a]
    c, b, a = np.meshgrid(*(np.arange(M1),) * 3, indexing="ij")
    dist = lambda x, y: np.minimum((x - y) % M1, (y - x) % M1)            # noqa: E731
    ends = (c == a) | (c == b)
    middle = ~ends & (dist(c, a) == 1) & (dist(c, b) == 1)
    terms.update(via_ends=np.sum(via * ends, 0), via_middle=np.sum(via * middle, 0),
                 via_other=np.sum(via * ~(ends | middle), 0))
    terms["outside"] = terms["product"] - via.sum(0)
    terms.update(dW_B=Um @ dB, dW_C=Um @ dC)                               # [c, b]
    half = (M1 - 1) // 2
    signed = (np.arange(M1)[:, None] - np.arange(M1)[None, :] + half) % M1 - half   # b - a: [b, a]
    return {name: [float(np.mean(value[signed == s])) for s in step_classes(M1)] for name, value in terms.items()}


# ---------------------------------------------------------------- units
def prompts_for(world, settings: AblationSettings, seed: int) -> dict:
    """Seed ``seed``'s test prompts of every setting in TESTS: {name: (Batch, task group (n,))}."""
    out = {}
    for i, (name, test) in enumerate(TESTS.items()):
        b = testing_batch(world, settings.n_test, PAPER["l_ts"], K_prime=settings.K_prime,
                          kappa_a_prime=settings.kappa_a_prime, label_rule="target", target=settings.target,
                          rng=np.random.default_rng([seed, STREAM, 1, i]), **test)
        out[name] = (b, task_groups(b.task, world.M1))
    return out


def group_counts(net: Network, params, tests: dict, n_groups: int) -> dict:
    """{test: {"wrong": (G,), "n": (G,)}} misclassified prompts (eq (5)) per task group."""
    out = {}
    for name, (batch, group) in tests.items():
        with np.errstate(over="ignore", invalid="ignore"):
            wrong = misclassified(net.F(params, batch.P), batch.z)
        out[name] = {"wrong": np.bincount(group[wrong], minlength=n_groups).tolist(),
                     "n": np.bincount(group, minlength=n_groups).tolist()}
    return out


def run_unit(settings: AblationSettings, seed: int, model: str, arm: str, tasks: str, step: dict) -> dict:
    """Train ``model`` (arm: depth and architecture; tasks: "cycle" or "all") on seed ``seed``'s world
    with step = {"delta", "eta"}: T_long steps on the cycle for the residual arms (checkpoints give
    the baseline and "long"), T_short otherwise.  Records accuracy per task group at every
    checkpoint and the mechanism terms of layer 1 every ``record_every`` steps; a diverged run keeps
    what it recorded before and says at which step it diverged."""
    world, net = world_for(seed), arm_network(model, arm)
    T = settings.T_long if tasks == "cycle" and not ARMS[arm][1] else settings.T_short
    config = settings.config(step["eta"], step["delta"], T, tasks)
    tests, n_groups = prompts_for(world, settings, seed), len(task_group_names(world.M1))
    checkpoints = {}

    def record(t, params):
        first = net.layers(params)[0]
        terms = pattern_terms(world, first.W_B, first.W_C, config.delta)
        if t % settings.checkpoint_every == 0:
            checkpoints[t] = {**group_counts(net, params, tests, n_groups), "terms": terms}
        return {f"terms_{k}": terms[k] for k in TRACKED}

    diverged_at = None
    try:
        _, history = train(world, config, net, rng=np.random.default_rng([seed, STREAM, 0, MODELS.index(model)]),
                           record_every=settings.record_every, record=record)
    except DivergenceError as exc:
        history, diverged_at = exc.history, exc.step
    return {"seed": seed, "model": model, "arm": arm, "tasks": tasks, "T": T, **step, "diverged_at": diverged_at,
            "checkpoints": {str(t): c for t, c in checkpoints.items()},
            "trajectory": {k: np.round(np.asarray(v, dtype=float), 6).tolist() for k, v in history.items()}}


def selection_plan(settings: AblationSettings, model: str, arm: str, delta: float) -> Plan:
    """step_size.py's rule over ``eta_grid`` at one delta, scored by ``step_size.heldout_loss`` (held-out
    hinge loss and margin of the arm's own Network): assembles to its record, or to {"chosen": None, ...}
    when every eta diverged (then the next delta is tried)."""
    n_layers, prenorm = ARMS[arm]
    stream = (8, round(100 * settings.p_a), MODELS.index(model) + 1, n_layers) + ((2,) if prenorm else ())
    seeds = range(settings.select_seeds)
    units = [Unit((eta, s), f"step size {model} {arm} delta = {delta:g}, eta = {eta:g}", heldout_loss,
                  (selection_world, settings.config(eta, delta, settings.T_short), arm_network(model, arm),
                   settings.n_heldout, stream, {}, s))
             for eta in settings.eta_grid for s in seeds]

    def assemble(found):
        try:
            record = choose({"eta": settings.eta_grid}, lambda f, s: found[(f["eta"], s)], seeds)
        except ValueError:                               # every eta diverged at this delta
            record = {"rule": RULE, "grid": {"eta": list(settings.eta_grid)}, "seeds": list(seeds), "chosen": None,
                      "candidates": [{"fields": {"eta": e}, "losses": [None] * len(seeds), "diverged": True,
                                      "mean": None} for e in settings.eta_grid]}
        return {"delta": delta, **record}

    return Plan(units, assemble)


def choose_steps(settings: AblationSettings, jobs: int, progress=True) -> dict:
    """{model: {arm: {"delta", "eta", "tried": [record per delta tried]}}}: delta = 0.2 first, the next
    delta of ``settings.deltas`` only where every eta diverged.  Raises ValueError if none trains."""
    tried = {(m, a): [] for m in MODELS for a in ARMS}
    pending = list(tried)
    for delta in settings.deltas:
        found, _ = run_plans({key: selection_plan(settings, *key, delta) for key in pending}, jobs=jobs,
                             name=f"ablation: step size at delta = {delta:g}", progress=progress)
        for key, record in found.items():
            tried[key].append(record)
        pending = [key for key in pending if found[key]["chosen"] is None]
        if not pending:
            break
    if pending:
        raise ValueError(f"no eta of {settings.eta_grid} trains at any delta of {settings.deltas} for {pending}.")
    return {m: {a: {"delta": tried[m, a][-1]["delta"], "eta": tried[m, a][-1]["chosen"]["eta"], "tried": tried[m, a]}
                for a in ARMS} for m in MODELS}


def source(factor: str, n_layers: int, settings: AblationSettings):
    """Where a factor's numbers come from: (arm, tasks, checkpoint step); None for prenorm at one layer."""
    arm = "one_layer" if n_layers == 1 else "three_layer"
    return {"baseline": (arm, "cycle", settings.T_short), "all_pairs": (arm, "all", settings.T_short),
            "long": (arm, "cycle", settings.T_long),
            "prenorm": None if n_layers == 1 else ("three_layer_prenorm", "cycle", settings.T_short)}[factor]


def plan(settings: AblationSettings, steps: dict) -> Plan:
    """Every (seed, model, arm, task set) run as a unit, slowest first; assembles to the "ablation" JSON."""
    keys = [(s, m, a, tasks) for s in range(settings.seeds) for m in MODELS for a in ARMS
            for tasks in (("cycle",) if ARMS[a][1] else ("cycle", "all"))]
    cost = {"mamba": 2.0, "linear_transformer": 1.0}        # relative cost of a three-layer step; orders units only
    keys.sort(key=lambda k: -(cost[k[1]] if ARMS[k[2]][0] > 1 else 0.05)
              * (settings.T_long if k[3] == "cycle" and not ARMS[k[2]][1] else settings.T_short))
    units = [Unit(k, f"seed {k[0] + 1}/{settings.seeds} {k[1]} {k[2]} tasks={k[3]}", run_unit,
                  (settings, k[0], k[1], k[2], k[3], {"delta": steps[k[1]][k[2]]["delta"], "eta": steps[k[1]][k[2]]["eta"]}))
             for k in keys]
    return Plan(units, lambda found: assemble(settings, steps, [found[k] for k in sorted(found)]))


def spread(values) -> dict:
    """Mean over seeds with min, max and the 95% t-interval half-width of the mean (None with < 2 seeds)."""
    v = np.asarray([x for x in values if x is not None], dtype=float)
    if v.size == 0:
        return {"mean": None, "min": None, "max": None, "t95": None, "n_seeds": 0}
    half = float(t_dist.ppf(0.975, v.size - 1) * v.std(ddof=1) / np.sqrt(v.size)) if v.size > 1 else None
    return {"mean": float(v.mean()), "min": float(v.min()), "max": float(v.max()), "t95": half, "n_seeds": int(v.size)}


def _accuracy(counts: dict, g):
    """1 - error (eq (5)) of task group g (None: all prompts); None for a group without prompts."""
    wrong, n = np.asarray(counts["wrong"]), np.asarray(counts["n"])
    wrong, n = (wrong.sum(), n.sum()) if g is None else (wrong[g], n[g])
    return float(1 - wrong / n) if n > 0 else None


def assemble(settings: AblationSettings, steps: dict, runs: list) -> dict:
    """Accuracy by (test, model, depth, factor, task group), paired change against the baseline,
    accuracy along the long runs, and the mechanism terms at the end of every factor's run."""
    groups = task_group_names(PAPER_M1)
    by = {(r["seed"], r["model"], r["arm"], r["tasks"]): r for r in runs}
    cells = list(enumerate(groups)) + [(None, "all")]           # each task group, then all prompts
    table, change, mechanism, curve = {}, {}, {}, {}
    for m in MODELS:
        for L in (1, 3):
            for f in FACTORS:
                src = source(f, L, settings)
                if src is None:
                    continue
                arm, tasks, t = src
                at = [by[s, m, arm, tasks]["checkpoints"].get(str(t)) for s in range(settings.seeds)]
                base = [by[s, m, *source("baseline", L, settings)[:2]]["checkpoints"].get(str(settings.T_short))
                        for s in range(settings.seeds)]
                for test in TESTS:
                    for g, name in cells:
                        acc = [None if c is None else _accuracy(c[test], g) for c in at]
                        ref = [None if c is None else _accuracy(c[test], g) for c in base]
                        table.setdefault(test, {}).setdefault(m, {}).setdefault(str(L), {}).setdefault(f, {})[name] = \
                            {**spread(acc), "per_seed": acc}
                        if f != "baseline":
                            diff = [None if a is None or b is None else a - b for a, b in zip(acc, ref)]
                            change.setdefault(test, {}).setdefault(m, {}).setdefault(str(L), {}).setdefault(f, {})[name] = spread(diff)
                mechanism.setdefault(m, {}).setdefault(str(L), {})[f] = {
                    term: [spread([None if c is None else c["terms"][term][k] for c in at])
                           for k in range(len(step_classes(PAPER_M1)))] for term in TERMS}
            arm = "one_layer" if L == 1 else "three_layer"
            long_runs = [by[s, m, arm, "cycle"] for s in range(settings.seeds)]
            ts = list(range(0, settings.T_long + 1, settings.checkpoint_every))
            curve.setdefault(m, {})[str(L)] = {
                "step": ts, **{f"{test}_{name}": [spread([None if str(t) not in r["checkpoints"] else
                                                          _accuracy(r["checkpoints"][str(t)][test], g) for r in long_runs])
                                                  for t in ts] for test in TESTS for g, name in cells}}
    diverged = [{k: r[k] for k in ("seed", "model", "arm", "tasks", "delta", "eta", "diverged_at")}
                for r in runs if r["diverged_at"] is not None]
    return {"experiment": "ablation", "settings": settings.to_dict(), "paper": PAPER, "smoke": SMOKE if settings.quick else None,
            "step": steps, "task_groups": list(groups), "tests": {k: {**v, "kappa_a_prime": settings.kappa_a_prime,
                                                                      "K_prime": settings.K_prime, "label_rule": "target",
                                                                      "target": settings.target} for k, v in TESTS.items()},
            "step_classes": step_classes(PAPER_M1), "terms": list(TERMS), "factors": list(FACTORS),
            "table": table, "change_vs_baseline": change, "mechanism": mechanism, "accuracy_along_long_run": curve,
            "diverged": diverged, "runs": runs}



# ---------------------------------------------------------------- command
def compute(settings: AblationSettings, jobs: int = 1, progress=True) -> dict:
    """Step sizes, then every run; the assembled "ablation" result with its run time."""
    start = time.perf_counter()
    steps = choose_steps(settings, jobs, progress)
    found, _ = run_plans({"ablation": plan(settings, steps)}, jobs=jobs, name="ablation: training runs", progress=progress)
    return {**found["ablation"], "seconds": round(time.perf_counter() - start, 1), "jobs": jobs}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m numpy_mamba ablation", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smoke run at tiny size (2 seeds, T = 4/8); stamped as such")
    parser.add_argument("--seeds", type=positive_int, default=None, help=f"training seeds (default {FULL.seeds}; quick {QUICK.seeds})")
    parser.add_argument("--out", default=None, help="output folder (default figures/; with --quick a new temporary folder)")
    parser.add_argument("--report", default=None, help="the report whose 'ablation' section is written (default OUT/REPORT.md)")
    parser.add_argument("--replot", action="store_true",
                        help="redraw ablation.png and the report section from OUT/ablation.json of an earlier run (no training)")
    add_jobs_argument(parser)
    args = parser.parse_args(argv)
    settings = QUICK if args.quick else FULL
    if args.seeds is not None:
        settings = replace(settings, seeds=args.seeds)
    out = Path(args.out or (tempfile.mkdtemp(prefix="ablation_quick_") if args.quick else "figures"))

    def work(stage):
        from .ablation_report import figure, report_section         # matplotlib only when drawing
        if args.replot:
            try:
                result = json.loads((out / "ablation.json").read_text())
            except (OSError, ValueError) as exc:
                raise SystemExit(f"--replot needs the ablation.json of an earlier run in {out}: {exc}") from None
        else:
            result = compute(settings, jobs=args.jobs)
            print(f"[ablation] writing ablation.json, ablation.png and the report section into {out}", file=sys.stderr,
                  flush=True)
            save_result(stage.dir / "ablation.json", result)
        figure(result, stage.dir / "ablation.png")
        write_section(stage.report, "ablation", report_section(result))

    code = run_staged("ablation", out, work, report=args.report)
    if code == 0:
        print(f"ablation: done with --jobs {args.jobs}; results in {out}", file=sys.stderr)
    return code

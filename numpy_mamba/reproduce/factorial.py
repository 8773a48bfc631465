"""Why Figure 2 misses, measured: Figure 2's protocol (one layer, p_a = 0.6, its T, B, K and test
prompts) in a factorial of what our settings choose and the paper does not say,

    training tasks : Condition 1's cycle T_tr (Figure 2's runs), or every ordered pair of T
    step size eta  : the step-size rule's choice on that training set, or one fixed eta = 0.02
                     (the ``gates`` command's), for both models
    kappa_a'       : 2, 4, 8, a test setting: the same trained models are tested at each

with the same models at initialisation beside them (8 seeds; training seed s is Figure 2's seed
s: the cycle at the rule's eta is Figure 2's run, retrained from the same streams).  Measured: the
error at alpha = 0.55 (inside Theorem 2 (c)'s alpha < 0.6) and 0.8 (Figure 2's point), on all tasks,
on the cycle's 6 tasks and on the other 24, every labelling; and the mechanism below.  Table 1 under
both training sets, beside the untrained models, is the ablation's (its own protocol, p_a = 0.4).

The mechanism, from eq (3).  F = sum_i G_i y_i s_i with s_i = p_i^T W_B^T W_C p_query.  Call
v_i = z ytilde_i G_i s_i the vote of context example i for the right answer z if it carried its
clean label ytilde_i (Definition 2).  Flipped labels put y_i = -ytilde_i on outlier examples, so
z F = sum_clean v_i - sum_outlier v_i.  Each example is an outlier with probability alpha, on its
own, so E[z F] = l ((1 - alpha) V_c - alpha V_o), with V_c, V_o the mean vote of a clean and of an
outlier example, and E[z F] = 0 at

    alpha* = V_c / (V_c + V_o) = 1 / (1 + r_V),   r_V = V_o / V_c     (the vote ratio).

The gate's suffix prod_{j>i} (1 - sigma(w^T p_j)) is the same for an outlier and a clean example at
one position, so where the attention score does not see the outlier (Corollary 1), r_V is the
gate ratio r_G = mean G on outlier examples / mean G on clean ones (the gate-ratio rule's), and
alpha* = 1 / (1 + r_G).  The flipped-label error crosses 1/2 where the median of z F crosses 0,
near where its mean does.  The linear Transformer (G = 1) has r_G = 1: alpha* = 1/2, Theorem 4's
limit.  Both ratios are measured at alpha = 0.5 (positions random), the break-even on the error
curve (interpolated where the pooled error first reaches 1/2).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..data import LABEL_RULES, testing_batch
from ..measure.rates import group_wrong_counts, rate_summary
from ..measure.rules import sample_sd
from ..measure.tasks import task_groups
from ..model import gates_for, scores
from ..fused import network
from ..runs.jobs import Plan, Unit
from ..runs.worlds import world_for
from ..sgd import DivergenceError, train
from .common import MODELS, PAPER, Settings, chosen_records, eta_selection, keep_initial
from .experiment import Experiment
from .factorial_report import FACTORIAL_RULES, claims, draw, report, summary
from .results import GROUPS, subset_counts

ARMS = (("cycle", "rule"), ("cycle", "fixed"), ("all", "rule"), ("all", "fixed"))
ARM_NAMES = tuple(f"{tasks}/{eta}" for tasks, eta in ARMS) + ("untrained",)
STREAM = 13                     # test prompts: default_rng([seed, 13, ...]), a stream of no other experiment


@dataclass(frozen=True)
class FactorialSettings(Settings):
    """``Settings`` of Figure 2 (p_a_fig2, T, B, K, the step-size grid, K', kappa_a') and the factorial's:
    ``eta_fixed`` for both models, the test points ``table_alphas`` (every labelling), the flipped-label
    error curve ``curve_alphas`` (the break-even) and ``alpha_ratio`` (the vote and gate ratios)."""

    eta_fixed: float = 0.02
    table_alphas: tuple = (0.55, 0.8)
    curve_alphas: tuple = tuple(round(0.05 * k, 2) for k in range(1, 20))
    alpha_ratio: float = 0.5


def settings(base: Settings) -> FactorialSettings:
    """Figure 2's one-layer settings with 8 seeds and 2000 test prompts per point (quick: the run's own sizes)."""
    own = dict(curve_alphas=(0.3, 0.5, 0.7, 0.9)) if base.quick else dict(seeds=8, n_test=2000)
    return FactorialSettings(**{**base.to_dict(), **own})


def vote_ratios(model: str, params, batch) -> tuple[float, float]:
    """(r_G, r_V) of the module docstring on flipped-label prompts: mean gate and mean vote
    v_i = z ytilde_i G_i s_i of outlier examples over those of clean ones.  batch.P (n, d+1, l+1)."""
    G = gates_for(model, params, batch.P)[:, :-1]                             # (n, l)
    s = scores(params, batch.P)[:, :-1]                                       # (n, l)
    y = batch.P[:, -1, :-1]
    clean_label = np.where(batch.outlier, -y, y)                              # flipped back: Definition 2's
    v = batch.z[:, None] * clean_label * G * s                                # (n, l)
    out, clean = batch.outlier, ~batch.outlier
    return float(G[out].mean() / G[clean].mean()), float(v[out].mean() / v[clean].mean())


def measure(world, fs: FactorialSettings, seed: int, trained: dict) -> dict:
    """Wrong counts of every trained model {(model, arm): params} on seed ``seed``'s test prompts:
    "table" (3 labellings, kappa_a', table alphas, task group), "curve" (kappa_a', curve alphas;
    flipped labels, all tasks), "ratios" (kappa_a', 2: r_G and r_V), and the prompt counts "n_*"."""
    K, G = len(fs.kappa_a_primes), len(GROUPS)
    out = {"n_table": np.zeros((3, K, len(fs.table_alphas), G), int), "n_curve": np.zeros((K, len(fs.curve_alphas)), int)}
    out.update({key: {"table": np.zeros((3, K, len(fs.table_alphas), G), int),
                      "curve": np.zeros((K, len(fs.curve_alphas)), int), "ratios": np.zeros((K, 2))} for key in trained})

    def prompts(rule, kappa, alpha, *stream):
        return testing_batch(world, fs.n_test, PAPER["l_ts"], alpha=alpha, K_prime=fs.main_K_prime, kappa_a_prime=kappa,
                             label_rule=rule, target=fs.target, rng=np.random.default_rng([seed, STREAM, *stream]))

    for k, kappa in enumerate(fs.kappa_a_primes):
        for r, rule in enumerate(LABEL_RULES):
            for a, alpha in enumerate(fs.table_alphas):
                b = prompts(rule, kappa, alpha, r, k, a)
                group = task_groups(b.task, world.M1)
                for key, params in trained.items():
                    out[key]["table"][r, k, a], out["n_table"][r, k, a] = group_wrong_counts(
                        network(key[0]).misclassified(params, b.P, b.z), group, G)
        for a, alpha in enumerate(fs.curve_alphas):
            b = prompts("flip", kappa, alpha, 3, k, a)
            out["n_curve"][k, a] = fs.n_test
            for key, params in trained.items():
                out[key]["curve"][k, a] = int(network(key[0]).misclassified(params, b.P, b.z).sum())
        b = prompts("flip", kappa, fs.alpha_ratio, 4, k)
        for key, params in trained.items():
            out[key]["ratios"][k] = vote_ratios(key[0], params, b)
    return out


def seed_unit(fs: FactorialSettings, seed: int, eta: dict) -> dict:
    """One unit: both models trained in every arm on seed ``seed``'s world (Figure 2's streams:
    default_rng([seed, 1, model]), so every arm starts from the same Psi^(0), the untrained model),
    then ``measure``.  eta {(model, tasks): the rule's eta}.  A run past the divergence bound
    (``sgd.DIVERGENCE_RULE``) is flagged with its step and not measured."""
    world, trained, training = world_for(seed), {}, {}
    for m, model in enumerate(MODELS):
        for tasks, which in ARMS:
            step = eta[model, tasks] if which == "rule" else fs.eta_fixed
            config = replace(fs.train_config(fs.p_a_fig2, step), tasks=tasks)
            record, initial = keep_initial()
            try:
                params, history = train(world, config, network(model), rng=np.random.default_rng([seed, 1, m]),
                                        record_every=fs.record_every, record=record)
                trained[model, f"{tasks}/{which}"] = params
                done = {"final_minibatch_loss": float(np.mean(history["loss"][-max(1, len(history["loss"]) // 10):])),
                        "diverged_at": None}
            except DivergenceError as exc:
                done = {"final_minibatch_loss": None, "diverged_at": exc.step}
            training[model, f"{tasks}/{which}"] = {"eta": step, **done}
            if initial:
                trained.setdefault((model, "untrained"), initial[0])
    return {"training": training, **measure(world, fs, seed, trained)}


def selection(fs: FactorialSettings) -> dict:
    """The step-size rule at p_a = 0.6 on each training set (the cycle's is Figure 2's: one run of it)."""
    return {key: plan for tasks in ("cycle", "all")
            for key, plan in eta_selection(fs, fs.p_a_fig2, f"factorial {tasks}", tasks).items()}


def plan(fs: FactorialSettings, selection: dict, names=("factorial",)) -> Plan:
    """One unit per seed; assembles to {"factorial": JSON-ready result}: counts per seed (a diverged
    run's as 0 of 0 prompts, so every pooled rate and interval leaves it out), rates per model, arm,
    labelling and subset, and the break-even per model, arm and kappa_a'."""
    records = {tasks: chosen_records(selection, fs, fs.p_a_fig2, tasks) for tasks in ("cycle", "all")}
    eta = {(m, tasks): records[tasks][m]["chosen"]["eta"] for m in MODELS for tasks in records}
    units = [Unit(seed, f"factorial seed {seed + 1}/{fs.seeds}", seed_unit, (fs, seed, eta)) for seed in range(fs.seeds)]

    def assemble(found: dict) -> dict:
        runs = [found[s] for s in range(fs.seeds)]
        res = {"experiment": "factorial", "settings": fs.to_dict(), "paper": PAPER, "p_a": fs.p_a_fig2,
               "eta_rule": {m: {t: eta[m, t] for t in records} for m in MODELS}, "arms": list(ARM_NAMES),
               "label_rules": list(LABEL_RULES), "task_groups": list(GROUPS),
               "step_size": {m: {t: records[t][m] for t in records} for m in MODELS},
               "axes": "table: seed, labelling, kappa_a', table alpha, task group; curve: seed, kappa_a', curve alpha "
                       "(flipped labels, all tasks); ratios: seed, kappa_a', (r_G, r_V)",
               "training": {m: {a: [r["training"].get((m, a)) for r in runs] for a in ARM_NAMES[:-1]} for m in MODELS},
               "n_table": np.stack([r["n_table"] for r in runs]), "n_curve": np.stack([r["n_curve"] for r in runs]),
               "wrong_table": {}, "wrong_curve": {}, "ratios": {}, "error": {}, "breakeven": {}, "healthy": {}}
        for m in MODELS:
            for name in ARM_NAMES:
                ok = [(m, name) in r for r in runs]
                res["healthy"].setdefault(m, {})[name] = ok
                table = np.stack([r[m, name]["table"] if h else np.zeros_like(r["n_table"]) for r, h in zip(runs, ok)])
                curve = np.stack([r[m, name]["curve"] if h else np.zeros_like(r["n_curve"]) for r, h in zip(runs, ok)])
                n_table = res["n_table"] * np.reshape(ok, (-1, 1, 1, 1, 1))      # a diverged seed: 0 prompts
                n_curve = res["n_curve"] * np.reshape(ok, (-1, 1, 1))
                ratios = [r[m, name]["ratios"].tolist() if h else None for r, h in zip(runs, ok)]
                res["wrong_table"].setdefault(m, {})[name] = table
                res["wrong_curve"].setdefault(m, {})[name] = curve
                res["ratios"].setdefault(m, {})[name] = ratios
                sw, sn = subset_counts(table), subset_counts(n_table)
                res["error"].setdefault(m, {})[name] = {
                    rule: {sub: rate_summary(sw[sub][:, r], sn[sub][:, r]) for sub in ("all", "seen", "unseen")}
                    for r, rule in enumerate(LABEL_RULES)}
                res["breakeven"].setdefault(m, {})[name] = breakeven(fs.curve_alphas, curve, n_curve, ratios)
        return {"factorial": res}

    return Plan(units, assemble)


def crossing(alphas, error) -> float | None:
    """The alpha where an error curve first reaches 1/2 (linear interpolation between grid points);
    None if it stays below 1/2 on the whole grid, the first alpha if it starts above."""
    error = np.asarray(error, dtype=float)
    above = np.nonzero(error >= 0.5)[0]
    if above.size == 0:
        return None
    k = above[0]
    if k == 0:
        return float(alphas[0])
    a0, a1, e0, e1 = alphas[k - 1], alphas[k], error[k - 1], error[k]
    return float(a0 + (0.5 - e0) / (e1 - e0) * (a1 - a0))


def breakeven(alphas, wrong, n, ratios) -> dict:
    """Per kappa_a': the measured break-even (pooled over healthy seeds, and per seed) against the
    ones the ratios predict, 1 / (1 + r) (module docstring), with the ratios' mean and sample sd.
    wrong, n (S, kappa_a', alpha); ratios: per seed (kappa_a', 2) or None (diverged)."""
    kept = [np.asarray(r) for r in ratios if r is not None]
    out = {"measured": [], "measured_per_seed": [], "seeds": len(kept)}
    for k in range(wrong.shape[1]):
        used = n[:, k].sum(-1) > 0
        out["measured"].append(crossing(alphas, wrong[used, k].sum(0) / np.maximum(n[used, k].sum(0), 1)) if used.any()
                               else None)
        out["measured_per_seed"].append([crossing(alphas, w / c) for w, c in zip(wrong[used, k], n[used, k])])
    for j, which in enumerate(("gate", "vote")):
        r = np.array([x[:, j] for x in kept]) if kept else np.zeros((0, wrong.shape[1]))
        out[f"r_{which}"] = [float(np.mean(col)) if col.size else None for col in r.T]
        out[f"r_{which}_sd"] = [sample_sd(col) if col.size else None for col in r.T]
        out[f"predicted_{which}"] = [float(np.mean(1 / (1 + col))) if col.size else None for col in r.T]
    return out


EXPERIMENT = Experiment(
    "factorial", ("factorial",),
    "Figure 2 factorial  training tasks x eta x kappa_a', gate ratio, break-even -> factorial.png, factorial.json",
    selection, plan, claims, draw, report, rules=FACTORIAL_RULES, settings=settings, summary=summary)

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
from ..fused import network
from ..measure.rates import group_wrong_counts, rate_summary
from ..measure.rules import FIG2_EPS, case, case_name, describe, sample_sd
from ..measure.tasks import task_groups
from ..model import gates_for, scores
from ..runs.claims import anchor, finding_row
from ..runs.report import Template
from ..runs.runner import Unit
from ..runs.worlds import world_for
from ..sgd import DivergenceError, train
from . import common
from .common import GROUPS, MODELS, PAPER, SHORT, Settings, chosen_records, eta_selection, keep_initial, md_table, \
    subset_counts

NAME, FILES = "factorial", ("factorial",)
OUTPUTS = "Figure 2 factorial  training tasks x eta x kappa_a', gate ratio, break-even -> factorial.png, factorial.json"
RULES = ()                      # findings: measured to explain Figure 2's miss, not judged
TEXT = Template(__package__, "factorial.md")
ARMS = (("cycle", "rule"), ("cycle", "fixed"), ("all", "rule"), ("all", "fixed"))
ARM_NAMES = tuple(f"{tasks}/{eta}" for tasks, eta in ARMS) + ("untrained",)
ARM_TEXT = {"cycle/rule": "cycle, rule's eta", "cycle/fixed": "cycle, eta 0.02", "all/rule": "all pairs, rule's eta",
            "all/fixed": "all pairs, eta 0.02", "untrained": "untrained"}
SUBSET_TEXT = {"all": "all tasks", "seen": "the cycle's 6", "unseen": "the other 24"}
STREAM = 13                     # test prompts: default_rng([seed, 13, ...]), a stream of no other experiment
SECTION, MECHANISM = "### Why Figure 2 misses: the factorial", "### The gate and the break-even"


@dataclass(frozen=True)
class FactorialSettings(Settings):
    """``Settings`` of Figure 2 (p_a_fig2, T, B, K, the step-size grid, K', kappa_a') and the factorial's:
    ``eta_fixed`` for both models, the test points ``table_alphas`` (every labelling), the flipped-label
    error curve ``curve_alphas`` (the break-even) and ``alpha_ratio`` (the vote and gate ratios)."""

    eta_fixed: float = 0.02
    table_alphas: tuple = (0.55, 0.8)
    curve_alphas: tuple = tuple(round(0.05 * k, 2) for k in range(1, 20))
    alpha_ratio: float = 0.5


def settings(quick: bool, seeds=None) -> FactorialSettings:
    """Figure 2's one-layer settings with 8 seeds and 2000 test prompts per point (quick: the quick
    run's own sizes); ``--seeds`` does not apply."""
    own = dict(curve_alphas=(0.3, 0.5, 0.7, 0.9)) if quick else dict(seeds=8, n_test=2000)
    return FactorialSettings(**{**(common.QUICK if quick else common.FULL).to_dict(), **own})


FULL, QUICK = settings(False), settings(True)


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


def selection(fs: FactorialSettings, chosen: dict) -> dict:
    """The step-size rule at p_a = 0.6 on each training set (the cycle's is Figure 2's: one run of it)."""
    return {key: plan for tasks in ("cycle", "all")
            for key, plan in eta_selection(fs, fs.p_a_fig2, f"factorial {tasks}", tasks).items()}


def units(fs: FactorialSettings, chosen: dict) -> list:
    """One unit per seed, at the step sizes the rule chose on each training set."""
    eta = {(m, tasks): chosen_records(chosen, fs, fs.p_a_fig2, tasks)[m]["chosen"]["eta"] for m in MODELS
           for tasks in ("cycle", "all")}
    return [Unit(seed, f"factorial seed {seed + 1}/{fs.seeds}", seed_unit, (fs, seed, eta)) for seed in range(fs.seeds)]


def assemble(fs: FactorialSettings, chosen: dict, found: dict, run) -> dict:
    """factorial.json: counts per seed (a diverged run's as 0 of 0 prompts, so every pooled rate and
    interval leaves it out), rates per model, arm, labelling and subset, and the break-even per
    model, arm and kappa_a'."""
    records = {tasks: chosen_records(chosen, fs, fs.p_a_fig2, tasks) for tasks in ("cycle", "all")}
    runs = [found[s] for s in range(fs.seeds)]
    res = {"experiment": "factorial", "settings": fs.to_dict(), "paper": PAPER, "p_a": fs.p_a_fig2,
           "eta_rule": {m: {t: records[t][m]["chosen"]["eta"] for t in records} for m in MODELS},
           "arms": list(ARM_NAMES), "label_rules": list(LABEL_RULES), "task_groups": list(GROUPS),
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
    return {"factorial": {**res, "seconds": run.seconds[NAME]}}


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


def figure(results: dict, out) -> list:
    """factorial.png: Mamba's error at alpha = 0.8 against kappa_a' per arm (one panel per labelling),
    and the break-even the vote ratio predicts against the measured one (both models)."""
    from ..runs.output import footnote, subplots
    from .plots import COLOR, GREY, save                    # matplotlib only when drawing
    res = results["factorial"]
    s = res["settings"]
    kappas, end = s["kappa_a_primes"], s["curve_alphas"][-1]
    style = {"cycle/rule": ("#0072B2", "-", "o"), "cycle/fixed": ("#56B4E9", "--", "s"),
             "all/rule": ("#009E73", "-", "^"), "all/fixed": ("#8CD17D", "--", "v"), "untrained": (GREY, ":", "x")}
    fig, axes = subplots(1, 4, figsize=(17, 4.6))
    for ax, rule in zip(axes[:3], LABEL_RULES):
        for arm in res["arms"]:
            color, ls, marker = style[arm]
            ax.plot(kappas, [point(res, "mamba", arm, rule, "all", k, 0.8)["rate"] for k in kappas], color=color, ls=ls,
                    marker=marker, label=ARM_TEXT[arm])
        ax.axhline(0.01, color="black", ls="--", lw=0.8)
        ax.set_yscale("symlog", linthresh=0.01, linscale=0.5)
        ax.set_ylim(0, 1.05)
        ax.set_xticks(kappas)
        ax.set_xlabel(r"test outlier magnitude $\kappa_a'$")
        ax.set_title(f"Mamba, alpha = 0.8, outlier labels {rule}", fontsize=10)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("test error, all tasks (symlog; dashed: 0.01)")
    axes[0].legend(fontsize=8, title="training tasks, eta", title_fontsize=8)
    ax = axes[3]
    for m, marker in zip(MODELS, ("o", "s")):
        for arm in res["arms"][:-1]:
            b = res["breakeven"][m][arm]
            xs = [x for x in b["predicted_vote"] if x is not None]
            ys = [end if y is None else y for y, x in zip(b["measured"], b["predicted_vote"]) if x is not None]
            ax.scatter(xs, ys, color=style[arm][0], marker=marker, s=36, edgecolor=COLOR[m], linewidth=1.2)
    ax.plot([0.3, 1.0], [0.3, 1.0], color="black", lw=0.8)
    ax.axhline(end, color=GREY, ls=":", lw=0.8)
    ax.set_xlim(0.3, 1.0)
    ax.set_ylim(0.3, 1.0)
    ax.set_xlabel(r"predicted break-even $1/(1 + r_V)$")
    ax.set_ylabel(r"measured: flipped-label error reaches 1/2")
    ax.set_title("the gate and the break-even (circles: Mamba, squares: LT)", fontsize=10)
    ax.grid(alpha=0.3)
    fig.suptitle("Why Figure 2 misses: training tasks x step size x test outlier magnitude (Figure 2's protocol)")
    footnote(fig, f"Training: p_a = {res['p_a']:g}, T = {s['T']}, B = {s['B']}, rule's eta (Mamba cycle / all pairs "
                  f"{res['eta_rule']['mamba']['cycle']:g} / {res['eta_rule']['mamba']['all']:g}) or {s['eta_fixed']:g}; {s['seeds']} "
                  f"seeds x {s['n_test']} test prompts per point, K' = {s['main_K_prime']:g}; points on the dotted line: "
                  "error below 1/2 up to the grid's end.", "One-layer models of eq (3), as in the paper's Figure 2")
    fig.tight_layout(rect=(0, 0.08, 1, 0.95))
    return [save(fig, out / "factorial.png", res)]


# ---------------------------------------------------------------- the claims
def point(res: dict, model: str, arm: str, rule: str, subset: str, kappa: float, alpha: float) -> dict:
    """One cell: {"rate", "seed_ci95_low", "seed_ci95_high"} at a kappa_a' and table alpha."""
    s = res["settings"]
    cell = res["error"][model][arm][rule][subset]
    k, a = s["kappa_a_primes"].index(kappa), s["table_alphas"].index(alpha)
    return {key: cell[key][k][a] for key in ("rate", "seed_ci95_low", "seed_ci95_high")}


def _rate(e: dict, interval: bool = True) -> str:
    if e["rate"] is None:
        return "n/a"
    return f"{e['rate']:.3f}" + (f" [{e['seed_ci95_low']:.3f}, {e['seed_ci95_high']:.3f}]" if interval else "")


def _alpha(x) -> str:
    return "beyond the grid" if x is None else f"{x:.2f}"


def _arm_case(arm: str) -> tuple:
    tasks, eta = arm.split("/")
    return ("", "all pairs" if tasks == "all" else "cycle"), ("eta", "rule's" if eta == "rule" else "0.02")


def where_reached(res: dict) -> tuple[list, dict]:
    """The cases (training tasks, eta, kappa_a', labelling) where Mamba's error on all tasks at alpha = 0.8
    is at most Figure 2's 0.01, and {case: that error} for every case."""
    value = {case(*_arm_case(arm), ("kappa_a'", kappa), ("", rule)): point(res, "mamba", arm, rule, "all", kappa, 0.8)["rate"]
             for arm in res["arms"][:-1] for kappa in res["settings"]["kappa_a_primes"] for rule in LABEL_RULES}
    return [c for c, v in value.items() if v is not None and v <= FIG2_EPS], value


def corner(res: dict, reached: list) -> tuple | None:
    """(arm, kappa_a') holding the most of the ``reached`` cases (the first such), or None."""
    count = {}
    for c in reached:
        arm = next(a for a in res["arms"][:-1] if _arm_case(a) == c[:2])
        count[arm, float(c[2][1])] = count.get((arm, float(c[2][1])), 0) + 1
    return max(count, key=lambda k: count[k]) if count else None


def group_rate(res: dict, model: str, arm: str, rule: str, kappa: float, alpha: float, group: str):
    """The error on one task group at one cell, pooled over the healthy seeds (None without prompts)."""
    s = res["settings"]
    r, k, a, g = (LABEL_RULES.index(rule), s["kappa_a_primes"].index(kappa), s["table_alphas"].index(alpha),
                  res["task_groups"].index(group))
    ok = np.asarray(res["healthy"][model][arm], dtype=bool)
    wrong = np.asarray(res["wrong_table"][model][arm])[ok, r, k, a, g].sum()
    n = np.asarray(res["n_table"])[ok, r, k, a, g].sum()
    return float(wrong / n) if n else None


def fixed_worse(res: dict) -> tuple[int, int]:
    """In how many cells (training tasks, labelling, kappa_a', table alpha, subset) Mamba's error with the
    fixed eta is above its error with the rule's, out of how many cells both have."""
    worse = total = 0
    for tasks in ("cycle", "all"):
        for rule in LABEL_RULES:
            for sub in ("all", "seen", "unseen"):
                fixed, chosen = (res["error"]["mamba"][f"{tasks}/{e}"][rule][sub]["rate"] for e in ("fixed", "rule"))
                for f_row, c_row in zip(fixed, chosen):
                    for f, c in zip(f_row, c_row):
                        if f is not None and c is not None:
                            total += 1
                            worse += f > c
    return worse, total


def claims(results: dict) -> list:
    """Two findings: where Figure 2's size is reached in the factorial; an outlier's vote and the break-even."""
    if "factorial" not in results:
        return []
    res = results["factorial"]
    reached, value = where_reached(res)
    main = " / ".join(_rate(point(res, "mamba", "cycle/rule", r, "all", 2.0, 0.8), False) for r in LABEL_RULES)
    best = min((c for c in value if value[c] is not None), key=lambda c: value[c])
    where = (f"below 0.01 in {len(reached)} of {len(value)}: {describe(reached, list(value))}" if reached
             else f"nowhere; lowest {value[best]:.3f} at {case_name(best)}")
    b = res["breakeven"]["mamba"]["cycle/rule"]
    k = res["settings"]["kappa_a_primes"].index(2.0)
    M1 = res["paper"]["M1"]
    return [finding_row("factorial_reached", "Fig 2 factorial: where Mamba's error at alpha = 0.8 falls below 0.01 "
                        "(training tasks x eta x kappa_a' x labelling)", "Fig 2: < 0.01 at alpha ~ 0.8 (A, B, C), "
                        "trained on Condition 1's cycle", f"{where}; Figure 2's own setting (cycle, rule's eta, kappa_a' "
                        f"= 2): {main}", [("factorial.png", "factorial.png"), ("tables", anchor(SECTION))],
                        "Mamba's error on all tasks at alpha = 0.8, pooled over the healthy seeds, every case: "
                        + "; ".join(f"{case_name(c)} {v:.3f}" for c, v in value.items() if v is not None) + "."),
            finding_row("breakeven", "Mechanism: the vote an outlier example keeps (r_V) and the break-even 1 / (1 + r_V)",
                        f"Cor 2 (i): outlier gates O(poly(M1)^-1), so r <= 1/M1 = {1 / M1:.2f} and the break-even >= "
                        f"{M1 / (M1 + 1):.2f}", f"Mamba, cycle, rule's eta, kappa_a' = 2: r_G {b['r_gate'][k]:.2f}, r_V "
                        f"{b['r_vote'][k]:.2f}, 1 / (1 + r_V) = {b['predicted_vote'][k]:.2f}; the flipped-label error "
                        f"reaches 1/2 at {_alpha(b['measured'][k])}", [("break-even table", anchor(MECHANISM))],
                        "1 / (1 + r_V) is where eq (3)'s expected z F changes sign, an identity for the mean of z F, so "
                        "its agreement with the measured crossing is nearly guaranteed: the finding is the size of r_V "
                        "(an outlier example keeps that share of a clean one's vote), not the agreement.")]


def summary(results: dict) -> list:
    """Two lines of the report's first screen, from the factorial's numbers: why Figure 2 misses (which
    tasks carry the error, what an outlier's vote does to the break-even) and where its size is reached,
    with both models' numbers there."""
    if "factorial" not in results:
        return []
    res = results["factorial"]
    rate = lambda rule, sub, arm="cycle/rule", m="mamba", kappa=2.0: point(res, m, arm, rule, sub, kappa, 0.8)["rate"]  # noqa: E731
    text = lambda x: "n/a" if x is None else f"{x:.3f}"  # noqa: E731
    k = res["settings"]["kappa_a_primes"].index(2.0)
    b = res["breakeven"]["mamba"]["cycle/rule"]
    seen, unseen = [rate(r, "seen") for r in ("target", "random")], [rate(r, "unseen") for r in ("target", "random")]
    carry = all(u is not None and s_ is not None and u > 2 * s_ for s_, u in zip(seen, unseen))
    why = TEXT("why-misses", section=anchor(SECTION),
               carry=TEXT("carry" if carry else "spread"), seen=" / ".join(map(text, seen)),
               unseen=" / ".join(map(text, unseen)), r_vote=b["r_vote"][k], predicted=b["predicted_vote"][k],
               side="<" if b["predicted_vote"][k] < 0.8 else ">=")
    reached, value = where_reached(res)
    at = corner(res, reached)
    if at is None:
        best = min((c for c in value if value[c] is not None), key=lambda c: value[c])
        return [why, TEXT("nowhere", lowest=value[best], at=case_name(best))]
    arm, kappa = at
    rules = [r for r in LABEL_RULES if case(*_arm_case(arm), ("kappa_a'", kappa), ("", r)) in reached]
    return [why, TEXT("where-reached", rules=", ".join(rules),
                      where=", ".join(f"{d} = {v}" if d else v for d, v in (*_arm_case(arm), ("kappa_a'", f"{kappa:g}"))),
                      mamba=" / ".join(text(rate(r, "all", arm, "mamba", kappa)) for r in LABEL_RULES),
                      lt=" / ".join(text(rate(r, "all", arm, "linear_transformer", kappa)) for r in LABEL_RULES))]


def corner_text(res: dict) -> str:
    """What the corner where Figure 2's size is reached means: flipped labels there, the linear
    Transformer there, and each cause alone (kappa_a' = 8 alone, all pairs alone, the fixed eta)."""
    reached, _ = where_reached(res)
    at = corner(res, reached)
    if at is None:
        return ""
    arm, kappa = at
    text = lambda x: "n/a" if x is None else f"{x:.3f}"  # noqa: E731
    two = lambda f: " / ".join(text(f(r)) for r in ("target", "random"))  # noqa: E731
    flip = point(res, "mamba", arm, "flip", "all", kappa, 0.8)["rate"]
    worse, total = fixed_worse(res)
    d2 = {a: two(lambda r, a=a: group_rate(res, "mamba", a, r, 2.0, 0.8, "distance_2")) for a in ("cycle/rule", "all/rule")}
    seen8 = [point(res, "mamba", "cycle/rule", r, "seen", kappa, 0.8)["rate"] for r in ("target", "random")]
    return TEXT("corner", where=ARM_TEXT[arm] + f", kappa_a' = {kappa:g}", flip=text(flip),
                flip_above=TEXT("above" if flip is not None and flip > FIG2_EPS else "below"),
                lt=" / ".join(text(point(res, "linear_transformer", arm, r, "all", kappa, 0.8)["rate"]) for r in LABEL_RULES),
                kappa=kappa, seen8=" / ".join(map(text, seen8)),
                fixes=TEXT("fixes" if all(x is not None and x <= FIG2_EPS for x in seen8) else "does-not-fix"),
                unseen8=two(lambda r: point(res, "mamba", "cycle/rule", r, "unseen", kappa, 0.8)["rate"]),
                d2_cycle=d2["cycle/rule"], d2_all=d2["all/rule"], worse=worse, total=total,
                fixed=TEXT("worse-everywhere" if worse == total else "worse-mostly" if 2 * worse > total else "not-worse"))


# ---------------------------------------------------------------- its part of the report
def error_table(res: dict, rule: str) -> list:
    """One labelling: per kappa_a' and arm, Mamba at both test alphas (all, the cycle's 6, the other
    24) and the linear Transformer (all), pooled over the healthy seeds [95% interval over seeds]."""
    s = res["settings"]
    header = ["kappa_a'", "training, eta"] + [f"Mamba {SUBSET_TEXT[sub]}, alpha = {a:g}" for a in s["table_alphas"]
                                             for sub in ("all", "seen", "unseen")] + \
             [f"LT all tasks, alpha = {a:g}" for a in s["table_alphas"]] + ["healthy seeds (Mamba, LT)"]
    return md_table(header, [[f"{kappa:g}", ARM_TEXT[arm]]
                             + [_rate(point(res, "mamba", arm, rule, sub, kappa, a)) for a in s["table_alphas"]
                                for sub in ("all", "seen", "unseen")]
                             + [_rate(point(res, "linear_transformer", arm, rule, "all", kappa, a)) for a in s["table_alphas"]]
                             + [", ".join(f"{sum(res['healthy'][m][arm])} of {s['seeds']}" for m in MODELS)]
                             for kappa in s["kappa_a_primes"] for arm in res["arms"]])


def breakeven_rows(res: dict) -> list:
    """Per model, arm and kappa_a': the ratios (mean ± sample sd over seeds), the break-evens they predict and the measured one."""
    rows = []
    for m in MODELS:
        for arm in res["arms"]:
            b = res["breakeven"][m][arm]
            for k, kappa in enumerate(res["settings"]["kappa_a_primes"]):
                if b["r_gate"][k] is None:
                    continue
                per, every = [x for x in b["measured_per_seed"][k] if x is not None], b["measured_per_seed"][k]
                rows.append([SHORT[m], ARM_TEXT[arm], f"{kappa:g}", f"{b['r_gate'][k]:.2f} ± {b['r_gate_sd'][k]:.2f}",
                             f"{b['r_vote'][k]:.2f} ± {b['r_vote_sd'][k]:.2f}", f"{1 / (1 + b['r_gate'][k]):.2f}",
                             f"{b['predicted_vote'][k]:.2f}", _alpha(b["measured"][k]),
                             (f"{np.mean(per):.2f} ± {sample_sd(per):.2f} ({len(per)})" if per else "-")
                             + (f"; {len(every) - len(per)} beyond the grid" if len(per) < len(every) else ""),
                             str(b["seeds"])])
    return ["| " + " | ".join(r) + " |" for r in rows]


def report(results: dict, run) -> str:
    """The factorial's part of the "reproduce" section: settings, one error table per labelling, the break-even table."""
    res = results["factorial"]
    s = res["settings"]
    diverged = [f"{SHORT[m]} {ARM_TEXT[a]} seed {i} (step {t['diverged_at']})" for m in MODELS
                for a, runs in res["training"][m].items() for i, t in enumerate(runs) if t["diverged_at"] is not None]
    chosen = "; ".join(f"{SHORT[m]} " + ", ".join(
        f"{'cycle' if t == 'cycle' else 'all pairs'} {res['eta_rule'][m][t]:g}" + (
            TEXT("tied", others=len(res["step_size"][m][t]["tied"]) - 1)
            if len(res["step_size"][m][t].get("tied", ())) > 1 else "") for t in ("cycle", "all")) for m in MODELS)
    lines = [TEXT("setup", section=SECTION, p_a=res["p_a"], T=s["T"], B=s["B"], K=s["K"], l=PAPER["l_tr"],
                  delta=PAPER["delta"], K_prime=s["main_K_prime"], kappas=", ".join(f"{k:g}" for k in s["kappa_a_primes"]),
                  seeds=s["seeds"], n_test=s["n_test"], grid=", ".join(f"{e:g}" for e in s["eta_grid"]),
                  select_seeds=s["select_seeds"], chosen=chosen, eta_fixed=s["eta_fixed"],
                  diverged="; ".join(diverged) if diverged else "none")]
    for rule in res["label_rules"]:
        lines += ["", TEXT("labelling", rule=rule), ""] + error_table(res, rule)
    lines += ["", corner_text(res)] if corner_text(res) else []
    lines += ["", TEXT("breakeven", mechanism=MECHANISM, first=s["curve_alphas"][0], last=s["curve_alphas"][-1],
                       alpha=s["alpha_ratio"], n_test=s["n_test"]), "", TEXT("breakeven-header")] + breakeven_rows(res)
    return "\n".join(lines)

"""Figure 2 of the paper: ICL classification error (eq (5)) of Mamba and the linear Transformer
against the test outlier fraction alpha, for outlier labels (A) flipped, (B) targeted to +1,
(C) random (Section 4.1, p_a = 0.6), over a grid of kappa_a' and K' (Definition 2).

Both models of one seed are trained on the same world and tested on the same prompts, so
their errors are a paired comparison.
"""
from __future__ import annotations

import numpy as np

from ..data import LABEL_RULES, testing_batch
from ..runs.jobs import Plan, Unit
from .common import MODELS, PAPER, Settings, train_logged, world_for
from ..measure.rates import group_wrong_counts, rate_summary
from ..measure.tasks import task_group_names, task_groups
from ..model import output

GROUPS = task_group_names(PAPER["M1"])          # training, reversed, distance_2, distance_3
SUBSETS = ("seen", "unseen", "all") + GROUPS[1:]  # seen = the training tasks; unseen = every other group


def evaluate_grid(world, params_by_model: dict, settings: Settings, seed: int):
    """Wrong counts on ``n_test`` prompts of Definition 2 per (labelling, kappa_a', K', alpha).

    Returns (wrong, n): wrong[model] is an int array (3 labellings, n_kappa, n_K, n_alpha, G)
    whose last axis is the task group of ``measure.tasks.task_groups`` (GROUPS: training, reversed,
    distance 2, distance 3); n is the number of prompts, same shape.
    """
    shape = (len(LABEL_RULES), len(settings.kappa_a_primes), len(settings.K_primes), len(settings.alphas), len(GROUPS))
    wrong = {model: np.zeros(shape, dtype=int) for model in params_by_model}
    n = np.zeros(shape, dtype=int)
    for r, rule in enumerate(LABEL_RULES):
        for k, kappa_a_prime in enumerate(settings.kappa_a_primes):
            for c, K_prime in enumerate(settings.K_primes):
                rng = np.random.default_rng([seed, 2, r, k, c])
                for a, alpha in enumerate(settings.alphas):
                    batch = testing_batch(world, settings.n_test, PAPER["l_ts"], alpha=alpha,
                                          K_prime=K_prime, kappa_a_prime=kappa_a_prime,
                                          label_rule=rule, target=settings.target, rng=rng)
                    group = task_groups(batch.task, world.M1)
                    for model, params in params_by_model.items():
                        F = output(model, params, batch.P)
                        wrong[model][r, k, c, a], n[r, k, c, a] = group_wrong_counts(F, batch.z, group, len(GROUPS))
    return wrong, n


def seed_unit(settings: Settings, seed: int, eta: dict) -> dict:
    """One unit of work: train both models on seed ``seed``'s world at p_a = 0.6 with step sizes
    ``eta`` ({model: eta}) and evaluate the whole test grid.  Its randomness comes only from the
    seed's own streams.  Returns {"training": {model: summary}, "wrong": {model: counts}, "n": counts}."""
    world = world_for(seed)
    params_by_model, training = {}, {}
    for model in MODELS:
        params, history, summary = train_logged(world, settings, settings.train_config(settings.p_a_fig2, eta[model]),
                                                model, seed, 1)
        summary["loss_curve"] = history["loss"]
        summary["steps"] = history["step"]
        training[model] = summary
        params_by_model[model] = params
    wrong, n = evaluate_grid(world, params_by_model, settings, seed)
    return {"training": training, "wrong": wrong, "n": n}


def plan(settings: Settings, selection: dict) -> Plan:
    """Figure 2 as units (one per training seed) for ``runs.jobs.run_plans``; ``selection`` is the
    step-size rule's record per model (``common.eta_selection`` at p_a = 0.6).

    The assembled result is JSON-ready: settings, the step-size selection, per-seed wrong counts
    and prompt counts, training summaries, and pooled rates (95% Clopper-Pearson intervals) per subset.
    """
    eta = {m: selection[m]["chosen"]["eta"] for m in MODELS}
    units = [Unit(seed, f"fig2 seed {seed + 1}/{settings.seeds}", seed_unit, (settings, seed, eta))
             for seed in range(settings.seeds)]

    def assemble(found: dict) -> dict:
        runs = [found[seed] for seed in range(settings.seeds)]
        n = np.stack([r["n"] for r in runs])                               # (S, 3, k, c, a, G)
        result = {"experiment": "fig2", "settings": settings.to_dict(), "paper": PAPER,
                  "p_a": settings.p_a_fig2, "eta": eta, "step_size": selection,
                  "label_rules": list(LABEL_RULES), "subsets": list(SUBSETS), "task_groups": list(GROUPS),
                  "axes": f"seed, label_rule, kappa_a_prime, K_prime, alpha, task group ({', '.join(GROUPS)})",
                  "n_prompts": n, "training": {m: [r["training"][m] for r in runs] for m in MODELS},
                  "wrong": {}, "error": {}}
        for model in MODELS:
            w = np.stack([r["wrong"][model] for r in runs])                 # (S, 3, k, c, a, G)
            result["wrong"][model] = w
            result["error"][model] = summarise(w, n)
        return result

    return Plan(units, assemble)


SUMMARY_KEYS = ("rate", "ci95_low", "ci95_high", "seed_mean", "seed_min", "seed_max")


def subset_counts(x) -> dict:
    """Counts (..., G) over task groups -> {subset: (...)} for every name in SUBSETS."""
    x = np.asarray(x)
    out = {"seen": x[..., 0], "unseen": x[..., 1:].sum(-1), "all": x.sum(-1)}
    out.update({name: x[..., g] for g, name in enumerate(GROUPS) if g >= 1})
    return out


def summarise(w, n) -> dict:
    """Pooled error per label rule and subset: for each key of SUMMARY_KEYS a nested list
    indexed [kappa_a'][K'][alpha] (95% Clopper-Pearson interval; per-seed mean, min, max)."""
    sw, sn = subset_counts(w), subset_counts(n)
    out = {}
    for r, rule in enumerate(LABEL_RULES):
        out[rule] = {}
        for subset in SUBSETS:
            summary = rate_summary(sw[subset][:, r], sn[subset][:, r])      # (k, c, a) each
            out[rule][subset] = {key: summary[key] for key in SUMMARY_KEYS}
    return out


def curve(result: dict, model: str, rule: str, subset: str, kappa_a_prime: float, K_prime: float, key="rate"):
    """One error curve against alpha from a ``run`` result: (n_alpha,) floats (NaN if empty)."""
    s = result["settings"]
    k, c = s["kappa_a_primes"].index(kappa_a_prime), s["K_primes"].index(K_prime)
    values = result["error"][model][rule][subset][key][k][c]
    return np.array([np.nan if v is None else v for v in values], dtype=float)


def point(result: dict, model: str, rule: str, subset: str, alpha: float, kappa_a_prime=None, K_prime=None):
    """Summary of one alpha (main kappa_a', K' unless given): {"rate", "ci95": [low, high], ...}."""
    s = result["settings"]
    kappa_a_prime = s["main_kappa_a_prime"] if kappa_a_prime is None else kappa_a_prime
    K_prime = s["main_K_prime"] if K_prime is None else K_prime
    a = int(np.argmin(np.abs(np.asarray(s["alphas"]) - alpha)))
    k, c = s["kappa_a_primes"].index(kappa_a_prime), s["K_primes"].index(K_prime)
    table = result["error"][model][rule][subset]
    cell = {key: table[key][k][c][a] for key in SUMMARY_KEYS}
    cell["ci95"] = [cell.pop("ci95_low"), cell.pop("ci95_high")]
    return cell

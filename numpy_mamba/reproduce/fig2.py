"""Figure 2 of the paper: ICL classification error (eq (5)) of Mamba and the linear Transformer
against the test outlier fraction alpha, for outlier labels (A) flipped, (B) targeted to +1,
(C) random (Section 4.1, p_a = 0.6), over a grid of kappa_a' and K' (Definition 2).

Both models of one seed are trained on the same world and tested on the same prompts, so
their errors are a paired comparison.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..data import LABEL_RULES, testing_batch
from ..measure.rates import group_wrong_counts
from ..measure.tasks import task_groups
from ..fused import network
from ..runs.jobs import Plan, Unit
from . import plots
from .claims import FIG2_RULES, fig2_claims
from .common import MODELS, PAPER, Settings, chosen_records, eta_selection, train_logged
from ..runs.worlds import world_for
from .experiment import Experiment
from .results import GROUPS, SUBSETS, summarise
from .tables import fig2_tables, groups_table, pattern_score_table


def evaluate_grid(world, params_by_model: dict, settings: Settings, seed: int, untrained: dict | None = None):
    """Wrong counts on ``n_test`` prompts of Definition 2 per (labelling, kappa_a', K', alpha).

    Returns (wrong, n, wrong_untrained, n_untrained): wrong[model] is an int array (3 labellings,
    n_kappa, n_K, n_alpha, G) whose last axis is the task group of ``measure.tasks.task_groups``
    (GROUPS: training, reversed, distance 2, distance 3); n is the number of prompts, same shape.
    ``untrained`` ({model: params at initialisation}) is evaluated on the same prompts at the main
    K' only: shapes (3, n_kappa, 1, n_alpha, G).
    """
    shape = (len(LABEL_RULES), len(settings.kappa_a_primes), len(settings.K_primes), len(settings.alphas), len(GROUPS))
    wrong = {model: np.zeros(shape, dtype=int) for model in params_by_model}
    n = np.zeros(shape, dtype=int)
    untrained = untrained or {}
    main_c = settings.K_primes.index(settings.main_K_prime)
    wrong0 = {model: np.zeros(shape[:2] + (1,) + shape[3:], dtype=int) for model in untrained}
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
                        wrong[model][r, k, c, a], n[r, k, c, a] = group_wrong_counts(
                            network(model).misclassified(params, batch.P, batch.z), group, len(GROUPS))
                    for model, params in (untrained.items() if c == main_c else ()):
                        wrong0[model][r, k, 0, a] = group_wrong_counts(
                            network(model).misclassified(params, batch.P, batch.z), group, len(GROUPS))[0]
    return wrong, n, wrong0, n[:, :, main_c:main_c + 1]


def seed_unit(settings: Settings, seed: int, eta: dict) -> dict:
    """One unit of work: train both models on seed ``seed``'s world at p_a = 0.6 with step sizes
    ``eta`` ({model: eta}) and evaluate the whole test grid, the trained models and (at the main K')
    the same models at initialisation.  Its randomness comes only from the seed's own streams.
    Returns {"training": {model: summary}, "wrong": {model: counts}, "n": counts, "untrained": {"wrong", "n"}}."""
    world = world_for(seed)
    params_by_model, training, untrained = {}, {}, {}
    for model in MODELS:
        params, history, summary = train_logged(world, settings, settings.train_config(settings.p_a_fig2, eta[model]),
                                                model, seed, 1)
        untrained[model] = summary.pop("initial_params")
        summary["loss_curve"] = history["loss"]
        summary["steps"] = history["step"]
        training[model] = summary
        params_by_model[model] = params
    wrong, n, wrong0, n0 = evaluate_grid(world, params_by_model, settings, seed, untrained)
    return {"training": training, "wrong": wrong, "n": n, "untrained": {"wrong": wrong0, "n": n0}}


def selection(settings: Settings) -> dict:
    """{key: Plan} of the step-size rule at Figure 2's training outlier fraction p_a = 0.6 (``common.eta_selection``)."""
    return eta_selection(settings, settings.p_a_fig2, "fig2")


def plan(settings: Settings, selection: dict, names=("fig2",)) -> Plan:
    """Figure 2 as units (one per training seed) for ``runs.jobs.run_plans``; ``selection`` holds the
    step-size rule's record per model (``common.eta_selection`` at p_a = 0.6).

    Assembles to {"fig2": result}, JSON-ready: settings, the step-size selection, per-seed wrong counts
    and prompt counts, training summaries, and pooled rates (95% Clopper-Pearson intervals) per subset.
    """
    selection = chosen_records(selection, settings, settings.p_a_fig2)
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
        n0 = np.stack([r["untrained"]["n"] for r in runs])                  # (S, 3, k, 1, a, G)
        result["untrained"] = {"K_prime": settings.main_K_prime, "n_prompts": n0, "axes": result["axes"] + " (K' main only)",
                               "wrong": {m: np.stack([r["untrained"]["wrong"][m] for r in runs]) for m in MODELS}}
        result["untrained"]["error"] = {m: summarise(w, n0) for m, w in result["untrained"]["wrong"].items()}
        return {"fig2": result}

    return Plan(units, assemble)


def claims(results: dict) -> list:
    """The claims table's rows of Figure 2 and Theorems 1-2 (``claims.py``), if fig2 is present."""
    return fig2_claims(results["fig2"]) if "fig2" in results else []


def draw(results: dict, out: Path) -> list:
    """fig2.png (main kappa_a'), fig2_kappa<largest>.png, fig2_sensitivity.png, fig2_training.png."""
    result, out = results["fig2"], Path(out)
    high = max(result["settings"]["kappa_a_primes"])
    return [plots.fig2(result, out / "fig2.png"),
            plots.fig2(result, out / f"fig2_kappa{high:g}.png", kappa_a_prime=high),
            plots.fig2_sensitivity(result, out / "fig2_sensitivity.png"),
            plots.fig2_training(result, out / "fig2_training.png")]


def report(results: dict) -> str:
    """Figure 2 in numbers, errors by task group and the learned pattern scores (``tables.py``)."""
    if "fig2" not in results:
        return ""
    res = results["fig2"]
    parts = [fig2_tables(res), "", groups_table(res)]
    if "pattern_scores" in res["training"]["mamba"][0]:
        parts += ["", pattern_score_table(res)]
    return "\n".join(parts)


EXPERIMENT = Experiment(
    "fig2", ("fig2",),
    "Figure 2 (A, B, C)  test error against the outlier fraction alpha     -> fig2*.png, fig2.json",
    selection, plan, claims, draw, report, rules=FIG2_RULES, runs_label=("Fig 2", "Figure 2"))

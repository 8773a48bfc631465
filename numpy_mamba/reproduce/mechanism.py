"""Section 4.2 of the paper at p_a = 0.4, with the one-layer model of eq (3):

* Figure 3 (Corollary 1): sum of attention scores p_i^T W_B^T W_C p_query over context examples
  with the query's relevant pattern (i in N_1) and over the others, on fixed test prompts,
  against the SGD step.
* Figure 4 (Corollary 2): gates G_{i,l+1}(w) of eq (3) on outlier and clean examples at alpha = 0.3.
* Table 1: accuracy at alpha = 0.5 with outlier examples farthest from the query (FQ), at
  random positions (R) or closest to it (CQ).

One training run per seed and model serves all three.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..data import LABEL_RULES, testing_batch
from ..runs.jobs import Plan, Unit
from . import figures, figures_table1
from .claims_mechanism import MECHANISM_RULES, fig3_claims, fig4_claims, table1_claims
from .common import MODELS, PAPER, Settings, chosen_records, eta_selection, train_logged
from .experiment import Experiment
from ..runs.worlds import world_for
from ..measure.attention import score_sums as prompt_score_sums
from ..measure.gates import gate_profile
from ..measure.rates import group_wrong_counts, rate_summary
from ..measure.tasks import task_groups
from .results import GROUPS, setting_key, subset_counts
from .tables import table1_markdown
from ..fused import network

PARTS = ("fig3", "fig4", "table1")
TABLE1_PLACEMENTS = {"FQ": "farthest", "R": "random", "CQ": "closest"}


def score_sums(params, batch, group=None) -> dict:
    """Corollary 1's two sums, averaged over prompts: sum_{i in N_1} s_i and sum_{i not in N_1} s_i
    with s_i = p_i^T W_B^T W_C p_query (eq (3)); batch.P (n, d+1, l+1), same_pattern (n, l).
    With ``group`` ((n,) task groups of ``measure.tasks.task_groups``) also the different-pattern mean per
    group, "score_diff_<group name>" (None for a group without prompts)."""
    same, diff = prompt_score_sums(params, batch)                          # (n,) each
    out = {"score_same": float(np.mean(same)), "score_diff": float(np.mean(diff))}
    if group is not None:
        for g, name in enumerate(GROUPS):
            out[f"score_diff_{name}"] = float(np.mean(diff[group == g])) if np.any(group == g) else None
    return out


def table1_counts(world, trained: dict, settings: Settings, seed: int) -> dict:
    """Wrong counts for every labelling, kappa_a', placement (K' main, alpha = 0.5) of every
    trained model, trained = {model: (Network, params)}.

    Returns {"n": (3 rules, n_kappa, 3 placements, G), model: same shape}, last axis the task
    group (results.GROUPS: training, reversed, distance 2, distance 3).
    """
    shape = (len(LABEL_RULES), len(settings.kappa_a_primes), len(TABLE1_PLACEMENTS), len(GROUPS))
    out = {"n": np.zeros(shape, dtype=int)}
    out.update({m: np.zeros(shape, dtype=int) for m in trained})
    for r, rule in enumerate(LABEL_RULES):
        for k, kappa_a_prime in enumerate(settings.kappa_a_primes):
            for q, placement in enumerate(TABLE1_PLACEMENTS.values()):
                batch = testing_batch(world, settings.n_test, PAPER["l_ts"], alpha=settings.alpha_table1,
                                      K_prime=settings.main_K_prime, kappa_a_prime=kappa_a_prime,
                                      label_rule=rule, target=settings.target, placement=placement,
                                      rng=np.random.default_rng([seed, 5, r, k, q]))
                group = task_groups(batch.task, world.M1)
                for model, (net, params) in trained.items():
                    out[model][r, k, q], out["n"][r, k, q] = group_wrong_counts(
                        net.misclassified(params, batch.P, batch.z), group, len(GROUPS))
    return out


def vote_baseline(settings: Settings, seed: int = 0) -> dict:
    """Table 1's accuracy of a linear Transformer that weighs every example of the query's relevant
    pattern alike and ignores the others (Corollary 1's picture without a gate): F = sum_{i in N_1} y_i,
    right if sign(F) = z, half right on a tie F = 0.  No training: it depends only on the data of
    Definition 2 (alpha = 1/2) and the outlier labelling, so it says which labelling the paper's LT
    numbers admit.  Prompts from world ``world_for(seed)``, streams [seed, 11, labelling, placement].
    Returns {labelling: {placement: accuracy}} (FQ, R, CQ)."""
    world = world_for(seed)
    out = {}
    for r, rule in enumerate(LABEL_RULES):
        out[rule] = {}
        for q, (name, placement) in enumerate(TABLE1_PLACEMENTS.items()):
            batch = testing_batch(world, settings.n_test, PAPER["l_ts"], alpha=settings.alpha_table1,
                                  K_prime=settings.main_K_prime, kappa_a_prime=PAPER["kappa_a"], label_rule=rule,
                                  target=settings.target, placement=placement, rng=np.random.default_rng([seed, 11, r, q]))
            F = np.sum(batch.P[:, -1, :-1] * batch.same_pattern, axis=1)     # (n,) votes of N_1
            out[rule][name] = float(np.mean(np.sign(F) == batch.z) + 0.5 * np.mean(F == 0))
    return out


def mechanism_settings(settings: Settings) -> list:
    """Every test setting (labelling, kappa_a') at which Figures 3-4 are judged: [(r, k, key)] with
    key "labelling/kappa_a'" (``results.setting_key``)."""
    return [(r, k, setting_key(rule, kappa)) for r, rule in enumerate(LABEL_RULES)
            for k, kappa in enumerate(settings.kappa_a_primes)]


def probe_batch(world, settings: Settings, seed: int, r: int | None = None, k: int | None = None):
    """Figure 3's fixed test prompts of seed ``seed`` (alpha = 0.3) in setting (labelling r,
    kappa_a' k), the main one by default, and their task groups."""
    r, k = _main_indices(settings) if r is None else (r, k)
    probe = testing_batch(world, settings.n_probe, PAPER["l_ts"], alpha=settings.alpha_fig3,
                          K_prime=settings.main_K_prime, kappa_a_prime=settings.kappa_a_primes[k],
                          label_rule=LABEL_RULES[r], target=settings.target, rng=np.random.default_rng([seed, 3, r, k]))
    return probe, task_groups(probe.task, world.M1)


def fig4_batch(world, settings: Settings, seed: int, r: int, k: int):
    """Figure 4's test prompts of seed ``seed`` (alpha = 0.3, random positions) in setting (r, k)."""
    return testing_batch(world, settings.n_test, PAPER["l_ts"], alpha=settings.alpha_fig4,
                         K_prime=settings.main_K_prime, kappa_a_prime=settings.kappa_a_primes[k],
                         label_rule=LABEL_RULES[r], target=settings.target, rng=np.random.default_rng([seed, 6, r, k]))


def _main_labels(settings: Settings) -> tuple:
    return settings.mechanism_label_rule, settings.main_kappa_a_prime


def _main_indices(settings: Settings) -> tuple:
    return LABEL_RULES.index(settings.mechanism_label_rule), settings.kappa_a_primes.index(settings.main_kappa_a_prime)


def final_sums(world, settings: Settings, seed: int, views) -> dict:
    """Corollary 1's per-prompt sums at the end of training in every setting of ``mechanism_settings``:
    {key: {"same", "different", "group"}}; ``views(P)`` -> (Params, H) of the layer measured."""
    out = {}
    for r, k, key in mechanism_settings(settings):
        probe, group = probe_batch(world, settings, seed, r, k)
        params, H = views(probe.P)
        same, diff = prompt_score_sums(params, probe._replace(P=H))
        out[key] = {"same": same, "different": diff, "group": group}
    return out


def gate_profiles(world, settings: Settings, seed: int, views) -> dict:
    """``measure.gates.gate_profile`` in every setting of ``mechanism_settings``: {key: profile};
    ``views(P)`` -> (Params, H) of the layer measured."""
    out = {}
    for r, k, key in mechanism_settings(settings):
        batch = fig4_batch(world, settings, seed, r, k)
        params, H = views(batch.P)
        out[key] = gate_profile(params, batch._replace(P=H))
    return out


def seed_unit(settings: Settings, parts: tuple, seed: int, eta: dict) -> dict:
    """One unit of work: train both one-layer models on seed ``seed``'s world at p_a = 0.4 and
    measure the requested ``parts``; randomness only from the seed's own streams.  Returns
    {"training": {model: summary}, "fig3": {model: record}, "fig4": {setting: profile}, "table1": counts}
    (table1 also counts the two models at initialisation)."""
    world = world_for(seed)
    probe, probe_group = probe_batch(world, settings, seed)
    out = {"training": {}, "fig3": {}}
    params_by_model, untrained = {}, {}
    for model in MODELS:
        record = (lambda step, params: score_sums(params, probe, probe_group)) if "fig3" in parts else None
        params, history, summary = train_logged(world, settings, settings.train_config(settings.p_a_mechanism, eta[model]),
                                                model, seed, 4, record=record)
        untrained[model] = summary.pop("initial_params")
        out["training"][model] = summary
        params_by_model[model] = params
        if "fig3" in parts:
            out["fig3"][model] = {"step": history["step"], "loss": history["loss"],
                                  **{k: v for k, v in history.items() if k.startswith("score_")}}
    if "fig3" in parts:
        out["fig3"]["mamba"]["final"] = final_sums(world, settings, seed, lambda P: (params_by_model["mamba"], P))
    if "fig4" in parts:
        out["fig4"] = gate_profiles(world, settings, seed, lambda P: (params_by_model["mamba"], P))
    if "table1" in parts:
        trained = {m: (network(m), p) for m, p in params_by_model.items()}
        trained.update({f"{m}_untrained": (network(m), p) for m, p in untrained.items()})
        out["table1"] = table1_counts(world, trained, settings, seed)
    return out


def selection(settings: Settings) -> dict:
    """{key: Plan} of the step-size rule at the training outlier fraction p_a = 0.4 of Section 4.2."""
    return eta_selection(settings, settings.p_a_mechanism, "fig3/4,table1")


def plan(settings: Settings, selection: dict, names: tuple = PARTS) -> Plan:
    """Figures 3, 4 and Table 1 (the requested parts ``names``) as units, one per training seed, for
    ``runs.jobs.run_plans``; ``selection``: the step-size rule's record per model at p_a = 0.4.
    Assembles to {part: JSON-ready result} for each part in ``names``."""
    parts = tuple(names)
    unknown = set(parts) - set(PARTS)
    if unknown:
        raise ValueError(f"parts must be among {PARTS}; got {sorted(unknown)}.")
    selection = chosen_records(selection, settings, settings.p_a_mechanism)
    eta = {m: selection[m]["chosen"]["eta"] for m in MODELS}
    units = [Unit(seed, f"{'/'.join(parts)} seed {seed + 1}/{settings.seeds}", seed_unit, (settings, tuple(parts), seed, eta))
             for seed in range(settings.seeds)]

    def assemble(found: dict) -> dict:
        runs = [found[seed] for seed in range(settings.seeds)]
        common = {"settings": settings.to_dict(), "paper": PAPER, "p_a": settings.p_a_mechanism, "eta": eta,
                  "step_size": selection, "task_groups": list(GROUPS),
                  "training": {m: [r["training"][m] for r in runs] for m in MODELS}}
        results = {}
        grid = {"setting_keys": [key for _, _, key in mechanism_settings(settings)],
                "main_setting": setting_key(*_main_labels(settings))}
        if "fig3" in parts:
            results["fig3"] = {"experiment": "fig3", **common, **grid, "alpha": settings.alpha_fig3,
                               "per_seed": {m: [r["fig3"][m] for r in runs] for m in MODELS}}
        if "fig4" in parts:
            results["fig4"] = {"experiment": "fig4", **common, **grid, "alpha": settings.alpha_fig4,
                               "per_seed": [r["fig4"] for r in runs]}
        if "table1" in parts:
            results["table1"] = {"experiment": "table1", **common,
                                 **summarise_table1([r["table1"] for r in runs], settings)}
        return results

    return Plan(units, assemble)


def summarise_table1(per_seed: list, settings: Settings) -> dict:
    """Pooled accuracies (1 - error of eq (5)) with 95% intervals (pooled Clopper-Pearson and over
    seeds), per task group and subset, of the trained models ("accuracy") and of the same models at
    initialisation ("untrained"), and the vote baseline of ``vote_baseline``."""
    n = np.stack([s["n"] for s in per_seed])                               # (S, 3, k, 3, G)
    out = {"alpha": settings.alpha_table1, "K_prime": settings.main_K_prime,
           "label_rules": list(LABEL_RULES), "placements": TABLE1_PLACEMENTS,
           "axes": f"seed, label_rule, kappa_a_prime, placement (FQ, R, CQ), task group ({', '.join(GROUPS)})",
           "n_prompts": n, "wrong": {}, "accuracy": {}, "vote_baseline": vote_baseline(settings),
           "untrained": {"wrong": {}, "accuracy": {}}}
    for model in MODELS:
        for name, where in ((model, out), (f"{model}_untrained", out["untrained"])):
            if name in per_seed[0]:
                w = np.stack([s[name] for s in per_seed])
                where["wrong"][model] = w
                where["accuracy"][model] = _accuracy_grid(w, n, settings)
    return out


def _accuracy_grid(w, n, settings: Settings) -> dict:
    """{labelling: {kappa_a': {placement: {subset: accuracy summary}}}} from counts (S, 3, k, 3, G)."""
    sw, sn = subset_counts(w), subset_counts(n)
    return {rule: {str(kappa): {name: {subset: _as_accuracy(rate_summary(sw[subset][:, r, k, q], sn[subset][:, r, k, q]))
                                       for subset in sw}
                                for q, name in enumerate(TABLE1_PLACEMENTS)}
                   for k, kappa in enumerate(settings.kappa_a_primes)}
            for r, rule in enumerate(LABEL_RULES)}


def claims(results: dict) -> list:
    """The claims table's rows of Corollaries 1-2 and Table 1 (``claims_mechanism.py``), for each
    of fig3, fig4, table1 present."""
    rows = []
    for name, rule in (("fig3", fig3_claims), ("fig4", fig4_claims), ("table1", table1_claims)):
        if name in results:
            rows += rule(results[name])
    return rows


def draw(results: dict, out: Path) -> list:
    """fig3.png, fig4.png, table1.png and table1.md, for each of fig3, fig4, table1 in ``results``."""
    out, paths = Path(out), []
    if "fig3" in results:
        paths.append(figures.fig3(results["fig3"], out / "fig3.png"))
    if "fig4" in results:
        paths.append(figures.fig4(results["fig4"], out / "fig4.png"))
    if "table1" in results:
        md = out / "table1.md"
        md.write_text(table1_markdown(results["table1"]) + "\n")
        paths += [figures_table1.table1_png(results["table1"], out / "table1.png"), md]
    return paths


def report(results: dict) -> str:
    """Table 1 in full (every labelling and kappa_a', trained and untrained), if table1 is present."""
    if "table1" not in results:
        return ""
    return "\n".join(["### Table 1, one layer (table1.md, table1.png)", "", table1_markdown(results["table1"])])


EXPERIMENT = Experiment(
    "mechanism", PARTS,
    """\
Figure 3            attention scores during training (Corollary 1)    -> fig3.png, fig3.json
Figure 4            gate values on outlier / clean examples (Cor. 2)  -> fig4.png, fig4.json
Table 1             accuracy with outliers farthest / random / closest -> table1.png/.md/.json""",
    selection, plan, claims, draw, report, rules=MECHANISM_RULES, runs_label=("Figs 3-4, Table 1", "Figures 3-4, Table 1"))


def _as_accuracy(e: dict) -> dict:
    """Turn an error summary into an accuracy summary (1 - rate; intervals flipped): "ci95" the pooled
    Clopper-Pearson interval, "seed_ci95" the interval over seeds (``measure.rates.seed_interval``)."""
    if e["rate"] is None:
        return e
    return {"rate": 1 - e["rate"], "ci95": [1 - e["ci95_high"], 1 - e["ci95_low"]],
            "seed_ci95": [1 - e["seed_ci95_high"], 1 - e["seed_ci95_low"]], "n": int(e["n"]),
            "seed_mean": 1 - e["seed_mean"], "seed_min": 1 - e["seed_max"], "seed_max": 1 - e["seed_min"]}

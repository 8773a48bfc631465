"""Section 4.2 of the paper at p_a = 0.4, with the one-layer model of eq (3):

* Figure 3 (Corollary 1): sum of attention scores p_i^T W_B^T W_C p_query over context examples
  with the query's relevant pattern (i in N_1) and over the others, on fixed test prompts,
  against the SGD step.
* Figure 4 (Corollary 2): gates G_{i,l+1}(w) of eq (3) on outlier and clean examples at alpha = 0.3.
* Table 1: accuracy at alpha = 0.5 with outlier examples farthest from the query (FQ), at
  random positions (R) or closest to it (CQ).

One training run per seed and model serves all three (fig3.json, fig4.json, table1.json); their
claims are judged by the rows of ``corollaries.py``, which the three-layer runs share.
"""
from __future__ import annotations

import numpy as np

from ..data import LABEL_RULES, testing_batch
from ..fused import network
from ..measure.attention import score_sums as prompt_score_sums
from ..measure.gates import gate_profile
from ..measure.rates import group_wrong_counts, rate_summary
from ..measure.tasks import task_groups
from ..runs.runner import Unit
from ..runs.worlds import world_for
from . import corollaries
from .common import (FULL, GROUPS, MODELS, PAPER, QUICK, Settings, chosen_records, eta_selection, setting_key,
                     subset_counts, train_logged)

NAME, FILES = "mechanism", ("fig3", "fig4", "table1")
OUTPUTS = """\
Figure 3            attention scores during training (Corollary 1)    -> fig3.png, fig3.json
Figure 4            gate values on outlier / clean examples (Cor. 2)  -> fig4.png, fig4.json
Table 1             accuracy with outliers farthest / random / closest -> table1.png/.md/.json"""
RULES = ("cor1", "growth", "gate-ratio", "decay", "table1-numbers", "table1-pattern")
RUNS = ("Figs 3-4, Table 1", "Figures 3-4, Table 1")   # its training runs in the section's training and step-size tables
PLACEMENTS = {"FQ": "farthest", "R": "random", "CQ": "closest"}


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
    """Wrong counts of every trained model, trained = {model: (Network, params)}, per labelling,
    kappa_a' and placement (K' main, alpha = 0.5): {"n": (3 rules, n_kappa, 3 placements, G), model:
    same shape}, last axis the task group (GROUPS)."""
    shape = (len(LABEL_RULES), len(settings.kappa_a_primes), len(PLACEMENTS), len(GROUPS))
    out = {"n": np.zeros(shape, dtype=int), **{m: np.zeros(shape, dtype=int) for m in trained}}
    for r, rule in enumerate(LABEL_RULES):
        for k, kappa_a_prime in enumerate(settings.kappa_a_primes):
            for q, placement in enumerate(PLACEMENTS.values()):
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
    world, out = world_for(seed), {}
    for r, rule in enumerate(LABEL_RULES):
        out[rule] = {}
        for q, (name, placement) in enumerate(PLACEMENTS.items()):
            batch = testing_batch(world, settings.n_test, PAPER["l_ts"], alpha=settings.alpha_table1,
                                  K_prime=settings.main_K_prime, kappa_a_prime=PAPER["kappa_a"], label_rule=rule,
                                  target=settings.target, placement=placement, rng=np.random.default_rng([seed, 11, r, q]))
            F = np.sum(batch.P[:, -1, :-1] * batch.same_pattern, axis=1)     # (n,) votes of N_1
            out[rule][name] = float(np.mean(np.sign(F) == batch.z) + 0.5 * np.mean(F == 0))
    return out


def mechanism_settings(settings: Settings) -> list:
    """Every test setting (labelling, kappa_a') at which Figures 3-4 are judged: [(r, k, key)] with
    key "labelling/kappa_a'" (``common.setting_key``)."""
    return [(r, k, setting_key(rule, kappa)) for r, rule in enumerate(LABEL_RULES)
            for k, kappa in enumerate(settings.kappa_a_primes)]


def probe_batch(world, settings: Settings, seed: int, r: int | None = None, k: int | None = None):
    """Figure 3's fixed test prompts of seed ``seed`` (alpha = 0.3) in setting (labelling r,
    kappa_a' k), the main one by default, and their task groups."""
    if r is None:
        r, k = LABEL_RULES.index(settings.mechanism_label_rule), settings.kappa_a_primes.index(settings.main_kappa_a_prime)
    probe = testing_batch(world, settings.n_probe, PAPER["l_ts"], alpha=settings.alpha_fig3,
                          K_prime=settings.main_K_prime, kappa_a_prime=settings.kappa_a_primes[k],
                          label_rule=LABEL_RULES[r], target=settings.target, rng=np.random.default_rng([seed, 3, r, k]))
    return probe, task_groups(probe.task, world.M1)


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
    """``measure.gates.gate_profile`` on Figure 4's test prompts of seed ``seed`` (alpha = 0.3, random
    positions) in every setting of ``mechanism_settings``: {key: profile}; ``views(P)`` -> (Params, H)
    of the layer measured."""
    out = {}
    for r, k, key in mechanism_settings(settings):
        batch = testing_batch(world, settings.n_test, PAPER["l_ts"], alpha=settings.alpha_fig4,
                              K_prime=settings.main_K_prime, kappa_a_prime=settings.kappa_a_primes[k],
                              label_rule=LABEL_RULES[r], target=settings.target,
                              rng=np.random.default_rng([seed, 6, r, k]))
        params, H = views(batch.P)
        out[key] = gate_profile(params, batch._replace(P=H))
    return out


def seed_unit(settings: Settings, seed: int, eta: dict) -> dict:
    """One unit: both one-layer models trained on seed ``seed``'s world at p_a = 0.4, then measured.
    Returns {"training": {model: summary}, "fig3": {model: record}, "fig4": {setting: profile},
    "table1": counts} (table1 also counts the two models at initialisation)."""
    world = world_for(seed)
    probe, probe_group = probe_batch(world, settings, seed)
    out, trained = {"training": {}, "fig3": {}}, {}
    for model in MODELS:
        params, history, summary = train_logged(world, settings, settings.train_config(settings.p_a_mechanism, eta[model]),
                                                model, seed, 4, record=lambda step, p: score_sums(p, probe, probe_group))
        trained[f"{model}_untrained"] = (network(model), summary.pop("initial_params"))
        trained[model] = (network(model), params)
        out["training"][model] = summary
        out["fig3"][model] = {"step": history["step"], "loss": history["loss"],
                              **{k: v for k, v in history.items() if k.startswith("score_")}}
    mamba = trained["mamba"][1]
    out["fig3"]["mamba"]["final"] = final_sums(world, settings, seed, lambda P: (mamba, P))
    out["fig4"] = gate_profiles(world, settings, seed, lambda P: (mamba, P))
    out["table1"] = table1_counts(world, {m: trained[m] for m in (*MODELS, *(f"{m}_untrained" for m in MODELS))},
                                  settings, seed)
    return out


def selection(settings: Settings, chosen: dict) -> dict:
    """The step-size rule at the training outlier fraction p_a = 0.4 of Section 4.2."""
    return eta_selection(settings, settings.p_a_mechanism, "fig3/4,table1")


def units(settings: Settings, chosen: dict) -> list:
    """One unit per training seed, at the step sizes the rule chose."""
    eta = {m: r["chosen"]["eta"] for m, r in chosen_records(chosen, settings, settings.p_a_mechanism).items()}
    return [Unit(seed, f"fig3/fig4/table1 seed {seed + 1}/{settings.seeds}", seed_unit, (settings, seed, eta))
            for seed in range(settings.seeds)]


def assemble(settings: Settings, chosen: dict, found: dict, run) -> dict:
    """fig3.json, fig4.json and table1.json from one set of training runs."""
    selection = chosen_records(chosen, settings, settings.p_a_mechanism)
    runs = [found[seed] for seed in range(settings.seeds)]
    common = {"settings": settings.to_dict(), "paper": PAPER, "p_a": settings.p_a_mechanism,
              "eta": {m: selection[m]["chosen"]["eta"] for m in MODELS}, "step_size": selection,
              "task_groups": list(GROUPS), "training": {m: [r["training"][m] for r in runs] for m in MODELS}}
    grid = {"setting_keys": [key for _, _, key in mechanism_settings(settings)],
            "main_setting": setting_key(settings.mechanism_label_rule, settings.main_kappa_a_prime)}
    seconds = {"seconds": run.seconds[NAME]}
    return {"fig3": {"experiment": "fig3", **common, **grid, "alpha": settings.alpha_fig3,
                     "per_seed": {m: [r["fig3"][m] for r in runs] for m in MODELS}, **seconds},
            "fig4": {"experiment": "fig4", **common, **grid, "alpha": settings.alpha_fig4,
                     "per_seed": [r["fig4"] for r in runs], **seconds},
            "table1": {"experiment": "table1", **common, **summarise_table1([r["table1"] for r in runs], settings),
                       **seconds}}


def summarise_table1(per_seed: list, settings: Settings) -> dict:
    """Pooled accuracies (1 - error of eq (5)) with 95% intervals (pooled Clopper-Pearson and over
    seeds), per task group and subset, of the trained models ("accuracy") and of the same models at
    initialisation ("untrained"), and the vote baseline of ``vote_baseline``."""
    n = np.stack([s["n"] for s in per_seed])                               # (S, 3, k, 3, G)
    out = {"alpha": settings.alpha_table1, "K_prime": settings.main_K_prime, "label_rules": list(LABEL_RULES),
           "placements": PLACEMENTS,
           "axes": f"seed, label_rule, kappa_a_prime, placement (FQ, R, CQ), task group ({', '.join(GROUPS)})",
           "n_prompts": n, "wrong": {}, "accuracy": {}, "vote_baseline": vote_baseline(settings),
           "untrained": {"wrong": {}, "accuracy": {}}}
    for model in MODELS:
        for name, where in ((model, out), (f"{model}_untrained", out["untrained"])):
            if name in per_seed[0]:
                where["wrong"][model] = w = np.stack([s[name] for s in per_seed])
                sw, sn = subset_counts(w), subset_counts(n)
                where["accuracy"][model] = {rule: {str(kappa): {p: {subset: _as_accuracy(rate_summary(
                    sw[subset][:, r, k, q], sn[subset][:, r, k, q])) for subset in sw} for q, p in enumerate(PLACEMENTS)}
                    for k, kappa in enumerate(settings.kappa_a_primes)} for r, rule in enumerate(LABEL_RULES)}
    return out


def _as_accuracy(e: dict) -> dict:
    """Turn an error summary into an accuracy summary (1 - rate; intervals flipped): "ci95" the pooled
    Clopper-Pearson interval, "seed_ci95" the interval over seeds (``measure.rates.seed_interval``)."""
    if e["rate"] is None:
        return e
    return {"rate": 1 - e["rate"], "ci95": [1 - e["ci95_high"], 1 - e["ci95_low"]],
            "seed_ci95": [1 - e["seed_ci95_high"], 1 - e["seed_ci95_low"]], "n": int(e["n"]),
            "seed_mean": 1 - e["seed_mean"], "seed_min": 1 - e["seed_max"], "seed_max": 1 - e["seed_min"]}


def figure(results: dict, out) -> list:
    """fig3.png, fig4.png, table1.png and table1.md."""
    from . import figures, table1                           # matplotlib only when drawing
    md = out / "table1.md"
    md.write_text(table1.markdown(results["table1"], "one") + "\n")
    return [figures.fig3(results["fig3"], out / "fig3.png"), figures.fig4(results["fig4"], out / "fig4.png"),
            table1.png(results["table1"], out / "table1.png"), md]


def fig3_claims(res: dict) -> list:
    """Corollary 1 and the growth of Fig 3's gap, one layer."""
    see = [("fig3.png", "fig3.png")]
    return [corollaries.cor1_row([("", res)], "cor1_1", "Corollary 1 (one layer; the claim behind Fig 3): attention "
                                 "concentrates on examples with the query's pattern", see),
            corollaries.growth_row([("", res)], "growth_1", "Fig 3 (one layer): the gap between the two sums grows in "
                                   "training", see)]


def fig4_claims(res: dict) -> list:
    """Corollary 2 (i) and (ii), one layer."""
    see = [("fig4.png", "fig4.png")]
    return [corollaries.gate_ratio_row([("", res)], "gate_ratio_1", "Corollary 2 (i) / Fig 4 (one layer): gates on "
                                       "outlier examples near zero", see, res["paper"]["M1"]),
            corollaries.decay_row([("", res)], "decay_1", "Corollary 2 (ii) / Fig 4 (one layer): clean gates decay "
                                  "about exponentially with distance from the query", see)]


def claims(results: dict) -> list:
    """Corollaries 1-2 (Figures 3-4) and Table 1 at one layer, for each of fig3, fig4, table1 present."""
    table1 = lambda res: corollaries.table1_rows(res, "1 layer", [("table1.png", "table1.png"),  # noqa: E731
                                                                 ("table", "table1.md")])
    return [row for part, rows in (("fig3", fig3_claims), ("fig4", fig4_claims), ("table1", table1))
            if part in results for row in rows(results[part])]


def report(results: dict, run) -> str:
    """Table 1 in full (every labelling and kappa_a', trained and untrained), if table1 is present."""
    from . import table1
    return table1.markdown(results["table1"], "one", heading=True) if "table1" in results else ""

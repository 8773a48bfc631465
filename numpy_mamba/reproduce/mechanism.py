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

import numpy as np

from ..data import LABEL_RULES, PLACEMENTS, testing_batch
from .common import MODELS, PAPER, Settings, rate_summary, train_logged, world_for, wrong_counts
from ..model import gates_for, output, scores
from ..sgd import Progress

PARTS = ("fig3", "fig4", "table1")
TABLE1_PLACEMENTS = {"FQ": "farthest", "R": "random", "CQ": "closest"}


def score_sums(params, batch) -> dict:
    """Corollary 1's two sums, averaged over prompts: sum_{i in N_1} s_i and sum_{i not in N_1} s_i
    with s_i = p_i^T W_B^T W_C p_query (eq (3)); batch.P (n, d+1, l+1), same_pattern (n, l)."""
    s = scores(params, batch.P)[:, :-1]                                    # (n, l), the query excluded
    same = batch.same_pattern
    return {"score_same": float(np.mean(np.sum(s * same, axis=1))),
            "score_diff": float(np.mean(np.sum(s * ~same, axis=1)))}


def gate_profile(params, batch) -> dict:
    """Gates G_{i,l+1}(w) of eq (3) summarised per context position i and per clean rank j.

    Per position i = 1..l (mean over outlier and clean examples separately; NaN-free: a
    position with no such example gets None) and per rank j, the j-th closest clean example
    to the query (h(j) of Corollary 2, eq (18)).  P (n, d+1, l+1), outlier (n, l).
    """
    G = gates_for("mamba", params, batch.P)[:, :-1]                       # (n, l)
    out_mask = batch.outlier
    l = G.shape[1]

    def masked_mean(mask):
        count = mask.sum(axis=0)
        total = np.where(mask, G, 0.0).sum(axis=0)
        return [float(t / c) if c > 0 else None for t, c in zip(total, count)], count.tolist()

    outlier_mean, outlier_count = masked_mean(out_mask)
    clean_mean, clean_count = masked_mean(~out_mask)
    # rank clean examples by distance from the query: context column l-1 is the closest
    reversed_idx = (l - 1) - np.arange(l)                                  # positions from the query back
    clean_rev = ~out_mask[:, reversed_idx]                                  # (n, l)
    G_rev = G[:, reversed_idx]
    rank_means, rank_counts = [], []
    for j in range(l):
        # the (j+1)-th clean example counting from the query: cumulative count of clean == j+1
        hit = clean_rev & (np.cumsum(clean_rev, axis=1) == j + 1)         # one True per prompt at most
        has = hit.any(axis=1)
        rank_counts.append(int(has.sum()))
        rank_means.append(float(G_rev[hit].mean()) if has.any() else None)
    return {"outlier_mean": outlier_mean, "outlier_count": outlier_count,
            "clean_mean": clean_mean, "clean_count": clean_count,
            "clean_rank_mean": rank_means, "clean_rank_count": rank_counts,
            "outlier_gate_max": float(G[out_mask].max()) if out_mask.any() else None,
            "outlier_gate_mean": float(G[out_mask].mean()) if out_mask.any() else None,
            "clean_gate_mean": float(G[~out_mask].mean()) if (~out_mask).any() else None,
            "query_gate_mean": float(np.mean(gates_for("mamba", params, batch.P)[:, -1]))}


def table1_counts(world, params_by_model, settings: Settings, seed: int) -> dict:
    """Wrong counts for every labelling, kappa_a', placement (K' main, alpha = 0.5).

    Returns {"n": (3 rules, n_kappa, 3 placements, 2), model: same shape}, last axis (seen, unseen).
    """
    shape = (len(LABEL_RULES), len(settings.kappa_a_primes), len(TABLE1_PLACEMENTS), 2)
    out = {"n": np.zeros(shape, dtype=int)}
    out.update({m: np.zeros(shape, dtype=int) for m in params_by_model})
    for r, rule in enumerate(LABEL_RULES):
        for k, kappa_a_prime in enumerate(settings.kappa_a_primes):
            for q, placement in enumerate(TABLE1_PLACEMENTS.values()):
                batch = testing_batch(world, settings.n_test, PAPER["l_ts"], alpha=settings.alpha_table1,
                                      K_prime=settings.main_K_prime, kappa_a_prime=kappa_a_prime,
                                      label_rule=rule, target=settings.target, placement=placement,
                                      rng=np.random.default_rng([seed, 5, r, k, q]))
                seen = world.is_training_task(batch.task)
                out["n"][r, k, q] = seen.sum(), (~seen).sum()
                for model, params in params_by_model.items():
                    out[model][r, k, q] = wrong_counts(output(model, params, batch.P), batch.z, seen)
    return out


def run(settings: Settings, parts=PARTS) -> dict:
    """Train both models per seed at p_a = 0.4 and measure the requested ``parts``.

    Returns {part: JSON-ready result} for each part in ``parts``.
    """
    unknown = set(parts) - set(PARTS)
    if unknown:
        raise ValueError(f"parts must be among {PARTS}; got {sorted(unknown)}.")
    training = {m: [] for m in MODELS}
    fig3 = {m: [] for m in MODELS}
    fig4, t1 = [], []
    overall = Progress(settings.seeds, f"{'/'.join(parts)}: seeds done (loss: Mamba's final minibatch loss)", every=0.0)
    for seed in range(settings.seeds):
        world = world_for(seed)
        probe = testing_batch(world, settings.n_probe, PAPER["l_ts"], alpha=settings.alpha_fig3,
                              K_prime=settings.main_K_prime, kappa_a_prime=settings.main_kappa_a_prime,
                              label_rule="flip", rng=np.random.default_rng([seed, 3]))
        params_by_model = {}
        for model in MODELS:
            label = f"fig3/4,table1 {model} seed {seed + 1}/{settings.seeds}"
            record = (lambda step, params: score_sums(params, probe)) if "fig3" in parts else None
            params, history, summary = train_logged(world, settings, settings.p_a_mechanism, model,
                                                    seed, 4, label, record=record)
            training[model].append(summary)
            params_by_model[model] = params
            if "fig3" in parts:
                fig3[model].append({"step": history["step"], "loss": history["loss"],
                                    "score_same": history["score_same"], "score_diff": history["score_diff"]})
        if "fig4" in parts:
            batch = testing_batch(world, settings.n_test, PAPER["l_ts"], alpha=settings.alpha_fig4,
                                  K_prime=settings.main_K_prime, kappa_a_prime=settings.main_kappa_a_prime,
                                  label_rule="flip", rng=np.random.default_rng([seed, 6]))
            fig4.append(gate_profile(params_by_model["mamba"], batch))
        if "table1" in parts:
            t1.append(table1_counts(world, params_by_model, settings, seed))
        overall.update(seed + 1, training["mamba"][-1]["final_minibatch_loss"], force=True)
    common = {"settings": settings.to_dict(), "paper": PAPER, "p_a": settings.p_a_mechanism,
              "training": training}
    results = {}
    if "fig3" in parts:
        results["fig3"] = {"experiment": "fig3", **common, "alpha": settings.alpha_fig3,
                           "label_rule": "flip", "per_seed": fig3}
    if "fig4" in parts:
        results["fig4"] = {"experiment": "fig4", **common, "alpha": settings.alpha_fig4,
                           "label_rule": "flip", "per_seed": fig4}
    if "table1" in parts:
        results["table1"] = {"experiment": "table1", **common, **summarise_table1(t1, settings)}
    return results


def summarise_table1(per_seed: list, settings: Settings) -> dict:
    """Pooled accuracies (1 - error of eq (5)) with 95% Clopper-Pearson intervals."""
    n = np.stack([s["n"] for s in per_seed])                               # (S, 3, k, 3, 2)
    out = {"alpha": settings.alpha_table1, "K_prime": settings.main_K_prime,
           "label_rules": list(LABEL_RULES), "placements": TABLE1_PLACEMENTS,
           "axes": "seed, label_rule, kappa_a_prime, placement (FQ, R, CQ), (seen, unseen)",
           "n_prompts": n, "wrong": {}, "accuracy": {}}
    for model in MODELS:
        w = np.stack([s[model] for s in per_seed])
        out["wrong"][model] = w
        acc = {}
        for r, rule in enumerate(LABEL_RULES):
            acc[rule] = {}
            for k, kappa_a_prime in enumerate(settings.kappa_a_primes):
                cells = {}
                for q, name in enumerate(TABLE1_PLACEMENTS):
                    cells[name] = {}
                    for subset, (ww, nn) in {"seen": (w[:, r, k, q, 0], n[:, r, k, q, 0]),
                                             "unseen": (w[:, r, k, q, 1], n[:, r, k, q, 1]),
                                             "all": (w[:, r, k, q].sum(-1), n[:, r, k, q].sum(-1))}.items():
                        e = rate_summary(ww, nn)
                        cells[name][subset] = _as_accuracy(e)
                acc[rule][str(kappa_a_prime)] = cells
        out["accuracy"][model] = acc
    return out


def _as_accuracy(e: dict) -> dict:
    """Turn an error summary into an accuracy summary (1 - rate; interval flipped)."""
    if e["rate"] is None:
        return e
    return {"rate": 1 - e["rate"], "ci95": [1 - e["ci95_high"], 1 - e["ci95_low"]], "n": int(e["n"]),
            "seed_mean": 1 - e["seed_mean"], "seed_min": 1 - e["seed_max"], "seed_max": 1 - e["seed_min"]}

"""Corollary 1, eq (16): the trained Mamba's attention concentrates on the examples that share the
query's relevant pattern.  Per testing prompt, the sum of attention scores over same-pattern examples
(claim >= Theta(1)) and over the others (claim <= Theta((1-p_a)^-1 eps), a signed upper bound), the
latter split by how far the two patterns of the prompt's task are apart on the cycle of training tasks
(Condition 1): distance 1 = a training task (Lemma 3 (26): pushed negative), >= 2 = not (Lemma 3 (25):
claimed untouched).

Writes theory_attention.json and theory_attention.png.  The Mamba of Theorems 2 and 4 (``tolerance``:
its settings and the step size its selection chose, asked here under the same key), one unit per seed.
"""
from __future__ import annotations

import numpy as np

from ..data import World, testing_batch
from ..measure.attention import score_sums
from ..measure.rules import corollary1, corollary1_text, verdict_text
from ..measure.tasks import task_group_names, task_groups
from ..runs.claims import claim_row
from ..runs.report import Template
from ..runs.runner import Unit
from . import tolerance
from .measure import LABEL_WORD, WORLD, header, world
from .tolerance import Tolerance, trained, with_eta

NAME, FILES, RULES = "Corollary 1", ("theory_attention",), ("cor1",)
OUTPUTS = "theory_attention    Corollary 1: attention sums by task group -> theory_attention.json, theory_attention.png"
TEXT = Template(__package__, "attention.md")
FULL, QUICK = tolerance.FULL, tolerance.QUICK       # the settings of Theorems 2 and 4: the same trained Mamba
selection = tolerance.selection                     # under the same keys: the step-size rule runs once for both


def attention_run(world: World, s: Tolerance, seed: int):
    """The Mamba of ``tolerance.alpha_run`` at p_a = ``cor1_p_a`` (trained again from the same seed
    stream, so the same parameters) on testing prompts: the sums of eq (16) per prompt, its task's
    distance and group."""
    params, _ = trained(world, s, "mamba", s.cor1_p_a, seed)
    if params is None:
        return None
    batch = testing_batch(world, s.B_test, s.l_ts, alpha=s.alpha, K_prime=s.K_prime, kappa_a_prime=s.kappa_a_prime[0],
                          label_rule=s.label_rule, rng=np.random.default_rng([seed, 11]))
    same, diff = score_sums(params, batch)
    a, b = batch.task[:, 0], batch.task[:, 1]
    dist = np.minimum((a - b) % world.M1, (b - a) % world.M1)
    by_dist = {int(k): {"median_different": float(np.median(diff[dist == k])), "n": int(np.sum(dist == k))}
               for k in np.unique(dist)}
    return {"seed": seed, "same": same.tolist(), "different": diff.tolist(), "distance": dist.tolist(),
            "group": task_groups(batch.task, world.M1).tolist(),
            "median_same": float(np.median(same)), "different_by_distance": by_dist,
            "fraction_same_at_least_1": float(np.mean(same >= 1.0)),
            "fraction_different_below_tenth_of_median_same": float(np.mean(diff <= 0.1 * np.median(same)))}


def units(s: Tolerance, chosen: dict) -> list:
    """One unit per seed, at the step size chosen for Mamba at cor1_p_a (none if Mamba is not trained there)."""
    s = with_eta(s, chosen)
    seeds = s.seeds if s.cor1_p_a in s.p_a_train["mamba"] else []
    the_world = world()
    return [Unit(seed, f"Corollary 1 seed {seed}", attention_run, (the_world, s, seed)) for seed in seeds]


def assemble(s: Tolerance, chosen: dict, found: dict, run) -> dict:
    """theory_attention.json: the settings and every seed's sums (its verdict: ``judge``)."""
    return {"theory_attention": {**header(run), "settings": with_eta(s, chosen).to_dict(),
                                 "runs": [r for r in found.values() if r is not None]}}


def judge(results: dict) -> None:
    """Corollary 1 (rule cor1), where a run was made."""
    if results["theory_attention"].get("runs"):
        judge_attention(results["theory_attention"], WORLD["M1"])


def judge_attention(out: dict, M1: int) -> dict:
    """Corollary 1's verdict by the rule shared with the reproduce section
    (``measure.rules.corollary1``: part (a) inside every task group's case), on every
    prompt of every seed pooled.  Adds out["corollary1"] (medians by task group) and out["verdict"]."""
    cat = lambda key: np.concatenate([np.asarray(r[key]) for r in out["runs"]])  # noqa: E731
    c = corollary1(cat("same"), cat("different"), cat("group").astype(int), task_group_names(M1))
    out["corollary1"] = c
    out["mean_median_same"] = float(np.mean([r["median_same"] for r in out["runs"]]))
    out["verdict"] = {"corollary1": verdict_text(c)}
    return out


# ---------------------------------------------------------------- what is written from the JSON
def figure(results: dict, out) -> list:
    """theory_attention.png (``plots.attention``)."""
    from . import plots                                     # matplotlib only when drawing
    return [plots.attention(results["theory_attention"], out / "theory_attention.png")]


def claims(results: dict) -> list:
    """Corollary 1, where it was judged."""
    att = results.get("theory_attention", {})
    if "corollary1" not in att:
        return []
    c = att["corollary1"]
    return [claim_row("cor1_theory", "Cor 1 (theory run): attention concentrates on same-pattern examples",
                      "sum over N_1 >= Theta(1); rest <= Theta((1-p_a)^-1 eps)", f"median same {c['median_same']:.1f}; "
                      "other: " + ", ".join(f"{k.replace('_', ' ')} {v['median_different']:+.1f}"
                                            for k, v in c["by_group"].items()),
                      c, "cor1", [("theory_attention.png", "theory_attention.png"),
                                  ("section", "#corollary-1-attention-concentrates-on-same-pattern-examples")])]


def report(results: dict, run) -> str:
    """The sums by task group and Corollary 1's verdict; what the distance-2 sums show."""
    att = results["theory_attention"]
    s, c = att["settings"], att["corollary1"]
    positive = "distance_2" in c["by_group"] and c["by_group"]["distance_2"]["median_different"] > c["threshold"]
    return TEXT("body", **s, kappa=min(s["kappa_a_prime"]), labels=LABEL_WORD[s["label_rule"]], n_seeds=len(att["runs"]),
                verdict=corollary1_text(c), distance2=TEXT("distance-2") if positive else "")

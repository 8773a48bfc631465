"""Reading saved results, shared by the experiments, their claims, figures and tables: the task
groups and subsets of Figure 2's counts, pooled rates per subset (``summarise``) and one curve or
point of them (``curve``, ``point``), and a three-layer result seen as the one-layer result of one
layer (``view``), so the same figures and verdict rules serve every layer."""
from __future__ import annotations

import numpy as np

from ..data import LABEL_RULES
from ..measure.rates import rate_summary
from ..measure.tasks import task_group_names
from .common import PAPER

GROUPS = task_group_names(PAPER["M1"])          # training, reversed, distance_2, distance_3
SUBSETS = ("seen", "unseen", "all") + GROUPS[1:]  # seen = the training tasks; unseen = every other group
SUMMARY_KEYS = ("rate", "ci95_low", "ci95_high", "seed_ci95_low", "seed_ci95_high", "seed_mean", "seed_min", "seed_max")


def setting_key(label_rule: str, kappa_a_prime: float) -> str:
    """The key of one test setting of Figures 3-4 in the JSON: "target/2"."""
    return f"{label_rule}/{float(kappa_a_prime):g}"


def untrained_view(result: dict) -> dict:
    """A "fig2" result's models at initialisation seen as a "fig2" result (its K' grid: the main
    K' only), so ``curve`` and ``point`` read them like the trained models."""
    u = result["untrained"]
    settings = dict(result["settings"], K_primes=[u["K_prime"]])
    return {**result, "settings": settings, "error": u["error"], "wrong": u["wrong"], "n_prompts": u["n_prompts"]}


def subset_counts(x) -> dict:
    """Counts (..., G) over task groups -> {subset: (...)} for every name in SUBSETS."""
    x = np.asarray(x)
    out = {"seen": x[..., 0], "unseen": x[..., 1:].sum(-1), "all": x.sum(-1)}
    out.update({name: x[..., g] for g, name in enumerate(GROUPS) if g >= 1})
    return out


def summarise(w, n) -> dict:
    """Pooled error per label rule and subset: for each key of SUMMARY_KEYS a nested list
    indexed [kappa_a'][K'][alpha] (95% Clopper-Pearson interval of the pooled prompts; 95% interval
    over seeds, ``measure.rates.seed_interval``; per-seed mean, min, max)."""
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
    """Summary of one alpha (main kappa_a', K' unless given): {"rate", "ci95": [low, high] (pooled
    Clopper-Pearson), "seed_ci95": [low, high] (over seeds; None in results without it), ...}."""
    s = result["settings"]
    kappa_a_prime = s["main_kappa_a_prime"] if kappa_a_prime is None else kappa_a_prime
    K_prime = s["main_K_prime"] if K_prime is None else K_prime
    a = int(np.argmin(np.abs(np.asarray(s["alphas"]) - alpha)))
    k, c = s["kappa_a_primes"].index(kappa_a_prime), s["K_primes"].index(K_prime)
    table = result["error"][model][rule][subset]
    cell = {key: table[key][k][c][a] for key in SUMMARY_KEYS if key in table}
    cell["ci95"] = [cell.pop("ci95_low"), cell.pop("ci95_high")]
    cell["seed_ci95"] = [cell.pop("seed_ci95_low", None), cell.pop("seed_ci95_high", None)]
    return cell


def view(result: dict, part: str, layer: int = 1) -> dict:
    """A "depth3" result seen as the one-layer fig3 / fig4 / table1 result of layer ``layer``
    (the same keys), so the same figures and verdict rules apply to every layer."""
    common = {k: result[k] for k in ("settings", "paper", "p_a", "eta", "step_size", "task_groups", "training")}
    common.update(depth=result["n_layers"], layer=layer, delta=result["delta"])
    grid = {k: result[k] for k in ("setting_keys", "main_setting")}
    if part == "fig3":
        return {"experiment": "fig3", **common, **grid, "alpha": result["alpha_fig3"],
                "per_seed": result["layers"][layer - 1]["scores"]}
    if part == "fig4":
        return {"experiment": "fig4", **common, **grid, "alpha": result["alpha_fig4"],
                "per_seed": result["layers"][layer - 1]["gates"]}
    if part == "table1":
        return {"experiment": "table1", **common, **result["table1"]}
    raise ValueError(f"part must be fig3, fig4 or table1; got {part!r}.")

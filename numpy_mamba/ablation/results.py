"""The "ablation" JSON assembled from every run: accuracy by (test, model, depth, factor, task
group) with its spread over seeds, on prompts of every task and on the held-out pairs only, the
paired change against the baseline, accuracy along the long runs, and every layer's mechanism
(pattern terms and attention scores by step) at the end of every factor's run; and the readers of
that JSON that the claims, the report and the figure share (``cell``, ``gap``, ``mean_over``).
"""
from __future__ import annotations

from dataclasses import asdict
from itertools import product

import numpy as np

from ..data import SECTION4
from ..measure.tasks import task_group_names
from ..model import PAPER_MODELS as MODELS
from ..runs.output import SMOKE
from .one_run import HELD_OUT, PROMPT_SETS, RUNS, TASK_SETS, TERMS, TESTS
from .terms import step_classes

PAPER = asdict(SECTION4)          # Section 4's settings, as the JSON records them
FACTORS = ("untrained", "baseline", "all_pairs", "long", "all_pairs_long", "heldout", "prenorm")
FACTOR_LABEL = {"untrained": "untrained", "baseline": "baseline", "all_pairs": "all pairs", "long": "more steps",
                "all_pairs_long": "all pairs + more steps", "heldout": "all pairs but held-out", "prenorm": "pre-norm"}
GROUP_LABEL = {"training": "training", "reversed": "reversed", "distance_2": "distance 2", "distance_3": "distance 3",
               "all": "all tasks"}
MODEL_TEXT = {"mamba": "Mamba", "linear_transformer": "linear Transformer"}
DEPTHS = ("1", "3")


def layers(L: str) -> str:
    return f"{L} layer{'s' * (L == '3')}"


def source(factor: str, n_layers: int, settings):
    """Where a factor's numbers come from: (arm, task set, length, checkpoint step); None for pre-norm
    at one layer.  The untrained model is step 0 of the baseline's run."""
    arm = "one_layer" if n_layers == 1 else "three_layer"
    return {"untrained": (arm, "cycle", "short", 0), "baseline": (arm, "cycle", "short", settings.T_short),
            "all_pairs": (arm, "all", "short", settings.T_short), "long": (arm, "cycle", "long", settings.T_long),
            "all_pairs_long": (arm, "all", "long", settings.T_long), "heldout": (arm, "heldout", "short", settings.T_short),
            "prenorm": None if n_layers == 1 else ("three_layer_prenorm", "cycle", "short", settings.T_short)}[factor]


def spread(values) -> dict:
    """Mean over seeds with min, max and the 95% t-interval half-width of the mean (None with < 2
    seeds).  The spread is taken on values scaled by their largest magnitude, so that the huge but
    finite terms of a run on its way to diverging give a finite interval; a statistic beyond the
    float range is None (not measured), never inf."""
    from scipy.stats import t as t_dist                     # scipy.stats only when assembling: the command starts fast
    v = np.asarray([x for x in values if x is not None], dtype=float)
    if v.size == 0:
        return {"mean": None, "min": None, "max": None, "t95": None, "n_seeds": 0}
    scale = float(np.abs(v).max()) or 1.0
    with np.errstate(over="ignore", invalid="ignore"):
        mean = scale * float(np.mean(v / scale))
        half = scale * float(t_dist.ppf(0.975, v.size - 1) * np.std(v / scale, ddof=1) / np.sqrt(v.size)) \
            if v.size > 1 else None
    finite = lambda x: x if x is not None and np.isfinite(x) else None  # noqa: E731
    return {"mean": finite(mean), "min": float(v.min()), "max": float(v.max()), "t95": finite(half),
            "n_seeds": int(v.size)}


def _accuracy(counts: dict, g):
    """1 - error (eq (5)) of task group g (None: all prompts); None for a group without prompts."""
    wrong, n = np.asarray(counts["wrong"]), np.asarray(counts["n"])
    wrong, n = (wrong.sum(), n.sum()) if g is None else (wrong[g], n[g])
    return float(1 - wrong / n) if n > 0 else None


def _checkpoints(by: dict, settings, m: str, src) -> list:
    """One checkpoint per seed of a factor's (arm, task set, length, step), None where the run diverged before."""
    arm, tasks, length, t = src
    return [by[s, m, arm, tasks, length]["checkpoints"].get(str(t)) for s in range(settings.seeds)]


def _nest(d: dict, keys) -> dict:
    for k in keys:
        d = d.setdefault(k, {})
    return d


def _tables(settings, by: dict, groups: tuple) -> tuple:
    """{prompt set: {test: {model: {depth: {factor: {group: spread}}}}}} and the paired change of each
    factor against the baseline of the same depth, same nesting."""
    table, change = {}, {}
    for m, L, f in product(MODELS, (1, 3), FACTORS):
        if source(f, L, settings) is None:
            continue
        at, base = (_checkpoints(by, settings, m, source(x, L, settings)) for x in (f, "baseline"))
        for which, test, (g, name) in product(PROMPT_SETS, TESTS, [*enumerate(groups), (None, "all")]):
            acc, ref = ([None if c is None else _accuracy(c[f"{test}/{which}"], g) for c in cs] for cs in (at, base))
            if all(a is None for a in ref):
                continue
            _nest(table, (which, test, m, str(L), f))[name] = {**spread(acc), "per_seed": acc}
            if f != "baseline":
                _nest(change, (which, test, m, str(L), f))[name] = spread(
                    [None if a is None or b is None else a - b for a, b in zip(acc, ref)])
    return table, change


def _mechanism(settings, by: dict) -> dict:
    """{model: {depth: {factor: {"terms": [per layer: {term: [spread per step class]}], "scores": [per
    layer: [spread per step class]]}}}} at each factor's checkpoint."""
    out, classes = {}, range(len(step_classes(SECTION4.M1)))
    for m, L, f in product(MODELS, (1, 3), FACTORS):
        if source(f, L, settings) is None:
            continue
        at = _checkpoints(by, settings, m, source(f, L, settings))
        layers = range(len(next(c for c in at if c is not None)["terms"])) if any(at) else []
        _nest(out, (m, str(L)))[f] = {
            "terms": [{term: [spread([None if c is None else c["terms"][k][term][j] for c in at]) for j in classes]
                       for term in TERMS} for k in layers],
            "scores": [[spread([None if c is None else c["scores"][k][j] for c in at]) for j in classes]
                       for k in layers]}
    return out


def _curves(settings, by: dict, groups: tuple) -> dict:
    """Accuracy at every checkpoint of the long runs (cycle and all pairs), per test and task group."""
    ts, out = list(range(0, settings.T_long + 1, settings.checkpoint_every)), {}
    for m, (L, arm), tasks in product(MODELS, ((1, "one_layer"), (3, "three_layer")), ("cycle", "all")):
        runs = [by[s, m, arm, tasks, "long"]["checkpoints"] for s in range(settings.seeds)]
        _nest(out, (m, str(L)))[tasks] = {"step": ts, **{
            f"{test}_{name}": [spread([_accuracy(r[str(t)][f"{test}/all"], g) if str(t) in r else None for r in runs])
                               for t in ts] for test in TESTS for g, name in [*enumerate(groups), (None, "all")]}}
    return out


def assemble(settings, steps: dict, runs: list) -> dict:
    """Accuracy by (prompt set, test, model, depth, factor, task group), paired change against the
    baseline, accuracy along the long runs, and every layer's mechanism at every factor's checkpoint."""
    groups = task_group_names(SECTION4.M1)
    by = {(r["seed"], r["model"], r["arm"], r["tasks"], r["length"]): r for r in runs}
    table, change = _tables(settings, by, groups)
    diverged = [{k: r[k] for k in ("seed", "model", "arm", "tasks", "length", "delta", "eta", "diverged_at")}
                for r in runs if r["diverged_at"] is not None]
    tests = {k: {**v, "kappa_a_prime": settings.kappa_a_prime, "K_prime": settings.K_prime, "label_rule": "target",
                 "target": settings.target} for k, v in TESTS.items()}
    return {"experiment": "ablation", "settings": settings.to_dict(), "paper": PAPER,
            "smoke": SMOKE if settings.quick else None, "step": steps, "task_groups": list(groups),
            "task_sets": list(TASK_SETS), "runs_per_seed": [list(r) for r in RUNS], "held_out": [list(t) for t in HELD_OUT], "tests": tests,
            "step_classes": step_classes(SECTION4.M1), "terms": list(TERMS), "factors": list(FACTORS),
            "table": table, "change_vs_baseline": change, "mechanism": _mechanism(settings, by),
            "accuracy_along_long_run": _curves(settings, by, groups), "diverged": diverged, "runs": runs}


# ---------------------------------------------------------------- reading it
def cell(result: dict, which: str, test: str, m: str, L: str, f: str, g: str):
    """The spread of one accuracy (prompt set, test, model, depth, factor, task group); None: not measured."""
    return result["table"].get(which, {}).get(test, {}).get(m, {}).get(L, {}).get(f, {}).get(g)


def gap(result: dict, test: str, m: str, L: str, f: str):
    """(distance-2 accuracy, lowest other group's accuracy) of one run (seed means), or None."""
    d2 = cell(result, "all", test, m, L, f, "distance_2")
    others = [cell(result, "all", test, m, L, f, g) for g in result["task_groups"] if g != "distance_2"]
    if d2 is None or d2["mean"] is None or any(o is None or o["mean"] is None for o in others):
        return None
    return d2["mean"], min(o["mean"] for o in others)


def mean_over(cells: list, classes: list, k: int):
    """Mean of the seed means of the signed steps +k and -k (None if any is missing)."""
    values = [c["mean"] for c, step in zip(cells, classes) if abs(step) == k]
    return None if not values or any(v is None for v in values) else float(np.mean(values))


def ratio(cells: list, classes: list):
    """A score at distance 2 over the score at distance 0 (seed means; None where not measured or 0)."""
    s0, s2 = cells[0]["mean"], mean_over(cells, classes, 2)
    return None if s0 in (None, 0) or s2 is None else s2 / s0

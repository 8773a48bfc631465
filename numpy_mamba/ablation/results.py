"""The "ablation" JSON assembled from every run: accuracy by (test, model, depth, factor, task
group) with its spread over seeds, on prompts of every task and on the held-out pairs only, the
paired change against the baseline, accuracy along the long runs, and every layer's mechanism
(pattern terms and attention scores by step) at the end of every factor's run.
"""
from __future__ import annotations

from dataclasses import asdict

import numpy as np
from scipy.stats import t as t_dist

from ..data import SECTION4
from ..measure.tasks import task_group_names
from ..model import PAPER_MODELS as MODELS
from ..runs.output import SMOKE
from .settings import FACTORS, HELD_OUT, PROMPT_SETS, TASK_SETS, TERMS, TESTS, AblationSettings, source
from .terms import step_classes

PAPER = asdict(SECTION4)          # Section 4's settings, as the JSON records them


def spread(values) -> dict:
    """Mean over seeds with min, max and the 95% t-interval half-width of the mean (None with < 2
    seeds).  The spread is taken on values scaled by their largest magnitude, so that the huge but
    finite terms of a run on its way to diverging give a finite interval; a statistic beyond the
    float range is None (not measured), never inf."""
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


def _checkpoints(by: dict, settings: AblationSettings, m: str, src) -> list:
    """One checkpoint per seed of a factor's (arm, task set, step), None where the run diverged before."""
    arm, tasks, t = src
    return [by[s, m, arm, tasks]["checkpoints"].get(str(t)) for s in range(settings.seeds)]


def _tables(settings: AblationSettings, by: dict, groups: tuple) -> tuple:
    """{prompt set: {test: {model: {depth: {factor: {group: spread}}}}}} and the paired change of each
    factor against the baseline of the same depth, same nesting."""
    cells = list(enumerate(groups)) + [(None, "all")]           # each task group, then all prompts
    table, change = {}, {}
    for m in MODELS:
        for L in (1, 3):
            base = _checkpoints(by, settings, m, source("baseline", L, settings))
            for f in FACTORS:
                src = source(f, L, settings)
                if src is None:
                    continue
                at = _checkpoints(by, settings, m, src)
                for which in PROMPT_SETS:
                    for test in TESTS:
                        key = f"{test}/{which}"
                        for g, name in cells:
                            acc = [None if c is None else _accuracy(c[key], g) for c in at]
                            ref = [None if c is None else _accuracy(c[key], g) for c in base]
                            if all(a is None for a in ref):
                                continue
                            nest = lambda d: d.setdefault(which, {}).setdefault(test, {}).setdefault(m, {}).setdefault(str(L), {}).setdefault(f, {})  # noqa: E731
                            nest(table)[name] = {**spread(acc), "per_seed": acc}
                            if f != "baseline":
                                nest(change)[name] = spread([None if a is None or b is None else a - b
                                                             for a, b in zip(acc, ref)])
    return table, change


def _mechanism(settings: AblationSettings, by: dict) -> dict:
    """{model: {depth: {factor: {"terms": [per layer: {term: [spread per step class]}], "scores": [per
    layer: [spread per step class]]}}}} at each factor's checkpoint."""
    out, n_classes = {}, len(step_classes(SECTION4.M1))
    for m in MODELS:
        for L in (1, 3):
            for f in FACTORS:
                src = source(f, L, settings)
                if src is None:
                    continue
                at = [c for c in _checkpoints(by, settings, m, src)]
                layers = range(len(next(c for c in at if c is not None)["terms"])) if any(at) else []
                out.setdefault(m, {}).setdefault(str(L), {})[f] = {
                    "terms": [{term: [spread([None if c is None else c["terms"][k][term][j] for c in at])
                                      for j in range(n_classes)] for term in TERMS} for k in layers],
                    "scores": [[spread([None if c is None else c["scores"][k][j] for c in at]) for j in range(n_classes)]
                               for k in layers]}
    return out


def _curves(settings: AblationSettings, by: dict, groups: tuple) -> dict:
    """Accuracy at every checkpoint of the long runs (cycle and all pairs), per test and task group."""
    cells = list(enumerate(groups)) + [(None, "all")]
    ts = list(range(0, settings.T_long + 1, settings.checkpoint_every))
    out = {}
    for m in MODELS:
        for L, arm in ((1, "one_layer"), (3, "three_layer")):
            for tasks in ("cycle", "all"):
                runs = [by[s, m, arm, tasks] for s in range(settings.seeds)]
                out.setdefault(m, {}).setdefault(str(L), {})[tasks] = {
                    "step": ts, **{f"{test}_{name}": [spread([None if str(t) not in r["checkpoints"] else
                                                              _accuracy(r["checkpoints"][str(t)][f"{test}/all"], g)
                                                              for r in runs]) for t in ts]
                                   for test in TESTS for g, name in cells}}
    return out


def assemble(settings: AblationSettings, steps: dict, runs: list) -> dict:
    """Accuracy by (prompt set, test, model, depth, factor, task group), paired change against the
    baseline, accuracy along the long runs, and every layer's mechanism at every factor's checkpoint."""
    groups = task_group_names(SECTION4.M1)
    by = {(r["seed"], r["model"], r["arm"], r["tasks"]): r for r in runs}
    table, change = _tables(settings, by, groups)
    diverged = [{k: r[k] for k in ("seed", "model", "arm", "tasks", "delta", "eta", "diverged_at")}
                for r in runs if r["diverged_at"] is not None]
    return {"experiment": "ablation", "settings": settings.to_dict(), "paper": PAPER, "smoke": SMOKE if settings.quick else None,
            "step": steps, "task_groups": list(groups), "task_sets": list(TASK_SETS), "held_out": [list(t) for t in HELD_OUT],
            "tests": {k: {**v, "kappa_a_prime": settings.kappa_a_prime, "K_prime": settings.K_prime, "label_rule": "target",
                          "target": settings.target} for k, v in TESTS.items()},
            "step_classes": step_classes(SECTION4.M1), "terms": list(TERMS), "factors": list(FACTORS),
            "table": table, "change_vs_baseline": change, "mechanism": _mechanism(settings, by),
            "accuracy_along_long_run": _curves(settings, by, groups), "diverged": diverged, "runs": runs}

"""The "ablation" JSON assembled from every run: accuracy by (test, model, depth, factor, task
group) with its spread over seeds, the paired change against the baseline, accuracy along the long
runs, and layer 1's mechanism terms at the end of every factor's run.
"""
from __future__ import annotations

from dataclasses import asdict

import numpy as np
from scipy.stats import t as t_dist

from ..data import SECTION4
from ..measure.tasks import task_group_names
from ..model import PAPER_MODELS as MODELS
from ..runs.output import SMOKE
from .settings import FACTORS, TERMS, TESTS, AblationSettings, source
from .terms import step_classes

PAPER = asdict(SECTION4)          # Section 4's settings, as the JSON records them


def spread(values) -> dict:
    """Mean over seeds with min, max and the 95% t-interval half-width of the mean (None with < 2 seeds)."""
    v = np.asarray([x for x in values if x is not None], dtype=float)
    if v.size == 0:
        return {"mean": None, "min": None, "max": None, "t95": None, "n_seeds": 0}
    half = float(t_dist.ppf(0.975, v.size - 1) * v.std(ddof=1) / np.sqrt(v.size)) if v.size > 1 else None
    return {"mean": float(v.mean()), "min": float(v.min()), "max": float(v.max()), "t95": half, "n_seeds": int(v.size)}


def _accuracy(counts: dict, g):
    """1 - error (eq (5)) of task group g (None: all prompts); None for a group without prompts."""
    wrong, n = np.asarray(counts["wrong"]), np.asarray(counts["n"])
    wrong, n = (wrong.sum(), n.sum()) if g is None else (wrong[g], n[g])
    return float(1 - wrong / n) if n > 0 else None


def assemble(settings: AblationSettings, steps: dict, runs: list) -> dict:
    """Accuracy by (test, model, depth, factor, task group), paired change against the baseline,
    accuracy along the long runs, and the mechanism terms at the end of every factor's run."""
    groups = task_group_names(SECTION4.M1)
    by = {(r["seed"], r["model"], r["arm"], r["tasks"]): r for r in runs}
    cells = list(enumerate(groups)) + [(None, "all")]           # each task group, then all prompts
    table, change, mechanism, curve = {}, {}, {}, {}
    for m in MODELS:
        for L in (1, 3):
            for f in FACTORS:
                src = source(f, L, settings)
                if src is None:
                    continue
                arm, tasks, t = src
                at = [by[s, m, arm, tasks]["checkpoints"].get(str(t)) for s in range(settings.seeds)]
                base = [by[s, m, *source("baseline", L, settings)[:2]]["checkpoints"].get(str(settings.T_short))
                        for s in range(settings.seeds)]
                for test in TESTS:
                    for g, name in cells:
                        acc = [None if c is None else _accuracy(c[test], g) for c in at]
                        ref = [None if c is None else _accuracy(c[test], g) for c in base]
                        table.setdefault(test, {}).setdefault(m, {}).setdefault(str(L), {}).setdefault(f, {})[name] = \
                            {**spread(acc), "per_seed": acc}
                        if f != "baseline":
                            diff = [None if a is None or b is None else a - b for a, b in zip(acc, ref)]
                            change.setdefault(test, {}).setdefault(m, {}).setdefault(str(L), {}).setdefault(f, {})[name] = spread(diff)
                mechanism.setdefault(m, {}).setdefault(str(L), {})[f] = {
                    term: [spread([None if c is None else c["terms"][term][k] for c in at])
                           for k in range(len(step_classes(SECTION4.M1)))] for term in TERMS}
            arm = "one_layer" if L == 1 else "three_layer"
            long_runs = [by[s, m, arm, "cycle"] for s in range(settings.seeds)]
            ts = list(range(0, settings.T_long + 1, settings.checkpoint_every))
            curve.setdefault(m, {})[str(L)] = {
                "step": ts, **{f"{test}_{name}": [spread([None if str(t) not in r["checkpoints"] else
                                                          _accuracy(r["checkpoints"][str(t)][test], g) for r in long_runs])
                                                  for t in ts] for test in TESTS for g, name in cells}}
    diverged = [{k: r[k] for k in ("seed", "model", "arm", "tasks", "delta", "eta", "diverged_at")}
                for r in runs if r["diverged_at"] is not None]
    return {"experiment": "ablation", "settings": settings.to_dict(), "paper": PAPER, "smoke": SMOKE if settings.quick else None,
            "step": steps, "task_groups": list(groups), "tests": {k: {**v, "kappa_a_prime": settings.kappa_a_prime,
                                                                      "K_prime": settings.K_prime, "label_rule": "target",
                                                                      "target": settings.target} for k, v in TESTS.items()},
            "step_classes": step_classes(SECTION4.M1), "terms": list(TERMS), "factors": list(FACTORS),
            "table": table, "change_vs_baseline": change, "mechanism": mechanism, "accuracy_along_long_run": curve,
            "diverged": diverged, "runs": runs}

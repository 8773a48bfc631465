"""Figure 2 of the paper: ICL classification error (eq (5)) of Mamba and the linear Transformer
against the test outlier fraction alpha, for outlier labels (A) flipped, (B) targeted to +1,
(C) random (Section 4.1, p_a = 0.6), over a grid of kappa_a' and K' (Definition 2); its claims
(Figure 2, Theorems 1-2, Remark 5), each judged in every setting of that grid.

Both models of one seed are trained on the same world and tested on the same prompts, so
their errors are a paired comparison.
"""
from __future__ import annotations

import numpy as np

from ..data import LABEL_RULES, testing_batch
from ..fused import network
from ..measure.rates import group_wrong_counts
from ..measure.rules import (FIG2_EPS, RISE_MARGIN, RISE_WINDOW, below_at_every_alpha, bound_case, case, case_name,
                             judge_cases, rise_after_half, theorem2_case, theorem2_covers)
from ..measure.tasks import task_groups
from ..runs.claims import claim_row
from ..runs.report import Template
from ..runs.runner import Unit
from ..runs.worlds import world_for
from .common import (FULL, GROUPS, MODELS, PAPER, QUICK, SHORT, SUBSETS, Settings, chosen_records, eta_selection,
                     md_table, point, rate_cell, summarise, train_logged, untrained_view)

NAME, FILES = "fig2", ("fig2",)
OUTPUTS = "Figure 2 (A, B, C)  test error against the outlier fraction alpha     -> fig2*.png, fig2.json"
RULES = ("vocabulary", "seed-interval", "fig2-small", "thm2", "rise", "below", "unseen")
RUNS = ("Fig 2", "Figure 2")        # its training runs in the section's training and step-size tables
TEXT = Template(__package__, "fig2.md")
PANEL = {"flip": "A", "target": "B", "random": "C"}
SEE = [("fig2.png", "fig2.png"), ("all settings", "fig2_sensitivity.png"), ("numbers", "#figure-2-in-numbers")]


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
    """One unit: both models trained on seed ``seed``'s world at p_a = 0.6 with step sizes ``eta``
    ({model: eta}), then the whole test grid, trained and (at the main K') at initialisation.
    Returns {"training": {model: summary}, "wrong": {model: counts}, "n": counts, "untrained": {"wrong", "n"}}."""
    world = world_for(seed)
    params_by_model, training, untrained = {}, {}, {}
    for model in MODELS:
        params, history, summary = train_logged(world, settings, settings.train_config(settings.p_a_fig2, eta[model]),
                                                model, seed, 1)
        untrained[model] = summary.pop("initial_params")
        training[model] = {**summary, "loss_curve": history["loss"], "steps": history["step"]}
        params_by_model[model] = params
    wrong, n, wrong0, n0 = evaluate_grid(world, params_by_model, settings, seed, untrained)
    return {"training": training, "wrong": wrong, "n": n, "untrained": {"wrong": wrong0, "n": n0}}


def selection(settings: Settings, chosen: dict) -> dict:
    """The step-size rule at Figure 2's training outlier fraction p_a = 0.6 (``common.eta_selection``)."""
    return eta_selection(settings, settings.p_a_fig2, "fig2")


def units(settings: Settings, chosen: dict) -> list:
    """One unit per training seed, at the step sizes the rule chose."""
    eta = {m: r["chosen"]["eta"] for m, r in chosen_records(chosen, settings, settings.p_a_fig2).items()}
    return [Unit(seed, f"fig2 seed {seed + 1}/{settings.seeds}", seed_unit, (settings, seed, eta))
            for seed in range(settings.seeds)]


def assemble(settings: Settings, chosen: dict, found: dict, run) -> dict:
    """fig2.json: settings, the step-size records, per-seed wrong and prompt counts (seed, labelling,
    kappa_a', K', alpha, task group), training summaries, pooled rates per subset, the untrained models."""
    selection = chosen_records(chosen, settings, settings.p_a_fig2)
    runs = [found[seed] for seed in range(settings.seeds)]
    n = np.stack([r["n"] for r in runs])                               # (S, 3, k, c, a, G)
    result = {"experiment": "fig2", "settings": settings.to_dict(), "paper": PAPER, "p_a": settings.p_a_fig2,
              "eta": {m: selection[m]["chosen"]["eta"] for m in MODELS}, "step_size": selection,
              "label_rules": list(LABEL_RULES), "subsets": list(SUBSETS), "task_groups": list(GROUPS),
              "axes": f"seed, label_rule, kappa_a_prime, K_prime, alpha, task group ({', '.join(GROUPS)})",
              "n_prompts": n, "training": {m: [r["training"][m] for r in runs] for m in MODELS}, "wrong": {}, "error": {}}
    for model in MODELS:
        result["wrong"][model] = np.stack([r["wrong"][model] for r in runs])     # (S, 3, k, c, a, G)
        result["error"][model] = summarise(result["wrong"][model], n)
    n0 = np.stack([r["untrained"]["n"] for r in runs])                  # (S, 3, k, 1, a, G)
    u = result["untrained"] = {"K_prime": settings.main_K_prime, "n_prompts": n0, "axes": result["axes"] + " (K' main only)",
                               "wrong": {m: np.stack([r["untrained"]["wrong"][m] for r in runs]) for m in MODELS}}
    u["error"] = {m: summarise(w, n0) for m, w in u["wrong"].items()}
    return {"fig2": {**result, "seconds": run.seconds[NAME]}}


def figure(results: dict, out) -> list:
    """fig2.png (main kappa_a'), fig2_kappa<largest>.png, fig2_sensitivity.png, fig2_training.png."""
    from . import plots                                     # matplotlib only when drawing
    result = results["fig2"]
    high = max(result["settings"]["kappa_a_primes"])
    return [plots.fig2(result, out / "fig2.png"), plots.fig2(result, out / f"fig2_kappa{high:g}.png", kappa_a_prime=high),
            plots.fig2_sensitivity(result, out / "fig2_sensitivity.png"),
            plots.fig2_training(result, out / "fig2_training.png")]


# ---------------------------------------------------------------- the claims
def _r(e) -> float:
    return float("nan") if e["rate"] is None else e["rate"]


def grid(res: dict) -> list:
    """Every setting of Figure 2's grid: [(labelling, kappa_a', K', case name)]."""
    s = res["settings"]
    return [(r, k, c, case(("", r), ("kappa_a'", k), ("K'", c))) for r in LABEL_RULES for k in s["kappa_a_primes"]
            for c in s["K_primes"]]


def counts(res: dict, model: str, rule: str, kappa_a_prime: float, K_prime: float, groups=None):
    """(wrong, n) of one labelling and (kappa_a', K'), (seeds, n_alpha), summed over task groups
    (all of them, or the indices in ``groups``)."""
    s = res["settings"]
    r, k, c = LABEL_RULES.index(rule), s["kappa_a_primes"].index(kappa_a_prime), s["K_primes"].index(K_prime)
    w, n = np.asarray(res["wrong"][model])[:, r, k, c], np.asarray(res["n_prompts"])[:, r, k, c]
    sel = slice(None) if groups is None else list(groups)
    return w[..., sel].sum(-1), n[..., sel].sum(-1)


def claims(results: dict) -> list:
    """The rows of Figure 2, Theorem 2 (c), the linear Transformer's rise, Remark 5 and unseen tasks."""
    if "fig2" not in results:
        return []
    res = results["fig2"]
    return [bound_row(res, 0.8, "fig2_small", "fig2-small"), theorem2_row(res),
            lt_rise_row(res), remark5_row(res), unseen_row(res)]


def bound_row(res: dict, alpha, key: str, rule: str) -> dict:
    """Mamba's error <= 0.01 at alpha = 0.8 (Figure 2)."""
    s = res["settings"]
    cases, borderline, values = {}, [], {}
    for r, k, c, name in grid(res):
        values[name] = point(res, "mamba", r, "all", alpha, k, c)
        cases[name], near = bound_case(_r(values[name]), FIG2_EPS)
        if near:
            borderline.append(name)
    kap, Kp = s["main_kappa_a_prime"], s["main_K_prime"]
    main = {r: point(res, "mamba", r, "all", alpha, kap, Kp) for r in LABEL_RULES}
    ours = f"alpha = {alpha:g}: " + "; ".join(f"{PANEL[r]} {rate_cell(main[r])}" for r in LABEL_RULES)
    at = lambda result, r, subset: f"{_r(point(result, 'mamba', r, subset, alpha, kap, Kp)):.3f}"  # noqa: E731
    detail = (f"Mamba's error on all tasks at alpha = {alpha:g}, every setting: "
              + "; ".join(f"{case_name(name)}: {_r(v):.3f}" for name, v in values.items())
              + ". Main setting, by tasks seen / never seen in training: "
              + "; ".join(f"{PANEL[r]} {at(res, r, 'seen')} / {at(res, r, 'unseen')}" for r in LABEL_RULES)
              + ". The same Mamba untrained (its initialisation), all tasks: "
              + ", ".join(f"{PANEL[r]} {at(untrained_view(res), r, 'all')}" for r in LABEL_RULES) + ".")
    return claim_row(key, "Fig 2: Mamba's error < 0.01 with alpha close to 0.8 (A flip, B target, C random)",
                     "< 0.01 at alpha ~ 0.8 in A, B, C", ours, judge_cases(cases, borderline), rule,
                     SEE + [("kappa_a' = 8", "fig2_kappa8.png"), ("training", "fig2_training.png")], detail,
                     ("Fig 2: Mamba's error at alpha = 0.8 (A, B, C; fig2.json)", "< 0.01",
                      ", ".join(f"{_r(main[r]):.3f}" for r in LABEL_RULES)))


def theorem2_row(res: dict) -> dict:
    """Theorem 2 (c) on Figure 2's grid (rule thm2, the theory grid's too): per setting, Mamba's largest
    error on all tasks over the alphas the theorem covers (alpha < p_a l_tr / l_ts = 0.6)."""
    s, paper = res["settings"], res["paper"]
    alphas = s["alphas"]
    bound = min(1.0, s["p_a_fig2"] * paper["l_tr"] / paper["l_ts"])
    cases, borderline, worst = {}, [], {}
    for r, k, c, name in grid(res):
        errors = [_r(point(res, "mamba", r, "all", a, k, c)) for a in alphas]
        cases[name], thin, i = theorem2_case(errors, alphas, bound, paper["l_ts"], paper["M1"])
        borderline += [name] * thin
        worst[name] = (alphas[i], errors[i])
    covered = [alphas[i] for i in theorem2_covers(alphas, bound, paper["l_ts"], paper["M1"])]
    kap, Kp = s["main_kappa_a_prime"], s["main_K_prime"]
    main = {r: worst[case(("", r), ("kappa_a'", kap), ("K'", Kp))] for r in LABEL_RULES}
    ours = f"largest at alpha <= {covered[-1]:g}: " + "; ".join(
        f"{PANEL[r]} {rate_cell(point(res, 'mamba', r, 'all', main[r][0]))} (alpha = {main[r][0]:g})" for r in LABEL_RULES)
    detail = (f"Mamba's largest error on all tasks over alpha = {', '.join(f'{a:g}' for a in covered)} (the alphas Theorem "
              "2 (c)-(d) covers), every setting: " + "; ".join(f"{case_name(n)}: {e:.3f} at alpha = {a:g}"
                                                                 for n, (a, e) in worst.items()) + ".")
    return claim_row("thm2_inside", f"Thm 2 (c): Mamba's error <= eps for alpha < min(1, p_a l_tr / l_ts) = {bound:g}",
                     f"a guarantee up to alpha < {bound:g}", ours, judge_cases(cases, borderline), "thm2", SEE, detail)


def lt_rise_row(res: dict) -> dict:
    """Section 4.1: the linear Transformer's error rises once alpha passes 1/2 (rule rise), per setting."""
    alphas = np.asarray(res["settings"]["alphas"])
    cases, borderline, found = {}, [], {}
    for r, k, c, name in grid(res):
        x = rise_after_half(*counts(res, "linear_transformer", r, k, c), alphas, RISE_WINDOW, RISE_MARGIN)
        if x["level"] is None:
            return claim_row("lt_rise", "Fig 2: the linear Transformer's error is large once alpha > 1/2",
                             "large for alpha > 1/2", "the alpha grid has no point on one side of 1/2",
                             {"level": "not run"}, "rise", SEE)
        found[name], cases[name] = x, x["level"]
        if x["borderline"]:
            borderline.append(name)
    main = {r: found[case(("", r), ("kappa_a'", res["settings"]["main_kappa_a_prime"]),
                          ("K'", res["settings"]["main_K_prime"]))] for r in LABEL_RULES}
    fmt = lambda x: (f"{x['below'][0]:.3f} [{x['below'][1]:.3f}, {x['below'][2]:.3f}] -> {x['above'][0]:.3f} "  # noqa: E731
                     f"[{x['above'][1]:.3f}, {x['above'][2]:.3f}], rise {x['rise']:+.4f}")
    detail = (f"The linear Transformer's error pooled over alpha in ({0.5 - RISE_WINDOW:g}, 0.5] -> (0.5, "
              f"{0.5 + RISE_WINDOW:g}] [95% interval over seeds], every setting: "
              + "; ".join(f"{case_name(n)}: {fmt(x)}" for n, x in found.items()) + ". At alpha = 0 (main setting) its "
              "error is " + ", ".join(f"{_r(point(res, 'linear_transformer', r, 'all', 0.0)):.3f}" for r in LABEL_RULES)
              + " (A, B, C).")
    return claim_row("lt_rise", "Fig 2: the linear Transformer's error is large once alpha > 1/2 (Section 4.1)",
                     "large for alpha > 1/2 (A, B, C)",
                     "rise across 1/2: " + "; ".join(f"{PANEL[r]} {main[r]['rise']:+.3f}" for r in LABEL_RULES),
                     judge_cases(cases, borderline), "rise", SEE, detail,
                     ("Fig 2: LT's error rise across alpha = 1/2 (A, B, C)", ">= 0.1 (\"large\")",
                      ", ".join(f"{main[r]['rise']:+.3f}" for r in LABEL_RULES)))


def remark5_row(res: dict) -> dict:
    """Remark 5: Mamba's error below the linear Transformer's at every alpha > 1/2 (rule below), per setting."""
    alphas = np.asarray(res["settings"]["alphas"])
    cases, borderline, fails = {}, [], {}
    for r, k, c, name in grid(res):
        b = below_at_every_alpha(counts(res, "mamba", r, k, c), counts(res, "linear_transformer", r, k, c), alphas)
        cases[name] = b["level"]
        if b["borderline"]:
            borderline.append(name)
        if b["failing_alphas"]:
            a = b["failing_alphas"]
            fails[name] = ("alpha = " + ", ".join(f"{x:g}" for x in a) + " (Mamba " + ", ".join(
                f"{_r(point(res, 'mamba', r, 'all', x, k, c)):.3f}" for x in a) + " vs LT " + ", ".join(
                f"{_r(point(res, 'linear_transformer', r, 'all', x, k, c)):.3f}" for x in a) + ")")
    at = lambda m, r: _r(point(res, m, r, "all", 0.8))  # noqa: E731
    ours = "alpha = 0.8, Mamba vs LT: " + "; ".join(f"{PANEL[r]} {at('mamba', r):.3f} vs "
                                                     f"{at('linear_transformer', r):.3f}" for r in LABEL_RULES)
    detail = ("Settings where Mamba's interval is not below the linear Transformer's at some alpha > 1/2: "
              + ("; ".join(f"{case_name(n)}: {v}" for n, v in fails.items()) or "none") + ".")
    return claim_row("remark5", "Remark 5 / Fig 2: Mamba tolerates more outliers than the linear Transformer",
                     "Mamba's error below LT's for alpha > 1/2", ours, judge_cases(cases, borderline), "below",
                     SEE, detail)


def unseen_row(res: dict) -> dict:
    """Theorems 1-2 on tasks never seen in training, at alpha = 0 (every labelling and kappa_a' pooled)."""
    s, groups = res["settings"], res["task_groups"]
    untrained = untrained_view(res)

    def error(result, model, g, K_prime):
        w, n = zip(*(counts(result, model, r, k, K_prime, [groups.index(g)]) for r in LABEL_RULES
                     for k in s["kappa_a_primes"]))
        w, n = np.sum(w, axis=0)[:, 0], np.sum(n, axis=0)[:, 0]             # (S,) at alpha = 0
        return w.sum() / n.sum()

    cases, borderline = {}, []
    for g in groups[1:]:
        for c in s["K_primes"]:
            name = case(("", g.replace("_", " ")), ("K'", c))
            cases[name], near = bound_case(error(res, "mamba", g, c), FIG2_EPS)
            if near:
                borderline.append(name)
    Kp = s["main_K_prime"]
    fmt = lambda result, m, gs=groups: ", ".join(f"{g.replace('_', ' ')} {error(result, m, g, Kp):.3f}"  # noqa: E731
                                                 for g in gs)
    detail = (f"Error at alpha = 0, K' = {Kp:g}, by task group: Mamba {fmt(res, 'mamba')}; LT "
              f"{fmt(res, 'linear_transformer')}. The same models untrained (initialisation): Mamba "
              f"{fmt(untrained, 'mamba')}; LT {fmt(untrained, 'linear_transformer')}. At K' = 3: Mamba "
              + ", ".join(f"{g.replace('_', ' ')} {error(res, 'mamba', g, c):.3f}" for g in groups
                          for c in s["K_primes"] if c != Kp) + ".")
    return claim_row("unseen", "Thms 1-2: small error on tasks never seen in training (reversed pairs, pairs 2 or 3 "
                     "steps apart on the task cycle)", "error <= eps on every task of T",
                     "Mamba at alpha = 0: " + fmt(res, "mamba", groups[1:]), judge_cases(cases, borderline), "unseen",
                     [("groups", "#errors-by-task-group")], detail,
                     ("Thms 1-2: Mamba's error on distance-2 tasks, alpha = 0", "<= eps",
                      f"{error(res, 'mamba', 'distance_2', Kp):.3f}"))


# ---------------------------------------------------------------- its part of the report
def _shown(s: dict, wanted) -> list:
    return [a for a in wanted if np.min(np.abs(np.asarray(s["alphas"]) - a)) < 1e-9]


def report(results: dict, run) -> str:
    """Figure 2 in numbers, errors by task group and the learned pattern scores."""
    res = results["fig2"]
    s, untrained = res["settings"], untrained_view(res)
    main = dict(kappa=s["main_kappa_a_prime"], K=s["main_K_prime"])
    lines = [TEXT("numbers", **main, high=max(s["kappa_a_primes"])), ""]
    for rule in res["label_rules"]:
        lines += [TEXT("labelling", rule=rule), "", TEXT("numbers-header")]
        lines += [f"| {a:g} | " + " | ".join([rate_cell(point(res, m, rule, sub, a)) for m in MODELS
                                             for sub in ("all", "seen", "unseen")]
                                            + [rate_cell(point(untrained, m, rule, "all", a)) for m in MODELS]) + " |"
                  for a in _shown(s, (0.0, 0.3, 0.5, 0.6, 0.7, 0.8, 0.9))] + [""]
    lines += [TEXT("sensitivity"), "", TEXT("sensitivity-header")]
    lines += [f"| {kap:g} | {Kp:g} | " + " | ".join(
        f"{point(res, m, r, 'all', 0.5, kap, Kp)['rate']:.3f} / {point(res, m, r, 'all', 0.8, kap, Kp)['rate']:.3f}"
        for m in MODELS for r in res["label_rules"]) + " |" for kap in s["kappa_a_primes"] for Kp in s["K_primes"]]
    lines += ["", TEXT("groups", **main), "", TEXT("groups-header")]
    subset = {g: ("seen" if g == "training" else g) for g in res["task_groups"]}
    lines += [f"| {rule} | {a:g} | {SHORT[m]}{label} | " + " | ".join(rate_cell(point(result, m, rule, subset[g], a))
                                                                     for g in res["task_groups"]) + " |"
              for rule in res["label_rules"] for a in _shown(s, (0.0, 0.5, 0.8)) for m in MODELS
              for result, label in ((res, ""), (untrained, " untrained"))]
    if "pattern_scores" in res["training"]["mamba"][0]:
        lines += ["", *pattern_scores(res)]
    return "\n".join(lines)


def pattern_scores(res: dict) -> list:
    """Mean learned score (mu_{a+k}, 0)^T W_B^T W_C (mu_a, 0) by cyclic offset k (Fig 2 runs)."""
    M1, offsets = res["paper"]["M1"], {}
    for model in MODELS:
        S = np.array([r["pattern_scores"] for r in res["training"][model]])    # (seeds, M1, M1)
        a = np.arange(M1)
        offsets[model] = np.array([S[:, (a + k) % M1, a].mean() for k in range(M1)])
    lines = [TEXT("patterns"), ""] + md_table(["model"] + [f"k = {k}" for k in range(M1)],
                                              [[SHORT[m]] + [f"{x / offsets[m][0]:+.2f}" for x in offsets[m]]
                                               for m in MODELS])
    m = offsets["mamba"]
    return lines + (["", TEXT("patterns-why")] if m[1] < 0 and m[-1] < 0 and m[2] > 0 and m[-2] > 0 else [])

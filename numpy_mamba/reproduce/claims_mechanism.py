"""Verdicts for Figures 3-4 and Table 1 (one-layer analogues and three-layer runs) and Figures 5-6
(layers 2 and 3), each judged in every test setting (labelling x kappa_a') and, at three layers, in
every layer, and returned as rows of REPORT.md's results table (``measure.rules.claim_row``).

The paper's Figures 3-4 and Table 1 use three-layer models and Figures 5-6 show their layers 2
and 3.  Our one-layer runs test Corollaries 1-2 (which are one-layer results) and give one-layer
analogues of the figures; the three-layer runs (depth3.json) get the same rules, layer by layer.
"""
from __future__ import annotations

import numpy as np

from .common import main_table1
from .figures import clean_rank_curve
from .figures_table1 import PAPER_TABLE1
from .results import view
from ..measure.rules import (PLACES, TABLE1_NUMBERS_RULE, TABLE1_PATTERN_RULE, table1_numbers,
                                      table1_pattern)
from ..measure.rules import (COROLLARY1_RULE, DECAY_RULE, GATE_RATIO_RULE, GROWTH_RULE, clean_gate_decay,
                                          corollary1, gate_ratio, grows_in_training)
from ..measure.rules import case, case_name, combine, judge_cases
from ..runs.claims import claim_row

MECHANISM_RULES = {"cor1": COROLLARY1_RULE.format(r=0.1), "growth": GROWTH_RULE.format(tail=0.1, margin=0.25, early=0.1),
                   "gate-ratio": GATE_RATIO_RULE, "decay": DECAY_RULE,
                   "table1-numbers": TABLE1_NUMBERS_RULE.format(close=2, loose=5), "table1-pattern": TABLE1_PATTERN_RULE}


def _setting(key: str) -> tuple:
    rule, kappa = key.split("/")
    return ("", rule), ("kappa_a'", kappa)


def corollary1_at(res: dict, key: str) -> dict:
    """The shared Corollary 1 rule on Mamba's final per-prompt sums in setting ``key``, pooled over seeds."""
    runs = [r["final"][key] for r in res["per_seed"]["mamba"]]
    cat = lambda k: np.concatenate([np.asarray(r[k], dtype=float) for r in runs])  # noqa: E731
    return corollary1(cat("same"), cat("different"), cat("group").astype(int), res["task_groups"])


def gap_growth(runs: list) -> dict:
    """The shared growth rule (``grows_in_training``) on the gap between the same- and different-
    pattern sums, per seed; a "none" verdict naming the reason if there are too few records."""
    gap = np.array([np.subtract(r["score_same"], r["score_diff"]) for r in runs], dtype=float)   # (S, records)
    try:
        return grows_in_training(gap, np.asarray(runs[0]["step"], dtype=float))
    except ValueError as e:
        return {**judge_cases({"too few records": "none"}), "error": str(e), "per_seed": []}


def cor1_row(layers: list, key: str, title: str, see: list) -> dict:
    """Corollary 1 over [(layer label, result)]: cases (layer, setting, task group)."""
    cases, borderline, parts = {}, [], []
    for layer, res in layers:
        for key_s in res["setting_keys"]:
            c = corollary1_at(res, key_s)
            for group, level in c["cases"].items():
                name = case(*((("layer", layer),) if layer else ()), *_setting(key_s), ("", group))
                cases[name] = level
                if group in c["borderline"]:
                    borderline.append(name)
            if key_s == res["main_setting"]:
                main = c
                parts.append(f"{'layer ' + str(layer) + ', ' if layer else ''}main setting: median same "
                             f"{c['median_same']:.1f}, different by group " + ", ".join(
                                 f"{g.replace('_', ' ')} {v['median_different']:+.1f} ({v['share_below']:.0%} of "
                                 f"{v['n']} below {c['threshold']:.1f})" for g, v in c["by_group"].items()))
            else:
                parts.append(f"{'layer ' + str(layer) + ', ' if layer else ''}{key_s}: same {c['median_same']:.1f}, "
                             + ", ".join(f"{g.replace('_', ' ')} {v['median_different']:+.1f}"
                                         for g, v in c["by_group"].items()))
    first = layers[0][1]
    c = corollary1_at(first, first["main_setting"])
    ours = (f"median same-pattern sum {c['median_same']:.1f}; other-pattern: " + ", ".join(
        f"{g.replace('_', ' ')} {v['median_different']:+.1f}" for g, v in c["by_group"].items()))
    n = len(first["per_seed"]["mamba"])
    detail = (f"Mamba after training, {n} seeds x {len(first['per_seed']['mamba'][0]['final'][first['main_setting']]['same'])} "
              f"probe prompts per setting (alpha = {first['alpha']}), medians pooled over seeds. " + "; ".join(parts) + ".")
    return claim_row(key, title, "sum over N_1 >= Theta(1); over the rest <= Theta((1-p_a)^-1 eps)",
                     ("layer 1: " if layers[0][0] else "") + ours, judge_cases(cases, borderline), "cor1", see, detail)


def growth_row(layers: list, key: str, title: str, see: list) -> dict:
    """The gap between the two sums grows during training, per layer (cases: layers, each over seeds)."""
    results, parts = {}, []
    for layer, res in layers:
        runs = res["per_seed"]["mamba"]
        g = gap_growth(runs)
        results[case(("layer", layer)) if layer else "one layer"] = g
        same, diff = np.array([r["score_same"] for r in runs]), np.array([r["score_diff"] for r in runs])
        lt = res["per_seed"]["linear_transformer"]
        growth = ("not judged: " + g["error"]) if "error" in g else (
            f"gap at step 0 -> at the end (share of that growth reached by {g['early']:.0%} of the steps), per seed: "
            + ", ".join(f"{x['start']:.1f} -> {x['late']:.1f} ("
                        + ("n/a" if x["early_share"] is None else f"{x['early_share']:.0%}") + f", {x['level']})"
                        for x in g["per_seed"]))
        parts.append(f"{'layer ' + str(layer) + ': ' if layer else ''}step 0 -> {runs[0]['step'][-1]}: same "
                     f"{same[:, 0].mean():.2f} -> {same[:, -1].mean():.2f}, different {diff[:, 0].mean():.2f} -> "
                     f"{diff[:, -1].mean():.2f}; {growth}; LT at the end: same "
                     f"{np.mean([r['score_same'][-1] for r in lt]):.2f}, different "
                     f"{np.mean([r['score_diff'][-1] for r in lt]):.2f}")
    verdict = combine(results) if len(results) > 1 else next(iter(results.values()))
    first = next(iter(results.values()))
    ours = (f"growing in {sum(x['level'] == 'full' for x in first['per_seed'])} of {len(first['per_seed'])} seeds, "
            f"in trend in {sum(x['level'] == 'trend' for x in first['per_seed'])}") + (" (layer 1)" if layers[0][0] else "")
    return claim_row(key, title, "\"this gap increases during training\" (Section 4.2)", ours, verdict, "growth", see,
                     "Mamba, mean over probe prompts and seeds, main setting. " + "; ".join(parts) + ".")


def gate_ratio_row(layers: list, key: str, title: str, see: list, M1: int) -> dict:
    """Corollary 2 (i): cases (layer, setting), each judged over its positions."""
    results, parts, main_ratio = {}, [], None
    for layer, res in layers:
        for key_s in res["setting_keys"]:
            runs = [r[key_s] for r in res["per_seed"]]
            g = gate_ratio([r["outlier_mean"] for r in runs], [r["clean_mean"] for r in runs], M1)
            results[case(*((("layer", layer),) if layer else ()), *_setting(key_s))] = g
            ratio = [x for x in g["ratio"] if x is not None]
            upper = [x for x in g["upper"] if x is not None]
            where = f"{'layer ' + str(layer) + ', ' if layer else ''}{key_s}"
            parts.append(f"{where}: ratio {min(ratio):.3f}-{max(ratio):.3f}, upper end up to {max(upper):.2f}, "
                         f"{len(g['holds_in'])}/{len(g['cases'])} positions hold, {len(g['trend_in'])} in trend; mean "
                         f"outlier gate {np.mean([r['outlier_gate_mean'] for r in runs]):.1e} (max "
                         f"{np.max([r['outlier_gate_max'] for r in runs]):.2f}), clean "
                         f"{np.mean([r['clean_gate_mean'] for r in runs]):.1e}" if ratio else f"{where}: nothing compared")
            if main_ratio is None and key_s == res["main_setting"] and ratio:
                main_ratio = (min(ratio), max(ratio), max(upper))
    ours = (f"outlier / clean gate {main_ratio[0]:.2f}-{main_ratio[1]:.2f} over positions (upper end up to "
            f"{main_ratio[2]:.2f}; threshold 1/M1 = {1 / M1:.3f})" + (" (layer 1)" if layers[0][0] else "")
            if main_ratio else "no position compared")
    return claim_row(key, title, "G_{i,l+1} <= O(poly(M1)^-1) on outlier examples, eq (17): \"close to 0\"", ours,
                     combine(results), "gate-ratio", see,
                     "Geometric mean over seeds of the outlier / clean gate ratio per position. " + "; ".join(parts) + ".",
                     None if layers[0][0] else ("Cor 2 (i): outlier / clean gate (1 layer)", f"<= 1/M1 = {1 / M1:.3f}",
                                                f"{main_ratio[0]:.2f}-{main_ratio[1]:.2f}" if main_ratio else "n/a"))


def decay_row(layers: list, key: str, title: str, see: list) -> dict:
    """Corollary 2 (ii): cases (layer, setting), the clean gates' decay of the seed-mean curve."""
    cases, borderline, parts, main = {}, [], [], None
    for layer, res in layers:
        for key_s in res["setting_keys"]:
            name = case(*((("layer", layer),) if layer else ()), *_setting(key_s))
            j, rank = clean_rank_curve([r[key_s] for r in res["per_seed"]])
            if j.size < 2:
                cases[name] = "none"
                parts.append(f"{case_name(name)}: fewer than 2 clean ranks with a positive mean gate")
                continue
            d = clean_gate_decay(j, rank.mean(axis=0))
            cases[name] = d["level"]
            if d["borderline"]:
                borderline.append(name)
            parts.append(f"{case_name(name)}: {d['bits_per_rank']:.2f} bits per rank over j = 1..{j[-1]}, R^2 {d['r2']:.3f}")
            if main is None and key_s == res["main_setting"]:
                main = d
    ours = (f"{main['bits_per_rank']:.2f} bits per rank (ratio {main['ratio_per_rank']:.2f}), R^2 = {main['r2']:.3f}"
            + (" (layer 1)" if layers[0][0] else "")) if main else "no decay to fit"
    return claim_row(key, title, "G_{h(j),l+1} >= Theta(2^-(j-1)): green bars decay exponentially", ours,
                     judge_cases(cases, borderline), "decay", see, "Fit of log2 G_h(j) on j (seed means; ranks held by >= 100 prompts). "
                     + "; ".join(parts) + ".")


def table1_rows(res: dict, depth: str, see: list) -> list:
    """Table 1's numbers and pattern, each judged in every (labelling, kappa_a') of the grid."""
    main = main_table1(res["settings"])
    keys = [(rule, float(k)) for rule in res["label_rules"] for k in res["accuracy"]["mamba"][rule]]
    acc = {key: {m: {p: res["accuracy"][m][key[0]][str(key[1])][p]["all"]["rate"] for p in PLACES}
                 for m in ("mamba", "linear_transformer")} for key in keys}
    numbers = {key: table1_numbers(acc[key], PAPER_TABLE1) for key in keys}
    pattern = {key: table1_pattern(table1_counts_of(res, *key)) for key in keys}
    name = lambda key: case(("", key[0]), ("kappa_a'", key[1]))  # noqa: E731
    judged = {what: judge_cases({name(k): v["level"] for k, v in found.items()},
                                [name(k) for k, v in found.items() if v["borderline"]])
              for what, found in (("numbers", numbers), ("pattern", pattern))}
    cell = lambda m, p: res["accuracy"][m][main[0]][str(main[1])][p]["all"]  # noqa: E731
    fmt = lambda m: " / ".join(f"{100 * cell(m, p)['rate']:.1f} [{100 * cell(m, p)['seed_ci95'][0]:.1f}, "  # noqa: E731
                               f"{100 * cell(m, p)['seed_ci95'][1]:.1f}]" for p in PLACES)
    short = lambda m: " / ".join(f"{100 * cell(m, p)['rate']:.1f}" for p in PLACES)  # noqa: E731
    paper = lambda m: " / ".join(f"{100 * PAPER_TABLE1[m][p]:.2f}" for p in PLACES)  # noqa: E731
    detail_n = ("Largest distance from the paper's six numbers (points), every setting: " + "; ".join(
        f"{k[0]} at kappa_a' = {k[1]:g}: {100 * v['worst']:.1f}" for k, v in numbers.items()) + "." + _lt_profile(res, main))
    detail_p = ("Criteria at their sizes, every setting: " + "; ".join(
        f"{k[0]} at kappa_a' = {k[1]:g}: " + ", ".join(f"{c} {'yes' if ok else 'no'}" for c, ok in v["checks"].items())
        + f" -> {v['level']}" for k, v in pattern.items()) + ".")
    head = f"Table 1 ({depth}; alpha = 0.5; FQ / R / CQ)"
    return [claim_row(f"table1_numbers_{depth[0]}", f"{head}: the numbers",
                      f"Mamba {paper('mamba')}; LT {paper('linear_transformer')}",
                      f"Mamba {short('mamba')}; LT {short('linear_transformer')}", judged["numbers"],
                      "table1-numbers", see, f"Main setting ({main[0]}, kappa_a' = {main[1]:g}): Mamba {fmt('mamba')}; LT "
                      f"{fmt('linear_transformer')} (% [95% interval over seeds]). " + detail_n,
                      (f"Table 1 ({depth}): Mamba FQ / R / CQ (%)", paper("mamba"), short("mamba"))
                      if depth.startswith("3") else None),
            claim_row(f"table1_pattern_{depth[0]}", f"{head}: Mamba sensitive to outlier position (CQ worst), the LT "
                      "much less; Mamba above the LT at FQ and R", "Mamba FQ > R >> CQ; LT within 0.3 points",
                      f"Mamba drop FQ - CQ {100 * (cell('mamba', 'FQ')['rate'] - cell('mamba', 'CQ')['rate']):.1f} points; "
                      f"LT spread {100 * (max(cell('linear_transformer', p)['rate'] for p in PLACES) - min(cell('linear_transformer', p)['rate'] for p in PLACES)):.1f}",
                      judged["pattern"], "table1-pattern", see, detail_p)]


def _lt_profile(res: dict, main: tuple) -> str:
    """What the linear Transformer's aggregate is made of in the main setting, against the vote count
    behind the main-setting argument (which spreads its errors over every task group alike)."""
    vote = res.get("vote_baseline", {}).get(main[0])
    cell = res["accuracy"]["linear_transformer"][main[0]][str(main[1])]["FQ"]
    if not vote or any(g not in cell for g in ("seen", "reversed", "distance_2", "distance_3")):
        return ""
    groups = " / ".join(f"{100 * cell[g]['rate']:.1f}" for g in ("seen", "reversed", "distance_2", "distance_3"))
    return (f" In the main setting the linear Transformer's FQ accuracy by task group (training / reversed / distance 2 "
            f"/ distance 3) is {groups} %: its aggregate is not the picture of the main-setting argument, whose vote "
            f"count ({100 * vote['FQ']:.1f} % at FQ) misses on the prompts with label -1 of every task group alike.")


def table1_counts_of(res: dict, rule: str, kappa_a_prime: float) -> dict:
    """{model: {placement: (wrong (S,), n (S,))}} of one setting, summed over task groups: the input
    of ``measure.rules.table1_pattern``."""
    r, k = res["label_rules"].index(rule), res["settings"]["kappa_a_primes"].index(kappa_a_prime)
    n = np.asarray(res["n_prompts"])[:, r, k].sum(-1)                       # (S, placements)
    return {m: {p: (np.asarray(res["wrong"][m])[:, r, k, q].sum(-1), n[:, q]) for q, p in enumerate(PLACES)}
            for m in ("mamba", "linear_transformer")}


def fig3_claims(res: dict) -> list:
    see = [("fig3.png", "fig3.png")]
    return [cor1_row([("", res)], "cor1_1", "Corollary 1 (one layer; the claim behind Fig 3): attention concentrates "
                     "on examples with the query's pattern", see),
            growth_row([("", res)], "growth_1", "Fig 3 (one layer): the gap between the two sums grows in training", see)]


def fig4_claims(res: dict) -> list:
    see = [("fig4.png", "fig4.png")]
    M1 = res["paper"]["M1"]
    return [gate_ratio_row([("", res)], "gate_ratio_1", "Corollary 2 (i) / Fig 4 (one layer): gates on outlier "
                           "examples near zero", see, M1),
            decay_row([("", res)], "decay_1", "Corollary 2 (ii) / Fig 4 (one layer): clean gates decay about "
                      "exponentially with distance from the query", see)]


def table1_claims(res: dict) -> list:
    return table1_rows(res, "1 layer", [("table1.png", "table1.png"), ("table", "table1.md")])


def depth3_claims(res: dict) -> list:
    """The same rules on the three-layer runs, every layer a case (Figs 3-4 on layer 1, Figs 5-6
    on layers 2 and 3: the paper says they show "the same trend"), and Table 1."""
    L, M1 = res["n_layers"], res["paper"]["M1"]
    fig3 = [(k, view(res, "fig3", k)) for k in range(1, L + 1)]
    fig4 = [(k, view(res, "fig4", k)) for k in range(1, L + 1)]
    s3, s4 = [("fig3_L3", "fig3_L3.png"), ("fig5", "fig5.png")], [("fig4_L3", "fig4_L3.png"), ("fig6", "fig6.png")]
    return [cor1_row(fig3, "cor1_3", f"Corollary 1 at {L} layers (Figs 3, 5): attention on the query's pattern", s3),
            growth_row(fig3, "growth_3", f"Figs 3, 5 ({L} layers): the gap between the two sums grows in training", s3),
            gate_ratio_row(fig4, "gate_ratio_3", f"Corollary 2 (i) at {L} layers (Figs 4, 6): outlier gates near zero",
                           s4, M1),
            decay_row(fig4, "decay_3", f"Corollary 2 (ii) at {L} layers (Figs 4, 6): clean gates decay exponentially", s4),
            *table1_rows(view(res, "table1"), f"{L} layers", [("table1_L3.png", "table1_L3.png"),
                                                              ("table", "table1_L3.md")])]


# the paper's three-layer claims, listed as "not run" when depth3.json is absent (e.g. --only fig2)
DEPTH3_CLAIMS = (("cor1_3", "Corollary 1 at 3 layers (Figs 3, 5)"), ("growth_3", "Figs 3, 5 at 3 layers: the gap grows"),
                 ("gate_ratio_3", "Corollary 2 (i) at 3 layers (Figs 4, 6)"),
                 ("decay_3", "Corollary 2 (ii) at 3 layers (Figs 4, 6)"), ("table1_numbers_3", "Table 1 (3 layers): numbers"),
                 ("table1_pattern_3", "Table 1 (3 layers): pattern"))


def depth3_not_run() -> list:
    """The paper's three-layer claims as "not run" rows, for a folder without depth3.json (e.g. after
    ``--only fig2``), so the claims table never drops them silently."""
    return [claim_row(key, title, "three-layer models", "no three-layer result here (run `reproduce --only depth3`)",
                      {"level": "not run"}, "", []) for key, title in DEPTH3_CLAIMS]

"""The number tables of the "reproduce" section of REPORT.md and figures/table1.md: Figure 2 in
numbers, errors by task group, the learned pattern scores, Table 1 and the step-size selection."""
from __future__ import annotations

import numpy as np

from .common import MAIN_SETTING_RULE, MODELS, main_table1
from .results import point, untrained_view
from .figures_table1 import PAPER_TABLE1, TABLE1_HEADER, table1_main, table1_overview, table1_rows
from ..runs.step_size import table_rows

SHORT = {"mamba": "Mamba", "linear_transformer": "LT"}
GROUP_LABEL = {"training": "training tasks", "reversed": "reversed pairs", "distance_2": "distance 2",
               "distance_3": "distance 3"}


def interval(e: dict) -> list:
    """The 95% interval over seeds of a summary cell (``measure.rates.seed_interval``), or the pooled
    Clopper-Pearson interval for a result saved without it."""
    seed = e.get("seed_ci95")
    return seed if seed and seed[0] is not None else e["ci95"]


def _cell(e: dict) -> str:
    if e["rate"] is None:
        return "n/a"
    low, high = interval(e)
    return f"{e['rate']:.3f} [{low:.3f}, {high:.3f}]"


def md_table(header: list, rows: list) -> list:
    return ["| " + " | ".join(header) + " |", "|---" * len(header) + "|"] + ["| " + " | ".join(r) + " |" for r in rows]


def _shown(s: dict, wanted) -> list:
    return [a for a in wanted if np.min(np.abs(np.asarray(s["alphas"]) - a)) < 1e-9]


def fig2_tables(res: dict) -> str:
    s = res["settings"]
    show = _shown(s, (0.0, 0.3, 0.5, 0.6, 0.7, 0.8, 0.9))
    untrained = untrained_view(res)
    lines = [f"### Figure 2 in numbers", "",
             f"Main setting kappa_a' = {s['main_kappa_a_prime']:g}, K' = {s['main_K_prime']:g} ([Main setting]"
             "(#main-setting)). Test error, pooled over seeds [95% interval over seeds]; \"untrained\": the same models "
             "at their initialisation (Algorithm 1's Psi^(0)), on the same prompts, all tasks. Figures: fig2.png (main "
             f"setting, untrained dotted), fig2_kappa{max(s['kappa_a_primes']):g}.png (kappa_a' = "
             f"{max(s['kappa_a_primes']):g}), fig2_sensitivity.png (every kappa_a', K').", ""]
    subsets = ("all", "seen", "unseen")
    for rule in res["label_rules"]:
        lines += [f"**Labelling: {rule}**", ""]
        lines += md_table(["alpha"] + [f"{SHORT[m]} {sub}" for m in MODELS for sub in subsets]
                          + [f"{SHORT[m]} untrained" for m in MODELS],
                          [[f"{a:g}"] + [_cell(point(res, m, rule, sub, a)) for m in MODELS for sub in subsets]
                           + [_cell(point(untrained, m, rule, "all", a)) for m in MODELS] for a in show])
        lines.append("")
    lines += ["**Sensitivity: error on all tasks at alpha = 0.5 / 0.8 for every kappa_a', K'**", ""]
    lines += md_table(["kappa_a'", "K'"] + [f"{SHORT[m]} {r}" for m in MODELS for r in res["label_rules"]],
                 [[f"{kap:g}", f"{Kp:g}"] + [f"{point(res, m, r, 'all', 0.5, kap, Kp)['rate']:.3f} / "
                                             f"{point(res, m, r, 'all', 0.8, kap, Kp)['rate']:.3f}"
                                             for m in MODELS for r in res["label_rules"]]
                  for kap in s["kappa_a_primes"] for Kp in s["K_primes"]])
    return "\n".join(lines)


def groups_table(res: dict) -> str:
    """Test error by task group (training tasks, reversed pairs, distance 2, distance 3), trained and untrained."""
    s = res["settings"]
    groups = res["task_groups"]
    subset = {g: ("seen" if g == "training" else g) for g in groups}
    untrained = untrained_view(res)
    lines = ["### Errors by task group", "",
             f"Fig 2 runs, kappa_a' = {s['main_kappa_a_prime']:g}, K' = {s['main_K_prime']:g}, pooled over seeds "
             "[95% interval over seeds]. Of the 30 tasks (a, b), 6 are training tasks (b = a+1 on the cycle of "
             "Condition 1); the 24 unseen ones are the 6 reversed training pairs (b = a-1: the same two patterns, "
             "labels swapped), 12 pairs two steps apart and 6 pairs three steps apart. \"untrained\": the same model "
             "at its initialisation.", ""]
    rows = [[rule, f"{a:g}", f"{SHORT[m]}{label}"] + [_cell(point(result, m, rule, subset[g], a)) for g in groups]
            for rule in res["label_rules"] for a in _shown(s, (0.0, 0.5, 0.8)) for m in MODELS
            for result, label in ((res, ""), (untrained, " untrained"))]
    lines += md_table(["labelling", "alpha", "model"] + [GROUP_LABEL.get(g, g) for g in groups], rows)
    return "\n".join(lines)


def pattern_score_table(res: dict) -> str:
    """Mean learned score (mu_{a+k}, 0)^T W_B^T W_C (mu_a, 0) by cyclic offset k (Fig 2 runs)."""
    M1 = res["paper"]["M1"]
    lines = ["### Why tasks never seen in training fail more often", "",
             "Training tasks pair mu_a with mu_{a+1} only (Condition 1's construction). The learned score "
             "S(k) = (mu_{a+k}, 0)^T W_B^T W_C (mu_a, 0) of a context pattern k steps from the query's pattern "
             "(mean over a and seeds, Fig 2 runs, relative to S(0)):", ""]
    offsets = {}
    for model in MODELS:
        S = np.array([r["pattern_scores"] for r in res["training"][model]])    # (seeds, M1, M1)
        a = np.arange(M1)
        offsets[model] = np.array([S[:, (a + k) % M1, a].mean() for k in range(M1)])
    lines += md_table(["model"] + [f"k = {k}" for k in range(M1)],
                 [[SHORT[m]] + [f"{x / offsets[m][0]:+.2f}" for x in offsets[m]] for m in MODELS])
    m = offsets["mamba"]
    if m[1] < 0 and m[-1] < 0 and m[2] > 0 and m[-2] > 0:
        lines += ["", "Pairs seen in training (k = 1, 5) get negative scores, as they should. A context pattern "
                  "two steps away (k = 2, 4), never paired with the query's pattern in training, gets a positive "
                  "score, so in an unseen task (a, a+2) its examples, which carry the opposite label, vote for the "
                  "wrong answer, consistent with the errors by task group above. Where this score comes from (the "
                  "product dW_B^T dW_C and its path through the pattern between a and a+2 carry only part of it) is "
                  "the ablation's question (section \"Ablation\")."]
    return "\n".join(lines)


ONE_LAYER_MODELS = "one-layer models of eq (3) (the paper's are three-layer"


def table1_markdown(res: dict, models: str = ONE_LAYER_MODELS) -> str:
    """Table 1: the main setting (``common.main_table1``) by task group beside the aggregate, trained and
    untrained, then every labelling and kappa_a' (overview with intervals and task groups), then one
    detailed table per labelling with the seeds' range.  ``models`` says which models (opens a
    parenthesis the text closes)."""
    s = res["settings"]
    main = main_table1(s)
    lines = [f"Table 1: ICL accuracy (%) at alpha = {res['alpha']}, K' = {res['K_prime']:g}, p_a = {res['p_a']} in "
             f"training; {models} and it does not say which outlier "
             f"labelling or kappa_a' it used). {s['n_test']} test prompts per seed and cell, {s['seeds']} seeds; "
             "[95% interval over seeds: t interval of the per-seed accuracies, widened to the pooled Clopper-Pearson "
             "interval where that is wider]. Task groups: training = the 6 training tasks of Condition 1's cycle, "
             "reversed = those pairs reversed, distance 2 / 3 = pairs 2 or 3 steps apart on the cycle (never trained on). "
             "Untrained: the same models at their initialisation (Algorithm 1's Psi^(0)) on the same prompts.",
             "", f"**Main setting: {main[0]} labels, kappa_a' = {main[1]:g}** (REPORT.md, \"Main setting\"; every "
             "other setting below)", ""]
    lines += md_table(*table1_main(res, main))
    header, rows = table1_overview(res, groups=True)
    lines += ["", "**Every setting**: all tasks [95% interval over seeds] (training / reversed / distance 2 / "
              "distance 3)", ""]
    lines += md_table(header, rows)
    for rule in res["label_rules"]:
        lines += ["", f"Outlier labels: {rule} (seed range = min-max over seeds)", ""]
        lines += md_table(TABLE1_HEADER, table1_rows(res, rule))
    return "\n".join(lines)


def main_setting_note(res: dict) -> str:
    """``common.MAIN_SETTING_RULE`` with the vote counts of ``mechanism.vote_baseline`` saved in a
    "table1" result: the main-setting argument, written once (REPORT.md's results section)."""
    vote = res.get("vote_baseline")
    paper_lt = " / ".join(f"{100 * PAPER_TABLE1['linear_transformer'][p]:.2f}" for p in ("FQ", "R", "CQ"))
    counts = ""
    if vote:
        fmt = lambda rule: " / ".join(f"{100 * vote[rule][p]:.1f}" for p in ("FQ", "R", "CQ"))  # noqa: E731
        counts = (f" Counted on {res['settings']['n_test']} prompts of Definition 2 per cell (FQ / R / CQ, no training; "
                  f"mechanism.vote_baseline): flipped {fmt('flip')} %, targeted {fmt('target')} %, random "
                  f"{fmt('random')} %; the paper's linear Transformer: {paper_lt} %.")
    return MAIN_SETTING_RULE + "." + counts


def step_size_table(runs: list) -> str:
    """Every candidate's held-out loss per selection seed, and which eta the rule chose, per training
    setting; ``runs``: [(label, result)] (``report.training_runs``)."""
    lines = []
    for label, res in runs:
        if "step_size" not in res:
            continue
        for model in MODELS:
            sel = res["step_size"][model]
            eta, grid = sel["chosen"]["eta"], sel["grid"]["eta"]
            edge = ""
            if eta == max(grid) == 1.0:
                edge = " (the top of the grid: the largest eta Theorems 1 and 3 allow)"
            elif eta in (min(grid), max(grid)):
                edge = " (an edge of the grid: a value outside it might score better)"
            lines += ["", f"**{label} (p_a = {res['p_a']}), {SHORT[model]}: eta = {eta:g} chosen{edge}**", ""]
            lines += md_table(["candidate"] + [f"held-out loss, selection seed {k}" for k in sel["seeds"]]
                         + ["mean", ""], table_rows(sel))
    return "\n".join(lines)

"""The "reproduce" section of figures/REPORT.md, written from the JSON results of
``python -m numpy_mamba reproduce`` (whatever of them exists), and the claim rows that feed the
results table at the top of the report and the command's closing summary.  The head of the section
(three-line summary, claims in detail, settings, training, step sizes) is written here; each
experiment's own part comes from its ``report`` (``experiment.Experiment``).

Each claim of the paper's Section 4 gets: the paper's statement or number, ours, and a verdict
from a rule named in its row (the rules are written once, in the results section), so no verdict
is typed in by hand.
"""
from __future__ import annotations

import numpy as np

from ..data import SECTION4_TEST_OUTLIERS
from .common import MAIN_SETTING_RULE, MODELS, PAPER
from . import registry
from ..measure.rules import SD_RULE, TIE_RULE, VOCABULARY_RULE
from ..runs.output import SMOKE
from ..runs.claims import details, opening
from ..runs.step_size import RULES as STEP_RULES
from .tables import SHORT, main_setting_note, step_size_table

SHARED_RULES = {"vocabulary": VOCABULARY_RULE, **STEP_RULES, "tie": TIE_RULE, "sd": SD_RULE}


def rules() -> dict:
    """Every rule the section cites: the shared ones, then each registered experiment's own."""
    return {**SHARED_RULES, **{name: text for e in registry.EXPERIMENTS for name, text in e.rules.items()}}


def own_results(experiment, results: dict) -> dict:
    """The part of ``results`` ({JSON name: result}) that ``experiment`` wrote."""
    return {name: results[name] for name in experiment.json_names if name in results}


def claim_rows(results: dict) -> list:
    """Every row of the claims table: each experiment's rows from its results present, in registry order."""
    return [row for experiment in registry.EXPERIMENTS for row in experiment.claims(own_results(experiment, results))]


def training_runs(results: dict) -> list:
    """[(short label, long label, result)]: one result per experiment with a ``runs_label`` (the
    first of its JSON names present; fig3, fig4 and table1 share one set of training runs)."""
    runs = []
    for experiment in registry.EXPERIMENTS:
        present = list(own_results(experiment, results).values())
        if experiment.runs_label and present:
            runs.append((*experiment.runs_label, present[0]))
    return runs


def _eta_text(results: dict) -> str:
    runs = [f"{short} (p_a = {res['p_a']}): " + ", ".join(f"{SHORT[m]} {res['eta'][m]:g}" for m in MODELS)
            for short, _, res in training_runs(results) if "eta" in res]
    return "; ".join(runs) or "n/a"


def settings_section(results: dict) -> str:
    """The settings the paper does not give, from a one-layer result (else any with a step size); "" if none."""
    runs = training_runs(results)
    any_result = runs[0][2] if runs else next((r for r in results.values() if "eta" in r), None)
    if any_result is None:
        return ""
    s = any_result["settings"]
    lines = [
        "### Settings the paper does not give, and why",
        "",
        "Figure 2 and the one-layer rows use the **one-layer model of eq (3)** that the theory analyses (and the "
        "linear Transformer: the same model with every gate G = 1). The paper's Figures 3-6 and Table 1 use "
        "three-layer models: the rows marked three-layer (3-layer) come from our three-layer stacks (settings in "
        "\"Three-layer runs\" below); the one-layer analogues stay beside them to show what depth changes.",
        "",
        f"- Paper's settings: d = {PAPER['d']}, M1 = {PAPER['M1']}, M2 = {PAPER['M2']}, V = {PAPER['V']}, "
        f"beta = {PAPER['beta']:g}, delta = {PAPER['delta']}, kappa_a = {PAPER['kappa_a']:g}, l_tr = l_ts = "
        f"{PAPER['l_tr']}, p_a = {s['p_a_fig2']} (Fig 2) and {s['p_a_mechanism']} (Figs 3-4, Table 1), the three test "
        "outliers v' of Section 4.",
        _step_size_bullet(s, results), *_size_bullets(s, any_result["eta"]["mamba"]), _kappa_bullet(s),
        *_test_bullets(s)]
    return "\n".join(lines)


def _step_size_bullet(s: dict, results: dict) -> str:
    """How eta was chosen per model, and what was chosen."""
    return (f"- Step size eta, **chosen per model** (never on test settings) by the rule of "
            f"numpy_mamba/runs/step_size.py (rule [step-size](#rule-step-size)). Grid {', '.join(f'{e:g}' for e in s['eta_grid'])} "
            f"(all <= 1, as Theorems 1 and 3 need), {s['select_seeds']} selection seed(s) with their own worlds and "
            f"streams, the experiments' T = {s['T']}, {s['n_heldout']} held-out prompts per seed; applied separately "
            f"to each training setting. Chosen: {_eta_text(results)}. Every candidate's held-out loss is in the "
            "table \"Step size\" below and in the JSON (\"step_size\").")


def _size_bullets(s: dict, eta_m: float) -> list:
    """B, T, K and K' against what the theory asks of them (Figure 2's p_a, Mamba's eta)."""
    p_a = s["p_a_fig2"]
    B_T = PAPER["M1"] / (1 - p_a) * np.log(100)
    T_M = PAPER["M1"] / (eta_m * (1 - p_a) * PAPER["beta"] ** 2)
    return [
        f"- Batch B = {s['B']}: B_T = max(eps^-2, M1 (1-p_a)^-1) log(1/eps) without constants is "
        f"M1/(1-p_a) log 100 = {B_T:.0f} at p_a = {p_a}, eps = 0.01 (the eps^-2 term is a proof artefact "
        "we do not follow).",
        f"- Steps T = {s['T']}: T_M = Theta(eta^-1 (1-p_a)^-1 beta^-2 M1) = {T_M:.0f} without constants "
        f"(eq (9), Mamba's eta = {eta_m:g}); T is {s['T'] / T_M:.0f} times that, and the training loss has flattened long before "
        "(see the training table and fig2_training.png).",
        f"- K = {s['K']}: the largest value Definition 1 allows (K <= 1/2).",
        f"- K' = {s['main_K_prime']:g} (main; grid {', '.join(f'{k:g}' for k in s['K_primes'])}): "
        "Definition 2 asks K' > 1; 1.5 is a modest shift, 3 a large one."]


def _kappa_bullet(s: dict) -> str:
    """The main kappa_a' (the argument is the results section's "Main setting") and what eq (11)'s v' does to the gate."""
    L_s = SECTION4_TEST_OUTLIERS.sum(1) / np.linalg.norm(SECTION4_TEST_OUTLIERS, axis=1)
    L = SECTION4_TEST_OUTLIERS.sum(1).min()                 # eq (11)'s L: the smallest coefficient sum of a v'
    return (
        f"- kappa_a' = {s['main_kappa_a_prime']:g} in the main setting ([Main setting](#main-setting)); grid "
        f"{', '.join(f'{k:g}' for k in s['kappa_a_primes'])}, every value judged. Why the grid goes higher: a test "
        "outlier is v' = sum_s lambda_s v*_s, and the gate only sees w^T v'. If training treats the three v*_s alike, "
        f"w^T v' is proportional to sum_s lambda_s, which is {', '.join(f'{x:.2f}' for x in L_s)} for the three v' "
        f"of Section 4 (L = {L:g}). The proof of Theorem 2 carries the term (kappa_a' L - kappa_a) (Appendix, after "
        "eq (60)): a test outlier looks to the gate at least as strong as a training one when kappa_a' >= kappa_a / "
        f"L = {PAPER['kappa_a'] / L:.1f}, which only kappa_a' = {max(s['kappa_a_primes']):g} of our grid meets. "
        f"Outlier labels of Figures 3-6 and Table 1 in the main setting: {s['mechanism_label_rule']} (the same "
        "argument); every labelling is judged.")


def _test_bullets(s: dict) -> list:
    """The test prompts, the seeds and the task groups, and what every interval covers."""
    return [
        f"- Test prompts: {s['n_test']} per seed and point; {s['seeds']} training seeds (seed s: world "
        "default_rng([s, 0]), independent streams for training and testing). Both models of a seed see "
        "the same test prompts. Tasks: all M1 (M1 - 1) = 30 ordered pairs; 6 are the training tasks T_tr "
        "of Condition 1 (\"seen\"), 24 are never seen in training (\"unseen\": 6 reversed training pairs, 12 "
        "pairs two steps apart on the task cycle, 6 three steps apart).",
        f"- Outlier placement: Figure 2's prompts, and Table 1's R, mark each context example an outlier on its own "
        f"with probability alpha (eq (7)), so a prompt's count of outliers varies (binomial, alpha l_ts on average: "
        f"{s['alpha_table1'] * PAPER['l_ts']:g} in Table 1); Table 1's FQ and CQ put exactly round(alpha l_ts) = "
        f"{round(s['alpha_table1'] * PAPER['l_ts'])} outlier examples farthest from or closest to the query.",
        "- Uncertainty: error rates and accuracies are pooled over seeds (equal numbers of prompts per seed). "
        "The interval in brackets, and every interval a verdict rule uses, is the 95% interval over seeds (rule "
        "[seed-interval](#rule-seed-interval); numpy_mamba/measure/rates.py, seed_interval), so it includes seed-to-seed variation: different "
        "trained models, not only different test prompts. The pooled Clopper-Pearson interval alone (beta "
        "quantiles; the same numbers as scipy.stats.binomtest(...).proportion_ci(method='exact'), checked in "
        "tests/test_reproduce.py) covers test-prompt sampling only; it stays in the JSON (\"ci95\", next to "
        "\"seed_ci95\"). Rules on gate ratios use the t interval over seeds of the log ratio. Figures draw bands "
        "from the seeds' min to max."]


def training_table(results: dict) -> str:
    lines = ["### Did training converge?", "",
             "Final minibatch hinge loss (mean of the last 10% of records) and, on fresh prompts of "
             "Definition 1, the hinge loss (eq (4)) and 0-1 error on the training tasks and on all tasks "
             "(Theorem 1 claims a small loss on all of T). Means over seeds [min, max].", "",
             "| runs | model | eta | final minibatch loss | held-out loss, T_tr | held-out loss, all T | held-out error, T_tr | held-out error, all T |",
             "|---|---|---|---|---|---|---|---|"]
    for short, _, res in training_runs(results):
        for model in MODELS:
            runs = res["training"][model]

            def f(key):
                v = np.array([r[key] for r in runs])
                return f"{v.mean():.4f} [{v.min():.4f}, {v.max():.4f}]"
            lines.append(f"| {short} (p_a = {res['p_a']}) | {SHORT[model]} | "
                         f"{res['eta'][model]:g} | {f('final_minibatch_loss')} | "
                         f"{f('loss_train_tasks')} | {f('loss_all_tasks')} | {f('error_train_tasks')} | "
                         f"{f('error_all_tasks')} |")
    if "fig2" in results:
        runs = results["fig2"]["training"]["mamba"]
        vs = np.mean([r["w_dot_v_star"] for r in runs], axis=0)
        vp = np.mean([r["w_dot_v_prime"] for r in runs], axis=0)
        lines += ["", f"Trained Mamba gate (Fig 2 runs, mean over seeds): w^T v*_s = "
                  f"{', '.join(f'{x:.2f}' for x in vs)}; w^T v'_s = {', '.join(f'{x:.2f}' for x in vp)} "
                  "(a negative value closes the gate sigma(w^T p_i) on an outlier example)."]
    return "\n".join(lines)


def claims_file(results: dict) -> dict:
    """What ``runs.claims.save_claims`` writes for this command: rows, rules, notes, section heading."""
    note = (main_setting_note(results["table1"]) if "table1" in results else MAIN_SETTING_RULE + ".")
    return {"rows": claim_rows(results), "rules": rules(), "notes": {"Main setting": note}, "heading": heading(results),
            "summary": [line for e in registry.EXPERIMENTS for line in e.summary(own_results(e, results))]}


def heading(results: dict) -> str:
    """The section's heading (stamped for a smoke run)."""
    return "## Reproduction of Section 4 (python -m numpy_mamba reproduce)" + (f" -- {SMOKE}" if _mode(results)[1] else "")


def _mode(results: dict) -> tuple[str, bool]:
    quick = sorted(name for name, r in results.items() if r.get("settings", {}).get("quick", False))
    if not quick:
        return "full", False
    if len(quick) == len(results):
        return "QUICK", True
    return f"MIXED: {', '.join(quick)} from a QUICK run, the rest full", True


def build(results: dict, wall_seconds: float | None = None) -> str:
    """The whole "reproduce" section from the results present ({JSON name: result})."""
    mode, smoke = _mode(results)
    rows = claim_rows(results)
    parts = [heading(results), ""]
    first = (f"Run: {mode}; experiments: {', '.join(sorted(results))}"
             + (f"; {wall_seconds:.1f} s wall time (--jobs as run)" if wall_seconds else "") + ".")
    parts += opening(first, rows) + [""]
    if smoke:
        parts += [f"**{SMOKE}.** These outputs only show that the pipeline runs; do not read any number or verdict "
                  "below as a result.", ""]
    parts += ["### Claims in detail", "", "Every number behind each row of the results table; the rules are written "
              "once under [Rules](#rules)."] + details(rows)
    settings = settings_section(results)
    if settings:
        parts += ["", settings]
    parts += ["", training_table(results)]
    steps = step_size_table([(long, res) for _, long, res in training_runs(results)])
    if steps:
        parts += ["", "### Step size (rule of numpy_mamba/runs/step_size.py)", "",
                  "Rule [step-size](#rule-step-size). Held-out hinge loss per selection seed:", steps]
    for experiment in registry.EXPERIMENTS:
        text = experiment.report(own_results(experiment, results))
        if text:
            parts += ["", text]
    return "\n".join(parts)

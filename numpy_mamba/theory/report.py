"""The "theory" section of figures/REPORT.md, one function per part: measured numbers and the
verdict per claim that the results carry (judged where they were computed, never here)."""
from __future__ import annotations

import json

import numpy as np

from ..data import SECTION4
from ..measure.rules import corollary1_text, sample_sd
from ..runs.output import SMOKE
from ..runs.claims import opening, overflow_details
from ..runs.step_size import table_rows
from ..sgd import TrainConfig
from .settings import LABEL_WORD


def _d(mapping, nd=2) -> str:
    """A dict as 'k: v, ...' with rounded values (keys may come back from JSON as strings)."""
    return "{" + ", ".join(f"{k}: {round(v, nd) if isinstance(v, float) else v}" for k, v in mapping.items()) + "}"


def _pm(sl) -> str:
    if sl is None or sl.get("mean") is None:
        return "n/a"
    return f"{sl['mean']:.2f} ± {sl['sd']:.2f} (n = {len(sl['per_seed'])} seeds)"


def _floor(p, sp) -> str:
    """Where the linear Transformer never reached eps, the held-out loss it ended at."""
    ends = [(g, e) for T, E in zip(p["T"]["linear_transformer"], p.get("loss_end", {}).get("linear_transformer", []))
            for g, t, e in zip(sp["p_a_grid"], T, E) if t is None and e is not None]
    if not ends:
        return ""
    by = {g: round(float(np.min([e for gg, e in ends if gg == g])), 3) for g, _ in ends}
    return (f"; where it did not, its held-out loss after {sp['T_max']['linear_transformer']} steps was still "
            f"(lowest over seeds, by p_a) {_d(by, 3)}, above eps")


def _cor1(att) -> str:
    """Corollary 1 by the rule shared with the reproduce section ([cor1](#rule-cor1)), and what the
    distance-2 sums show."""
    c = att["corollary1"]
    text = corollary1_text(c) + " (rule [cor1](#rule-cor1))."
    if "distance_2" in c["by_group"] and c["by_group"]["distance_2"]["median_different"] > c["threshold"]:
        text += (" Pairs two steps apart never form a task, yet their sums are positive: Lemma 3's (25) says these "
                 "projections stay 0, which holds only at t = 0 (README, note 18); the ablation section measures "
                 "where the positive score sits, layer by layer.")
    return text


def _trend(by_l) -> str:
    values = list(by_l.values())
    return "does not fall with l_ts" if values[-1] >= values[0] - 0.05 else "falls with l_ts"


def _corr(x) -> str:
    return "n/a" if x is None else f"{x:+.2f}"


def _corr_words(x) -> str:
    """What a correlation of alpha* with Theorem 2's bound says (|r| < 0.3: nothing)."""
    if x is None:
        return ""
    if abs(x) < 0.3:
        return ": the bound does not predict where Mamba's error rises"
    return ": alpha* rises with the bound" if x > 0 else ": alpha* falls where the bound rises"


def _pct(x) -> str:
    return "n/a" if x is None else f"{x:.0%}"


def _medians(T_by_seed) -> list:
    cols = zip(*T_by_seed)
    return [int(np.median([t for t in c if t is not None])) if any(t is not None for t in c) else None for c in cols]


def _alpha_table(res) -> list[str]:
    s = res["settings"]
    rows = ["| model | p_a (train) | kappa_a' | l_ts | p_a l_tr / l_ts | Thm 2 bound min(1, .) | alphas Thm 2 covers "
            "((c) and (d)) | largest error the outliers add there (eps 0.01) | alpha* at error 0.25 (mean ± sd) |",
            "|---|---|---|---|---|---|---|---|---|"]
    keys = sorted({(r["model"], r["p_a"], r["kappa_a_prime"], r["l_ts"]) for r in res["runs"]})
    excess = res.get("theorem2_excess", {})
    for model, p_a, kappa, l_ts in keys:
        a = [r["alpha_star"] for r in res["runs"] if (r["model"], r["p_a"], r["kappa_a_prime"], r["l_ts"]) ==
             (model, p_a, kappa, l_ts) and r["alpha_star"] is not None]
        x = p_a * s["l_tr"] / l_ts
        val = f"{np.mean(a):.2f} ± {sample_sd(a):.2f}" if a else "diverged"
        e = excess.get(f"p_a = {p_a:g}, kappa_a' = {kappa:g}, l_ts = {l_ts}") if model == "mamba" else None
        covered, worst = (f"0 to {e['alphas'][-1]:g}", f"{e['worst']:.3f}") if e else ("none (Thm 4 is judged below)", "-")
        rows.append(f"| {model} | {p_a} | {kappa:g} | {l_ts} | {x:.2f} | {min(1.0, x) if model == 'mamba' else '-'} | "
                    f"{covered} | {worst} | {val} |")
    return rows


def _etas(sa) -> str:
    """The step sizes of the "alpha" experiments, per model and training p_a."""
    return "; ".join(f"{model} at p_a = {p_a}: eta = {sa['eta'][model][str(p_a)]:g}"
                     for model, grid in sa["p_a_train"].items() for p_a in grid)


def _M1_etas(g) -> str:
    """The step size at each M1 of the gates experiment, and how it was chosen."""
    s = g["settings"]
    held = {M1: min(r["mean"] for r in sel["candidates"] if r["mean"] is not None) for M1, sel in g["step_size"].items()}
    return (f"eta chosen at each M1 by the same step-size rule ({len(s['select_seeds'])} selection seed(s), worlds of "
            f"that M1 of their own, {s['n_heldout']} held-out training prompts; every candidate's loss is in "
            "theory_gates.json): " + ", ".join(f"M1 = {M1}: {eta:g} (held-out loss {held[M1]:.1e})"
                                               for M1, eta in s["eta"].items()) + ".")


def _step_table(step_size) -> list[str]:
    """Every candidate's held-out loss per selection seed, per model and training p_a."""
    if not step_size:
        return []
    lines = []
    for model, by_p in step_size.items():
        for p_a, sel in by_p.items():
            lines += [f"Step size, {model} at p_a = {p_a} (held-out hinge loss per selection seed):", "",
                      "| candidate | " + " | ".join(f"seed {k}" for k in sel["seeds"]) + " | mean | |",
                      "|---|" + "---|" * (len(sel["seeds"]) + 2)]
            lines += ["| " + " | ".join(row) + " |" for row in table_rows(sel)] + [""]
    return lines


def markdown(results: dict, timings: dict, common: dict, files: dict, rows: list) -> str:
    """The "theory" section from measured (or saved) results, already judged: the three-line
    opening from ``rows`` (``rows.rows``), then one part per claim group.  ``common``: what every
    JSON of the run records ({"world", "world_seed", "command"}); ``files``: {part: path of its figure}."""
    lines = (_head(timings, common, rows) + _convergence(results, files) + _tolerance(results, files)
             + _corollary1(results, files) + _gates(results, files) + _lemmas(results, files)
             + overflow_details(rows) + ["Run times (s): " + ", ".join(f"{k}: {v}" for k, v in timings.items()) + "."])
    return "\n".join(lines)


def heading(command: str) -> str:
    """The section's heading (stamped for a smoke run)."""
    return f"## Theory checks ({command})" + (f" -- {SMOKE}" if "--quick" in command else "")


def _head(timings: dict, common: dict, rows: list) -> list:
    """The section's title, its three-line opening, the smoke stamp of a quick run, and how it was made."""
    cmd = common["command"]
    smoke = "--quick" in cmd
    world = ", ".join(f"{name} = {value:g}" for name, value in common["world"].items())
    first = (f"`{cmd}` in {timings['total']} s (--jobs {timings.get('workers (--jobs)', 1)}); world of Section 4 "
             f"({world}, kappa_a = {SECTION4.kappa_a:g}, K = {TrainConfig.K}), world seed {common['world_seed']}.")
    return [
        heading(cmd), "", *opening(first, rows), "",
        *([f"**{SMOKE}.** Tiny grids that only show the pipeline runs; do not read any number or verdict below as a "
           "result.", ""] if smoke else []),
        "Every setting is in the JSON next to each figure. The theorems hold up to constants; each verdict is computed "
        "from the numbers by the rule it names (written once under [Rules](#rules); code: `numpy_mamba/theory/claims.py`, "
        "`numpy_mamba/theory/verdicts.py`, and `numpy_mamba/measure/` for the rules shared with the reproduce section), "
        "case by case, and names where it holds. Test prompts: the [main setting](#main-setting)'s kappa_a' and K' "
        "(every kappa_a' of a grid judged), flipped outlier labels.", "",
    ]


def _convergence(results: dict, files: dict) -> list:
    """Theorems 1 and 3: steps to converge against p_a and l_tr."""
    p, l = results["convergence_p_a"], results["convergence_l_tr"]
    sp = p["settings"]
    return [
        "### Theorems 1 and 3: iterations to converge",
        f"![convergence]({files['convergence'].name})", "",
        f"Steps until the hinge loss on a fixed held-out batch of 128 training prompts first falls below "
        f"eps = {sp['eps']} (checked before every step), eta = {sp['eta']}, delta = {sp['delta']}, B = {sp['B']}, "
        f"{len(sp['seeds'])} seeds; a run stops at T_max = {sp['T_max']['mamba']} steps (Mamba) or "
        f"{sp['T_max']['linear_transformer']} (linear Transformer) if it has not reached eps by then (T = null). "
        "delta is smaller than Section 4's 0.2 because with delta = 0.2 the linear "
        "Transformer starts below eps (its sum over l examples is already > 1), which leaves nothing to count.", "",
        "Rule [slope](#rule-slope): each seed's slope against the claimed exponent; a p_a at which no seed reaches "
        "eps is a failing case (T = Theta((1-p_a)^-1) claims it finite there).", "",
        f"- Mamba, slope of log T_M on log 1/(1-p_a) (claim 1, eq (9)): **{_pm(p['slope']['mamba'])}** -> "
        f"**{p['verdict']['mamba']}** ({p.get('verdict_detail', {}).get('mamba', '')}).",
        f"- Linear Transformer, same slope (claim 1, eq (14)): **{_pm(p['slope']['linear_transformer'])}** -> "
        f"**{p['verdict']['linear_transformer']}** ({p.get('verdict_detail', {}).get('linear_transformer', '')}). "
        f"Runs that never reached eps within {sp['T_max']['linear_transformer']} steps are marked in the figure and "
        f"left out of the fit (T = null in the JSON): {json.dumps(p['T']['linear_transformer'])}{_floor(p, sp)}. "
        f"On p_a <= {sp['low_p_a_max']} only: Mamba {_pm(p['slope'].get('mamba_low_p_a'))}, "
        f"linear Transformer {_pm(p['slope'].get('linear_transformer_low_p_a'))}.",
        f"- Median T over seeds by p_a = {sp['p_a_grid']}: Mamba {_medians(p['T']['mamba'])}, linear Transformer "
        f"{_medians(p['T']['linear_transformer'])}.",
        f"- Against l_tr at p_a = {l['settings']['p_a']}: slope of log T_M {_pm(l['slope']['mamba'])} (Theorem 1: 0), "
        f"log T_T {_pm(l['slope']['linear_transformer'])} (Theorem 3: -1), "
        f"log(T_M/T_T) **{_pm(l['slope']['ratio'])}** (claim 1, Remark 4) -> **{l['verdict']['ratio']}** "
        f"({l['verdict_detail']['ratio']}).", "",
    ]


def _tolerance(results: dict, files: dict) -> list:
    """Theorems 2 and 4, Remark 5: the tolerated outlier fraction, and the step sizes chosen."""
    a, lt = results["alpha"], results["lt_context"]
    sa = a["settings"]
    return [
        "### Theorems 2 and 4: tolerated outlier fraction",
        f"![alpha]({files['alpha'].name})", "",
        f"Models trained with Algorithm 1 (T = {sa['T']}, delta = {sa['delta']}, l_tr = {sa['l_tr']}) at a step size "
        f"chosen per model and training p_a by the rule of the reproduce section (numpy_mamba/runs/step_size.py: "
        f"rule [step-size](#rule-step-size)), over eta in {sa.get('eta_grid', 'n/a')} with {len(sa.get('select_seeds', []))} selection seed(s) "
        f"on worlds and streams of their own and {sa.get('n_heldout', 'n/a')} held-out training prompts each: "
        f"{_etas(sa)}. Corollary 1 below uses the same Mamba. "
        f"test prompts of Definition 2 with K' = {sa['K_prime']:g}, Section 4's unseen outliers v', {LABEL_WORD[sa['label_rule']]} labels on outlier "
        f"examples, {sa['B_test']} prompts per point. Theorem 2 is judged on the error the outliers add where the "
        "theorem covers the cell (rule [thm2-alpha](#rule-thm2-alpha), eps = 0.01 as in Figure 2's rows). alpha* = the "
        f"largest alpha (interpolated on a grid of step 0.05) before the test error first exceeds {sa['threshold']}: a "
        "loose threshold that compares the two models (Remark 5) where both have errors well above eps; it judges no "
        "bound. Every sd is the sample sd over seeds (n - 1 in the denominator).", "",
        *_alpha_table(a), "",
        *_step_table(results.get("step_size")),
        f"- Theorem 2 (rule [thm2-alpha](#rule-thm2-alpha)): the error the outliers add stays <= 0.01 wherever (c) and "
        f"(d) hold -> **{a['verdict']['mamba']}**: {a.get('verdict_detail', {}).get('mamba', '')}. "
        f"Largest Mamba alpha*: {a['mamba_alpha_star_max']:.2f}. Mean Mamba alpha* by l_ts "
        f"{_d(a['mamba_alpha_star_by_l_ts'])}: the bound falls like 1/l_ts, the measured alpha* "
        f"{_trend(a['mamba_alpha_star_by_l_ts'])}; over every (case, seed), alpha* and the bound correlate at "
        f"{_corr(a.get('mamba_alpha_star_vs_predicted_corr'))}{_corr_words(a.get('mamba_alpha_star_vs_predicted_corr'))}.",
        f"- Remark 5 (rule [remark5-alpha](#rule-remark5-alpha)): Mamba's alpha* larger than the linear Transformer's in "
        f"{_pct(a['fraction_mamba_above_lt'])} of matched (case, seed) pairs -> **{a['verdict'].get('remark5', 'n/a')}**"
        f": {a.get('verdict_detail', {}).get('remark5', '')}. Figure 2's version of this claim (error against alpha) "
        "is judged in the reproduce section.",
        f"- Theorem 4 (linear Transformer; rule [thm4](#rule-thm4)): "
        f"**{a['verdict']['linear_transformer']}** ({a.get('verdict_detail', {}).get('linear_transformer', '')}). "
        f"For reference, not a claim of Theorem 4 (a sufficient condition says nothing about alpha >= 1/2): the "
        f"linear Transformer's largest alpha* is {a['lt_alpha_star_max']:.2f}.",
        f"- Theorem 4 (d), eq (15): smallest l_ts with error <= {sa['threshold']} for alpha in {sa['lt_alphas']}: "
        f"{json.dumps([r['l_ts_needed'] for r in lt['runs']])} (per seed; null = not reached by l_ts = {sa['lt_l_ts_grid'][-1]}). "
        f"Slope of log l_ts on log((1/2 - alpha)^-2 alpha): **{_pm(lt['slope'])}** (claim 1) -> **{lt['verdict']}** "
        f"(rule [slope](#rule-slope), within 0.35; {lt['verdict_detail']}).", "",
    ]


def _corollary1(results: dict, files: dict) -> list:
    """Corollary 1: attention sums by task group."""
    att, sa = results["attention"], results["alpha"]["settings"]
    return [
        "### Corollary 1: attention concentrates on same-pattern examples",
        f"![attention]({files['attention'].name})", "",
        f"Trained Mamba (p_a = {sa['cor1_p_a']}), test prompts with l_ts = {sa['l_ts']}, alpha = {sa['alpha']}, "
        f"kappa_a' = {min(sa['kappa_a_prime']):g}, K' = {sa['K_prime']:g}, {LABEL_WORD[sa['label_rule']]} labels, {len(att['runs'])} seeds x {sa['B_test']} prompts, grouped by the "
        "prompt's task: training partner (a training task), reversed pair (same patterns, labels swapped), "
        "patterns 2 or 3 steps apart on the cycle of training tasks. " + _cor1(att), "",
    ]


def _gates(results: dict, files: dict) -> list:
    """Corollary 2 and Lemma 5 across M1."""
    g = results["gates"]
    s = g["settings"]
    v, why = g["verdict"], g["verdict_detail"]
    decay = {M1: f"{d['bits_per_rank']:.2f} (R^2 {d['r2']:.2f})" for M1, d in g["decay_by_M1"].items()}
    return [
        "### Corollary 2 and Lemma 5: gates",
        f"![gates]({files['gates'].name})", "",
        f"Mamba trained for T = {s['T']} steps on worlds with M1 in {s['M1_grid']}, {len(s['seeds'])} seeds each; "
        + _M1_etas(g) + f" Test prompts: kappa_a' = {s['kappa_a_prime']:g}, K' = {s['K_prime']:g}, {LABEL_WORD[s['label_rule']]} "
        f"labels, alpha = {s['alpha']}, l_ts = {s['l_ts']}.", "",
        f"- (17) (rule [m1-slope](#rule-m1-slope)): slope of log(mean gate on outlier test examples) on log M1: "
        f"{g['slope_G_outlier_vs_M1']:.2f} (per seed {[round(x, 2) for x in g['slope_G_outlier_vs_M1_per_seed']]}; of "
        f"mean sigma(w^T p) on them: {g['slope_sigma_outlier_vs_M1']:.2f}) -> **{v['cor2_outlier_gates']}** "
        f"({why['cor2_outlier_gates']}). Mean gate on outlier / on clean test examples, by M1: "
        f"{_d(g['gate_ratio_outlier_to_clean'], 3)}." + (
            " The sigmoid factor sigma(w^T p) on outlier examples does not fall with M1; the gate G falls through the "
            "product of (1 - sigma) over the later examples." if g["slope_sigma_outlier_vs_M1"] >= 0 and g["slope_G_outlier_vs_M1"] < 0 else ""),
        f"- (17) at each M1 (rule [gate-ratio](#rule-gate-ratio), shared with the reproduce section): outlier / clean "
        f"gate at the same position, range over positions by M1 "
        f"{_d({k: '-'.join(f'{x:.3f}' for x in r) for k, r in g['gate_ratio']['ratio_range_by_M1'].items()})} -> "
        f"**{v['cor2_gate_ratio']}** ({why['cor2_gate_ratio']}).",
        f"- (18) (rule [decay](#rule-decay)): bits per rank over the j <= {s['decay_J']} closest clean examples, seed-mean "
        f"gates, by M1: {_d(decay)} -> **{v['cor2_local_bias']}** ({why['cor2_local_bias']}).",
        f"- (37) (rule [logit-outlier](#rule-logit-outlier)): mean w^T p on training examples with outliers by M1: "
        f"{_d(g['logit_outlier_by_M1'])} vs -log M1 {_d(g['minus_log_M1'])} -> **{v['lemma5_outlier_logits']}** "
        f"({why['lemma5_outlier_logits']}; slope of w^T p on log M1: "
        f"{g.get('slope_logit_outlier_vs_log_M1', float('nan')):.2f}, -log M1 has slope -1).",
        f"- (38) (rule [logit-clean](#rule-logit-clean)): mean w^T p on clean examples: {_d(g['logit_clean_by_M1'])} -> "
        f"**{v['lemma5_clean_logits']}** ({why['lemma5_clean_logits']}).", "",
    ]


def _lemmas(results: dict, files: dict) -> list:
    """Lemmas 4-6 along one training run."""
    t = results["trajectory"]
    s = t["settings"]
    ph = t["phases"]["v_star"]
    v, why = t["verdict"], t["verdict_detail"]
    return [
        "### Lemmas 4-6 along training",
        f"![lemmas]({files['trajectory'].name})", "",
        f"One Mamba run (eta = {s['eta']}, T = {s['T']}, p_a = {s['p_a']}), recorded every {s['record_every']} steps.", "",
        f"- Lemma 4 signs (rule [signs](#rule-signs)): final change of the mean v*^T w = {t['final']['v_star']:.2f}, "
        f"(mu/beta)^T w = {t['final']['mu']:.2f}, |nu/beta^T w| = {t['final']['abs_nu']:.3f} -> **{v['lemma4_signs']}** "
        f"({why['lemma4_signs']}).",
        f"- Two phases (rule [phases](#rule-phases)): v*^T w falls slowly, then fast (steepest at t* = {ph['t_star']:.0f}), "
        f"then slowly. Before t*, fit to a t + b t^3 (the shape of (33)): a = {ph['phase1_a']:.2e}, b = "
        f"{ph['phase1_b']:.2e}, R^2 = {ph['phase1_r2'] if ph['phase1_r2'] is None else round(ph['phase1_r2'], 3)}; at t* "
        f"the linear term contributes {ph['phase1_a'] * ph['t_star']:.3f} and the cubic term "
        f"{ph['phase1_b'] * ph['t_star'] ** 3:.3f}. After 2 t*, slope on log t {ph.get('phase2_log_slope', float('nan')):.3f} "
        f"with R^2 {ph.get('phase2_r2_log', float('nan')):.3f} (a straight line in t: R^2 "
        f"{ph.get('phase2_r2_linear', float('nan')):.3f}) -> **{v['lemma4_5_two_phases']}** ({why['lemma4_5_two_phases']}).",
        f"- Final w^T p: with outliers {t['final']['wp_outlier']:.2f} (vs -log M1 = {t['final']['minus_log_M1']:.2f}), clean "
        f"{t['final']['wp_clean']:.2f}.",
        f"- Lemma 6 (rule [lemma6](#rule-lemma6); eq (39): sum_i G_i (l - i + 1) <= Theta(1) in Lemma 4's range of t, "
        f"the first phase: t <= t* = {t['lemma6']['window_t']:.0f} of {s['T']} training steps, "
        f"{t['lemma6'].get('checked_steps', 'n/a')} recorded points). Largest mean there by l: "
        f"{_d({k: r['max_mean_in_window'] for k, r in t['lemma6']['by_l'].items()})} -> **{v['lemma6_in_window']}** "
        f"({why['lemma6_in_window']}). With every constant 1 the range would end at t = "
        f"{t['lemma6'].get('window_constants_1', 0):.0f} (largest mean there "
        f"{_d({k: r.get('max_mean_constants_1', r['max_mean_in_window']) for k, r in t['lemma6']['by_l'].items()})}). "
        f"After the range (not claimed, no verdict): {_d({k: r['max_mean_whole_run'] for k, r in t['lemma6']['by_l'].items()})}: "
        f"{t['lemma6']['outside_window']}.", "",
    ]

"""The factorial's part of REPORT.md, drawn from its JSON (``factorial.py``): its two claims and
their rules, its lines of the report's first screen (why Figure 2 misses, where its size is
reached), the error tables, the gate and break-even table, and factorial.png.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..data import LABEL_RULES
from ..measure.rules import sample_sd, bound_case, bound_rule, case, case_name, describe, judge_cases, near
from ..runs.claims import claim_row
from ..runs.output import footnote, subplots
from ..runs.claims import anchor
from .common import MODELS, PAPER
from .plots import COLOR, GREY, save
from .tables import SHORT, md_table

ARM_TEXT = {"cycle/rule": "cycle, rule's eta", "cycle/fixed": "cycle, eta 0.02", "all/rule": "all pairs, rule's eta",
            "all/fixed": "all pairs, eta 0.02", "untrained": "untrained"}
SUBSET_TEXT = {"all": "all tasks", "seen": "the cycle's 6", "unseen": "the other 24"}
CLOSE, LOOSE = 0.05, 0.1        # the break-even rule: one and two alpha grid steps

FACTORIAL_RULES = {
    "fig2-where": "per (training tasks, eta, kappa_a', labelling) of the factorial at Figure 2's protocol, Mamba's "
                  "error on all tasks at alpha = 0.8: " + bound_rule(0.01),
    "breakeven": f"per (model, training tasks, eta, kappa_a'): the break-even that the vote ratio predicts, 1 / (1 + r_V) "
                 f"(mean over seeds; derived from eq (3) in numpy_mamba/reproduce/factorial.py), within {CLOSE:g} (one alpha "
                 "grid step) of the measured one (where the flipped-label error pooled over seeds first reaches 1/2) "
                 f"holds; within {LOOSE:g} holds in trend; otherwise fails. An error that stays below 1/2 to the grid's "
                 "end puts the break-even beyond it: a prediction beyond the grid's end less the same margins holds there"}
SECTION = "### Why Figure 2 misses: the factorial"
MECHANISM = "### The gate and the break-even"


def _point(res: dict, model: str, arm: str, rule: str, subset: str, kappa: float, alpha: float) -> dict:
    s = res["settings"]
    cell = res["error"][model][arm][rule][subset]
    k, a = s["kappa_a_primes"].index(kappa), s["table_alphas"].index(alpha)
    return {key: cell[key][k][a] for key in ("rate", "seed_ci95_low", "seed_ci95_high")}


def _rate(e: dict, interval: bool = True) -> str:
    if e["rate"] is None:
        return "n/a"
    return f"{e['rate']:.3f}" + (f" [{e['seed_ci95_low']:.3f}, {e['seed_ci95_high']:.3f}]" if interval else "")


def _arm_case(arm: str) -> tuple:
    tasks, eta = arm.split("/")
    return ("", "all pairs" if tasks == "all" else "cycle"), ("eta", "rule's" if eta == "rule" else "0.02")


def where_reached(res: dict) -> tuple[dict, list, dict]:
    """fig2-where's cases: {case: level}, the borderline ones, {case: Mamba's error at alpha = 0.8}."""
    cases, border, value = {}, [], {}
    for arm in res["arms"][:-1]:
        for kappa in res["settings"]["kappa_a_primes"]:
            for rule in LABEL_RULES:
                name = case(*_arm_case(arm), ("kappa_a'", kappa), ("", rule))
                value[name] = _point(res, "mamba", arm, rule, "all", kappa, 0.8)["rate"]
                cases[name], thin = bound_case(value[name], 0.01)
                if thin:
                    border.append(name)
    return cases, border, value


def breakeven_cases(res: dict) -> tuple[dict, list]:
    """breakeven's cases: {case: level} and the borderline ones (``FACTORIAL_RULES["breakeven"]``)."""
    end = res["settings"]["curve_alphas"][-1]
    cases, border = {}, []
    for m in MODELS:
        for arm in res["arms"][:-1]:
            b = res["breakeven"][m][arm]
            for k, kappa in enumerate(res["settings"]["kappa_a_primes"]):
                predicted, measured = b["predicted_vote"][k], b["measured"][k]
                if predicted is None:
                    continue
                off = abs(predicted - measured) if measured is not None else max(0.0, end - predicted)
                name = case(("", SHORT[m]), *_arm_case(arm), ("kappa_a'", kappa))
                cases[name] = "full" if off <= CLOSE else "trend" if off <= LOOSE else "none"
                if near(off - CLOSE, CLOSE):
                    border.append(name)
    return cases, border


def claims(results: dict) -> list:
    """Two rows: where Figure 2's size is reached in the factorial; whether the vote ratio predicts the break-even."""
    if "factorial" not in results:
        return []
    res = results["factorial"]
    see = [("factorial.png", "factorial.png"), ("tables", anchor(SECTION))]
    cases, border, value = where_reached(res)
    main = " / ".join(_rate(_point(res, "mamba", "cycle/rule", r, "all", 2.0, 0.8), False) for r in LABEL_RULES)
    best = min(value, key=lambda c: value[c])
    rows = [claim_row("factorial_reached", "Ours, Fig 2 factorial: Mamba's error < 0.01 at alpha = 0.8 across training "
                      "tasks x eta x kappa_a'", "< 0.01 at alpha ~ 0.8 (A, B, C)",
                      f"cycle, rule's eta, kappa_a' = 2 (Fig 2): {main}; lowest: {case_name(best)} {value[best]:.3f}",
                      judge_cases(cases, border), "fig2-where", see,
                      "Mamba's error on all tasks at alpha = 0.8, every case: " + "; ".join(
                          f"{case_name(c)} {v:.3f}" for c, v in value.items()) + ".")]
    b = res["breakeven"]["mamba"]["cycle/rule"]
    k = res["settings"]["kappa_a_primes"].index(2.0)
    cases, border = breakeven_cases(res)
    rows.append(claim_row("breakeven", "Ours, mechanism: the outlier / clean vote ratio r of eq (3) predicts the "
                          "flipped-label break-even 1 / (1 + r)", "Cor 2 (i): outlier gates near 0, so alpha* near 1",
                          f"Mamba, cycle, rule's eta, kappa_a' = 2: r_G {b['r_gate'][k]:.2f}, r_V {b['r_vote'][k]:.2f}, "
                          f"predicted {b['predicted_vote'][k]:.2f}, measured {_alpha(b['measured'][k])}",
                          judge_cases(cases, border), "breakeven", [("break-even table", anchor(MECHANISM))]))
    return rows


def _alpha(x) -> str:
    return "beyond the grid" if x is None else f"{x:.2f}"


def summary(results: dict) -> list:
    """Two lines of the report's first screen: why Figure 2 misses (which tasks carry the error, what
    the gate lets through) and where its size is reached, from the factorial's numbers, each linked
    to its table; every comparison in the words is made on the numbers it shows."""
    if "factorial" not in results:
        return []
    res = results["factorial"]
    rate = lambda rule, sub, arm="cycle/rule": _point(res, "mamba", arm, rule, sub, 2.0, 0.8)["rate"]  # noqa: E731
    text = lambda x: "n/a" if x is None else f"{x:.3f}"  # noqa: E731
    k = res["settings"]["kappa_a_primes"].index(2.0)
    b = res["breakeven"]["mamba"]["cycle/rule"]
    seen, unseen = [rate(r, "seen") for r in ("target", "random")], [rate(r, "unseen") for r in ("target", "random")]
    unseen_carry = all(u is not None and s_ is not None and u > 2 * s_ for s_, u in zip(seen, unseen))
    flip = rate("flip", "seen"), rate("flip", "unseen")
    pred = b["predicted_vote"][k]
    line = (f"- **Why Figure 2 misses** ([factorial]({anchor(SECTION)}), [break-even]({anchor(MECHANISM)})): trained "
            f"as in Figure 2 (Condition 1's cycle, the rule's eta), Mamba's error at alpha = 0.8, kappa_a' = 2 with "
            f"targeted / random outlier labels is {text(seen[0])} / {text(seen[1])} on the cycle's 6 tasks and "
            f"{text(unseen[0])} / {text(unseen[1])} on the other 24" + (", so the tasks never seen in training carry "
                                                                      "most of it" if unseen_carry else "") + ". "
            f"With flipped labels it is {text(flip[0])} on the 6 and {text(flip[1])} on the 24: an outlier example "
            f"still casts r_V = {b['r_vote'][k]:.2f} of a clean one's vote (gate ratio r_G = {b['r_gate'][k]:.2f}), "
            f"which puts the break-even at 1 / (1 + r_V) = {pred:.2f} (measured {_alpha(b['measured'][k])}), "
            f"{'below' if pred < 0.8 else 'above'} 0.8. Trained on every pair: flip / target / random "
            + " / ".join(text(rate(r, "all", "all/rule")) for r in LABEL_RULES) + f" on all tasks. alpha = 0.8 is "
            f"outside Theorem 2 (c)'s alpha < {res['p_a']:g}.")
    cases, _, value = where_reached(res)
    held = [c for c, level in cases.items() if level == "full"]
    best = min(value, key=lambda c: value[c])
    return [line, f"- **Where Figure 2's size is reached** (Mamba < 0.01 at alpha = 0.8, all tasks; [factorial]"
                  f"({anchor(SECTION)})): " + (f"{describe(held, list(cases))} ({len(held)} of {len(cases)} settings)"
                                               if held else f"nowhere in the factorial; lowest {value[best]:.3f} at "
                                                            f"{case_name(best)}") + "."]


def error_table(res: dict, rule: str) -> list:
    """One labelling: per kappa_a' and arm, Mamba at both test alphas (all, the cycle's 6, the other
    24) and the linear Transformer (all), pooled over the healthy seeds [95% interval over seeds]."""
    s = res["settings"]
    header = ["kappa_a'", "training, eta"] + [f"Mamba {SUBSET_TEXT[sub]}, alpha = {a:g}" for a in s["table_alphas"]
                                             for sub in ("all", "seen", "unseen")] + \
             [f"LT all tasks, alpha = {a:g}" for a in s["table_alphas"]] + ["healthy seeds (Mamba, LT)"]
    rows = []
    for kappa in s["kappa_a_primes"]:
        for arm in res["arms"]:
            cells = [_rate(_point(res, "mamba", arm, rule, sub, kappa, a)) for a in s["table_alphas"]
                     for sub in ("all", "seen", "unseen")]
            cells += [_rate(_point(res, "linear_transformer", arm, rule, "all", kappa, a)) for a in s["table_alphas"]]
            seeds = ", ".join(f"{sum(res['healthy'][m][arm])} of {s['seeds']}" for m in MODELS)
            rows.append([f"{kappa:g}", ARM_TEXT[arm]] + cells + [seeds])
    return md_table(header, rows)


def breakeven_table(res: dict) -> list:
    """Per model, arm and kappa_a': the ratios (mean ± sample sd over seeds), the break-evens they predict and the measured one."""
    rows = []
    for m in MODELS:
        for arm in res["arms"]:
            b = res["breakeven"][m][arm]
            for k, kappa in enumerate(res["settings"]["kappa_a_primes"]):
                if b["r_gate"][k] is None:
                    continue
                per = [x for x in b["measured_per_seed"][k] if x is not None]
                rows.append([SHORT[m], ARM_TEXT[arm], f"{kappa:g}", f"{b['r_gate'][k]:.2f} ± {b['r_gate_sd'][k]:.2f}",
                             f"{b['r_vote'][k]:.2f} ± {b['r_vote_sd'][k]:.2f}", f"{1 / (1 + b['r_gate'][k]):.2f}",
                             f"{b['predicted_vote'][k]:.2f}", _alpha(b["measured"][k]),
                             (f"{np.mean(per):.2f} ± {sample_sd(per):.2f} ({len(per)})" if per else "-")
                             + (f"; {len(b['measured_per_seed'][k]) - len(per)} beyond the grid"
                                if len(per) < len(b["measured_per_seed"][k]) else ""), str(b["seeds"])])
    return md_table(["model", "training, eta", "kappa_a'", "gate ratio r_G", "vote ratio r_V", "1 / (1 + r_G)",
                     "1 / (1 + r_V) (seed mean)", "measured break-even (pooled)", "measured per seed (mean ± sd, n)",
                     "healthy seeds"], rows)


def _eta_line(res: dict) -> str:
    s = res["settings"]
    chosen = "; ".join(f"{SHORT[m]} " + ", ".join(
        f"{'cycle' if t == 'cycle' else 'all pairs'} {res['eta_rule'][m][t]:g}" + (
            f" (tied with {len(res['step_size'][m][t]['tied']) - 1} other(s): the smaller eta)"
            if len(res["step_size"][m][t].get("tied", ())) > 1 else "") for t in ("cycle", "all")) for m in MODELS)
    return (f"Step sizes: the rule of numpy_mamba/runs/step_size.py (rule [step-size](#rule-step-size)) on each training "
            f"set, held-out prompts from that set (eta grid {', '.join(f'{e:g}' for e in s['eta_grid'])}; "
            f"{s['select_seeds']} selection seed(s)): {chosen}; every candidate's loss is in factorial.json; the cycle's "
            f"is Figure 2's selection. Fixed: eta = {s['eta_fixed']:g} for both models, the gates command's: its "
            "rows against the rule's show what the step size alone does to one point of Figure 2.")


def report(results: dict) -> str:
    """The factorial's part of the "reproduce" section: settings, one error table per labelling, the break-even table."""
    if "factorial" not in results:
        return ""
    res = results["factorial"]
    s = res["settings"]
    diverged = [f"{SHORT[m]} {ARM_TEXT[a]} seed {i} (step {t['diverged_at']})" for m in MODELS
                for a, runs in res["training"][m].items() for i, t in enumerate(runs) if t["diverged_at"] is not None]
    lines = [SECTION, "", f"Figure 2's protocol (one layer, p_a = {res['p_a']:g}, T = {s['T']}, B = {s['B']}, K = {s['K']}, "
             f"l_tr = l_ts = {PAPER['l_tr']}, delta = {PAPER['delta']}; test K' = {s['main_K_prime']:g}, kappa_a' = "
             f"{', '.join(f'{k:g}' for k in s['kappa_a_primes'])} on the same trained models), {s['seeds']} seeds (seed s is "
             f"Figure 2's seed s: same world, initialisation and minibatch stream), {s['n_test']} test prompts per seed "
             "and point from every task of T. Training on Condition 1's cycle sees 6 tasks (\"the cycle's 6\"); on all "
             "pairs it sees all 30, the other 24 included. Untrained: Algorithm 1's initialisation, shared by every arm. "
             "Error pooled over the healthy seeds [95% interval over seeds] (rule [seed-interval](#rule-seed-interval)); "
             "a run past the divergence bound (rule [divergence](#rule-divergence)) is left out, and the seeds behind "
             "each row are counted. Figure: factorial.png.", "", _eta_line(res), "",
             "Diverged runs: " + ("; ".join(diverged) if diverged else "none") + "."]
    for rule in res["label_rules"]:
        lines += ["", f"**Labelling: {rule}**", ""] + error_table(res, rule)
    lines += ["", MECHANISM, "", "Flipped labels. r_G: mean gate G_(i,l+1) on outlier examples over that on clean ones; "
              "r_V: the same for the vote v_i = z ytilde_i G_i s_i each example would cast with its clean label; "
              "1 / (1 + r): the alpha where eq (3)'s expected z F changes sign (derivation in "
              "numpy_mamba/reproduce/factorial.py); measured: where the flipped-label error on all tasks first reaches "
              f"1/2 on alphas {s['curve_alphas'][0]:g}-{s['curve_alphas'][-1]:g} (interpolated; \"beyond the grid\": "
              f"it stays below 1/2). Ratios at alpha = {s['alpha_ratio']:g}, {s['n_test']} prompts per seed; mean ± "
              "sample sd over seeds (rule [sd](#rule-sd)). The linear Transformer has G = 1: r_G = 1 and a break-even "
              "of 1/2 (Theorem 4's limit) unless its attention singles outliers out.", ""] + breakeven_table(res)
    return "\n".join(lines)


ARM_STYLE = {"cycle/rule": ("#0072B2", "-", "o"), "cycle/fixed": ("#56B4E9", "--", "s"),
             "all/rule": ("#009E73", "-", "^"), "all/fixed": ("#8CD17D", "--", "v"), "untrained": (GREY, ":", "x")}


def draw(results: dict, out: Path) -> list:
    """factorial.png: Mamba's error at alpha = 0.8 against kappa_a' per arm (one panel per labelling),
    and the break-even the vote ratio predicts against the measured one (both models)."""
    res = results["factorial"]
    s = res["settings"]
    kappas, end = s["kappa_a_primes"], s["curve_alphas"][-1]
    fig, axes = subplots(1, 4, figsize=(17, 4.6))
    for ax, rule in zip(axes[:3], LABEL_RULES):
        for arm in res["arms"]:
            color, ls, marker = ARM_STYLE[arm]
            ax.plot(kappas, [_point(res, "mamba", arm, rule, "all", k, 0.8)["rate"] for k in kappas], color=color, ls=ls,
                    marker=marker, label=ARM_TEXT[arm])
        ax.axhline(0.01, color="black", ls="--", lw=0.8)
        ax.set_yscale("symlog", linthresh=0.01, linscale=0.5)
        ax.set_ylim(0, 1.05)
        ax.set_xticks(kappas)
        ax.set_xlabel(r"test outlier magnitude $\kappa_a'$")
        ax.set_title(f"Mamba, alpha = 0.8, outlier labels {rule}", fontsize=10)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("test error, all tasks (symlog; dashed: 0.01)")
    axes[0].legend(fontsize=8, title="training tasks, eta", title_fontsize=8)
    ax = axes[3]
    for m, marker in zip(MODELS, ("o", "s")):
        for arm in res["arms"][:-1]:
            b = res["breakeven"][m][arm]
            xs = [x for x in b["predicted_vote"] if x is not None]
            ys = [end if y is None else y for y, x in zip(b["measured"], b["predicted_vote"]) if x is not None]
            ax.scatter(xs, ys, color=ARM_STYLE[arm][0], marker=marker, s=36, edgecolor=COLOR[m], linewidth=1.2)
    ax.plot([0.3, 1.0], [0.3, 1.0], color="black", lw=0.8)
    ax.axhline(end, color=GREY, ls=":", lw=0.8)
    ax.set_xlim(0.3, 1.0)
    ax.set_ylim(0.3, 1.0)
    ax.set_xlabel(r"predicted break-even $1/(1 + r_V)$")
    ax.set_ylabel(r"measured: flipped-label error reaches 1/2")
    ax.set_title("the gate and the break-even (circles: Mamba, squares: LT)", fontsize=10)
    ax.grid(alpha=0.3)
    fig.suptitle("Why Figure 2 misses: training tasks x step size x test outlier magnitude (Figure 2's protocol)")
    footnote(fig, f"Training: p_a = {res['p_a']:g}, T = {s['T']}, B = {s['B']}, rule's eta (Mamba cycle / all pairs "
                  f"{res['eta_rule']['mamba']['cycle']:g} / {res['eta_rule']['mamba']['all']:g}) or {s['eta_fixed']:g}; {s['seeds']} "
                  f"seeds x {s['n_test']} test prompts per point, K' = {s['main_K_prime']:g}; points on the dotted line: "
                  "error below 1/2 up to the grid's end.", "One-layer models of eq (3), as in the paper's Figure 2")
    fig.tight_layout(rect=(0, 0.08, 1, 0.95))
    return [save(fig, Path(out) / "factorial.png", res)]

"""Numerical checks of the paper's theory: ``python -m numpy_mamba theory``, one experiment per module.

    convergence.py  Theorems 1 and 3, Remark 4: steps to converge against p_a and l_tr
    tolerance.py    Theorems 2 and 4, Remark 5, Theorem 4 (d): the tolerated outlier fraction, and the
                    step-size rule of the "alpha" experiments (Corollary 1 asks for the same)
    attention.py    Corollary 1: attention sums by task group
    gates.py        Corollary 2 and Lemma 5 across M1, with its own step size per M1
    lemmas.py       Lemmas 4-6 along one training run
    measure.py      what they share: the world, the settings' JSON form, steps to a loss, error curves, slopes
    plots.py        the theory_*.png figures
    templates/      the sentences of the "theory" section of REPORT.md, one template per experiment

``COMMAND`` is the ``theory`` command (``runs.experiment.Command``): its registry, the section's head
and theory_summary.json (run times and every verdict), a file of the whole command.  Each experiment
keeps its verdicts in its own JSON (``judge``), judged by the rules of ``measure.rules`` after a run
and on ``--replot`` alike.
"""
from ..data import SECTION4
from ..runs.claims import opening, overflow_details
from ..runs.experiment import Command
from ..runs.output import SMOKE
from ..runs.report import Template
from ..sgd import TrainConfig
from . import attention, convergence, gates, lemmas, tolerance

DOC = """Numerical checks of Theorems 1-4, Corollaries 1-2 and Lemmas 4-6, written to theory_*.png, theory_*.json
and the "theory" section of REPORT.md.

The theorems hold up to constants, so each check measures a trend (a slope on log-log axes, a sign, an order of
magnitude) and gives a verdict computed from the numbers by the rule it names (measure/rules.py): "holds", "holds
in part", "holds in trend" or "does not hold here"."""
EXPERIMENTS = (convergence, tolerance, attention, gates, lemmas)
TEXT = Template(__package__, "theory.md")


def heading(quick: bool) -> str:
    """The section's heading (stamped for a smoke run)."""
    return TEXT("heading", command="python -m numpy_mamba theory" + " --quick" * quick) + (f" -- {SMOKE}" if quick else "")


def timings(results: dict, run) -> dict:
    """Seconds per experiment (its units and the step-size selections it asked for first), the whole
    run's and the workers: as theory_summary.json records them (on --replot, as the run did)."""
    if "theory_summary" in results:
        return results["theory_summary"]["timings_seconds"]
    return {**run.seconds, "total": run.wall, "workers (--jobs)": run.jobs}


def section(results: dict, run, rows: list, heads: list) -> str:
    """The "theory" section: heading, opening, smoke stamp, how the verdicts are made, one part per
    experiment, the claims that overflow the results table, the run times."""
    times = timings(results, run)
    first = next(results[f] for e in EXPERIMENTS for f in e.FILES if f in results)
    world = ", ".join(f"{name} = {value:g}" for name, value in first["world"].items())
    lines = [heading(run.quick), "", *opening(TEXT("first", command=first["command"], total=times["total"],
                                                       jobs=times.get("workers (--jobs)", 1), world=world,
                                                       kappa_a=SECTION4.kappa_a, K=TrainConfig.K,
                                                       world_seed=first["world_seed"]), rows, heads), ""]
    if run.quick:
        lines += [TEXT("smoke", smoke=SMOKE), ""]
    lines += [TEXT("intro"), ""]
    lines += [line for e in EXPERIMENTS if all(f in results for f in e.FILES) for line in (e.report(results, run), "")]
    times_text = ", ".join(f"{k}: {v}" for k, v in times.items())
    return "\n".join(lines + overflow_details(rows) + [TEXT("times", times=times_text)])


def summary_file(results: dict, run) -> dict:
    """theory_summary.json: the run times and every headline number and verdict, when every experiment's
    results are at hand (a whole run, or --replot); the header of the others' JSON."""
    if not all(f in results for e in EXPERIMENTS for f in e.FILES):
        return {}
    c, a = results["theory_convergence"], results["theory_alpha"]
    p, l, lt, alpha = c["p_a"], c["l_tr"], a["lt_context"], a["alpha"]
    att, g, t = results["theory_attention"], results["theory_gates"], results["theory_lemmas"]
    detail = lambda res, key: res.get("verdict_detail", {}).get(key)                  # noqa: E731
    return {"theory_summary": {
        "world": c["world"], "world_seed": c["world_seed"], "command": c["command"],
        "timings_seconds": timings(results, run),
        "summary": {
            "thm1_slope_T_M_vs_inv_1_minus_p_a": p["slope"]["mamba"], "thm1_verdict": p["verdict"]["mamba"],
            "thm3_slope_T_T_vs_inv_1_minus_p_a": p["slope"]["linear_transformer"],
            "thm3_verdict": p["verdict"]["linear_transformer"],
            "slope_T_M_vs_l_tr": l["slope"]["mamba"], "slope_T_T_vs_l_tr": l["slope"]["linear_transformer"],
            "slope_ratio_vs_l_tr": l["slope"]["ratio"], "ratio_verdict": l["verdict"]["ratio"],
            "thm1_detail": detail(p, "mamba"), "thm3_detail": detail(p, "linear_transformer"),
            "thm2_fraction_meeting_bound": alpha["mamba_fraction_meeting_bound"], "thm2_verdict": alpha["verdict"]["mamba"],
            "thm2_detail": detail(alpha, "mamba"),
            "remark5_verdict": alpha["verdict"].get("remark5"), "remark5_detail": detail(alpha, "remark5"),
            "step_size_chosen": alpha["settings"].get("eta"),
            "thm4_max_alpha_star": alpha["lt_alpha_star_max"], "thm4_verdict": alpha["verdict"]["linear_transformer"],
            "thm4_detail": detail(alpha, "linear_transformer"),
            "thm4d_slope": lt["slope"], "thm4d_verdict": lt["verdict"],
            "cor1_verdict": att.get("verdict"), "cor1_by_task_group": att.get("corollary1"),
            "thm1_slope_low_p_a": p["slope"].get("mamba_low_p_a"),
            "thm3_slope_low_p_a": p["slope"].get("linear_transformer_low_p_a"),
            "cor2_slope_G_outlier_vs_M1": g["slope_G_outlier_vs_M1"],
            "cor2_decay_bits_per_rank": g["decay_rate_per_rank"]["mean"],
            "cor2_lemma5_verdicts": g["verdict"], "cor2_gate_ratio_detail": detail(g, "cor2_gate_ratio"),
            "lemma4_6_verdicts": t["verdict"]}}}


COMMAND = Command("theory", EXPERIMENTS, DOC, heading, section, rules_after=("step-size", "divergence", "sd"),
                  extra=summary_file, kept=("theory_summary",))

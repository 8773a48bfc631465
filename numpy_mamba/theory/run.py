"""``python -m numpy_mamba theory [--quick]``: numerical checks of Theorems 1-4, Corollaries 1-2
and Lemmas 4-6, written to figures/theory_*.png, figures/theory_*.json and the "theory" section
of figures/REPORT.md.

The theorems hold up to constants, so each check measures a trend (a slope on log-log axes,
a sign, an order of magnitude) and gives a one-line verdict computed from the numbers, in the
vocabulary of ``measure.rules``: "holds", "holds in part", "holds in trend" or "does not hold
here".  ``--quick`` runs the same code on tiny grids (for the tests); its numbers are not meant
to be read.  ``--jobs N`` runs the independent training runs N at a time in worker processes
(same numbers for every N).
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from ..data import make_world
from ..runs.args import help_text
from ..runs.jobs import add_jobs_argument, run_plans
from ..runs.output import save_json, write_section
from ..runs.claims import save_claims, write_results
from ..runs.staging import run_staged
from ..runs.summary import print_claims_summary
from . import plots, report as report_text
from .claims import judge, summary
from .rows import RULES, rows
from .mechanism import analyse_trajectory, attention_sums, gates_vs_M1, training_trajectory
from .settings import FULL, QUICK, WORLD, TheorySettings
from .step_sizes import chosen_by_M1, chosen_steps, gates_step_size_plans, step_size_plans
from .theorems import convergence_vs_l_tr, convergence_vs_p_a, lt_context_needed, tolerated_alpha

# the experiments, in the order their results are reported; their names in the timings
EXPERIMENTS = {"step_size": "step sizes (rule of runs/step_size.py)",
               "convergence_p_a": "Theorems 1/3 vs p_a", "convergence_l_tr": "Theorems 1/3 vs l_tr",
               "alpha": "Theorems 2/4: tolerated alpha", "lt_context": "Theorem 4 (d): context needed",
               "attention": "Corollary 1", "gates": "Corollary 2 / Lemma 5 vs M1",
               "trajectory": "Lemmas 4-6 trajectory"}


def run(settings: TheorySettings, jobs: int = 1, progress=True) -> tuple[dict, dict]:
    """Run every check (``jobs`` training runs at a time); return (results, timings in seconds:
    per experiment its units' compute time summed, "total" the wall time).  Every result carries
    its settings and its verdicts (``claims.judge`` once all are in: Theorem 4 reads two experiments).

    First the step-size rule picks eta per model for the "alpha" experiments (Theorems 2 and 4,
    Remark 5, Corollary 1) and for Mamba at each M1 (Corollary 2, Lemma 5); the experiments run
    with those choices (settings.alpha.eta = {model: {p_a: eta}}, settings.M1.eta = {M1: eta}), and
    results["step_size"] and results["gates"]["step_size"] hold every candidate's held-out loss.
    The convergence and trajectory experiments keep one small eta for both models: their claims
    are step counts, which scale as 1/eta (eqs (9), (14); Lemma 6's window), so eta is part of
    what they compare and small eta gives the counts resolution."""
    world = make_world(**WORLD, rng=settings.world_seed)
    t0 = time.perf_counter()
    records, step_seconds = run_plans({**step_size_plans(world, settings.alpha), **gates_step_size_plans(settings.M1)},
                                      jobs=jobs, name="theory step size", progress=progress)
    eta, step_size = chosen_steps(settings.alpha, records)
    eta_M1, step_size_M1 = chosen_by_M1(settings.M1, records)
    alpha, M1 = replace(settings.alpha, eta=eta), replace(settings.M1, eta=eta_M1)
    plans = {"convergence_p_a": convergence_vs_p_a(world, settings.p_a),
             "convergence_l_tr": convergence_vs_l_tr(world, settings.l_tr),
             "alpha": tolerated_alpha(world, alpha),
             "lt_context": lt_context_needed(world, alpha),
             "attention": attention_sums(world, alpha),
             "gates": gates_vs_M1(M1),
             "trajectory": training_trajectory(world, settings.trajectory)}
    results, seconds = run_plans(plans, jobs=jobs, name="theory", progress=progress)
    results["step_size"] = step_size
    results["gates"]["step_size"] = step_size_M1
    seconds["step_size"] = round(sum(step_seconds.values()), 1)
    judge(results)
    timings = {EXPERIMENTS[k]: seconds[k] for k in EXPERIMENTS}
    timings.update({"total": round(time.perf_counter() - t0, 1), "workers (--jobs)": jobs})
    return results, timings


def write_outputs(results: dict, timings: dict, common: dict, out: Path, report: Path | None,
                  start: float | None = None, folders=()) -> None:
    """Figures, JSON and the report section from judged ``results`` (also used by --replot).
    ``common``: what every JSON records ({"world", "world_seed", "command"}).  With ``start`` (a
    time.perf_counter() reading), timings["total"] is taken once the figures are drawn: the one
    elapsed time the JSON, the report and the terminal state.  ``folders``: where the other commands'
    claims files are (the results table at the top of the report reads them with this command's)."""
    files = {
        "convergence": plots.convergence(results["convergence_p_a"], results["convergence_l_tr"],
                                         out / "theory_convergence.png"),
        "alpha": plots.tolerated(results["alpha"], results["lt_context"], out / "theory_alpha.png"),
        "attention": plots.attention(results["attention"], out / "theory_attention.png"),
        "gates": plots.gates(results["gates"], out / "theory_gates.png"),
        "trajectory": plots.trajectory(results["trajectory"], out / "theory_lemmas.png"),
    }
    if start is not None:
        timings["total"] = round(time.perf_counter() - start, 1)
    save_json(out / "theory_convergence.json", dict(common, p_a=results["convergence_p_a"], l_tr=results["convergence_l_tr"]))
    save_json(out / "theory_alpha.json", dict(common, alpha=results["alpha"], lt_context=results["lt_context"],
                                              step_size=results.get("step_size")))
    save_json(out / "theory_attention.json", dict(common, **results["attention"]))
    save_json(out / "theory_gates.json", dict(common, **results["gates"]))
    save_json(out / "theory_lemmas.json", dict(common, **results["trajectory"]))
    save_json(out / "theory_summary.json", dict(common, timings_seconds=timings,
                                                 summary=summary(results)))
    claim_rows = rows(results)
    save_claims(out, "theory", claim_rows, RULES, "--quick" in common["command"],
                heading=report_text.heading(common["command"]))
    if report is not None:
        write_section(report, "theory", report_text.markdown(results, timings, common, files, claim_rows))
        write_results(report, *folders, out)


def replot(out: Path, dest: Path, report: Path | None) -> None:
    """Redraw the figures and the report section into ``dest`` from the JSON of an earlier run in
    ``out``: its raw numbers judged by the rules of ``claims.judge`` and ``analyse_trajectory``."""
    load = lambda name: json.loads((out / f"theory_{name}.json").read_text())   # noqa: E731
    try:
        conv, alpha, saved_summary = load("convergence"), load("alpha"), load("summary")
        results = {"convergence_p_a": conv["p_a"], "convergence_l_tr": conv["l_tr"], "alpha": alpha["alpha"],
                   "lt_context": alpha["lt_context"], "step_size": alpha.get("step_size"),
                   "attention": load("attention"), "gates": load("gates"),
                   "trajectory": analyse_trajectory(load("lemmas"), WORLD["M1"], WORLD["beta"], WORLD["V"])}
    except (FileNotFoundError, KeyError) as exc:
        raise SystemExit(f"--replot needs the theory_*.json files of an earlier run in {out}: {exc}") from None
    common = {"world": conv["world"], "world_seed": conv["world_seed"], "command": conv["command"]}
    write_outputs(judge(results), saved_summary["timings_seconds"], common, dest, report, folders=(out,))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m numpy_mamba theory", description=help_text(__doc__.split("\n\n")[0]))
    parser.add_argument("--quick", action="store_true", help="tiny grids (seconds); numbers not meant to be read")
    parser.add_argument("--out", default=None,
                        help="directory for theory_*.png / theory_*.json (default: figures; with --quick a new "
                             "temporary folder, so a quick run never overwrites the committed results)")
    parser.add_argument("--report", default=None,
                        help="Markdown report whose 'theory' section is rewritten (default: OUT/REPORT.md)")
    parser.add_argument("--replot", action="store_true",
                        help="redraw figures and the report from the JSON of an earlier run in OUT (no training)")
    parser.add_argument("--no-report", action="store_true", help="do not touch the report")
    add_jobs_argument(parser)
    args = parser.parse_args(argv)
    settings = QUICK if args.quick else FULL
    command = "python -m numpy_mamba theory" + (" --quick" if args.quick else "")
    out = Path(args.out or (tempfile.mkdtemp(prefix="theory_quick_") if args.quick else "figures"))
    report = Path(args.report) if args.report else None
    start = time.perf_counter()
    elapsed = {}

    def work(stage):
        section = None if args.no_report else stage.report
        if args.replot:
            return replot(out, stage.dir, section)
        results, timings = run(settings, jobs=args.jobs)
        print(f"[theory] writing figures, JSON and the report section of {out}", file=sys.stderr, flush=True)
        common = {"world": WORLD, "world_seed": settings.world_seed, "command": command}
        write_outputs(results, timings, common, stage.dir, section, start, folders=(out,))
        elapsed["seconds"] = timings["total"]       # the report's, the JSON's and the terminal's time

    code = run_staged("theory", out, work, report=report)
    if code != 0:
        return code
    if args.replot:        # the report keeps the time of the run it was drawn from
        seconds = json.loads((out / "theory_summary.json").read_text())["timings_seconds"]["total"]
        print(f"[theory] replotted in {time.perf_counter() - start:.1f} s", file=sys.stderr)
    else:
        seconds = elapsed["seconds"]
    print_claims_summary("theory", out / "claims_theory.json", out, seconds, quick=args.quick,
                         report=None if args.no_report else (report or out / "REPORT.md"))
    return 0

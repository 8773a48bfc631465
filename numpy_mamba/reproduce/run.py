"""``python -m numpy_mamba reproduce``: the experiments of the paper's Section 4 in one command.

    Figure 2 (A, B, C)  test error against the outlier fraction alpha     -> fig2*.png, fig2.json
    Figure 3            attention scores during training (Corollary 1)    -> fig3.png, fig3.json
    Figure 4            gate values on outlier / clean examples (Cor. 2)  -> fig4.png, fig4.json
    Table 1             accuracy with outliers farthest / random / closest -> table1.png/.md/.json
    depth3              Section 4.2 with three-layer models (stack.py): Figures 3-4 for layer 1,
                        Figures 5-6 (Appendix B) for layers 2-3, Table 1 -> depth3.json,
                        fig3_L3.png, fig4_L3.png, fig5.png, fig6.png, table1_L3.png/.md
    REPORT.md           section "reproduce": paper vs ours, claim by claim

fig2-table1 with the one-layer model of eq (3).  ``--quick`` runs the same pipeline at reduced size.
The JSON files are written first; figures and report are drawn from the JSON as saved.
``--jobs N`` runs the independent units (step-size candidates, training seeds) N at a time in
worker processes (same numbers for every N).  Output is all or nothing: files are written into
a staging folder inside --out and moved into place only when everything is done.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from . import depth3, fig2, figures, figures_depth3, mechanism, plots, report as report_text
from .claims_mechanism import experiment_names
from .common import MODELS, eta_selection, save_result, settings_for
from ..runs.args import positive_int
from ..runs.jobs import add_jobs_argument, run_plans
from ..runs.output import write_section
from ..runs.staging import run_staged

EXPERIMENTS = ("fig2", "fig3", "fig4", "table1", "depth3")
JSON_NAMES = EXPERIMENTS            # the JSON files a full run writes (NAME.json)


def parse_only(values) -> tuple:
    """``--only`` values (repeatable, comma lists) -> the experiments to run, in a fixed order."""
    if not values:
        return EXPERIMENTS
    chosen = {v.strip() for value in values for v in value.split(",") if v.strip()}
    unknown = chosen - set(EXPERIMENTS)
    if unknown or not chosen:
        raise ValueError(f"--only takes {', '.join(EXPERIMENTS)} (repeatable or comma-separated); "
                         f"got {sorted(unknown) or values}.")
    return tuple(e for e in EXPERIMENTS if e in chosen)


def load_results(out: Path) -> dict:
    """Every experiment JSON present in ``out`` (ours, and any the claims table looks for), as saved."""
    return {name: json.loads((out / f"{name}.json").read_text())
            for name in experiment_names() if (out / f"{name}.json").exists()}


def draw(name: str, result: dict, out: Path) -> list:
    """Write the figures (and Table 1's Markdown) of one experiment; return their paths."""
    if name == "fig2":
        low = min(result["settings"]["kappa_a_primes"])
        return [plots.fig2(result, out / "fig2.png"),
                plots.fig2(result, out / f"fig2_kappa{low:g}.png", kappa_a_prime=low),
                plots.fig2_sensitivity(result, out / "fig2_sensitivity.png"),
                plots.fig2_training(result, out / "fig2_training.png")]
    if name == "fig3":
        return [figures.fig3(result, out / "fig3.png")]
    if name == "fig4":
        return [figures.fig4(result, out / "fig4.png")]
    if name == "depth3":
        return figures_depth3.draw(result, out)
    md = out / "table1.md"
    md.write_text(report_text.table1_markdown(result) + "\n")
    return [figures.table1_png(result, out / "table1.png"), md]


def compute(settings, only=EXPERIMENTS, jobs: int = 1, progress=True, depth_settings=None) -> tuple[dict, dict]:
    """Run the chosen experiments as independent units, ``jobs`` at a time (same numbers for every
    ``jobs``): first the step-size rule (one unit per candidate and selection seed), then the
    training seeds with the chosen step sizes (one unit per seed and experiment).

    ``depth_settings``: the three-layer part's (default ``depth3.depth3_settings(settings.quick)``).
    Returns ({JSON name: result}, {phase or experiment: seconds of its units, summed}).
    """
    deep = depth_settings or depth3.depth3_settings(settings.quick)
    parts = tuple(p for p in mechanism.PARTS if p in only)
    selection_plans = {}                    # the slow three-layer units first, so no worker idles at the end
    if "depth3" in only:
        selection_plans.update({("depth3", m): plan for m, plan in depth3.selection_plans(deep).items()})
    if "fig2" in only:
        selection_plans.update({("fig2", m): plan for m, plan in eta_selection(settings, settings.p_a_fig2, "fig2").items()})
    if parts:
        selection_plans.update({("mechanism", m): plan for m, plan in
                                eta_selection(settings, settings.p_a_mechanism, "fig3/4,table1").items()})
    chosen, seconds = run_plans(selection_plans, jobs=jobs, name="reproduce: step sizes", progress=progress)
    plans = {}
    if "depth3" in only:
        plans["depth3"] = depth3.plan(deep, {m: chosen[("depth3", m)] for m in MODELS})
    if "fig2" in only:
        plans["fig2"] = fig2.plan(settings, {m: chosen[("fig2", m)] for m in MODELS})
    if parts:
        plans["mechanism"] = mechanism.plan(settings, parts, {m: chosen[("mechanism", m)] for m in MODELS})
    found, trained = run_plans(plans, jobs=jobs, name="reproduce: training seeds", progress=progress)
    results = {}
    for name, result in found.items():
        for key, value in (result.items() if name == "mechanism" else [(name, result)]):
            value["seconds"] = trained[name] + sum(t for (n, _), t in seconds.items() if n == name)
            results[key] = value
    timings = {f"step size ({n}, {m})": t for (n, m), t in seconds.items()}
    timings.update(trained)
    return results, timings


def write_outputs(results: dict, only, stage_dir: Path, out: Path, report: Path, seconds: float) -> list:
    """Save the JSON into ``stage_dir``, draw the figures from the JSON as saved, and write the
    "reproduce" section into ``report`` from every result present (this run's, else ``out``'s)."""
    written = [save_result(stage_dir / f"{name}.json", result) for name, result in results.items()]
    saved = {**load_results(out), **load_results(stage_dir)}
    for name in only:
        written += draw(name, saved[name], stage_dir)
    written.append(write_section(report, "reproduce", report_text.build(saved, seconds)))
    return written


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m numpy_mamba reproduce", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="same pipeline at reduced size (2 seeds, T = 300, 200 test prompts per point; ~15 s)")
    parser.add_argument("--only", action="append", metavar="fig2|fig3|fig4|table1|depth3",
                        help="run only these experiments (repeatable or comma list); default: all")
    parser.add_argument("--seeds", type=positive_int, default=None, help="number of training seeds of the one-layer experiments (default 10; quick 2); "
                        "the three-layer part (depth3) has its own (3; quick 1)")
    parser.add_argument("--out", default=None,
                        help="output folder (default figures/; with --quick a new temporary folder, so a "
                             "quick run never overwrites the committed full-run results)")
    add_jobs_argument(parser)
    args = parser.parse_args(argv)
    try:
        only = parse_only(args.only)
        settings = settings_for(args.quick, args.seeds)
    except ValueError as exc:
        parser.error(str(exc))
    out = Path(args.out or (tempfile.mkdtemp(prefix="reproduce_quick_") if args.quick else "figures"))
    start = time.perf_counter()

    def work(stage):
        results, _ = compute(settings, only, jobs=args.jobs)
        print(f"[reproduce] writing JSON, figures and the report section of {out}", file=sys.stderr, flush=True)
        write_outputs(results, only, stage.dir, out, stage.report, time.perf_counter() - start)

    code = run_staged("reproduce", out, work)
    if code == 0:
        seconds = time.perf_counter() - start
        print(report_text.stdout_summary(load_results(out), seconds))
        print(f"reproduce: {', '.join(only)} done in {seconds:.1f} s with --jobs {args.jobs}; results in {out}",
              file=sys.stderr)
    return code

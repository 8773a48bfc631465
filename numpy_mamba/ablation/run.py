"""``python -m numpy_mamba ablation``: why the trained models miss Table 1's prompts on one task group.

With targeted outlier labels at kappa_a' = 2 the trained models are right on almost every test
prompt except those of tasks whose two patterns are two steps apart on the cycle of Condition 1's
training tasks (task groups: ``measure.tasks.task_groups``).  This ablation varies one factor at a
time from a baseline (the Condition 1 cycle T_tr, T_short SGD steps, the residual stack of
stack.py) at one and three layers, for Mamba and the linear Transformer, over several seeds:

    untrained      : Algorithm 1's initialisation (step 0 of the baseline runs)
    all_pairs      : train on every ordered pair of T (which satisfies Condition 1 too) instead of T_tr
    long           : T_long steps instead of T_short (the same run, continued)
    all_pairs_long : both (the all-pairs run, continued)
    heldout        : every ordered pair but the held-out ones (settings.HELD_OUT), which stay unseen
    prenorm        : three layers only, H^(k) = H^(k-1) + O^(k)(RMSNorm(H^(k-1))) (stack.py, rmsnorm.py)

and measures the accuracy per task group on Table 1's FQ, R and CQ prompts (alpha = 0.5, labels
targeted to +1, kappa_a' = 2) and on clean prompts (alpha = 0), from every task and from the
held-out pairs only; and every layer's mechanism: the cross-pattern score S(a, b) = (mu_b, 0)^T
W_B^T W_C (mu_a, 0) by the signed step b - a on the cycle, split into the initial term, the terms
linear in the update and their product (terms.py), and the attention scores on the layers' inputs.

delta = 0.2 (Section 4) wherever it trains: the step-size rule of runs/step_size.py runs at
delta = 0.2 over ``eta_grid``; only if every eta diverges there does it run at the next delta of
(0.2, 0.1, 0.05).  It runs per model and architecture on a selection world, on held-out training
prompts only, with the baseline's T_short steps (units.py says which streams every run uses).
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from ..runs.args import help_text, positive_int
from ..runs.jobs import add_jobs_argument, run_plans
from ..runs.output import save_compact_json, write_section
from ..runs.claims import save_claims, write_results
from ..runs.staging import run_staged
from ..runs.summary import print_claims_summary
from .claims import ABLATION_RULES, HEADING, claims, summary
from .settings import FULL, QUICK, AblationSettings
from .units import choose_steps, plan


def compute(settings: AblationSettings, jobs: int = 1, progress=True) -> dict:
    """Step sizes, then every run; the assembled "ablation" result with its run time."""
    start = time.perf_counter()
    steps = choose_steps(settings, jobs, progress)
    found, _ = run_plans({"ablation": plan(settings, steps)}, jobs=jobs, name="ablation: training runs", progress=progress)
    return {**found["ablation"], "seconds": round(time.perf_counter() - start, 1), "jobs": jobs}


def saved_result(out: Path) -> dict:
    """The ablation.json of an earlier run in ``out`` (for --replot); SystemExit saying what is missing."""
    try:
        return json.loads((out / "ablation.json").read_text())
    except (OSError, ValueError) as exc:
        raise SystemExit(f"--replot needs the ablation.json of an earlier run in {out}: {exc}") from None


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m numpy_mamba ablation", description=help_text(__doc__),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smoke run at tiny size (2 seeds, T = 4/8); stamped as such")
    parser.add_argument("--seeds", type=positive_int, default=None, help=f"training seeds (default {FULL.seeds}; quick {QUICK.seeds})")
    parser.add_argument("--out", default=None, help="output folder (default figures/; with --quick a new temporary folder)")
    parser.add_argument("--report", default=None, help="the report whose 'ablation' section is written (default OUT/REPORT.md)")
    parser.add_argument("--replot", action="store_true",
                        help="redraw ablation.png and the report section from OUT/ablation.json of an earlier run (no training)")
    add_jobs_argument(parser)
    args = parser.parse_args(argv)
    settings = QUICK if args.quick else FULL
    if args.seeds is not None:
        settings = replace(settings, seeds=args.seeds)
    out = Path(args.out or (tempfile.mkdtemp(prefix="ablation_quick_") if args.quick else "figures"))

    def work(stage):
        from .figure import figure                     # matplotlib only when drawing
        from .report import report_section
        if args.replot:
            result = saved_result(out)
        else:
            result = compute(settings, jobs=args.jobs)
            print(f"[ablation] writing ablation.json, ablation.png and the report section into {out}", file=sys.stderr,
                  flush=True)
            save_compact_json(stage.dir / "ablation.json", result)
        figure(result, stage.dir / "ablation.png")
        write_section(stage.report, "ablation", report_section(result))
        save_claims(stage.dir, "ablation", claims(result), ABLATION_RULES, result["settings"]["quick"], heading=HEADING,
                    summary=summary(result))
        write_results(stage.report, out, stage.dir)
        elapsed["seconds"] = result["seconds"]

    elapsed = {}
    code = run_staged("ablation", out, work, report=args.report)
    if code == 0:
        print_claims_summary("ablation", out / "claims_ablation.json", out, elapsed["seconds"], quick=args.quick,
                             report=Path(args.report) if args.report else out / "REPORT.md",
                             time_stated_in="the report; --replot keeps the run's own time")
    return code

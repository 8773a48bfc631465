"""``python -m numpy_mamba reproduce``: the experiments of the paper's Section 4 (Figures 2-6 and
Table 1) in one command, each experiment a module of the registry ``registry.EXPERIMENTS``;
what each computes and writes:

fig2, fig3, fig4 and table1 train the one-layer models of eq (3), depth3 the three-layer stacks of
stack.py.  ``--quick`` runs the same pipeline at reduced size.
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

from . import registry, report as report_text
from .common import FULL, QUICK, settings_for
from ..runs.args import help_text, positive_int
from ..runs.jobs import add_jobs_argument, run_plans
from ..runs.output import save_compact_json, write_section
from ..runs.claims import save_claims, write_results
from ..runs.staging import run_staged
from ..runs.summary import print_claims_summary

def parse_only(values) -> tuple:
    """``--only`` values (repeatable, comma lists) -> the experiments to run, in registry order."""
    names = registry.json_names()
    if not values:
        return names
    chosen = {v.strip() for value in values for v in value.split(",") if v.strip()}
    unknown = chosen - set(names)
    if unknown or not chosen:
        raise ValueError(f"--only takes {', '.join(names)} (repeatable or comma-separated); "
                         f"got {sorted(unknown) or values}.")
    return tuple(e for e in names if e in chosen)


def load_results(out: Path) -> dict:
    """Every experiment JSON present in ``out`` (ours, and any the claims table looks for), as saved."""
    return {name: json.loads((out / f"{name}.json").read_text())
            for name in registry.json_names() if (out / f"{name}.json").exists()}


def compute(settings, only=None, jobs: int = 1, progress=True) -> tuple[dict, dict]:
    """Run the chosen experiments (``only``: JSON names, default all) as independent units, ``jobs``
    at a time (same numbers for every ``jobs``): first the step-size rule (one unit per selection
    seed, its candidates trained together), then the training seeds with the chosen step sizes (one
    unit per seed and experiment).

    ``settings``: the run's one-layer settings; each experiment derives its own from them
    (``Experiment.settings``).  Returns ({JSON name: result}, {phase or experiment: seconds of its
    units, summed}).
    """
    only = registry.json_names() if only is None else only
    asked = {e: tuple(n for n in e.json_names if n in only) for e in reversed(registry.EXPERIMENTS)}   # slowest first
    asked = {e: names for e, names in asked.items() if names}
    selections = {e: e.selection(e.settings(settings)) for e in asked}
    owner, selection_plans = {}, {}             # a selection two experiments share runs once, as the first one's
    for e in (e for e in registry.EXPERIMENTS if e in selections):
        for key, plan in selections[e].items():
            owner.setdefault(key, e.name)
            selection_plans.setdefault(key, plan)
    chosen, seconds = run_plans(selection_plans, jobs=jobs, name="reproduce: step sizes", progress=progress)
    plans = {e.name: e.plan(e.settings(settings), {key: chosen[key] for key in selections[e]}, names)
             for e, names in asked.items()}
    found, trained = run_plans(plans, jobs=jobs, name="reproduce: training seeds", progress=progress)
    results = {}
    for name, written in found.items():
        for key, value in written.items():
            value["seconds"] = trained[name] + sum(t for k, t in seconds.items() if owner[k] == name)
            results[key] = value
    timings = {f"step sizes ({name})": sum(t for k, t in seconds.items() if owner[k] == name) for name in set(owner.values())}
    timings.update(trained)
    return results, timings


def write_files(results: dict, only, stage_dir: Path, out: Path) -> tuple[list, dict]:
    """Save the JSON into ``stage_dir`` and draw the figures from the JSON as saved; return the
    paths written and every result present (this run's, else ``out``'s), for the report."""
    written = [save_compact_json(stage_dir / f"{name}.json", result) for name, result in results.items()]
    saved = {**load_results(out), **load_results(stage_dir)}
    for experiment in registry.EXPERIMENTS:
        drawn = {name: saved[name] for name in experiment.json_names if name in only}
        if drawn:
            written += experiment.draw(drawn, stage_dir)
    return written, saved


def write_outputs(results: dict, only, stage_dir: Path, out: Path, report: Path, seconds: float, quick: bool) -> list:
    """``write_files``, then the "reproduce" section into ``report`` (stating ``seconds``), the claims
    file and the results table (this run's rows with every other command's in ``out``)."""
    written, saved = write_files(results, only, stage_dir, out)
    written.append(write_section(report, "reproduce", report_text.build(saved, seconds)))
    written.append(save_claims(stage_dir, "reproduce", quick=quick, **report_text.claims_file(saved)))
    return written + [write_results(report, out, stage_dir)]


def description() -> str:
    """The ``--help`` text: this module's docstring with every experiment's ``outputs`` lines after its first paragraph."""
    head, tail = __doc__.split("\n\n", 1)
    lines = [line for experiment in registry.EXPERIMENTS for line in experiment.outputs.splitlines()]
    lines.append('REPORT.md           section "reproduce": paper vs ours, claim by claim')
    return head + "\n\n" + "\n".join("    " + line for line in lines) + "\n\n" + tail


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m numpy_mamba reproduce", description=help_text(description()),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    own_seeds = "; ".join(f"{e.name} keeps its own ({e.settings(FULL).seeds}; quick {e.settings(QUICK).seeds})"
                          for e in registry.EXPERIMENTS
                          if e.settings(FULL).seeds != FULL.seeds or e.settings(QUICK).seeds != QUICK.seeds)
    parser.add_argument("--quick", action="store_true",
                        help=f"same pipeline at reduced size ({QUICK.seeds} seeds, T = {QUICK.T}, {QUICK.n_test} test "
                             "prompts per point): a smoke run, stamped as such on every output")
    parser.add_argument("--only", action="append", metavar="|".join(registry.json_names()),
                        help="run only these experiments (repeatable or comma list); default: all")
    parser.add_argument("--seeds", type=positive_int, default=None,
                        help=f"number of training seeds of the one-layer experiments (default {FULL.seeds}; quick "
                             f"{QUICK.seeds})" + (f"; {own_seeds}" if own_seeds else ""))
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
    elapsed = {}

    def work(stage):
        results, _ = compute(settings, only, jobs=args.jobs)
        print(f"[reproduce] writing JSON, figures and the report section of {out}", file=sys.stderr, flush=True)
        elapsed["seconds"] = time.perf_counter() - start        # one number: the report's and the terminal's
        write_outputs(results, only, stage.dir, out, stage.report, elapsed["seconds"], args.quick)

    code = run_staged("reproduce", out, work)
    if code == 0:
        print_claims_summary("reproduce", out / "claims_reproduce.json", out, elapsed["seconds"], quick=args.quick,
                             report=out / "REPORT.md")
    return code

"""``python -m numpy_mamba reproduce``: the experiments of the paper's Section 4 in one command.

    Figure 2 (A, B, C)  test error against the outlier fraction alpha     -> fig2*.png, fig2.json
    Figure 3            attention scores during training (Corollary 1)    -> fig3.png, fig3.json
    Figure 4            gate values on outlier / clean examples (Cor. 2)  -> fig4.png, fig4.json
    Table 1             accuracy with outliers farthest / random / closest -> table1.png/.md/.json
    REPORT.md           section "reproduce": paper vs ours, claim by claim

All with the one-layer model of eq (3).  ``--quick`` runs the same pipeline at reduced size.
The JSON files are written first; figures and report are drawn from the JSON as saved.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from . import fig2, figures, mechanism, plots, report
from .claims_mechanism import experiment_names
from .common import save_result, settings_for
from ..cli.output import write_section

EXPERIMENTS = ("fig2", "fig3", "fig4", "table1")


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
    md = out / "table1.md"
    md.write_text(report.table1_markdown(result) + "\n")
    return [figures.table1_png(result, out / "table1.png"), md]


def run(only=EXPERIMENTS, quick: bool = False, seeds: int | None = None, out="figures") -> dict:
    """Run the chosen experiments, write JSON, figures and the REPORT.md section into ``out``.

    Returns {"paths": [...], "seconds": wall time}.
    """
    start = time.perf_counter()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    settings = settings_for(quick, seeds)
    written = []
    if "fig2" in only:
        t = time.perf_counter()
        result = fig2.run(settings)
        result["seconds"] = time.perf_counter() - t
        written.append(save_result(out / "fig2.json", result))
    parts = tuple(p for p in mechanism.PARTS if p in only)
    if parts:
        t = time.perf_counter()
        results = mechanism.run(settings, parts)
        for name, result in results.items():
            result["seconds"] = time.perf_counter() - t
            written.append(save_result(out / f"{name}.json", result))
    saved = load_results(out)
    for name in only:
        written += draw(name, saved[name], out)
    seconds = time.perf_counter() - start
    markdown = report.build(saved, seconds)
    written.append(write_section(out / "REPORT.md", "reproduce", markdown))
    return {"paths": [str(p) for p in written], "seconds": seconds}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m numpy_mamba reproduce", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="same pipeline at reduced size (2 seeds, T = 300, 200 test prompts per point; ~15 s)")
    parser.add_argument("--only", action="append", metavar="fig2|fig3|fig4|table1",
                        help="run only these experiments (repeatable or comma list); default: all")
    parser.add_argument("--seeds", type=int, default=None, help="number of training seeds (default 10; quick 2)")
    parser.add_argument("--out", default=None,
                        help="output folder (default figures/; with --quick a new temporary folder, so a "
                             "quick run never overwrites the committed full-run results)")
    args = parser.parse_args(argv)
    try:
        only = parse_only(args.only)
        settings_for(args.quick, args.seeds)
    except ValueError as exc:
        parser.error(str(exc))
    out = args.out or (tempfile.mkdtemp(prefix="reproduce_quick_") if args.quick else "figures")
    info = run(only, args.quick, args.seeds, out)
    for path in info["paths"]:
        print(path)
    print(report.stdout_summary(load_results(Path(out)), info["seconds"]))
    print(f"reproduce: {', '.join(only)} done in {info['seconds']:.1f} s", file=sys.stderr)
    return 0

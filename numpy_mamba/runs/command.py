"""The one runner of the experiment commands: ``reproduce``, ``theory``, ``gates`` and ``ablation`` are
each ``main(COMMAND, argv)`` over their registry (``experiment.Command``), with the same options:

    --quick     the same code at reduced sizes, stamped as a smoke run on every output; into a new
                temporary folder unless --out is given
    --only      some of the command's experiments (their JSON names), the others' files kept
    --seeds N   training seeds (the commands whose experiments count seeds)
    --out DIR   the output folder (default figures/), checked before any computing
    --report    the Markdown report whose section is written (default OUT/REPORT.md); --no-report: none
    --replot    figures, claims and report from the JSON already in OUT, no training
    --jobs N    worker processes (the numbers do not depend on N); --quiet: no progress lines

A run: the step-size rule of every experiment that asks for one (a selection that two ask for runs
once), then every experiment's units in one pool, then each experiment's JSON; then, from the JSON
as saved, its figures, the claims file of the command, its REPORT.md section and the results table
that opens the report.  All of it is staged and moved into place at the end (``runner.run_staged``).
The last lines printed are the headline numbers, the verdicts, where the files are and the time the
whole command took.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from ..measure.rules import RULES
from .args import help_text, positive_int
from .claims import headline_numbers, save_claims, write_results
from .experiment import Run, settings_for
from .output import SMOKE, save_compact_json, write_section
from .runner import Unit, run_staged, run_units

VERDICT_WIDTH = 40          # a longer verdict is cut at its first ';' or shortened in the closing lines


def default_jobs() -> int:
    """The number of cores this process may run on (its CPU affinity where the OS reports one)."""
    import os
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:                                  # macOS, Windows
        return os.cpu_count() or 1


def parser(command) -> argparse.ArgumentParser:
    """The options of every experiment command (module docstring), with the command's experiments in its help."""
    lines = [line for e in command.experiments for line in e.OUTPUTS.splitlines()]
    lines.append(f'REPORT.md           section "{command.name}": paper vs ours, claim by claim')
    head, _, tail = help_text(command.doc).partition("\n\n")
    p = argparse.ArgumentParser(prog=f"python -m numpy_mamba {command.name}", formatter_class=argparse.RawDescriptionHelpFormatter,
                                description=head + "\n\n" + "\n".join("    " + line for line in lines) + ("\n\n" + tail if tail else ""))
    p.add_argument("--quick", action="store_true", help="the same code at reduced sizes: a smoke run, stamped as such "
                                                        "on every output")
    p.add_argument("--only", action="append", metavar="|".join(command.files()),
                   help="run only these experiments (repeatable or comma list); default: all")
    if command.seeds:
        p.add_argument("--seeds", type=positive_int, default=None, help="number of training seeds of the experiments "
                       "that count them (" + "; ".join(_seeds_text(e) for e in command.experiments) + ")")
    p.add_argument("--out", default=None, help="output folder (default figures/; with --quick a new temporary folder, "
                                                "so a quick run never overwrites the committed results)")
    p.add_argument("--report", default=None, help="the Markdown report whose section is rewritten (default OUT/REPORT.md)")
    p.add_argument("--no-report", action="store_true", help="do not touch the report")
    p.add_argument("--replot", action="store_true", help="figures, claims and report section from the JSON of an "
                                                         "earlier run in OUT (no training)")
    p.add_argument("--jobs", type=positive_int, default=default_jobs(), metavar="N",
                   help="worker processes for independent seeds/settings (default: the number of usable cores, "
                        f"here {default_jobs()}); the numbers do not depend on N")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    return p


def _seeds_text(e) -> str:
    full, quick = (settings_for(e, q) for q in (False, True))
    return f"{e.NAME}: {getattr(full, 'seeds', 'n/a')}, quick {getattr(quick, 'seeds', 'n/a')}"


def chosen_experiments(command, only) -> tuple:
    """``--only`` values (repeatable, comma lists) -> the experiments that write them, in registry order."""
    if not only:
        return command.experiments
    asked = {v.strip() for value in only for v in value.split(",") if v.strip()}
    unknown = asked - set(command.files())
    if unknown or not asked:
        raise ValueError(f"--only takes {', '.join(command.files())} (repeatable or comma-separated); "
                         f"got {sorted(unknown) or only}.")
    return tuple(e for e in command.experiments if asked & set(e.FILES))


def compute(experiments, settings: dict, jobs: int, name: str, progress=True) -> tuple[dict, dict]:
    """The step-size rule, then every unit, ``jobs`` at a time; returns ({experiment: {unit key: value}},
    {experiment: seconds of its units and of the selections it was first to ask for}), and the
    selection records, as (found, seconds, chosen)."""
    chosen, owner, seconds = {}, {}, {e.NAME: 0.0 for e in experiments}
    while True:                                             # a selection may ask for more once it sees its records
        asked = {}
        for e in experiments:
            if hasattr(e, "selection"):
                for key, plan in e.selection(settings[e], chosen).items():
                    if key not in chosen and key not in asked:
                        asked[key], owner[key] = plan, e.NAME
        if not asked:
            break
        units = [Unit((key, u.key), u.label, u.fn, u.args, u.kwargs) for key, plan in asked.items() for u in plan.units]
        found = run_units(units, jobs, f"{name}: step sizes", progress, seconds=True)
        for key, plan in asked.items():
            mine = {u.key: found[(key, u.key)] for u in plan.units}
            chosen[key] = plan.assemble({k: value for k, (value, _) in mine.items()})
            seconds[owner[key]] += sum(s for _, s in mine.values())
    # the units of the experiment listed last start first: a registry lists its slowest experiment last
    units = [Unit((e.NAME, u.key), u.label, u.fn, u.args, u.kwargs) for e in reversed(experiments)
             for u in e.units(settings[e], chosen)]
    found = run_units(units, jobs, name, progress, seconds=True)
    per = {e.NAME: {} for e in experiments}
    for (experiment, key), (value, s) in found.items():
        per[experiment][key] = value
        seconds[experiment] += s
    return per, {k: round(v, 1) for k, v in seconds.items()}, chosen


def load(out: Path, files) -> dict:
    """{file: result} of the JSON files present in ``out``."""
    return {f: json.loads((out / f"{f}.json").read_text()) for f in files if (out / f"{f}.json").exists()}


def main(command, argv=None) -> int:
    """``python -m numpy_mamba COMMAND [options]`` (module docstring): exit code 0, 1 (a unit failed),
    2 (usage, or --out cannot be written) or 130 (Ctrl-C)."""
    p = parser(command)
    args = p.parse_args(argv)
    try:
        experiments = chosen_experiments(command, args.only)
        settings = {e: settings_for(e, args.quick, getattr(args, "seeds", None)) for e in experiments}
    except ValueError as exc:
        p.error(str(exc))
    out = Path(args.out or (tempfile.mkdtemp(prefix=f"{command.name}_quick_") if args.quick else "figures"))
    report = Path(args.report) if args.report else out / "REPORT.md"
    line = f"python -m numpy_mamba {command.name}" + (" --quick" if args.quick else "")
    start, done = time.perf_counter(), {}

    def work(stage):
        if args.replot:
            results, run = replotted(command, experiments, out, stage)
        else:
            per, seconds, chosen = compute(experiments, settings, args.jobs, command.name, not args.quiet)
            run = Run(command.name, line, args.quick, args.jobs, seconds, round(time.perf_counter() - start, 1))
            results = {}
            for e in experiments:
                results.update(e.assemble(settings[e], chosen, per[e.NAME], run))
            for e in experiments:
                if hasattr(e, "judge"):
                    e.judge(results)
        if not args.quiet:
            print(f"[{command.name}] writing JSON, figures and the report section into {out}", file=sys.stderr, flush=True)
        done["written"] = write(command, experiments, results, run, stage, out, None if args.no_report else stage.report)

    code = run_staged(command.name, out, work, report=None if args.no_report else report)
    if code == 0:
        print_summary(command.name, done["written"], out, time.perf_counter() - start, quick=done["written"]["quick"],
                      report=None if args.no_report else report)
    return code


def replotted(command, experiments, out: Path, stage) -> tuple[dict, Run]:
    """The results of an earlier run in ``out``, judged again, with the command's ``kept`` files, and how it
    ran (from its claims file)."""
    files = [f for e in experiments for f in e.FILES]
    results = load(out, files)
    missing = sorted(set(files) - set(results))
    saved = out / f"claims_{command.name}.json"
    if missing or not saved.exists():
        raise SystemExit(f"--replot needs the JSON of an earlier run in {out}: missing "
                         f"{', '.join(f + '.json' for f in missing) or saved.name}")
    claims = json.loads(saved.read_text())
    results.update(load(out, command.kept))
    for e in experiments:
        if hasattr(e, "judge"):
            e.judge(results)
    seconds = dict(claims.get("seconds", {}))
    line = f"python -m numpy_mamba {command.name}" + (" --quick" if claims["quick"] else "")
    return results, Run(command.name, line, claims["quick"], claims.get("jobs", 0), seconds, seconds.pop("wall", None))


def write(command, experiments, results: dict, run: Run, stage, out: Path, report) -> dict:
    """The JSON of ``results``, then from the JSON as saved: figures, the claims file, the report section
    and the results table.  Returns what the closing lines print."""
    for name, result in {**results, **command.extra(results, run)}.items():
        save_compact_json(stage.dir / f"{name}.json", result)
    every = [f for e in command.experiments for f in e.FILES] + list(command.extra(results, run))
    saved = load(stage.dir, every)
    saved = {**load(out, [f for f in every if f not in saved]), **saved}       # another experiment's, from an earlier run
    for e in experiments:
        e.figure(saved, stage.dir)
    rows = [row for e in command.experiments for row in e.claims(saved)]
    names = [*command.rules_before, *(r for e in command.experiments for r in e.RULES), *command.rules_after]
    rules = {name: RULES[name] for name in dict.fromkeys(names)}
    heads = [h for e in command.experiments for h in (e.headlines(saved) if hasattr(e, "headlines")
                                                      else headline_numbers(e.claims(saved)))]
    save_claims(stage.dir, command.name, rows, rules, run.quick, notes=command.notes(saved), heading=command.heading(run.quick),
                summary=command.summary(saved) + [line for e in command.experiments if hasattr(e, "summary")
                                                  for line in e.summary(saved)],
                headlines=heads, extra={"jobs": run.jobs, "seconds": {**run.seconds, "wall": run.wall}})
    if report is not None:
        write_section(report, command.name, command.section(saved, run, rows, heads))
        write_results(report, out, stage.dir)
    return {"rows": rows, "heads": heads, "quick": run.quick}


def short_verdict(verdict) -> str:
    """A verdict as one short phrase: the text before its first ';', at most VERDICT_WIDTH characters."""
    text = " ".join(str(verdict).split()).split(";")[0].strip()
    return text if len(text) <= VERDICT_WIDTH else text[:VERDICT_WIDTH - 3].rstrip() + "..."


def summary_lines(command: str, rows: list, heads: list, out, seconds: float, quick: bool = False, report=None) -> list:
    """The closing lines: the headline numbers (paper against ours), the verdicts (a smoke run's only
    counted, since its numbers mean nothing, and stamped first and last), the files, the time."""
    verdicts = [(r["claim"], short_verdict(r["verdict"])) for r in rows]
    tally = ", ".join(f"{n} {v}" for v, n in Counter(v for _, v in verdicts).most_common())
    lines = [f"{command}: {SMOKE}"] if quick else []
    lines += [f"{command}: {what}: paper {paper}, ours {ours}" for what, paper, ours in heads]
    lines.append(f"{command}: {len(verdicts)} verdict{'s' * (len(verdicts) != 1)}"
                 + (", counted only (a smoke run's are not meant to be read)" if quick else "") + f": {tally}")
    if not quick:
        width = max((len(v) for _, v in verdicts), default=0)
        lines += [f"  {v:<{width}}  {claim}" for claim, v in verdicts]
    lines += [f"files: {out} (figures and JSON)",
              f"open:  {report} (section \"{command}\")" if report is not None else f"open:  {out}",
              f"time:  {seconds:.1f} s (the whole command)"]
    return lines + ([f"{command}: {SMOKE}"] if quick else [])


def print_summary(command: str, done: dict, out, seconds: float, quick: bool = False, report=None) -> None:
    print("\n".join(summary_lines(command, done["rows"], done["heads"], out, seconds, quick, report)), flush=True)


"""The end of a run, the same for ``reproduce``, ``theory``, ``gates`` and ``ablation``: the headline
numbers (paper against ours), the verdicts, then where the files are and what to open, then one
elapsed time (the one the report or JSON states).

A full run lists every verdict with its claim; a quick (smoke) run only counts them, since its
numbers are not meant to be read, and says so.  Example (full run)::

    theory: Thm 1: slope of log T_M on log 1/(1-p_a): paper 1, ours 1.03
    theory: 17 verdicts: 12 holds, 3 holds in part, 2 holds in trend
      holds            Theorem 1: Mamba's steps to converge vs p_a
      holds in part    Theorem 3: the linear Transformer's steps to converge vs p_a
      ...
    files: figures (figures and JSON)
    open:  figures/REPORT.md (section "theory")
    time:  65.2 s (as in the report)
"""
from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

from .output import SMOKE

VERDICT_WIDTH = 40              # a longer verdict is cut at its first ';' or shortened


def short_verdict(verdict) -> str:
    """A verdict as one short phrase: the text before its first ';', at most VERDICT_WIDTH characters."""
    text = " ".join(str(verdict).split()).split(";")[0].strip()
    return text if len(text) <= VERDICT_WIDTH else text[:VERDICT_WIDTH - 3].rstrip() + "..."


def summary_lines(command: str, verdicts, out, seconds: float, *, quick: bool = False, report=None,
                  time_stated_in: str = "the report", headlines=()) -> list:
    """The closing lines of ``python -m numpy_mamba COMMAND``, as a list of strings.

    command  the command's name ("reproduce", "theory", "gates")
    verdicts (claim, verdict) pairs in the report's order, e.g. ("Theorem 1: ...", "holds"); the
             verdict is the word or phrase the report gives (cut at its first ';' here)
    out      the folder holding the figures and JSON
    seconds  the elapsed time, the very number written in the report (or JSON), measured once
    quick    a smoke run: the verdicts are counted, not listed, and the first and last lines say the numbers
             mean nothing
    report   the Markdown report whose section COMMAND was written, or None (then OUT is what to open)
    time_stated_in  where the same elapsed time is written ("the report", "gates.json", ...)
    headlines (what, paper, ours) triples: the command's 3-5 headline numbers, printed above the counts
    """
    verdicts = [(str(claim), short_verdict(verdict)) for claim, verdict in verdicts]
    counts = Counter(verdict for _, verdict in verdicts)
    tally = ", ".join(f"{n} {verdict}" for verdict, n in counts.most_common())
    lines = [f"{command}: {SMOKE}"] if quick else []
    lines += [f"{command}: {what}: paper {paper}, ours {ours}" for what, paper, ours in headlines]
    noun = "verdict" if len(verdicts) == 1 else "verdicts"
    lines.append(f"{command}: {len(verdicts)} {noun}" + (", counted only (a smoke run's are not meant to be read)"
                                                      if quick else "") + f": {tally}")
    if not quick:
        width = max((len(verdict) for _, verdict in verdicts), default=0)
        lines += [f"  {verdict:<{width}}  {claim}" for claim, verdict in verdicts]
    lines.append(f"files: {out} (figures and JSON)")
    lines.append(f"open:  {report} (section \"{command}\")" if report is not None else f"open:  {out}")
    lines.append(f"time:  {seconds:.1f} s (as in {time_stated_in})")
    if quick:                                   # first and last line, like every output of a smoke run
        lines.append(f"{command}: {SMOKE}")
    return lines


def print_summary(command: str, verdicts, out, seconds: float, *, quick: bool = False, report=None,
                  time_stated_in: str = "the report", stream=None, headlines=()) -> None:
    """Print ``summary_lines(...)`` (to stdout unless ``stream``): the last thing a command prints."""
    print("\n".join(summary_lines(command, verdicts, Path(out), seconds, quick=quick, report=report,
                                  time_stated_in=time_stated_in, headlines=headlines)), file=stream or sys.stdout,
          flush=True)


def print_claims_summary(command: str, claims_path, out, seconds: float, *, quick: bool = False, report=None,
                         time_stated_in: str = "the report") -> None:
    """``print_summary`` from the command's ``claims_<command>.json`` (``runs.claims.save_claims``):
    its headline numbers, then every row's verdict with its claim."""
    import json
    found = json.loads(Path(claims_path).read_text())
    print_summary(command, [(r["claim"], r["verdict"]) for r in found["rows"]], out, seconds, quick=quick, report=report,
                  time_stated_in=time_stated_in, headlines=[tuple(h) for h in found["headlines"]])

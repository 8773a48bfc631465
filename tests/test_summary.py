"""The closing lines every experiment command prints (numpy_mamba.runs.command.summary_lines).

A failure means the commands would end differently from one another: a verdict missing or out of
the report's order, a smoke run not saying so on its first and last lines or listing numbers not
meant to be read, the time not the whole command's, or what to open not named.
"""
from pathlib import Path

from numpy_mamba.runs.command import short_verdict, summary_lines
from numpy_mamba.runs.output import SMOKE

VERDICTS = [("Theorem 1: steps vs p_a", "holds"), ("Theorem 3: steps vs p_a", "holds in part"),
            ("Lemma 6 outside its window", "not claimed there; grows with l (max 2.51 at l = 10)"),
            ("Theorem 2: tolerated alpha", "holds")]


def rows(verdicts) -> list:
    return [{"claim": claim, "verdict": verdict} for claim, verdict in verdicts]


def test_full_run_lists_every_verdict_in_order_then_files_then_one_time():
    lines = summary_lines("theory", rows(VERDICTS), [], Path("figures"), 65.24, report=Path("figures/REPORT.md"))
    assert lines[0] == "theory: 4 verdicts: 2 holds, 1 holds in part, 1 not claimed there"
    listed = lines[1:5]
    assert [line.split("  ")[-1].strip() for line in listed] == [claim for claim, _ in VERDICTS], listed
    assert listed[2].split()[:3] == ["not", "claimed", "there"], "a long verdict is cut at its first ';'"
    assert lines[5:] == ["files: figures (figures and JSON)", 'open:  figures/REPORT.md (section "theory")',
                         "time:  65.2 s (the whole command)"]
    assert not any(SMOKE in line for line in lines), "a full run is not a smoke run"


def test_quick_run_counts_the_verdicts_and_says_smoke_run_first_and_last():
    lines = summary_lines("gates", rows([("mamba vs LT", "below"), ("retnet vs LT", "not below")]), [], Path("/tmp/q"),
                          8.0, quick=True, report=Path("/tmp/q/REPORT.md"))
    assert SMOKE in lines[0] and SMOKE in lines[-1]
    # the smoke-run note comes before the tally, so it cannot be read as part of the last count
    assert lines[1] == "gates: 2 verdicts, counted only (a smoke run's are not meant to be read): 1 below, 1 not below"
    assert not any("mamba vs LT" in line for line in lines), "a smoke run's verdicts are counted, not listed"
    assert "open:  /tmp/q/REPORT.md" in lines[-3] and lines[-2] == "time:  8.0 s (the whole command)"


def test_without_a_report_the_folder_is_what_to_open_and_long_verdicts_are_shortened():
    lines = summary_lines("theory", rows([("x", "y")]), [], Path("out"), 1.0)
    assert "open:  out" in lines and lines[0] == "theory: 1 verdict: 1 y"
    assert short_verdict("a " * 40).endswith("...") and len(short_verdict("a " * 40)) <= 40

"""The README's Results section says what figures/REPORT.md says: it repeats the report's summary
(the same lines, links pointing into figures/) and states the wall times the report records.

If a test here fails after a regeneration, copy the report's summary into the README between the
markers (the failure prints the block) and the times the report states."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BEGIN, END = "<!-- BEGIN summary of figures/REPORT.md -->", "<!-- END summary of figures/REPORT.md -->"


def report_summary() -> list:
    """The summary lines of figures/REPORT.md with their links made relative to the repository root."""
    text = (ROOT / "figures" / "REPORT.md").read_text()
    summary = text.split("## Summary", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in summary.splitlines() if line.startswith("- ")]
    return [re.sub(r"\]\((#[^)]*)\)", r"](figures/REPORT.md\1)", re.sub(r"\]\(([\w.-]+\.(?:png|md|json))\)",
                                                                        r"](figures/\1)", line)) for line in lines]


def test_the_readme_repeats_the_reports_summary():
    """If this fails, the README's Results say something else than the report's first screen."""
    readme = (ROOT / "README.md").read_text()
    assert BEGIN in readme and END in readme, "the README's Results section lost its summary block"
    block = readme.split(BEGIN, 1)[1].split(END, 1)[0].strip().splitlines()
    expected = report_summary()
    assert block == expected, "the README's summary differs from figures/REPORT.md's; it should read:\n" + "\n".join(expected)


def test_the_readme_states_the_wall_times_the_report_records():
    """If this fails, the README's regeneration times are not the ones the report records."""
    text = (ROOT / "figures" / "REPORT.md").read_text()
    seconds = [float(re.search(pattern, text).group(1)) for pattern in (
        r"; ([\d.]+) s wall time \(--jobs as run\)", r"theory` in ([\d.]+) s", r"Six one-layer models.*?; ([\d.]+) s wall time",
        r"seeds per arm.*?; ([\d.]+) s wall time")]
    minutes = ", ".join(f"{s / 60:.1f}" for s in seconds[:3]) + f" and {seconds[3] / 60:.1f} minutes"
    assert minutes in (ROOT / "README.md").read_text(), f"the README should say the commands took {minutes}"


def test_the_reports_summary_reads_in_a_minute():
    """Issue 42: the committed report's summary (the bottom line, the causes, the corner, Table 1's
    columns and the tally) is at most 150 words, counted as a reader reads them (runs.claims.words:
    a link by its text, a number a word, a mark none)."""
    from numpy_mamba.runs.claims import SUMMARY_WORDS, words
    text = (ROOT / "figures" / "REPORT.md").read_text()
    summary = text.split("## Summary", 1)[1].split("\n## ", 1)[0]
    assert SUMMARY_WORDS == 150 and 30 <= words(summary) <= SUMMARY_WORDS, f"the summary has {words(summary)} words"

"""A claim as a record, the first screen of figures/REPORT.md, and its appendix.

A row is one of three kinds: a claim of the paper ("paper"), judged by a rule; a claim of ours
("ours": a hypothesis of the gates or of the ablation), judged the same way but counted apart; or a
finding ("finding": something measured to explain a miss), with no verdict and outside every count.

Each command judges its claims where it computes them and writes them, with the rules they cite, its
headline numbers and its lines of the summary, to ``claims_<command>.json`` beside its other files
(``save_claims``). ``write_results`` reads every such file of the output folder (the running
command's from its staging folder) and writes the "results" section, which ``output.merge_section``
keeps first in the report: the summary (the commands' lines, aimed at ``SUMMARY_WORDS`` words, which
tests/test_readme_results.py checks on the committed report, then the tally of the paper's claims,
ours counted apart), the table of the paper's claims, the table of ours, the table of findings (no
cell longer than ``MAX_CELL`` characters as read); and the "appendix" section, which it keeps last:
the notes the commands give (the main-setting argument), then every rule once, by name. Rendering
never changes a verdict: the rows carry their verdicts as judged.
The section's sentences are in templates/results.md.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from ..measure.rules import LEVELS, WHERE_LIMIT, verdict_text, where_text
from .output import SMOKE, save_json, write_section
from .report import Template

COMMANDS = ("reproduce", "theory", "gates", "ablation")          # the order of the rows and sections
MAX_CELL = 200                  # characters a reader sees in a cell (a link shows its text, not its target)
SUMMARY_LINES = 15
SUMMARY_WORDS = 150             # the summary a researcher reads in a minute, before the first table
KINDS = ("paper", "ours", "finding")
TEXT = Template(__package__, "results.md")      # the section's sentences
SECTION, APPENDIX = "results", "appendix"
LEVEL_ORDER = ("none", "trend", "part", "full")     # the summary names the misses first
HEADER = ("claim", "paper", "ours (main setting, 95% interval over seeds)", "verdict", "where it holds, where not", "see")
FINDINGS_HEADER = ("finding", "what the paper says or implies", "measured", "see")


def anchor(heading: str) -> str:
    """The link target GitHub gives a Markdown heading: '#' + lower case, spaces as '-', other
    punctuation dropped ('### Figure 2 in numbers' -> '#figure-2-in-numbers')."""
    text = re.sub(r"^#+\s*", "", heading).strip().lower()
    return "#" + re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def save_claims(folder, command: str, rows: list, rules: dict, quick: bool, notes: dict | None = None,
                headlines: list | None = None, heading: str = "", summary: list | None = None,
                extra: dict | None = None) -> Path:
    """``claims_<command>.json``: the command's rows, the rules they cite {name: text}, its notes, its
    headline numbers [(what, paper, ours)] (default: those its rows carry), the heading of its
    REPORT.md section (the results section links it), its lines of the report's summary, and
    ``extra``: how the command ran (its command line, workers and times, which --replot states again)."""
    if command not in COMMANDS:
        raise ValueError(f"command must be one of {COMMANDS}; got {command!r}.")
    missing = sorted({r["rule"] for r in rows if r["rule"]} - set(rules))
    if missing:
        raise ValueError(f"{command}: rows cite rules {missing} that are not in its rules {sorted(rules)}.")
    return save_json(Path(folder) / f"claims_{command}.json",
                     {"command": command, "quick": bool(quick), "heading": heading, "rows": rows, "rules": rules,
                      "notes": notes or {}, "summary": list(summary or []),
                      "headlines": [list(h) for h in (headlines if headlines is not None else headline_numbers(rows))],
                      **(extra or {})})


def load_claims(*folders) -> dict:
    """{command: claims} from ``claims_<command>.json`` in the folders, a later folder's file first."""
    found = {}
    for folder in reversed(folders):                       # a later folder's file wins: the earlier is not read
        for command in COMMANDS:
            path = Path(folder) / f"claims_{command}.json"
            if command not in found and path.exists():
                found[command] = json.loads(path.read_text())
    return {c: found[c] for c in COMMANDS if c in found}


def visible(markdown: str) -> str:
    """What a reader sees of a Markdown cell: links as their text, no bold markers."""
    return re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", markdown).replace("**", "").replace("\\|", "|")


def _cell(text: str, where: str) -> str:
    text = " ".join(str(text).split()).replace("|", "\\|")
    if len(visible(text)) > MAX_CELL:
        raise ValueError(f"a results-table cell ({where}) has {len(visible(text))} characters, more than {MAX_CELL}: "
                         f"{text[:80]}...")
    return text


def _see(row: dict) -> str:
    links = [f"[{text}]({link})" for text, link in row["see"]]
    return ", ".join(links + ([f"[detail]({anchor(row['claim'])})"] if row.get("detail") else []))


def table(claims: dict, kind: str = "paper") -> list:
    """The Markdown lines of one table: a row per claim of ``kind`` (a finding has no verdict columns)."""
    findings = kind == "finding"
    header = FINDINGS_HEADER if findings else HEADER
    lines = ["| " + " | ".join(header) + " |", "|---" * len(header) + "|"]
    for command, found in claims.items():
        smoke = " (SMOKE RUN)" if found["quick"] else ""
        for r in (r for r in found["rows"] if r.get("kind", "paper") == kind):
            verdict = f"**{r['verdict']}**" + (f" ([{r['rule']}](#rule-{r['rule']}))" if r["rule"] else "")
            cells = ([f"{r['claim']}{smoke}", r["paper"], r["ours"], _see(r)] if findings else
                     [f"{r['claim']}{smoke}", r["paper"], r["ours"], verdict, r["where"], _see(r)])
            lines.append("| " + " | ".join(_cell(c, f"{command}/{r['key']} of claims_{command}.json; a file an older "
                                                  f"version wrote is rewritten by running `{command}` again")
                                           for c in cells) + " |")
    return lines


def claim_link(row: dict) -> str:
    """Where a row's claim is detailed: its "claims in detail" heading, else its first link."""
    return anchor(row["claim"]) if row.get("detail") else row["see"][0][1]


def short_title(title: str, width: int = 42) -> str:
    """A claim's title cut at a word boundary to about ``width`` characters, for the summary."""
    title = title.replace(" (SMOKE RUN)", "")
    return title if len(title) <= width else title[:title.rfind(" ", 0, width - 3)] + "..."


def words(markdown: str) -> int:
    """The words a reader reads in ``markdown``: links count by their text, a number is a word, a mark
    (a dash, "/", "=") is none."""
    return sum(bool(re.search(r"\w", w)) for w in visible(markdown).split())


def tally(rows: list) -> str:
    """'13 hold, 12 in part, 5 in trend, 3 fail' over the rows given."""
    counts = {level: sum(r["level"] == level for r in rows) for level in ("full", "part", "trend", "none")}
    names = {"full": "hold", "part": "in part", "trend": "in trend", "none": "fail"}
    return ", ".join(f"{n} {names[level]}" for level, n in counts.items() if n)


def summary(claims: dict) -> list:
    """The report's opening: every command's lines (the bottom line, the measured reason of each miss,
    where the paper's numbers are reached), then the tally of the paper's claims, ours counted apart,
    the findings named.  At most SUMMARY_LINES lines."""
    lines = [line for found in claims.values() for line in found.get("summary", [])]
    rows = [r for found in claims.values() for r in found["rows"] if r["level"] in LEVEL_ORDER + ("finding",)]
    kind = {k: [r for r in rows if r.get("kind", "paper") == k] for k in KINDS}
    parts = [f"[the paper's {len(kind['paper'])}](#results-the-papers-claims): {tally(kind['paper'])}"]
    if kind["ours"]:
        parts.append(f"[ours, {len(kind['ours'])}](#our-own-claims), apart: {tally(kind['ours'])}")
    if kind["finding"]:
        parts.append(f"[{len(kind['finding'])} findings](#findings-what-we-measured-to-explain-the-misses), uncounted")
    lines.append("- **Claims judged**: " + "; ".join(parts) + ".")
    if len(lines) > SUMMARY_LINES:
        raise ValueError(f"the report's summary has {len(lines)} lines, more than {SUMMARY_LINES}: shorten the "
                         "commands' summary lines.")
    return lines


def section(claims: dict) -> str:
    """The "results" section: the summary, then the paper's claims, ours and the findings (rules and
    notes are in the appendix)."""
    quick = [c for c, found in claims.items() if found["quick"]]
    lines = ["## Summary", ""]
    if quick:
        lines += [TEXT("smoke", smoke=SMOKE, quick=", ".join(quick)), ""]
    lines += summary(claims)
    sections = ", ".join(f"[{c}]({anchor(found['heading'])})" for c, found in claims.items() if found.get("heading"))
    lines += ["", TEXT("paper", sections=sections), ""] + table(claims, "paper")
    for kind in ("ours", "finding"):
        if any(r.get("kind") == kind for found in claims.values() for r in found["rows"]):
            lines += ["", TEXT("findings" if kind == "finding" else kind), ""] + table(claims, kind)
    return "\n".join(lines)


def appendix(claims: dict) -> str:
    """The "appendix" section: the notes the commands give (the main setting), then every rule once."""
    lines = [TEXT("appendix")]
    notes = {name: text for found in claims.values() for name, text in found.get("notes", {}).items()}
    for name, text in notes.items():
        lines += ["", f"### {name}", "", text]
    lines += ["", "### Rules", ""]
    seen = {}
    for found in claims.values():
        seen.update(found["rules"])
    lines += [f"- <a name=\"rule-{name}\"></a>**{name}**: {text}." for name, text in seen.items()]
    return "\n".join(lines)


def write_results(report, *folders) -> Path:
    """Write the "results" section (first) and the "appendix" section (last) into ``report`` from
    the claims files of ``folders`` (the output folder first, then the running command's staging
    folder, whose file wins)."""
    claims = load_claims(*folders)
    write_section(report, SECTION, section(claims))
    return write_section(report, APPENDIX, appendix(claims))


def details(rows: list) -> list:
    """The "claims in detail" lines of a command's section: per claim a heading (the results table
    links to it), its verdict, rule, where it holds, paper against ours, and every number behind it."""
    lines = []
    for r in rows:
        if r.get("kind") == "finding":
            lines += ["", f"#### {r['claim']}", "", f"**finding** (no verdict). Paper: {r['paper']}. Measured: {r['ours']}."]
            lines += ["", r["detail"]] if r.get("detail") else []
            continue
        lines += ["", f"#### {r['claim']}", "",
                  f"**{r['verdict']}**" + (f" (rule [{r['rule']}](#rule-{r['rule']}))" if r["rule"] else "")
                  + (f"; {r['where']}" if r["where"] else "") + f". Paper: {r['paper']}. Ours: {r['ours']}."]
        if r.get("detail"):
            lines += ["", r["detail"]]
    return lines


def overflow_details(rows: list) -> list:
    """For a section that tells its claims in its own words: the claims whose cases did not fit the
    results table (a ``detail``), in full, under the headings the table's [detail] links lead to."""
    rows = [r for r in rows if r.get("detail")]
    return ["", "### Claims in detail", *details(rows), ""] if rows else []


def opening(first: str, rows: list, heads: list | None = None) -> list:
    """The three lines that open a command's section: ``first`` (what ran), the verdicts counted, and
    the headline numbers (paper against ours; ``heads``, default those the rows carry)."""
    judged = [r for r in rows if r.get("kind") != "finding"]
    findings = len(rows) - len(judged)
    counts = {}
    for r in judged:
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    verdicts = ", ".join(f"{n} {v}" for v, n in sorted(counts.items(), key=lambda x: -x[1]))
    heads = "; ".join(f"{what}: paper {paper}, ours {ours}" for what, paper, ours in
                      (headline_numbers(rows) if heads is None else heads))
    claims = f"{len(judged)} claim{'s' * (len(judged) != 1)}"
    more = f"; {findings} finding{'s' * (findings != 1)}, not judged" if findings else ""
    return [f"- {first}", f"- {claims}: {verdicts}{more}.", f"- Headline numbers: {heads or 'none'}."]


def headline_numbers(rows: list) -> list:
    """[(what, paper, ours)] of the rows that carry a headline, for the end of a command's output."""
    return [tuple(r["headline"]) for r in rows if r.get("headline")]


def claim_row(key: str, title: str, paper: str, ours: str, verdict: dict, rule: str, see: list, detail: str = "",
              headline: tuple | None = None, kind: str = "paper") -> dict:
    """One row of REPORT.md's results table (``runs.results``), as JSON-ready data.

    key : a stable short name ("fig2_small"); title : the claim as the paper states it; paper : the
    paper's number; ours : our number in the main setting with its interval; verdict : a
    ``judge_cases`` result, or {"level": "not run"}; rule : the name of its rule among the command's
    rules; see : [(text, link)] its figures and sections; detail : every number behind the verdict
    (the command's section prints it); headline : (what, paper, ours) for the end of the command's output;
    kind : "paper" (a claim of the paper) or "ours" (a hypothesis of ours, counted apart).
    """
    if kind not in KINDS[:2]:
        raise ValueError(f"a judged claim is of kind 'paper' or 'ours'; got {kind!r} (a finding: finding_row).")
    level = verdict["level"]
    judged = level in LEVELS
    where = where_text(verdict) if judged else ""
    short = where_text(verdict, WHERE_LIMIT) if judged else ""
    if short != where:
        detail = f"Every case: {where}. " + detail
    return {"key": key, "claim": title, "paper": paper, "ours": ours, "level": level,
            "verdict": verdict_text(verdict) if judged else level, "where": short,
            "rule": rule, "see": [list(s) for s in see], "detail": detail,
            "headline": list(headline) if headline else None, "kind": kind}


def finding_row(key: str, title: str, paper: str, measured: str, see: list, detail: str = "") -> dict:
    """A finding as a row of the findings table: what was measured to explain a miss (``measured``)
    against what the paper says or implies (``paper``); no rule, no verdict, outside every count."""
    return {"key": key, "claim": title, "paper": paper, "ours": measured, "level": "finding", "verdict": "finding",
            "where": "", "rule": "", "see": [list(s) for s in see], "detail": detail, "headline": None, "kind": "finding"}

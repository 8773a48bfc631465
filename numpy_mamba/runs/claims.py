"""The first screen of figures/REPORT.md (a summary, then one row per claim of every command) and
its appendix (the main-setting argument and every rule once).

Each command judges its claims where it computes them and writes them, with the rules they cite,
its headline numbers and its lines of the summary (the measured reason of a miss), to
``claims_<command>.json`` beside its other files (``save_claims``).  ``write_results`` reads every
such file of the output folder (the running command's from its staging folder) and writes the
"results" section, which ``output.merge_section`` keeps first in the report: the summary (at most
``SUMMARY_LINES`` lines: what holds, what does not, why, each with a link), then the table (no
cell longer than ``MAX_CELL`` characters as read), and the "appendix" section, which it keeps
last: the notes the commands give (the main-setting argument), then every rule once, by name.
Rendering never changes a verdict: the rows carry their verdicts as judged.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from ..measure.rules import LEVELS, WHERE_LIMIT, verdict_text, where_text
from .output import SMOKE, save_json, write_section

COMMANDS = ("reproduce", "theory", "gates", "ablation")          # the order of the rows and sections
MAX_CELL = 200                  # characters a reader sees in a cell (a link shows its text, not its target)
SUMMARY_LINES = 15
SECTION, APPENDIX = "results", "appendix"
LEVEL_ORDER = ("none", "trend", "part", "full")     # the summary names the misses first
HEADER = ("claim", "paper", "ours (main setting, 95% interval over seeds)", "verdict", "where it holds, where not", "see")


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


def table(claims: dict) -> list:
    """The Markdown lines of the results table: one row per claim, grouped by command."""
    lines = ["| " + " | ".join(HEADER) + " |", "|---" * len(HEADER) + "|"]
    for command, found in claims.items():
        smoke = " (SMOKE RUN)" if found["quick"] else ""
        for r in found["rows"]:
            verdict = f"**{r['verdict']}**" + (f" ([{r['rule']}](#rule-{r['rule']}))" if r["rule"] else "")
            cells = [f"{r['claim']}{smoke}", r["paper"], r["ours"], verdict, r["where"], _see(r)]
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


def summary(claims: dict) -> list:
    """The report's opening lines: per verdict, how many claims and (but for "holds in part") which,
    each linked; then every command's own lines (the measured reason of a miss, where the paper's
    numbers are reached).  At most SUMMARY_LINES lines."""
    rows = [r for found in claims.values() for r in found["rows"] if r["level"] in LEVEL_ORDER]
    lines = []
    for level in LEVEL_ORDER:
        mine = [r for r in rows if r["level"] == level]
        if mine:
            word = mine[0]["verdict"].removesuffix(" (borderline)")           # the vocabulary's word for the level
            names = "; ".join(f"[{short_title(r['claim'])}]({claim_link(r)})" for r in mine)
            lines.append(f"- **{word}** ({len(mine)} of {len(rows)} claims): {names}.")
    lines += [line for found in claims.values() for line in found.get("summary", [])]
    if len(lines) > SUMMARY_LINES:
        raise ValueError(f"the report's summary has {len(lines)} lines, more than {SUMMARY_LINES}: shorten the "
                         "commands' summary lines.")
    return lines


def section(claims: dict) -> str:
    """The "results" section: the summary, then the table (rules and notes are in the appendix)."""
    quick = [c for c, found in claims.items() if found["quick"]]
    lines = ["## Summary", ""]
    if quick:
        lines += [f"**{SMOKE}** (from: {', '.join(quick)}): do not read these lines or rows as results.", ""]
    lines += summary(claims)
    lines += ["", "## Results: every claim, paper against ours", "",
              "Verdicts: **holds** (in every case of the claim's grid), **holds in part** (in the cases named), "
              "**holds in trend** (the direction, not the size), **does not hold here**; \"borderline\" where a "
              "margin is within 10 % of its threshold. Each rule is written once under [Rules](#rules), the main "
              "setting argued once under [Main setting](#main-setting), both in the appendix at the end. Sections: "
              + ", ".join(f"[{c}]({anchor(found['heading'])})" for c, found in claims.items() if found.get("heading"))
              + ".", ""]
    lines += table(claims)
    return "\n".join(lines)


def appendix(claims: dict) -> str:
    """The "appendix" section: the notes the commands give (the main setting), then every rule once."""
    lines = ["## Appendix: main setting and rules"]
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
    counts = {}
    for r in rows:
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    tally = ", ".join(f"{n} {v}" for v, n in sorted(counts.items(), key=lambda x: -x[1]))
    heads = "; ".join(f"{what}: paper {paper}, ours {ours}" for what, paper, ours in
                      (headline_numbers(rows) if heads is None else heads))
    claims = f"{len(rows)} claim{'s' * (len(rows) != 1)}"
    return [f"- {first}", f"- {claims}: {tally}.", f"- Headline numbers: {heads or 'none'}."]


def headline_numbers(rows: list) -> list:
    """[(what, paper, ours)] of the rows that carry a headline, for the end of a command's output."""
    return [tuple(r["headline"]) for r in rows if r.get("headline")]


def claim_row(key: str, title: str, paper: str, ours: str, verdict: dict, rule: str, see: list, detail: str = "",
              headline: tuple | None = None) -> dict:
    """One row of REPORT.md's results table (``runs.results``), as JSON-ready data.

    key : a stable short name ("fig2_small"); title : the claim as the paper states it; paper : the
    paper's number; ours : our number in the main setting with its interval; verdict : a
    ``judge_cases`` result, or {"level": "not run"}; rule : the name of its rule among the command's
    rules; see : [(text, link)] its figures and sections; detail : every number behind the verdict
    (the command's section prints it); headline : (what, paper, ours) for the end of the command's output.
    """
    level = verdict["level"]
    judged = level in LEVELS
    where = where_text(verdict) if judged else ""
    short = where_text(verdict, WHERE_LIMIT) if judged else ""
    if short != where:
        detail = f"Every case: {where}. " + detail
    return {"key": key, "claim": title, "paper": paper, "ours": ours, "level": level,
            "verdict": verdict_text(verdict) if judged else level, "where": short,
            "rule": rule, "see": [list(s) for s in see], "detail": detail,
            "headline": list(headline) if headline else None}

"""What the grader writes: the student's text report, the class table, CSV and results.json.

    text_report(sub)    one table per function (and group of problems), a summary with points and
                        hints, what the file printed
    class_table(subs)   one line per submission, every failing function's hint, the similar files
    csv_text(...)       one row per submission: status, points, the error that stopped the file,
                        the similarity flag, per function status, max relative error, points, hint
                        on the public problems, and the hidden problems' in columns of their own
    gradescope(sub)     Gradescope's results.json: one test per function and group of problems, each
                        with its points and visibility; every text in a code block

Student text (output, errors, hints, file names) is made harmless before it is shown: ``clean``
keeps printable characters only (no escape sequence reaches a terminal), ``cell`` also defuses a
spreadsheet formula (a leading = + - @, tab or carriage return gets an apostrophe, as OWASP
advises against CSV injection), and ``block`` keeps Markdown inert inside a code fence longer
than any run of backticks in the text.
"""
from __future__ import annotations

import csv
import io
import math
import re
import textwrap

from .compare import combine
from .grade import Graded
from .sandbox import shown

OUTPUT_SHOWN = 1500             # characters of what a file printed shown in a report
UNSAFE = re.compile(r"[^\n\t\x20-\x7e\u00a0-\uffff]|[\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff\ufff9-\uffff]")
VISIBILITY = ("visible", "hidden", "after_due_date", "after_published")


def clean(text: str, limit: int = OUTPUT_SHOWN) -> str:
    """Printable text only (no terminal control sequences), at most ``limit`` characters."""
    text = UNSAFE.sub("?", str(text).encode("utf-8", "surrogateescape").decode("utf-8", "replace"))
    return text if len(text) <= limit else text[:limit] + f"\n[... {len(text) - limit} more characters not shown]"


def cell(text, limit: int = 1000) -> str:
    """A CSV cell a spreadsheet shows as text: control characters stripped, a leading formula
    character (= + - @ tab CR) behind an apostrophe."""
    text = "".join(c for c in clean(str(text), limit) if c == "\n" or c.isprintable())
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def _err(x: float) -> str:
    return "-" if math.isnan(x) else "inf" if math.isinf(x) else f"{x:.1e}"


def _points(x: float) -> str:
    return f"{round(x, 2):g}"


def function_table(result, function, exercise) -> list:
    """The per-problem table of one function on one group of problems (empty when it has no rows)."""
    if not result.rows:
        return []
    group = f"  ({result.group} problems)" if result.group else ""
    lines = [f"{function.signature}    {function.equation}{group}",
             f"  {'problem':<50}{'vs package':>12}{exercise.independent_check:>17}  result"]
    for row in result.rows:
        cpu = "" if math.isnan(row.cpu) else f" (CPU {row.cpu:.2f} s)"
        if row.note:
            lines.append(f"  {row.problem:<50}{clean(row.note, 40):>29}  FAIL{cpu}")
        else:
            lines.append(f"  {row.problem:<50}{_err(row.err_reference):>12}{_err(row.err_independent):>17}  "
                         f"{'ok' if row.ok else 'FAIL'}{cpu}")
    return lines + [""]


def summary_lines(results) -> list:
    lines = [f"{'function':<18}{'result':<15}{'max rel. error':>15}{'points':>12}", "-" * 60]
    for r in results:
        lines.append(f"{r.label:<18}{r.status:<15}{_err(r.max_rel):>15}{_points(r.points) + ' / ' + _points(r.max_points):>12}")
        if r.hint:
            lines += textwrap.wrap(clean(r.hint), 92, initial_indent="          hint: ", subsequent_indent="                ")
    return lines


def _exercise_lines(graded, public_only: bool) -> list:
    ex = graded.exercise
    names = ", ".join(ex.function_names)
    if ex.entries != ex.function_names:                 # parts of the student's function(s)
        names = f"{', '.join(ex.entries)}, graded as {names}"
    out = [f"exercise '{ex.name}' ({names}); the hand-out allows {ex.allowed}", ""]
    if graded.import_error:
        return out + ["could not import the file:", clean(graded.import_error), ""]
    results = [r for r in graded.results if not (public_only and r.group == "hidden")]
    functions = {f.name: f for f in ex.functions}
    for r in results:
        out += function_table(r, functions[r.name], ex)
    out += summary_lines(results)
    out.append(f"(tolerances: {ex.tol_reference:g} vs the package, {ex.tol_independent:g} vs the check)")
    hidden = graded.hidden_left or max([len(r.rows) for r in graded.results if r.group == "hidden" and public_only],
                                       default=0)
    if hidden:
        out.append(f"The autograder adds {hidden} hidden problem{'s' if hidden > 1 else ''} to these; their results "
                   "are shown after the due date.")
    return out + [""]


def text_report(sub, seed, isolation: str = "", public_only: bool = False) -> str:
    """The report a student reads for one file; ``seed`` None: not shown (set by the instructor);
    ``public_only``: leave out the results of hidden problems (what Gradescope shows at once)."""
    said = f"seed {seed}" if seed is not None else "problems drawn by your instructor"
    out = [f"grading {clean(shown(sub.path), 300)} ({said})"] + ([isolation] if isolation else []) + [""]
    if sub.problem or sub.grader_error:
        return "\n".join(out + [clean(sub.problem or sub.grader_error)])
    for graded in sub.graded:
        out += _exercise_lines(graded, public_only)
    results = [r for r in sub.results if not (public_only and r.group == "hidden")]
    points, most = (sum(r.points for r in results), sum(r.max_points for r in results)) if results else \
        (sub.points, sub.max_points)
    out.append(f"points: {_points(points)} / {_points(most)}")
    if sub.output_bytes:
        printed = clean(sub.output)
        whole = len(sub.output.encode("utf-8", "surrogateescape")) == sub.output_bytes and len(printed) <= OUTPUT_SHOWN
        out += ["", f"what your file printed ({sub.output_bytes} bytes, all of it):" if whole else
                f"what your file printed ({sub.output_bytes} bytes; only the first {OUTPUT_SHOWN} characters "
                "are shown):", textwrap.indent(printed, "  | ")]
    return "\n".join(out)


def status(sub) -> str:
    """One word for a submission's state in the class table and the CSV."""
    if sub.grader_error:
        return "grader error"
    if not sub.imported:
        return "import error"
    if sub.problem:
        return "not graded" if sub.problem.startswith(("not graded", "no such")) or "symbolic link" in sub.problem \
            else "no exercise"
    return "passed" if sub.passed else "failed"


def class_table(subs, names: list, flags: dict | None = None) -> str:
    """One line per submission, then each failing function's hint, then the similarity flags."""
    labels = [clean(shown(s.path), 200) for s in subs]
    width = max([10] + [len(label) for label in labels]) + 2
    head = f"{'submission':<{width}}{'exercise':<12}{'status':<14}{'points':>9}  " + "".join(f"{n:<15}" for n in names)
    lines = [head, "-" * len(head)]
    for label, s in zip(labels, subs):
        by_name = combine(s.results)
        exercise = "+".join(g.exercise.name for g in s.graded) or "-"
        lines.append(f"{label:<{width}}{exercise:<12}{status(s):<14}{_points(s.points) + '/' + _points(s.max_points):>9}"
                     "  " + "".join(f"{by_name[n].status if n in by_name else '-':<15}" for n in names))
    for label, s in zip(labels, subs):
        notes = [(r.label, r.hint) for r in s.results if r.status == "FAIL"]
        notes += [("import", g.import_error) for g in s.graded if g.import_error]
        notes += [("file", s.problem or s.grader_error)] if s.problem or s.grader_error else []
        for name, hint in notes:
            lines += textwrap.wrap(clean(f"{label}: {name}: {hint}", 400), 110, subsequent_indent="    ")
    for label, s in zip(labels, subs):
        if flags and flags.get(s.path):
            lines.append(f"similar code (for you, not a score): {label}: {clean(flags[s.path], 400)}")
    return "\n".join(lines)


def csv_text(subs, names: list, flags: dict | None = None) -> str:
    """One row per submission; ``error`` is what stopped the whole file, ``similar`` the
    similarity flag; per function ``NAME_status``, ``NAME_max_rel_error``, ``NAME_points``,
    ``NAME_hint`` on the public problems (all of them when none is hidden), and, when some are
    hidden, ``NAME_hidden_status``, ``NAME_hidden_points``, ``NAME_hidden_hint`` (empty for a
    function of another exercise).  Every cell passes ``cell``."""
    hidden = any(r.group == "hidden" for s in subs for r in s.results)
    columns = ["submission", "exercise", "status", "points", "max_points", "error", "similar"]
    columns += [f"{n}_{what}" for n in names for what in ("status", "max_rel_error", "points", "hint")
                + (("hidden_status", "hidden_points", "hidden_hint") if hidden else ())]
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, columns)
    writer.writeheader()
    for s in subs:
        exercise = "+".join(g.exercise.name for g in s.graded) or (s.assigned.name if s.assigned else "")
        row = {"submission": shown(s.path), "exercise": exercise, "status": status(s), "points": _points(s.points),
               "max_points": _points(s.max_points), "error": s.error, "similar": (flags or {}).get(s.path, "")}
        for r in s.results:
            key = f"{r.name}_hidden" if r.group == "hidden" else r.name
            row.update({f"{key}_status": r.status, f"{key}_points": _points(r.points), f"{key}_hint": r.hint})
            if r.group != "hidden":
                row[f"{r.name}_max_rel_error"] = "" if math.isnan(r.max_rel) else f"{r.max_rel:.3e}"
        for g in (g for g in s.graded if g.import_error):
            for f in g.exercise.functions:
                row.update({f"{f.name}_status": "import error", f"{f.name}_points": "0", f"{f.name}_hint": g.import_error})
        writer.writerow({k: cell(v) for k, v in row.items()})
    return buffer.getvalue()


def block(text: str) -> str:
    """A Markdown code block of cleaned text: the fence is longer than any run of backticks in it."""
    text = clean(text, 20000)
    fence = "`" * max(3, 1 + max((len(run) for run in re.findall(r"`+", text)), default=0))
    return f"{fence}\n{text}\n{fence}"


def gradescope(sub, isolation: str = "", hidden_visibility: str = "after_due_date") -> dict:
    """Gradescope's results.json for one submission: a test per function and group of problems,
    the hidden ones with ``hidden_visibility``; a file that did not import, or was not graded
    as its assigned exercise: every test at 0 of its points, saying why; a file with no
    exercise at all: score 0 and why.  ``isolation`` goes to nobody here: the caller prints it
    for the instructor.  The total counts what students may see by the instructor's chosen time:
    Gradescope hides it while a test waits for the due date or for publishing, but shows it at
    once beside tests of visibility "hidden", which its specification keeps for tests that carry
    no points; so hidden-visibility tests add nothing to it, and nothing visible ever changes with
    a hidden problem's outcome."""
    tests = []
    for g in sub.graded or ([Graded(sub.assigned, import_error=sub.error)] if sub.assigned else []):
        functions = {f.name: f for f in g.exercise.functions}
        for r in g.results or [None]:
            for f in ([functions[r.name]] if r is not None else g.exercise.functions):
                tests.append(_test(g, f, r, hidden_visibility))
    report = text_report(sub, None, public_only=True)
    score = sum(t["score"] for t in tests if t["visibility"] != "hidden")
    return {"score": float(score), "output": block(report), "output_format": "md",
            "test_output_format": "md", "visibility": "visible", "stdout_visibility": "hidden", "tests": tests}


def _test(graded, f, r, hidden_visibility: str) -> dict:
    name = f"{f.signature}    {f.equation}"
    if r is None:                                           # the file did not import, or was not graded
        return {"name": name, "score": 0.0, "max_score": float(f.points), "status": "failed",
                "output": block("could not grade the file:\n\n" + graded.import_error), "output_format": "md",
                "visibility": "visible"}
    table = "\n".join([f"{r.status} (max rel. error {_err(r.max_rel)})"] + function_table(r, f, graded.exercise)
                      + ([f"hint: {r.hint}"] if r.hint else []))
    return {"name": name + (f"  [{r.group} problems]" if r.group else ""), "score": r.points,
            "max_score": r.max_points, "status": "passed" if r.status == "pass" else "failed",
            "output": block(table), "output_format": "md",
            "visibility": hidden_visibility if r.group == "hidden" else "visible"}

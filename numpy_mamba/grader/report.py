"""What the grader writes: the student's text report, the class table, CSV and results.json.

    text_report(sub)    one table per function, a summary with points and hints, what the file printed
    class_table(subs)   one line per submission, then every failing function's hint
    csv_text(...)       one row per submission: status, points, the error that stopped the file,
                        per function status, max relative error, points, hint
    gradescope(sub)     Gradescope's results.json: score, and tests[] with name/score/max_score/output
                        (Markdown, tables in code blocks so their columns stay aligned)

Whatever the student's code wrote or raised passes through ``clean`` (printable characters only,
trimmed) before it reaches a terminal, a report, the CSV or results.json.
"""
from __future__ import annotations

import csv
import io
import math
import re
import textwrap

OUTPUT_SHOWN = 1500             # characters of what a file printed shown in a report


def clean(text: str, limit: int = OUTPUT_SHOWN) -> str:
    """Printable text only (no terminal control sequences), at most ``limit`` characters."""
    text = re.sub(r"[^\n\t\x20-\x7e\u00a0-\uffff]|[\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff\ufff9-\uffff]",
                  "?", str(text))
    return text if len(text) <= limit else text[:limit] + f"\n[... {len(text) - limit} more characters not shown]"


def _err(x: float) -> str:
    return "-" if math.isnan(x) else "inf" if math.isinf(x) else f"{x:.1e}"


def _points(x: float) -> str:
    return f"{x:g}"


def function_table(result, function, exercise) -> list:
    """The per-problem table of one function (empty when it has no rows)."""
    if not result.rows:
        return []
    lines = [f"{function.signature}    {function.equation}",
             f"  {'problem':<32}{'vs package':>12}{exercise.independent_check:>17}  result"]
    for row in result.rows:
        if row.note:
            lines.append(f"  {row.problem:<32}{clean(row.note, 40):>29}  FAIL")
        else:
            lines.append(f"  {row.problem:<32}{_err(row.err_reference):>12}{_err(row.err_independent):>17}  "
                         f"{'ok' if row.ok else 'FAIL'}")
    return lines + [""]


def summary_lines(graded) -> list:
    lines = [f"{'function':<10}{'result':<15}{'max rel. error':>15}{'points':>10}", "-" * 50]
    for r in graded.results:
        points = f"{_points(r.points)} / {_points(r.max_points)}"
        lines.append(f"{r.name:<10}{r.status:<15}{_err(r.max_rel):>15}{points:>10}")
        if r.hint:
            lines += textwrap.wrap(clean(r.hint), 92, initial_indent="          hint: ",
                                   subsequent_indent="                ")
    return lines


def text_report(sub, seed: int, isolation: str = "") -> str:
    """The report a student reads for one file (import errors and a missing exercise included)."""
    out = [f"grading {clean(str(sub.path), 300)} (seed {seed})"] + ([isolation] if isolation else []) + [""]
    if sub.problem:
        return "\n".join(out + [clean(sub.problem)])
    for graded in sub.graded:
        ex = graded.exercise
        graded_names = ", ".join(ex.function_names)
        if ex.entries != ex.function_names:                 # parts of the student's function(s)
            graded_names = f"{', '.join(ex.entries)}, graded as {graded_names}"
        out.append(f"exercise '{ex.name}' ({graded_names}); the hand-out allows {ex.allowed}")
        out.append("")
        if graded.import_error:
            out += [f"could not import {sub.path}:", clean(graded.import_error), ""]
            continue
        functions = {f.name: f for f in ex.functions}
        for r in graded.results:
            out += function_table(r, functions[r.name], ex)
        out += summary_lines(graded)
        out.append(f"(tolerances: {ex.tol_reference:g} vs the package, {ex.tol_independent:g} vs the check)")
        out.append("")
    out.append(f"points: {_points(sub.points)} / {_points(sub.max_points)}")
    if sub.output_bytes:
        shown = clean(sub.output)
        out += ["", f"your file printed {sub.output_bytes} bytes; the grader shows at most the first "
                f"{min(len(shown), OUTPUT_SHOWN)} characters:", textwrap.indent(shown, "  | ")]
    return "\n".join(out)


def status(sub) -> str:
    """One word for a submission's state in the class table and the CSV."""
    if not sub.imported:
        return "import error"
    if sub.problem:
        return "no exercise"
    return "passed" if sub.passed else "failed"


def class_table(subs, names: list) -> str:
    width = max([10] + [len(str(s.path)) for s in subs]) + 2
    ex_width = max([10] + [len("+".join(g.exercise.name for g in s.graded)) for s in subs]) + 2
    head = f"{'submission':<{width}}{'exercise':<{ex_width}}{'status':<14}{'points':>9}  " + "".join(f"{n:<15}" for n in names)
    lines = [head, "-" * len(head)]
    for s in subs:
        by_name = {r.name: r.status for r in s.results}
        exercises = "+".join(g.exercise.name for g in s.graded) or "-"
        lines.append(f"{str(s.path):<{width}}{exercises:<{ex_width}}{status(s):<14}"
                     f"{_points(s.points) + '/' + _points(s.max_points):>9}  " +
                     "".join(f"{by_name.get(n, '-'):<15}" for n in names))
    for s in subs:
        notes = [(r.name, r.hint) for r in s.results if r.status == "FAIL"]
        notes += [("import", g.import_error) for g in s.graded if g.import_error]
        notes += [("file", s.problem)] if s.problem else []
        for name, hint in notes:
            lines += textwrap.wrap(clean(f"{s.path}: {name}: {hint}", 400), 110, subsequent_indent="    ")
    return "\n".join(lines)


def csv_text(subs, names: list) -> str:
    """One row per submission; ``error`` is what stopped the whole file (an import error, a file
    not graded); per function ``NAME_status``, ``NAME_max_rel_error``, ``NAME_points``,
    ``NAME_hint`` (empty for a function of another exercise)."""
    columns = ["submission", "exercise", "status", "points", "max_points", "error"]
    columns += [f"{n}_{what}" for n in names for what in ("status", "max_rel_error", "points", "hint")]
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, columns)
    writer.writeheader()
    for s in subs:
        row = {"submission": clean(str(s.path), 500), "exercise": "+".join(g.exercise.name for g in s.graded),
               "status": status(s), "points": _points(s.points), "max_points": _points(s.max_points),
               "error": clean(s.error, 1000)}
        for g in s.graded:
            for r in g.results:
                row.update({f"{r.name}_status": r.status, f"{r.name}_points": _points(r.points),
                            f"{r.name}_max_rel_error": "" if math.isnan(r.max_rel) else f"{r.max_rel:.3e}",
                            f"{r.name}_hint": clean(r.hint, 1000)})
            if g.import_error:
                for f_ in g.exercise.functions:
                    row.update({f"{f_.name}_status": "import error", f"{f_.name}_points": "0",
                                f"{f_.name}_hint": clean(g.import_error, 1000)})
        writer.writerow(row)
    return buffer.getvalue()


FENCE = "`" * 3


def _block(text: str) -> str:
    """A Markdown code block (fixed width, so tables stay aligned) of cleaned text; a fence in
    the text is broken up so that it cannot end the block."""
    return f"{FENCE}\n" + clean(text, 20000).replace(FENCE, "` ` `") + f"\n{FENCE}"


VISIBILITY = ("visible", "hidden", "after_due_date", "after_published")


def gradescope(sub, seed: int, isolation: str = "", visibility: str = "visible") -> dict:
    """Gradescope's results.json for one submission: one test per function of its exercise, each
    with its points; a file that did not import: every test at 0 of its points, with the error;
    a file not graded at all (no exercise function, ...): score 0 and why."""
    tests = []
    for g in sub.graded:
        functions = {f.name: f for f in g.exercise.functions}
        results = {r.name: r for r in g.results}
        for f in g.exercise.functions:
            r = results.get(f.name)
            if r is None:                                       # the file did not import
                output, score, state = "could not import the file:\n\n" + _block(g.import_error), 0.0, "failed"
            else:
                table = "\n".join([f"{r.status} (max rel. error {_err(r.max_rel)})"] +
                                   function_table(r, functions[f.name], g.exercise))
                output = _block(table) + (f"\n\nhint: {clean(r.hint)}" if r.hint else "")
                score, state = r.points, "passed" if r.status == "pass" else "failed"
            tests.append({"name": f"{f.signature}    {f.equation}", "score": score,
                          "max_score": float(f.points), "status": state, "output": output,
                          "output_format": "md", "visibility": visibility})
    return {"score": float(sub.points), "output": _block(text_report(sub, seed, isolation)),
            "output_format": "md", "test_output_format": "md", "visibility": visibility,
            "stdout_visibility": "hidden", "tests": tests}

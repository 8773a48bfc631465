"""Budgets that load cannot flip: ``grade --margins gradients`` grades the slowest derivation we
have, a per-coordinate shortcut that fits in memory and a reverse-mode autodiff on the budget
problem with the budget stretched six times, and finds the derivations at least five times below
the budget, the shortcut at least five times above, and the autodiff five times below (a
shortcut no budget tells from a derivation: tutorials/INSTRUCTORS.md).  No time is asserted:
ratios of CPU times, each measured by the kernel for one child, which a busy machine slows
alike.  The budget's unit is one forward pass of eq (3) on the budget problem, timed with
einsums, so that the grader's own BLAS threads do not count in it.

A failure here means a grade on the budget problem depends on the machine's load or speed: a
derivation within five times of the budget, or a shortcut it stops within five times of it.
"""
import re
from pathlib import Path

from numpy_mamba.grader.grade import Session
from numpy_mamba.grader.registry import all_exercises
from numpy_mamba.grader.run import main

ROOT = Path(__file__).resolve().parent.parent
STUDENTS = ROOT / "tests" / "student_files"


def test_the_gradients_budget_is_five_times_from_what_it_passes_and_what_it_stops(capsys):
    files = [STUDENTS / name for name in ("correct_naive.py", "hostile_chunked_differences.py",
                                          "hostile_reverse_mode.py")]
    status = main(["--margins", "gradients"] + [str(f) for f in files])
    out = capsys.readouterr().out
    found = re.search(r"margins ([0-9.]+)x and ([0-9.]+)x", out)
    assert status == 0 and found and min(map(float, found.groups())) >= 5, out
    lines = {(line.split()[0], line.split()[1]): line for line in out.splitlines() if line.startswith("  ") and "x " in line}
    assert all("stopped" in lines[("hostile_chunked_differences.py", f)] for f in ("grad_W_C", "grad_W_B")), out
    assert all("no budget tells from a derivation" in lines[("hostile_reverse_mode.py", f)]
               for f in ("grad_W_C", "grad_W_B")), out


def test_the_budget_holds_only_the_functions_a_budget_can_decide():
    """grad_w has d+1 coordinates, which a pass per coordinate crosses as fast as a derivation:
    it is graded on the budget problem within the usual limits, W_B and W_C within the budget."""
    gradients = all_exercises()["gradients"]
    prepared = Session(0).prepared(gradients)
    assert set(gradients.budgeted) == {"grad_W_C", "grad_W_B"}
    budget = prepared.problems[prepared.budget]
    assert budget.params.W_C.size >= 25 * gradients.budget_units, "a pass per coordinate of W_C is not 25x the budget"
    assert set(all_exercises()["stack"].budgeted) == {"dH", "dW_B", "dW_C", "dW"}


def test_importing_scipy_at_the_top_of_a_file_costs_no_budget(tmp_path, capsys):
    """The hand-out allows scipy; importing its big modules at the top of a file costs about a
    second of CPU (here more than the budget of grad_W_C itself), which the budget, a count of
    forward passes of the call, must not charge: the import has its own limit, every child's.
    A failure here means an honest file loses the budget problem's points for an import line."""
    source = (STUDENTS / "correct_naive.py").read_text()
    heavy = "import scipy.optimize, scipy.stats, scipy.signal, scipy.interpolate, scipy.integrate  # noqa: E401\n"
    (tmp_path / "gradients.py").write_text(source.replace("import numpy as np\n", "import numpy as np\n" + heavy, 1))
    status = main([str(tmp_path / "gradients.py")])
    out = capsys.readouterr().out
    budget_lines = [line for line in out.splitlines() if "(CPU budget)" in line]
    assert status == 0 and "points: 7.5 / 7.5" in out, out
    assert len(budget_lines) == 3 and all(" ok (CPU " in line for line in budget_lines), out

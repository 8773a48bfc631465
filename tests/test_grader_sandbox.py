"""The grader with its child processes: every file in tests/student_files/ gets its expected outcome.

Correct files pass (with the helpers the hand-outs allow), honest mistakes get their hint, the
paper-size budget passes every derivation and stops every per-coordinate method, and every hang,
exit or crash ends at its limit as a row of the report.  A failure here means a submission can pass without doing the exercise,
or can take the grader down with it.  (Every cheat file, graded as a class with its reason:
tests/test_grader_attacks.py; the kernel's refusals: tests/test_grader_kernel.py.)
"""
import shutil
from pathlib import Path

import numpy as np
import pytest

from numpy_mamba.grader.compare import combine, compare_array
from numpy_mamba.grader.grade import Limits, Session, grade_many, grade_submission
from numpy_mamba.grader.registry import EXERCISES, Exercise, Function, Reference, Row, register
from numpy_mamba.grader.report import text_report

ROOT = Path(__file__).resolve().parent.parent
STUDENTS = ROOT / "tests" / "student_files"
SOLUTIONS = ROOT / "tests" / "solutions"


@pytest.fixture(scope="module")
def session():
    return Session(0, Limits(time=5.0, memory_mb=512))


def _results(sub):
    """{function: its Result over the public and hidden problems together}."""
    return combine(sub.results)


CORRECT = [SOLUTIONS / "gating_solution.py", SOLUTIONS / "gradients_solution.py",
           STUDENTS / "correct_common.py", STUDENTS / "correct_query_column_zero.py",
           STUDENTS / "correct_gates_log_space.py", STUDENTS / "broken_big_print.py",
           SOLUTIONS / "stack_solution.py", STUDENTS / "correct_stack.py", STUDENTS / "correct_from_the_paper.py"]


@pytest.fixture(scope="module")
def correct(session):
    """Every correct file graded (correct_naive.py, which defines two exercises, once as each)."""
    subs = grade_many(CORRECT + [STUDENTS / "correct_naive.py"], session, jobs=2)
    return subs + [grade_submission(STUDENTS / "correct_naive.py", session, "gating"),
                   grade_submission(STUDENTS / "correct_naive.py", session, "gradients")]


def test_correct_implementations_pass(correct):
    """A failure means the grader fails a mathematically correct function, or the sandbox took
    away a helper the hand-out allows (numpy_mamba.gating, model.scores, a helper module; for the
    stack, layer_forward, LayerParams and numpy_mamba.layer.gates).  correct_naive.py defines two
    exercises, so it is graded once as each."""
    subs = correct
    assert "several exercises (gating, gradients)" in subs[len(CORRECT)].problem
    for sub in subs[:len(CORRECT)] + subs[len(CORRECT) + 1:]:
        defined = [r for r in sub.results if r.defined]
        assert defined, f"{sub.path.name} defines no exercise function"
        for r in defined:
            assert r.status == "pass", f"{sub.path.name}: {r.name} -> {r.status}: {r.hint}"
        assert sub.passed and sub.points == sum(r.max_points for r in defined)


# (file, function, status, words that must appear in its hint)
EXPECTED = [
    ("broken_sign.py", "grad_W_C", "FAIL", "wrong sign"),
    ("broken_transposed.py", "grad_W_B", "FAIL", "transposed"),
    ("broken_label_leak.py", "grad_W_C", "FAIL", "label leak"),
    ("broken_sum.py", "grad_W_B", "FAIL", "off by a factor of B"),
    ("broken_no_suffix.py", "grad_w", "FAIL", "missing the suffix-product term"),
    ("broken_paper_mask.py", "grad_w", "FAIL", "F in (-1, 1)"),
    ("broken_gates_prefix.py", "gates", "FAIL", "product over the wrong side"),
    ("broken_gates_no_query.py", "gates", "FAIL", "dropped the query column"),
    ("broken_gates_unstable.py", "gates", "FAIL", "NaN or inf on problem 'saturated gates"),
    ("broken_raises.py", "grad_W_C", "FAIL", "IndexError"),
    ("broken_keyboard_interrupt.py", "grad_W_C", "FAIL", "KeyboardInterrupt"),
    ("broken_keyboard_interrupt.py", "grad_W_B", "pass", ""),
    ("broken_keyboard_interrupt.py", "grad_w", "FAIL", "SystemExit"),
    ("broken_memory.py", "grad_W_C", "FAIL", "a submission may allocate at most 512 MB"),
    ("broken_stack_residual.py", "dH", "FAIL", "dH includes dO itself: the residual"),
    ("broken_stack_residual.py", "dW_B", "pass", ""),
    ("broken_stack_no_query.py", "dH", "FAIL", "the query path is missing from dH"),
    ("broken_stack_no_query.py", "dW", "pass", ""),
]


# exact to rounding on the small problems, so only the budget stops them
PER_COORDINATE = {"cheat_linear_differences.py": ("grad_W_C", "grad_W_B"),
                  "cheat_complex_step.py": ("grad_W_C", "grad_W_B"), "cheat_dual_numbers.py": ("grad_W_C", "grad_W_B"),
                  "cheat_stack_complex_step.py": ("dH", "dW_B", "dW_C", "dW")}


@pytest.fixture(scope="module")
def graded(session):
    files = sorted({STUDENTS / f for f, *_ in EXPECTED} | {STUDENTS / f for f in PER_COORDINATE})
    before = (STUDENTS / "correct_common.py").read_text()
    subs = {sub.path.name: sub for sub in grade_many(files, session, jobs=2)}
    assert (STUDENTS / "correct_common.py").read_text() == before, "a submission changed another's file"
    return subs


@pytest.mark.parametrize("filename, function, status, words", EXPECTED)
def test_every_student_file_gets_its_outcome(graded, filename, function, status, words):
    sub = graded[filename]
    result = _results(sub)[function]
    assert result.status == status, f"{filename}: {function} -> {result.status}: {result.hint}"
    assert words in result.hint, f"{filename}: {function}: hint {result.hint!r}"
    assert not sub.passed or status == "pass"


def test_package_functions_are_not_importable_in_any_exercise(session):
    """The package's own gating and gradients: a file defining both exercises is refused; graded
    as either, its import fails, naming what that hand-out allows."""
    path = STUDENTS / "package_functions.py"
    assert "defines functions of several exercises" in grade_submission(path, session).problem
    for exercise, words in (("gating", "numpy_mamba.gating is not part of the hand-out of this exercise (gating)"),
                            ("gradients", "numpy_mamba.gradients is not part of the hand-out of this exercise")):
        sub = grade_submission(path, session, exercise)
        assert words in sub.graded[0].import_error and sub.points == 0 and sub.max_points == 10


def test_hangs_end_at_the_time_limit():
    """Loops at import, loops that ignore SIGALRM/SIGTERM or catch what a timeout raises: each
    child is killed at its limit of CPU time and the report says so (SIGKILL, which no handler
    catches); a child that sleeps uses no CPU and is killed at the wall-clock backstop."""
    session = Session(0, Limits(time=2.0, memory_mb=512))
    files = [STUDENTS / f for f in ("broken_endless.py", "broken_endless_import.py",
                                    "broken_ignore_signals.py", "broken_catch_timeout.py", "broken_sleep.py")]
    subs = grade_many(files, session, jobs=len(files))
    endless, at_import, ignoring, catching, sleeping = subs
    hint = _results(sleeping)["grad_W_C"].hint
    assert "stopped the process while running it: it passed its wall-clock limit" in hint, hint
    assert "within the time limit (2 s" in at_import.graded[0].import_error
    for sub, name in ((endless, "grad_w"), (ignoring, "grad_w"), (catching, "grad_W_B")):
        result = _results(sub)[name]
        assert result.status == "FAIL" and "did not finish within the time limit (2 s" in result.hint, sub.path


def test_a_10_MB_print_is_trimmed_and_does_not_fail_a_correct_file(session):
    sub = grade_submission(STUDENTS / "broken_big_print.py", session)
    assert sub.passed and sub.output_bytes > 10_000_000
    report = text_report(sub, 0)
    assert len(report) < 10_000 and "your file printed" in report


def test_unsolved_hand_outs_are_stubs_of_their_own_exercise_only(session):
    """gradients.py must not report 'gates: not attempted' (and gating.py no gradient); the
    untouched stack.py scores 0 on its four parts without crashing."""
    for path, names in ((ROOT / "tutorials" / "exercises" / "gradients.py", {"grad_W_C", "grad_W_B", "grad_w"}),
                        (ROOT / "tutorials" / "exercises" / "gating.py", {"gates"}),
                        (ROOT / "tutorials" / "exercises" / "stack.py", {"dH", "dW_B", "dW_C", "dW"})):
        sub = grade_submission(path, session)
        assert set(_results(sub)) == names, path.name
        assert all(r.status == "not attempted" and "NotImplementedError" in r.hint for r in sub.results)
        assert not sub.passed and sub.points == 0 and sub.max_points == 10


def test_no_leak_between_students_graded_in_one_process(session):
    """Same module name 'helpers' next to two submissions; a cheat graded before an honest
    wrong answer: each is graded on its own."""
    a, b, cheat, honest, a_again = grade_many(
        [STUDENTS / "class_a" / "gradients.py", STUDENTS / "class_b" / "gradients.py",
         STUDENTS / "cheat_monkeypatch.py", STUDENTS / "broken_sign.py", STUDENTS / "class_a" / "gradients.py"],
        session, jobs=1)
    assert _results(a)["grad_W_C"].status == "pass" and _results(a_again)["grad_W_C"].status == "pass"
    assert "wrong sign" in _results(b)["grad_W_C"].hint, "class_b was served class_a's helpers"
    assert _results(cheat)["grad_W_C"].status == "FAIL"
    assert "wrong sign" in _results(honest)["grad_W_C"].hint, "a previous cheat changed the next grade"


def test_a_third_exercise_plugs_in_by_declaration(session, tmp_path):
    """An exercise with other inputs and a tuple answer, declared in one place, is graded in the
    sandbox like the hand-outs, and of the package its submissions import only its allowlist."""
    class Problem:
        def __init__(self, name, x):
            self.name, self.x = name, x

    def compare(name, pb, answer, ref, exercise):
        if not (isinstance(answer, tuple) and len(answer) == 2):
            return Row(pb.name, note="not a pair")
        return compare_array(name, pb, answer[0], ref, exercise)

    register(Exercise(
        name="toy", functions=(Function("double_pair", "double_pair(x) -> (2x, x)", "toy: 2x", 2),),
        imports=("numpy_mamba.loss:hinge",), allowed="numpy and numpy_mamba.loss.hinge", independent_check="vs 2x",
        problems=lambda seed: [Problem("one", np.arange(3.0)), Problem("two", np.ones((2, 2)))],
        inputs=lambda name, pb: (pb.x,), reference=lambda name, pb: Reference(2 * pb.x, lambda S: 0.0),
        compare=compare))
    try:
        (tmp_path / "good.py").write_text("from numpy_mamba.loss import hinge\n\n"
                                          "def double_pair(x):\n    return 2 * x + 0 * hinge(x, 1.0), x\n")
        (tmp_path / "bad.py").write_text("from numpy_mamba.loss import hinge_loss\n\n"
                                         "def double_pair(x):\n    return hinge_loss(x, x, x), x\n")
        good, bad = grade_many([tmp_path / "good.py", tmp_path / "bad.py"], Session(0), jobs=1)
        assert good.passed and good.points == 2
        assert "numpy_mamba.loss.hinge_loss is not part of the hand-out of this exercise (toy)" in bad.graded[0].import_error
    finally:
        EXERCISES.pop("toy", None)


def test_helpers_next_to_a_copied_submission_and_paths_with_spaces(session, tmp_path):
    folder = tmp_path / "a student"
    folder.mkdir()
    shutil.copy(STUDENTS / "_common.py", folder / "_common.py")
    shutil.copy(STUDENTS / "correct_common.py", folder / "my gradients.py")
    assert grade_submission(folder / "my gradients.py", session).passed


def _budget_rows(sub) -> dict:
    """{function: its row on the paper-size problem (public group)}."""
    return {r.name: row for r in sub.results if r.group == "public" for row in r.rows if "CPU budget" in row.problem}


def test_the_budget_passes_every_derivation_and_stops_every_per_coordinate_method(correct, graded):
    """At the paper's size (d = 30, B = 64, l = 20; 961 coordinates in W_B and in W_C, 41,664 in
    the stack's dH), every analytic file we have is within its CPU budget (Python loops over the
    batch included) and differences with a large step (exact where F is linear in the
    parameter), complex step and dual numbers, which need a forward pass per coordinate, are not.  No time is asserted: each row
    says pass or over the budget; ``pytest -s`` prints the CPU seconds."""
    for sub in correct[:len(CORRECT)] + correct[len(CORRECT) + 1:]:
        for name, row in _budget_rows(sub).items():
            print(f"{sub.path.name:<28}{name:<10} CPU {row.cpu:.3f} s (ok)")
            assert row.ok and row.cpu > 0, (sub.path.name, name, row)
    for filename, names in PER_COORDINATE.items():
        results = _results(graded[filename])
        for name in names:
            assert results[name].status == "FAIL" and "used more than its CPU budget" in results[name].hint, (
                filename, name, results[name].hint)
            print(f"{filename:<28}{name:<10} over the budget: {results[name].hint[:60]}")

"""The autograder (``python -m numpy_mamba grade``) and the exercise generator.

The grader must pass every mathematically correct implementation (the solutions, the package's
own functions, a naive one, one that sums over the zero-labelled query column) and fail each
deliberately broken file in tests/student_files/ with the hint that names its mistake.
"""
import importlib.util
from pathlib import Path

import numpy as np
import pytest

from numpy_mamba import gating, gradients
from numpy_mamba.grader.run import exit_status, grade_module, load_student, main, GraderError
from numpy_mamba.grader.mistakes import backward, gate_mistakes, mistakes_for
from numpy_mamba.grader.problems import KINK_MARGIN, make_problems
from numpy_mamba.model import output

ROOT = Path(__file__).resolve().parent.parent
STUDENTS = ROOT / "tests" / "student_files"
SOLUTIONS = ROOT / "tutorials" / "solutions"
EXERCISES = ROOT / "tutorials" / "exercises"


@pytest.fixture(scope="module")
def problems():
    return make_problems(0)


def _load_tool():
    spec = importlib.util.spec_from_file_location("make_exercises", ROOT / "tutorials" / "make_exercises.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _grade(path, problems):
    results = grade_module(load_student(path), problems)
    return {r.name: r for r in results}, exit_status(results)


@pytest.mark.parametrize("path", [SOLUTIONS / "gating_solution.py", SOLUTIONS / "gradients_solution.py",
                                  STUDENTS / "package_functions.py", STUDENTS / "correct_naive.py",
                                  STUDENTS / "correct_query_column_zero.py"])
def test_correct_implementations_pass(path, problems):
    """A failure here means the grader fails a mathematically correct function."""
    results, status = _grade(path, problems)
    defined = [r for r in results.values() if r.defined]
    assert defined, f"{path.name} defines no exercise function"
    for r in defined:
        assert r.status == "pass", f"{path.name}: {r.name} -> {r.status}: {r.hint}"
    assert status == 0


BROKEN = [
    ("broken_sign.py", "grad_W_C", "wrong sign"),
    ("broken_transposed.py", "grad_W_B", "transposed"),
    ("broken_label_leak.py", "grad_W_C", "label leak"),
    ("broken_sum.py", "grad_W_B", "off by a factor of B"),
    ("broken_no_suffix.py", "grad_w", "missing the suffix-product term"),
    ("broken_paper_mask.py", "grad_w", "F in (-1, 1)"),
    ("broken_gates_prefix.py", "gates", "product over the wrong side"),
    ("broken_gates_no_query.py", "gates", "dropped the query column"),
    ("broken_gates_unstable.py", "gates", "NaN or inf on problem 'saturated gates"),
    ("broken_raises.py", "grad_W_C", "IndexError"),
]


@pytest.mark.parametrize("filename, function, hint", BROKEN)
def test_broken_implementations_fail_with_the_right_hint(filename, function, hint, problems):
    results, status = _grade(STUDENTS / filename, problems)
    assert results[function].status == "FAIL", f"{filename}: the grader passed a broken {function}"
    assert hint in results[function].hint, f"{filename}: wrong hint {results[function].hint!r}"
    assert status == 1


def test_stub_exercises_are_not_attempted_and_exit_nonzero(problems):
    for path in sorted(EXERCISES.glob("*.py")):
        results, status = _grade(path, problems)
        defined = [r for r in results.values() if r.defined]
        assert defined and all(r.status == "not attempted" for r in defined), path.name
        assert all("NotImplementedError" in r.hint for r in defined), path.name
        assert status == 1, f"{path.name}: an unsolved exercise must not exit 0"


def test_cli_import_failure_missing_file_and_empty_file(capsys):
    assert main([str(STUDENTS / "broken_import.py")]) == 2
    err = capsys.readouterr().err
    assert "could not import" in err and "SyntaxError" in err and "line 5" in err
    assert main([str(STUDENTS / "no_such_file.py")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main([str(STUDENTS / "empty.py")]) == 1
    assert "none of gates, grad_W_C, grad_W_B, grad_w is defined" in capsys.readouterr().out
    with pytest.raises(GraderError):
        load_student(STUDENTS / "README.md")


def test_cli_prints_table_and_hint_for_a_broken_file(capsys):
    assert main([str(STUDENTS / "broken_no_suffix.py")]) == 1
    out = capsys.readouterr().out
    assert "eq (135): dL/dw" in out and "vs finite diff." in out
    assert "grad_w    FAIL" in out and "suffix-product term" in out
    assert "grad_W_C  not attempted" in out and "NOT ALL PASSED" in out


def test_backward_reference_equals_package_gradients(problems):
    """The mistakes are built on backward(); if it drifted from the package, hints would lie."""
    for pb in problems:
        mine, ref = backward(pb.params, pb.P, pb.z), gradients(pb.params, pb.P, pb.z)
        for a, b in zip(mine, ref):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14, err_msg=pb.name)


def test_every_known_mistake_differs_from_the_truth_somewhere(problems):
    """Else a correct answer could be reported as that mistake, or the mistake would pass."""
    def differs(V, R):
        return V.shape != R.shape or np.linalg.norm(V - R) > 1e-3 * np.linalg.norm(R)

    for name in ("W_B", "W_C", "w"):
        for key, _, mistaken in mistakes_for(name):
            refs = [gradients(pb.params, pb.P, pb.z) for pb in problems]
            assert any(differs(mistaken(pb, r), getattr(r, name)) for pb, r in zip(problems, refs)), (name, key)
    for key, _, mistaken in gate_mistakes():
        refs = [gating(pb.params.w, pb.P) for pb in problems]
        assert any(differs(mistaken(pb, r), r) for pb, r in zip(problems, refs)), ("gates", key)


def test_problems_cover_the_awkward_cases(problems):
    """l = 1, m != d+1, saturated gates, both sides of the hinge, and no prompt near the kink."""
    assert any(pb.P.shape[2] == 2 for pb in problems), "no problem with l = 1"
    assert any(pb.params.W_B.shape[0] != pb.P.shape[1] for pb in problems), "no problem with m != d+1"
    logits = [np.abs(np.einsum("d,bdl->bl", pb.params.w, pb.P)) for pb in problems]
    assert any(np.any((a >= 30) & (a <= 50)) for a in logits), "no saturated gate"
    zF = np.concatenate([pb.z * output("mamba", pb.params, pb.P) for pb in problems])
    assert np.any(zF > 1) and np.any(zF < -1) and np.any(np.abs(zF) < 1)
    assert np.all(np.abs(1 - zF) > KINK_MARGIN)


def test_committed_exercises_equal_the_generated_ones():
    """Fails when a solution changed but tutorials/make_exercises.py was not re-run."""
    tool = _load_tool()
    assert tool.stale() == [], "stale exercises: run  python tutorials/make_exercises.py"
    generated = tool.generate()
    assert {p.name for p in generated} == {p.name for p in EXERCISES.glob("*.py")}
    for text in generated.values():
        assert "BEGIN SOLUTION" not in text and "END SOLUTION" not in text


def test_generator_strips_blocks_and_refuses_bad_markers():
    tool = _load_tool()
    src = "def f(x):\n    '''doc'''\n    # BEGIN SOLUTION\n    return 2 * x\n    # END SOLUTION\n"
    namespace = {}
    exec(tool.strip_solutions(src), namespace)
    with pytest.raises(NotImplementedError, match="f: your code here"):
        namespace["f"](1)
    for bad, what in [("    # BEGIN SOLUTION\n    x = 1\n", "never closed"),
                      ("    # END SOLUTION\n", "without"),
                      ("# BEGIN SOLUTION\n# BEGIN SOLUTION\n", "inside"),
                      ("# BEGIN SOLUTION\n\n# END SOLUTION\n", "empty")]:
        with pytest.raises(ValueError, match=what):
            tool.strip_solutions(bad)


def test_each_known_mistake_gets_its_own_hint(problems):
    """An answer that IS a known mistake must be reported with that mistake's hint, not another's."""
    from numpy_mamba.grader.hints import match_mistake

    for name, field in (("grad_W_C", "W_C"), ("grad_W_B", "W_B"), ("grad_w", "w")):
        for key, hint, mistaken in mistakes_for(field):
            answers = [mistaken(pb, gradients(pb.params, pb.P, pb.z)) for pb in problems]
            assert match_mistake(name, answers, problems) == hint, (name, key)
    for key, hint, mistaken in gate_mistakes():
        answers = [mistaken(pb, gating(pb.params.w, pb.P)) for pb in problems]
        assert match_mistake("gates", answers, problems) == hint, ("gates", key)


def test_staleness_check_notices_an_edited_or_missing_exercise(tmp_path):
    tool = _load_tool()
    solutions, exercises = tmp_path / "solutions", tmp_path / "exercises"
    solutions.mkdir()
    exercises.mkdir()
    (solutions / "demo_solution.py").write_text("def f():\n    # BEGIN SOLUTION\n    return 1\n    # END SOLUTION\n")
    assert tool.stale(solutions, exercises) == [exercises / "demo.py"]          # missing
    for path, text in tool.generate(solutions, exercises).items():
        path.write_text(text)
    assert tool.stale(solutions, exercises) == []
    (exercises / "demo.py").write_text((exercises / "demo.py").read_text() + "# edited\n")
    assert tool.stale(solutions, exercises) == [exercises / "demo.py"]          # edited by hand


def test_endless_loop_is_stopped_with_a_message(monkeypatch):
    # Without a time limit, one student's endless loop would hang the whole grading run.
    import numpy_mamba.grader.run as grader
    monkeypatch.setattr(grader, "TIME_LIMIT", 0.2)
    module = load_student(STUDENTS / "broken_endless.py")
    by_name = {r.name: r for r in grade_module(module, make_problems(0))}
    assert by_name["grad_w"].status == "FAIL"
    assert "longer than 0.2 s" in by_name["grad_w"].hint

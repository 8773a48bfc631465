"""``python -m numpy_mamba grade``: its exit statuses, its argument checks, instructor mode (a folder
of submissions, --csv, Gradescope's --json) and the generator of the hand-outs.

A failure here means a script or an autograder reading the exit status, the CSV or
results.json would record the wrong grade, or the hand-outs drifted from their solutions.
"""
import csv
import importlib.util
import json
import re
import shutil
from pathlib import Path

import pytest

from numpy_mamba.grader.run import main

ROOT = Path(__file__).resolve().parent.parent
STUDENTS = ROOT / "tests" / "student_files"
SOLUTIONS = ROOT / "tests" / "solutions"
EXERCISES = ROOT / "tutorials" / "exercises"


@pytest.mark.parametrize("path, status", [
    (SOLUTIONS / "gradients_solution.py", 0), (STUDENTS / "broken_sign.py", 1),
    (STUDENTS / "cheat_atexit.py", 1), (STUDENTS / "package_functions.py", 1),
    (STUDENTS / "broken_import.py", 2), (STUDENTS / "cheat_exit_import.py", 2), (STUDENTS / "no_such.py", 2)])
def test_exit_status_of_one_file(path, status, capsys):
    """0 all defined functions pass, 1 one does not, 2 nothing could be graded: os._exit or an
    atexit handler in the submission cannot change it."""
    assert main([str(path)]) == status
    out = capsys.readouterr().out
    last = (out.strip().splitlines() or [""])[-1]
    if status == 2:
        assert "ALL PASSED" not in out
    else:
        assert last == ("ALL PASSED" if status == 0 else "NOT ALL PASSED")


def test_import_failure_missing_file_and_empty_file_messages(capsys):
    assert main([str(STUDENTS / "broken_import.py")]) == 2
    err = capsys.readouterr().err
    assert "could not import" in err and "SyntaxError" in err and "line 5" in err
    assert main([str(STUDENTS / "no_such_file.py")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main([str(STUDENTS / "empty.py")]) == 1
    assert "none of gates, grad_W_C, grad_W_B, grad_w, layer_backward is defined" in capsys.readouterr().out
    assert main([str(STUDENTS / "README.md")]) == 2
    assert "not a Python file" in capsys.readouterr().err


def test_report_of_a_broken_file_shows_its_exercise_only(capsys):
    assert main([str(STUDENTS / "broken_no_suffix.py")]) == 1
    out = capsys.readouterr().out
    assert "eq (135): dL/dw" in out and "vs finite diff." in out
    assert "grad_w (public)   FAIL" in out and "suffix-product term" in out
    assert "grad_W_C          not attempted" in out and "NOT ALL PASSED" in out
    assert "The autograder adds 2 hidden problems" in out and "hinge's kink" not in out
    assert not [line for line in out.splitlines() if line.startswith("gates")], \
        "the other exercise is reported as not attempted"


@pytest.mark.parametrize("argv", [["--seed", "-5"], ["--seed", "1.5"], ["--time-limit", "0"],
                                  ["--time-limit", "nan"], ["--memory-limit", "10"], ["--jobs", "0"],
                                  ["--jobs", "100000"], ["--exercise", "nope"]])
def test_every_number_is_checked_by_argparse(argv, capsys):
    with pytest.raises(SystemExit) as stop:
        main(argv + [str(STUDENTS / "broken_sign.py")])
    assert stop.value.code == 2
    assert "usage:" in capsys.readouterr().err


@pytest.fixture
def class_folder(tmp_path):
    """One correct, one honest-wrong, one package-calling, one monkeypatching submission, each
    in a folder of its own as an LMS exports them."""
    folder = tmp_path / "class"
    for name in ("alice", "bob", "carol", "dave"):
        (folder / name).mkdir(parents=True)
    shutil.copy(SOLUTIONS / "gradients_solution.py", folder / "alice" / "alice.py")
    shutil.copy(STUDENTS / "broken_sign.py", folder / "bob" / "bob.py")
    shutil.copy(STUDENTS / "_common.py", folder / "bob" / "_common.py")         # a helper: skipped
    (folder / "bob" / "notes.py").write_text("X = 1\n")                         # defines no exercise
    (folder / "carol" / "carol.py").write_text("from numpy_mamba import gradients\n\n\ndef grad_W_C(params, P, z):\n"
                                               "    return gradients(params, P, z).W_C\n")
    shutil.copy(STUDENTS / "cheat_monkeypatch.py", folder / "dave" / "dave.py")
    shutil.copy(STUDENTS / "_common.py", folder / "dave" / "_common.py")
    return folder


def test_a_folder_gives_a_class_table_csv_and_exit_1(class_folder, tmp_path, capsys):
    grades = tmp_path / "grades.csv"
    assert main([str(class_folder), "--csv", str(grades)]) == 1
    captured = capsys.readouterr()
    out = captured.out
    assert "skipped" in out and "notes.py" in out
    assert f"wrote {grades} (4 submissions)" in captured.err
    rows = {Path(r["submission"]).name: r for r in csv.DictReader(grades.open())}
    assert sorted(rows) == ["alice.py", "bob.py", "carol.py", "dave.py"]
    assert rows["alice.py"]["status"] == "passed" and rows["alice.py"]["points"] == "10"
    assert rows["alice.py"]["grad_w_status"] == "pass" and float(rows["alice.py"]["grad_w_max_rel_error"]) < 1e-6
    assert rows["bob.py"]["grad_W_C_status"] == "FAIL" and "wrong sign" in rows["bob.py"]["grad_W_C_hint"]
    assert rows["bob.py"]["grad_W_B_status"] == "not attempted" and rows["bob.py"]["points"] == "0"
    assert "numpy_mamba.gradients is not part of the hand-out" in rows["carol.py"]["error"]
    assert rows["carol.py"]["status"] == "import error" and rows["carol.py"]["max_points"] == "10"
    assert rows["dave.py"]["points"] == "0" and rows["dave.py"]["grad_w_status"] == "FAIL"
    assert all(r["max_points"] == "10" for r in rows.values())


def test_gradescope_results_json_for_one_submission(class_folder, tmp_path, capsys):
    results = tmp_path / "results.json"
    assert main([str(class_folder / "bob" / "bob.py"), "--json", str(results)]) == 1
    data = json.loads(results.read_text())
    names = [t["name"].split("(")[0] + (" hidden" if "[hidden" in t["name"] else "") for t in data["tests"]]
    assert data["score"] == 0 and names == ["grad_W_C", "grad_W_C hidden", "grad_W_B", "grad_w"]
    for test in data["tests"]:
        assert set(test) >= {"name", "score", "max_score", "output", "visibility"}
    assert "wrong sign" in data["tests"][0]["output"] and data["tests"][3]["max_score"] == 4
    assert [t["visibility"] for t in data["tests"]] == ["visible", "after_due_date", "visible", "visible"]
    assert data["tests"][0]["max_score"] + data["tests"][1]["max_score"] == 3
    assert main([str(SOLUTIONS / "gradients_solution.py"), "--json", str(results)]) == 0
    assert json.loads(results.read_text())["score"] == 10
    with pytest.raises(SystemExit) as stop:                                     # --json is for one
        main([str(class_folder), "--json", str(results)])
    assert stop.value.code == 2


def test_a_folder_with_stack_submissions_grades_each_part(tmp_path, capsys):
    """The stack exercise in instructor mode: its four parts are CSV columns and Gradescope tests,
    next to another exercise's submission in the same folder."""
    folder = tmp_path / "class"
    folder.mkdir()
    shutil.copy(SOLUTIONS / "stack_solution.py", folder / "erin.py")
    (folder / "frank").mkdir()
    shutil.copy(STUDENTS / "_stack_common.py", folder / "frank" / "_stack_common.py")  # a helper: skipped
    shutil.copy(STUDENTS / "broken_stack_residual.py", folder / "frank" / "frank.py")
    shutil.copy(SOLUTIONS / "gating_solution.py", folder / "gina.py")
    grades, results = tmp_path / "grades.csv", tmp_path / "results.json"
    assert main([str(folder), "--csv", str(grades)]) == 1
    rows = {Path(r["submission"]).name: r for r in csv.DictReader(grades.open())}
    assert sorted(rows) == ["erin.py", "frank.py", "gina.py"]
    assert rows["erin.py"]["exercise"] == "stack" and rows["erin.py"]["points"] == "10"
    assert all(rows["erin.py"][f"{p}_status"] == "pass" for p in ("dH", "dW_B", "dW_C", "dW"))
    assert rows["frank.py"]["dH_status"] == "FAIL" and "residual" in rows["frank.py"]["dH_hint"]
    assert rows["frank.py"]["dW_status"] == "pass" and rows["frank.py"]["points"] == "6"
    assert rows["gina.py"]["status"] == "passed" and rows["gina.py"]["dH_status"] == ""
    capsys.readouterr()
    assert main([str(folder / "frank" / "frank.py"), "--json", str(results)]) == 1
    data = json.loads(results.read_text())
    assert data["score"] == 6 and sum(t["max_score"] for t in data["tests"]) == 10 and len(data["tests"]) == 8
    assert data["tests"][0]["name"].startswith("layer_backward(dO, cache)") and "residual" in data["tests"][0]["output"]
    out = capsys.readouterr().out
    assert "exercise 'stack' (layer_backward, graded as dH, dW_B, dW_C, dW)" in out


def test_a_folder_where_everyone_passes_exits_0(tmp_path, capsys):
    for name in ("a", "b"):
        shutil.copy(SOLUTIONS / "gating_solution.py", tmp_path / f"{name}.py")
    assert main([str(tmp_path)]) == 0
    assert main([str(tmp_path / "nothing_here")]) == 2


def _load_tool():
    spec = importlib.util.spec_from_file_location("make_exercises", ROOT / "tutorials" / "make_exercises.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_exercises_equal_the_generated_ones_and_start_with_the_exercise():
    """Fails when a solution changed but tutorials/make_exercises.py was not re-run, or when
    the hand-out opens with the maintainers' note instead of the exercise."""
    tool = _load_tool()
    assert tool.stale() == [], "stale exercises: run  python tutorials/make_exercises.py"
    generated = tool.generate()
    assert {p.name for p in generated} == {p.name for p in EXERCISES.glob("*.py")}
    for text in generated.values():
        assert "BEGIN SOLUTION" not in text and "END SOLUTION" not in text
        assert text.startswith('"""Exercise:'), text[:80]
        assert "Do not edit" not in text and "GENERATED" not in text


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


def test_a_broken_declaration_is_the_graders_failure_exit_3(tmp_path, capsys):
    """An exercise handing out a package function that does not exist cannot set up its sandbox:
    that is the grader's fault (exit 3), never a student's 0 points."""
    from numpy_mamba.grader.registry import EXERCISES, register

    gradients = EXERCISES["gradients"]
    register(gradients.__class__(**{**gradients.__dict__, "name": "broken_declaration",
                                    "functions": (), "imports": ("numpy_mamba.model:no_such_function",)}))
    try:
        assert main([str(SOLUTIONS / "gradients_solution.py"), "--exercise", "broken_declaration"]) == 3
        assert "internal error" in capsys.readouterr().err
    finally:
        EXERCISES.pop("broken_declaration", None)


def _notebook(*cells) -> str:
    """An .ipynb of ("markdown" | "code", source) cells, as Jupyter saves it (sources as lists of lines)."""
    return json.dumps({"cells": [{"cell_type": kind, "metadata": {}, "source": text.splitlines(keepends=True),
                                  **({"outputs": [], "execution_count": None} if kind == "code" else {})}
                                 for kind, text in cells],
                       "metadata": {"kernelspec": {"name": "python3"}}, "nbformat": 4, "nbformat_minor": 5})


def test_a_notebook_is_graded_exactly_as_its_code_and_ipython_lines_are_refused_by_cell(tmp_path, capsys):
    """The .ipynb of a solution (its code split over cells, markdown between them) gets the .py's
    report; a magic or a shell line is refused, naming its cell; a file that is not a notebook says so."""
    solution = (SOLUTIONS / "gradients_solution.py").read_text()
    head, tail = solution.split("\ndef grad_W_B", 1)
    (tmp_path / "gradients.ipynb").write_text(_notebook(("markdown", "# My answers\n$G_i$"), ("code", head),
                                                        ("markdown", "next"), ("code", "def grad_W_B" + tail)))
    assert main([str(tmp_path / "gradients.ipynb")]) == 0
    from_notebook = capsys.readouterr().out
    assert main([str(SOLUTIONS / "gradients_solution.py")]) == 0
    from_py = capsys.readouterr().out
    def timeless(report):                                   # the CPU time of a call differs between runs
        return [re.sub(r" \(CPU [0-9.]+ s\)", "", line) for line in report.splitlines()[1:]]
    assert timeless(from_notebook) == timeless(from_py) and "ALL PASSED" in from_notebook
    (tmp_path / "gradients.ipynb").write_text(_notebook(("code", "import numpy as np\n!pip install torch"),
                                                        ("code", solution)))
    assert main([str(tmp_path / "gradients.ipynb")]) == 2
    assert "cell 1 (starting 'import numpy as np') holds IPython syntax, not Python: '!pip install torch'" in \
        capsys.readouterr().err
    (tmp_path / "gradients.ipynb").write_text("not json")
    assert main([str(tmp_path / "gradients.ipynb")]) == 2
    assert "not a Jupyter notebook" in capsys.readouterr().err


def test_a_students_run_grades_the_public_problems_and_counts_the_hidden(capsys):
    """By default the kink and saturated problems are hidden: a student's own run leaves them out
    and says how many the autograder adds; --all-problems and --hidden none show them."""
    assert main([str(SOLUTIONS / "gradients_solution.py")]) == 0
    out = capsys.readouterr().out
    assert "hinge's kink" not in out and "saturated" not in out and "adds 2 hidden problems" in out
    assert main([str(SOLUTIONS / "gradients_solution.py"), "--all-problems"]) == 0
    out = capsys.readouterr().out
    assert "hinge's kink" in out and "(hidden problems)" in out and "points: 10 / 10" in out
    assert main([str(SOLUTIONS / "gradients_solution.py"), "--hidden", "none"]) == 0
    out = capsys.readouterr().out
    assert "hinge's kink" in out and "hidden" not in out and "points: 10 / 10" in out
    with pytest.raises(SystemExit):
        main([str(SOLUTIONS / "gradients_solution.py"), "--hidden", "nope"])
    assert "expected problem-name prefixes" in capsys.readouterr().err


def test_the_report_says_whether_it_shows_all_a_file_printed(tmp_path, capsys):
    """218 bytes printed are all shown, and the report says so; 10 MB are cut, and it says where."""
    source = (SOLUTIONS / "gradients_solution.py").read_text()
    (tmp_path / "gradients.py").write_text(source + "\nprint('x' * 217)\n")
    assert main([str(tmp_path / "gradients.py")]) == 0
    out = capsys.readouterr().out
    assert re.search(r"what your file printed \(218 bytes, all of it\):\n  \| x{217}\n", out), out[-600:]
    (tmp_path / "gradients.py").write_text(source + "\nprint('x' * 10_000_000)\n")
    assert main([str(tmp_path / "gradients.py")]) == 0
    out = capsys.readouterr().out
    assert "what your file printed (10000001 bytes; only the first 1500 characters are shown):" in out


@pytest.mark.parametrize("command", ["grade", "gradescope"])
def test_command_help_reads_as_plain_text(command, capsys):
    from numpy_mamba.cli import main as cli
    with pytest.raises(SystemExit):
        cli([command, "--help"])
    text = capsys.readouterr().out
    assert "``" not in text and "usage: python -m numpy_mamba " + command in text

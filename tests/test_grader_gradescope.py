"""``python -m numpy_mamba gradescope``: the zip's layout, and its setup.sh and run_autograder run
in a simulated /autograder tree (AUTOGRADER_ROOT) for a correct, a wrong, a syntax-error, a
two-file and an empty submission.

A failure here means an instructor uploading the zip would see "autograder failed" instead of a
score, a wrong score, or a table Gradescope collapses.
"""
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from numpy_mamba.grader.gradescope import BuildError, main, project_root

ROOT = Path(__file__).resolve().parent.parent
STUDENTS = ROOT / "tests" / "student_files"
SOLUTIONS = ROOT / "tutorials" / "solutions"


@pytest.fixture(scope="module")
def autograder(tmp_path_factory):
    """The zip for 'gradients' with grad_w worth 5, unpacked as Gradescope does into
    ROOT/source, and setup.sh run with pip installing into a folder (no network, no venv change)."""
    base = tmp_path_factory.mktemp("gradescope")
    zip_path = base / "autograder.zip"
    assert main(["gradients", "--out", str(zip_path), "--points", "grad_w=5"]) == 0
    with zipfile.ZipFile(zip_path) as z:
        names = z.namelist()
        z.extractall(base / "source")
    for script in ("setup.sh", "run_autograder"):
        (base / "source" / script).chmod(0o755)
    site = base / "site"
    env = dict(os.environ, AUTOGRADER_PYTHON=sys.executable,
               AUTOGRADER_PIP_ARGS=f"--no-deps --no-index --target {site}")
    done = subprocess.run(["bash", str(base / "source" / "setup.sh")], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    return base, names, site


def test_the_zip_has_the_scripts_at_its_top_level_and_this_packages_wheel(autograder):
    base, names, site = autograder
    assert {"setup.sh", "run_autograder", "autograder.json"} <= set(names)
    assert any(n.startswith("numpy_mamba-") and n.endswith("-py3-none-any.whl") for n in names)
    assert (site / "numpy_mamba" / "grader" / "child.py").is_file()
    config = json.loads((base / "source" / "autograder.json").read_text())
    assert config["exercise"] == "gradients" and config["points"] == {"grad_w": 5.0}


def _grade(autograder, files: dict) -> dict:
    """Put ``files`` ({name: source path or text}) in a fresh submission folder, run
    run_autograder, return results.json."""
    base, _, site = autograder
    for sub in ("submission", "results"):
        shutil.rmtree(base / sub, ignore_errors=True)
    (base / "submission").mkdir()
    for name, content in files.items():
        target = base / "submission" / name
        if isinstance(content, Path):
            shutil.copy(content, target)
        else:
            target.write_text(content)
    env = {"PATH": os.environ["PATH"], "AUTOGRADER_ROOT": str(base), "AUTOGRADER_PYTHON": sys.executable,
           "PYTHONPATH": str(site)}
    done = subprocess.run(["bash", str(base / "source" / "run_autograder")], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads((base / "results" / "results.json").read_text())


def test_a_correct_submission_scores_everything(autograder):
    data = _grade(autograder, {"gradients.py": SOLUTIONS / "gradients_solution.py"})
    assert data["score"] == 11 and [t["max_score"] for t in data["tests"]] == [3, 3, 5]
    assert all(t["status"] == "passed" for t in data["tests"])
    assert data["output_format"] == "md" and data["output"].startswith("```")
    assert "isolation: kernel sandbox" in data["output"]


def test_a_wrong_submission_gets_its_hint(autograder):
    """Any file name, with a helper module next to it."""
    data = _grade(autograder, {"my_homework.py": STUDENTS / "broken_sign.py", "_common.py": STUDENTS / "_common.py"})
    assert data["score"] == 0 and data["tests"][0]["status"] == "failed"
    assert "wrong sign" in data["tests"][0]["output"]


def test_a_syntax_error_scores_every_part_0_of_its_points(autograder):
    data = _grade(autograder, {"gradients.py": STUDENTS / "broken_import.py"})
    assert data["score"] == 0 and [t["max_score"] for t in data["tests"]] == [3, 3, 5]
    assert all("SyntaxError" in t["output"] for t in data["tests"])


def test_two_candidate_files_score_0_naming_them(autograder):
    data = _grade(autograder, {"a.py": SOLUTIONS / "gradients_solution.py", "b.py": STUDENTS / "broken_sign.py"})
    assert data["score"] == 0 and data["tests"] == []
    assert "a.py, b.py" in data["output"] and "none named gradients.py" in data["output"]
    data = _grade(autograder, {"gradients.py": SOLUTIONS / "gradients_solution.py", "b.py": STUDENTS / "broken_sign.py",
                               "_helper.py": "X = 1\n"})
    assert data["score"] == 11                               # the one named after the exercise


def test_an_empty_submission_scores_0_with_a_message(autograder):
    data = _grade(autograder, {"notes.txt": "my answers are on paper"})
    assert data["score"] == 0 and "no .py file in your submission (found: notes.txt)" in data["output"]


def test_the_project_root_is_found_or_the_error_says_what_to_do(tmp_path):
    assert project_root() == ROOT
    with pytest.raises(BuildError, match="source checkout"):
        project_root(tmp_path)

"""``python -m numpy_mamba gradescope``: the zip's layout, and its setup.sh and run_autograder run
in a simulated /autograder tree (AUTOGRADER_ROOT) for a correct, a wrong, a syntax-error, a
two-file, an empty and a notebook submission; hidden problems, the secret seed, run_autograder
outside an image or before setup.sh, the zip built from an installed package in another folder.
(The runner at every tier of the sandbox: tests/test_grader_tiers.py.)

A failure here means an instructor uploading the zip would see "autograder failed" instead of a
score, a wrong score or a score out of 0, a table Gradescope collapses, hidden results shown at
once, the seed a student could replay, a zip that cannot be built outside the clone, or a zip
tried on a laptop that writes into /autograder or changes the laptop's permissions.
"""
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import site as site_module

from numpy_mamba.grader.gradescope import BuildError, main, project_root

ROOT = Path(__file__).resolve().parent.parent
STUDENTS = ROOT / "tests" / "student_files"
SOLUTIONS = ROOT / "tests" / "solutions"


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
    modes = _modes()
    done = subprocess.run(["bash", str(base / "source" / "setup.sh")], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert "permissions are left as they are" in done.stdout and _modes() == modes, "setup.sh changed this machine"
    return base, names, site


def _modes() -> dict:
    """The permission bits of this checkout and of every entry of the interpreter's site-packages."""
    paths = [ROOT, ROOT / "numpy_mamba"] + [p for d in site_module.getsitepackages() for p in Path(d).iterdir()]
    return {p: p.stat().st_mode for p in paths}


def test_the_zip_has_the_scripts_at_its_top_level_and_this_packages_wheel(autograder):
    base, names, site = autograder
    assert {"setup.sh", "run_autograder", "autograder.json"} <= set(names)
    assert any(n.startswith("numpy_mamba-") and n.endswith("-py3-none-any.whl") for n in names)
    assert (site / "numpy_mamba" / "grader" / "sandbox" / "child.py").is_file()
    config = json.loads((base / "source" / "autograder.json").read_text())
    assert config["exercise"] == "gradients" and config["points"] == {"grad_w": 5.0} and "seed" not in config
    with zipfile.ZipFile(base / "autograder.zip") as z:
        assert z.getinfo("secret.seed").external_attr >> 16 & 0o777 == 0o600
    metadata = next(site.glob("numpy_mamba-*.dist-info")) / "METADATA"
    requires = [line for line in metadata.read_text().splitlines() if line.startswith("Requires-Dist: pyseccomp")]
    assert requires and all('extra == "grader"' in line for line in requires), "the sandbox's seccomp is the grader extra's"
    assert "[grader]" in (base / "source" / "setup.sh").read_text(), "setup.sh must install the grader extra"
    secret = base / "source" / "secret.seed"
    assert secret.stat().st_mode & 0o777 == 0o600, "setup.sh left the secret readable by others"
    seed = _seed(secret)
    assert seed > 2**20 and seed == _seed(base / "numpy_mamba_secret.seed"), "not the instructor's kept seed"


def _seed(path: Path) -> int:
    (line,) = [line for line in path.read_text().splitlines() if not line.startswith("#")]
    return int(line)


def _grade(autograder, files: dict, stdout: list | None = None, cwd=None) -> dict:
    """Put ``files`` ({name: source path or text}) in a fresh submission folder, run
    run_autograder (from ``cwd``, "submission": that folder, with AUTOGRADER_ROOT given relative to
    it), return results.json (its stdout, the instructor's, appended to ``stdout``)."""
    base, _, site = autograder
    for sub in ("submission", "results"):
        shutil.rmtree(base / sub, ignore_errors=True)
    (base / "submission").mkdir()
    for name, content in files.items():
        target = base / "submission" / name
        if isinstance(content, Path):
            shutil.copy(content, target)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content)
    env = {"PATH": os.environ["PATH"], "AUTOGRADER_ROOT": ".." if cwd else str(base), "AUTOGRADER_PYTHON": sys.executable,
           "PYTHONPATH": str(site)}
    done = subprocess.run(["bash", str(base / "source" / "run_autograder")], env=env, capture_output=True,
                          text=True, timeout=300, cwd=base / cwd if cwd else None)
    assert done.returncode == 0, done.stderr
    if stdout is not None:
        stdout.append(done.stdout)
    return json.loads((base / "results" / "results.json").read_text())


def test_a_correct_submission_scores_everything_and_hidden_problems_wait(autograder):
    """Every function is a public test and a hidden one (shown after the due date); the points
    split between them add up; the isolation line and the seed reach the instructor only."""
    stdout = []
    data = _grade(autograder, {"gradients.py": SOLUTIONS / "gradients_solution.py"}, stdout)
    assert data["score"] == 11 and sum(t["max_score"] for t in data["tests"]) == 11
    assert [t["visibility"] for t in data["tests"]] == ["visible", "after_due_date"] * 3
    hidden = [t for t in data["tests"] if t["visibility"] == "after_due_date"]
    assert all("hinge's kink" in t["output"] for t in hidden)
    assert "hinge's kink" not in data["output"] and "saturated" not in data["output"]
    assert all(t["status"] == "passed" for t in data["tests"])
    assert data["output_format"] == "md" and data["output"].startswith("```")
    seed = _seed(autograder[0] / "source" / "secret.seed")
    text = json.dumps(data)
    assert "isolation" not in text and str(seed) not in text and "drawn by your instructor" in data["output"]
    assert stdout[0].startswith("isolation: kernel sandbox") and "graded submission/gradients.py: 11 / 11" in stdout[0]


def test_a_submission_that_ships_a_numpy_mamba_package_is_not_imported_by_the_grader(autograder, tmp_path):
    """``python -m`` imports from the current folder first: run from the submission folder, a
    submission's own numpy_mamba/ would be the grader (as root).  run_autograder runs from /."""
    marker = tmp_path / "imported"
    fake = f"open({str(marker)!r}, 'w').write('the submission ran as the grader')\n"
    data = _grade(autograder, {"gradients.py": SOLUTIONS / "gradients_solution.py",
                               "numpy_mamba/__init__.py": fake, "numpy_mamba/grader/__init__.py": fake,
                               "numpy_mamba/grader/gradescope.py": fake}, cwd="submission")
    assert not marker.exists() and data["score"] == 11


def test_a_notebook_submission_is_graded_as_its_code(autograder):
    notebook = {"cells": [{"cell_type": "markdown", "source": ["# my answers"]},
                          {"cell_type": "code", "source": (SOLUTIONS / "gradients_solution.py").read_text()}],
                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    data = _grade(autograder, {"gradients.ipynb": json.dumps(notebook)})
    assert data["score"] == 11
    notebook["cells"].insert(1, {"cell_type": "code", "source": "%matplotlib inline\nimport numpy"})
    data = _grade(autograder, {"gradients.ipynb": json.dumps(notebook)})
    assert data["score"] == 0 and [t["max_score"] for t in data["tests"]] == [3, 3, 5], "not 0 of the points"
    assert all("cell 2 (starting '%matplotlib inline') holds IPython syntax" in t["output"] for t in data["tests"])


def test_run_autograder_outside_an_image_says_so_and_writes_nothing(autograder, tmp_path):
    """Run by hand without AUTOGRADER_ROOT on a machine that is not a Gradescope image."""
    base, _, site = autograder
    env = {"PATH": os.environ["PATH"], "AUTOGRADER_PYTHON": sys.executable, "PYTHONPATH": str(site)}
    before = Path("/autograder").exists()
    done = subprocess.run(["bash", str(base / "source" / "run_autograder")], env=env, capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    assert done.returncode == 2 and "not a Gradescope image" in done.stderr and "AUTOGRADER_ROOT" in done.stderr
    assert Path("/autograder").exists() == before and not list(tmp_path.iterdir())


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
    assert data["score"] == 0 and [t["max_score"] for t in data["tests"]] == [3, 3, 5]
    assert "a.py, b.py" in data["output"] and "none named gradients.py" in data["tests"][0]["output"]
    data = _grade(autograder, {"gradients.py": SOLUTIONS / "gradients_solution.py", "b.py": STUDENTS / "broken_sign.py",
                               "_helper.py": "X = 1\n"})
    assert data["score"] == 11                               # the one named after the exercise


def test_an_empty_submission_scores_0_with_a_message(autograder):
    data = _grade(autograder, {"notes.txt": "my answers are on paper"})
    assert data["score"] == 0 and sum(t["max_score"] for t in data["tests"]) == 11
    assert "no .py or .ipynb file in your submission (found: notes.txt)" in data["output"]


def test_run_autograder_before_setup_says_what_to_run_and_writes_results(autograder, tmp_path):
    """An interpreter without numpy_mamba (setup.sh never ran): not a ModuleNotFoundError, but
    the command to run, and a results.json saying so."""
    base, _, _ = autograder
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "bare")], check=True, timeout=120)
    root = tmp_path / "autograder"
    (root / "submission").mkdir(parents=True)
    env = {"PATH": os.environ["PATH"], "AUTOGRADER_ROOT": str(root),
           "AUTOGRADER_PYTHON": str(tmp_path / "bare" / "bin" / "python")}
    done = subprocess.run(["bash", str(base / "source" / "run_autograder")], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and f"bash {base / 'source' / 'setup.sh'}" in done.stderr, done.stderr
    data = json.loads((root / "results" / "results.json").read_text())
    assert data["score"] == 0 and "setup.sh has not run" in data["output"] and "ModuleNotFound" not in done.stderr


def test_the_zip_builds_from_any_folder_with_an_installed_package(autograder, tmp_path):
    """The package installed from the zip's own wheel (no checkout above it), run from another
    folder: the zip is built, with a wheel of that package and a secret kept next to it."""
    _, _, site = autograder
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(site), "HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-m", "numpy_mamba", "gradescope", "stack", "--out", "mine.zip"],
                          env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    with zipfile.ZipFile(tmp_path / "mine.zip") as z:
        wheel = next(n for n in z.namelist() if n.endswith(".whl"))
        z.extract(wheel, tmp_path)
    with zipfile.ZipFile(tmp_path / wheel) as w:
        assert "numpy_mamba/grader/sandbox/child.py" in w.namelist()
        assert "Requires-Dist: numpy" in w.read(next(n for n in w.namelist() if n.endswith("METADATA"))).decode()
    assert (tmp_path / "numpy_mamba_secret.seed").stat().st_mode & 0o777 == 0o600


def test_the_project_root_is_found_or_the_error_says_what_to_do(tmp_path):
    assert project_root() == ROOT
    with pytest.raises(BuildError, match="source checkout"):
        project_root(tmp_path)


def test_an_autograder_without_its_secret_seed_grades_nothing_and_says_so(tmp_path):
    """Never seed 0 instead: every test at 0 of its points, the message for the instructor."""
    from numpy_mamba.grader.gradescope import grade_root
    (tmp_path / "submission").mkdir()
    shutil.copy(SOLUTIONS / "gradients_solution.py", tmp_path / "submission" / "gradients.py")
    said = []
    data = grade_root(tmp_path, {"exercise": "gradients"}, log=said.append)
    assert data["score"] == 0 and [t["max_score"] for t in data["tests"]] == [3, 3, 4]
    assert "incomplete" in data["tests"][0]["output"] and "secret.seed" in said[-1]

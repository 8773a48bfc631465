"""Shared by every test: the Agg backend, one BLAS thread, one quick run per experiment command per
test session, and the ``slow`` mark of the tests a fast loop leaves out.

``reproduce_quick``, ``theory_quick``, ``gates_quick`` and ``ablation_quick`` run ``python -m numpy_mamba COMMAND
--quick --jobs 1 --out OUT`` once; the snapshot test (test_same_numbers.py) and the command's own
tests read the same folder.  Under the README's ``-n 2`` the first test process that asks for a quick
run makes it in a folder both processes share, and the other waits for it and reads it
(``made_once``), so each quick run is paid once.  Tests only read it.

The README runs the suite in two processes on two cores, so each takes one BLAS thread (a BLAS of
two threads in each would share two cores four ways); the numbers do not depend on it
(test_same_numbers.py passes either way).
"""
import contextlib
import fcntl
import io
import json
import os
import shutil
from pathlib import Path
from typing import NamedTuple

import pytest

os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")        # before numpy is imported: see above

# The fast loop, ``python -m pytest -m "not slow" -n 2``: the core, the tutorials' checks and the gates'
# quick run.  Slow: the other quick runs and what reads them, every sandboxed grading, the site, the
# notebooks in a kernel, a fresh clone, Ctrl-C on real commands, the second BLAS kernel.
SLOW_FIXTURES = {"reproduce_quick", "theory_quick", "ablation_quick"}
SLOW_FILES = {"test_grader_attacks.py", "test_grader_privilege.py", "test_grader_secrets.py", "test_grader_tiers.py",
              "test_grader_kernel.py", "test_grader_sandbox.py", "test_grader_budget.py", "test_grader_gradescope.py",
              "test_grader_shortcuts.py", "test_grader_verdicts.py", "test_grader_malformed.py", "test_grader_cli.py",
              "test_grader_similarity.py", "test_site.py", "test_notebooks.py", "test_student_path.py",
              "test_same_numbers.py"}
SLOW_TESTS = {"test_ctrl_c_at_random_moments_leaves_the_previous_or_the_complete_results",
              "test_jobs_2_gives_the_same_numbers_as_jobs_1"}


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: left out of the fast loop (python -m pytest -m \"not slow\")")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if (item.path.name in SLOW_FILES or item.originalname in SLOW_TESTS
                or SLOW_FIXTURES & set(getattr(item, "fixturenames", ()))):
            item.add_marker(pytest.mark.slow)


# theory's quick run writes its section into a report that already holds another command's section
# and an old theory section: the run must keep the first and replace the second
REPORT_BEFORE = ("# r\n\n<!-- BEGIN reproduce -->\nKEEP ME\n<!-- END reproduce -->\n\n"
                 "<!-- BEGIN theory -->\nOLD-PLACEHOLDER\n<!-- END theory -->\n")


class QuickRun(NamedTuple):
    """One quick run: its output folder, exit code and what it printed on stdout."""
    out: Path
    code: int
    stdout: str


def quick_run(command: str, out: Path, *extra: str, jobs: int = 1) -> QuickRun:
    """``python -m numpy_mamba COMMAND --quick --jobs JOBS --out OUT [extra]``, stdout captured."""
    from numpy_mamba.cli import main
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        code = main([command, "--quick", "--jobs", str(jobs), "--out", str(out), *extra])
    return QuickRun(out, code, stdout.getvalue())


def session_folder(tmp_path_factory) -> Path:
    """A folder that every test process of this session shares: under ``-n 2`` each process's base
    temporary folder lies inside the session's."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def made_once(folder: Path, name: str, make) -> dict:
    """``make()`` (a dict that JSON keeps) called once for all the processes that ask for ``name`` in
    ``folder``: the first makes it and saves it as NAME.json; one that asks meanwhile waits on the
    lock NAME.lock, then reads it."""
    made = folder / f"{name}.json"
    with open(folder / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)                        # let go when the file closes
        if not made.exists():
            made.write_text(json.dumps(make()))
        return json.loads(made.read_text())


def shared_quick_run(command: str, tmp_path_factory, report: str = None) -> QuickRun:
    """The session's quick run of COMMAND into SESSION/COMMAND_quick, made once (``made_once``);
    ``report``: the text of a REPORT.md in that folder that the run is to write into."""
    out = session_folder(tmp_path_factory) / f"{command}_quick"

    def make() -> dict:
        shutil.rmtree(out, ignore_errors=True)                  # left by a process that failed while making it
        out.mkdir()
        extra = []
        if report is not None:
            (out / "REPORT.md").write_text(report)
            extra = ["--report", str(out / "REPORT.md")]
        run = quick_run(command, out, *extra)
        return {"code": run.code, "stdout": run.stdout}

    return QuickRun(out, **made_once(out.parent, f"{command}_quick", make))


@pytest.fixture(scope="session")
def reproduce_quick(tmp_path_factory) -> QuickRun:
    return shared_quick_run("reproduce", tmp_path_factory)


@pytest.fixture(scope="session")
def theory_quick(tmp_path_factory) -> QuickRun:
    return shared_quick_run("theory", tmp_path_factory, report=REPORT_BEFORE)


@pytest.fixture(scope="session")
def gates_quick(tmp_path_factory) -> QuickRun:
    return shared_quick_run("gates", tmp_path_factory)


@pytest.fixture(scope="session")
def ablation_quick(tmp_path_factory) -> QuickRun:
    return shared_quick_run("ablation", tmp_path_factory)

"""Shared by every test: the Agg backend, one BLAS thread, and one quick run per experiment command
per test process.

``reproduce_quick``, ``theory_quick``, ``gates_quick`` and ``ablation_quick`` run ``python -m numpy_mamba COMMAND
--quick --jobs 1 --out OUT`` once; the snapshot test (test_same_numbers.py) and the command's own
tests read the same folder, so each quick run is paid once (``-n 2 --dist loadgroup``: the tests that
read a quick run are sent to one process, ``pytest_collection_modifyitems``).  Tests only read it.

The README runs the suite in two processes on two cores, so each takes one BLAS thread (a BLAS of
two threads in each would share two cores four ways); the numbers do not depend on it
(test_same_numbers.py passes either way).
"""
import contextlib
import io
import os
from pathlib import Path
from typing import NamedTuple

import pytest

os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")        # before numpy is imported: see above

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


@pytest.fixture(scope="session")
def reproduce_quick(tmp_path_factory) -> QuickRun:
    return quick_run("reproduce", tmp_path_factory.mktemp("reproduce_quick"))


@pytest.fixture(scope="session")
def theory_quick(tmp_path_factory) -> QuickRun:
    out = tmp_path_factory.mktemp("theory_quick")
    (out / "REPORT.md").write_text(REPORT_BEFORE)
    return quick_run("theory", out, "--report", str(out / "REPORT.md"))


@pytest.fixture(scope="session")
def gates_quick(tmp_path_factory) -> QuickRun:
    return quick_run("gates", tmp_path_factory.mktemp("gates_quick"))


@pytest.fixture(scope="session")
def ablation_quick(tmp_path_factory) -> QuickRun:
    return quick_run("ablation", tmp_path_factory.mktemp("ablation_quick"))


QUICK_RUNS = {"reproduce_quick", "theory_quick", "gates_quick", "ablation_quick"}


def pytest_collection_modifyitems(config, items):
    """With ``-n 2 --dist loadgroup`` every test that reads a quick run goes to one process, which
    pays for each quick run once (a test that asks for them by name carries the group's mark itself,
    as test_same_numbers.py does)."""
    for item in items:
        if QUICK_RUNS & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.xdist_group("quick_runs"))

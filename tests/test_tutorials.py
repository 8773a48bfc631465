"""Every tutorial runs start to finish in quick mode.

Each numbered tutorials/NN_*.py (not make_exercises.py nor the exercises/ or solutions/ subfolders) runs as a plain script in a
subprocess with NUMPY_MAMBA_QUICK=1, MPLBACKEND=Agg and a fresh temporary working directory,
and must exit 0 (the tutorials assert their own checks, e.g. eq (1) == eq (3) to 1e-12).  A
failure means a tutorial crashed, one of its checks failed, it wrote files (into the repository
or its working directory), or it used more CPU time than its quick-mode budget (8 s).
"""
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TUTORIALS = sorted((ROOT / "tutorials").glob("[0-9][0-9]_*.py"))    # the numbered tutorials
QUICK_BUDGET_S = 8.0        # per tutorial, quick mode, one core
TIMEOUT_S = 120             # hard stop for a hung tutorial


def _repo_state():
    """Untracked and modified files of the repository (to catch a tutorial writing into it)."""
    try:
        out = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=ROOT,
                             capture_output=True, text=True)
    except OSError:                       # no git: skip this part of the check
        return None
    return out.stdout if out.returncode == 0 else None


def _children_cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def test_tutorials_are_found():
    names = [p.name for p in TUTORIALS]
    assert len(names) >= 6, f"expected tutorials 01-06 in tutorials/, found {names}"
    for k in range(1, 7):
        assert any(n.startswith(f"0{k}_") for n in names), f"tutorial 0{k}_*.py is missing"


@pytest.mark.parametrize("path", TUTORIALS, ids=[p.name for p in TUTORIALS])
def test_tutorial_runs_in_quick_mode(path, tmp_path):
    env = dict(os.environ, NUMPY_MAMBA_QUICK="1", MPLBACKEND="Agg",
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
               OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    env.pop("NUMPY_MAMBA_FIGDIR", None)
    before = _repo_state()
    start, cpu_start = time.perf_counter(), _children_cpu_seconds()
    result = subprocess.run([sys.executable, str(path)], cwd=tmp_path, env=env, capture_output=True,
                            text=True, timeout=TIMEOUT_S)
    elapsed, cpu = time.perf_counter() - start, _children_cpu_seconds() - cpu_start
    assert result.returncode == 0, (f"{path.name} exited with {result.returncode}\n"
                                    f"--- stdout (tail) ---\n{result.stdout[-3000:]}\n"
                                    f"--- stderr (tail) ---\n{result.stderr[-3000:]}")
    assert "Traceback" not in result.stderr
    assert list(tmp_path.iterdir()) == [], f"{path.name} wrote files: {list(tmp_path.iterdir())}"
    assert _repo_state() == before, f"{path.name} changed files in the repository"
    # CPU time, not wall time: the budget is about the work, not about a busy machine
    assert cpu <= QUICK_BUDGET_S, (f"{path.name} used {cpu:.1f} s of CPU ({elapsed:.1f} s wall) in quick "
                                   f"mode; budget {QUICK_BUDGET_S} s")


@pytest.mark.parametrize("path", [p for p in TUTORIALS if p.name[:3] in {f"0{k}_" for k in range(1, 7)}],
                         ids=lambda p: p.name)
def test_tutorial_format(path):
    """Percent format with prose cells, equation numbers quoted, and the run time stated at the top."""
    text = path.read_text()
    assert text.startswith("# %% [markdown]\n"), f"{path.name} must open with a markdown cell"
    assert text.count("# %% [markdown]") >= 4 and text.count("\n# %%\n") >= 4, f"{path.name}: too few cells"
    header = text.split("\n# %%\n", 1)[0]
    assert "Paper:" in header and "Run:" in header, f"{path.name}: header must cite the paper and say how to run"
    assert "eq (" in text or "eqs (" in text, f"{path.name} quotes no equation number"

"""The four experiment commands' quick runs give the numbers recorded in tests/golden/, under this
machine's BLAS kernel and under another one.

The snapshot pins every number the quick runs write (floats to 1e-9 relative, counts,
settings, verdicts and strings exactly; timing fields aside), so a change that moves a number
(a refactor that reorders a sum, a new rule) shows up here, and a change meant to move numbers
says so by regenerating the snapshot in the same commit:

    PYTHONPATH=. python tests/test_same_numbers.py --write

If this fails and the change was not meant to change any number, the diff it prints says where.

The same numbers on another CPU: OpenBLAS picks a kernel for the CPU it runs on (Haswell,
SkylakeX, ...), and each kernel sums in its own order, so floats differ in their last bits; the
counts, verdicts and every float to RTOL must not.  ``OPENBLAS_CORETYPE`` makes any x86-64 run
another kernel, so the quick runs are checked here under a second one too.
"""
import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import threadpoolctl

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "golden"
TIMING = {"seconds", "train_seconds", "timings_seconds", "jobs"}      # how a run ran, not what it found
COMMANDS = ("reproduce", "theory", "gates", "ablation")
RTOL = 1e-9
# Rounding-level values (sums that are analytically 0, finite-difference errors of ~1e-11,
# |recurrent - closed| of ~1e-15) depend on the CPU's vector instructions and BLAS kernels, not on
# the code: they count as equal within ATOL (seen between two x86-64 machines: 2e-11 at most).
ATOL = 1e-10


def _strip(obj):
    if isinstance(obj, dict):
        return {k: _strip(v) for k, v in obj.items() if k not in TIMING}
    if isinstance(obj, list):
        return [_strip(v) for v in obj]
    if isinstance(obj, float):
        return float(f"{obj:.12g}")
    return obj


def snapshot(out: Path) -> dict:
    """{file name: JSON without timing fields} of the JSON files in ``out``."""
    return {p.name: _strip(json.loads(p.read_text())) for p in sorted(out.glob("*.json"))}


def differences(expected, got, path="", out=None) -> list:
    out = [] if out is None else out
    if isinstance(expected, dict) and isinstance(got, dict):
        if set(expected) != set(got):
            out.append(f"{path}: keys {sorted(set(expected) ^ set(got))[:5]} differ")
        for k in set(expected) & set(got):
            differences(expected[k], got[k], f"{path}/{k}", out)
    elif isinstance(expected, list) and isinstance(got, list) and len(expected) == len(got):
        for i, (a, b) in enumerate(zip(expected, got)):
            differences(a, b, f"{path}[{i}]", out)
    elif isinstance(expected, float) and isinstance(got, (int, float)) and not isinstance(got, bool):
        if not math.isclose(expected, got, rel_tol=RTOL, abs_tol=ATOL):
            out.append(f"{path}: {expected!r} -> {got!r}")
    elif expected != got:
        out.append(f"{path}: {expected!r} -> {got!r}")
    return out


@pytest.mark.parametrize("command", COMMANDS)
def test_quick_run_gives_the_recorded_numbers(command, request):
    run = request.getfixturevalue(f"{command}_quick")         # the session's quick run (conftest.py)
    assert run.code == 0, f"`{command} --quick` failed"
    expected = json.loads((GOLDEN / f"{command}_quick.json").read_text())
    found = differences(expected, snapshot(run.out))
    assert not found, f"{len(found)} numbers of `{command} --quick` moved, e.g.:\n" + "\n".join(found[:15])


ASKER = """
import os, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from conftest import made_once
folder, role = Path(sys.argv[2]), sys.argv[3]

def make():
    with open(folder / "calls", "a") as calls:
        calls.write(role)
    while not (folder / "second is asking").exists():     # the other process asks while this one makes
        time.sleep(0.01)
    return {"made by": role}

if role == "second":
    while not (folder / "calls").exists():
        time.sleep(0.01)
    (folder / "second is asking").touch()
print(made_once(folder, "run", make)["made by"])
"""


def test_two_test_processes_asking_for_one_quick_run_at_once_make_it_once(tmp_path):
    """If this fails, under the README's ``-n 2`` each test process makes the quick runs it reads
    (twice the time: pytest-xdist's ``--dist loadgroup`` does not group tests on pytest 9.2), or one
    reads a run the other has not finished: the second asks while the first is making it."""
    askers = [subprocess.Popen([sys.executable, "-c", ASKER, str(Path(__file__).parent), str(tmp_path), role],
                               stdout=subprocess.PIPE, text=True) for role in ("first", "second")]
    printed = [asker.communicate(timeout=60)[0].strip() for asker in askers]
    assert (tmp_path / "calls").read_text() == "first" and printed == ["first", "first"]


def blas_kernel(env=None) -> str:
    """The OpenBLAS kernel NumPy runs in a Python started with ``env`` (this process's when None)."""
    code = ("import numpy, threadpoolctl; print([i['architecture'] for i in threadpoolctl.threadpool_info() "
            "if i['internal_api'] == 'openblas'][0])")
    if env is None:
        import numpy  # noqa: F401  (loads OpenBLAS, which threadpoolctl then finds)
        return [i["architecture"] for i in threadpoolctl.threadpool_info() if i["internal_api"] == "openblas"][0]
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          check=True).stdout.strip()


def test_quick_runs_give_the_recorded_numbers_under_another_blas_kernel(tmp_path):
    """If this fails, a number of a quick run depends on the CPU: under a second OpenBLAS kernel
    (Sandybridge, or Prescott where this machine runs Sandybridge; any x86-64 runs both) some
    count, verdict or float moved against tests/golden/, e.g. an output within rounding of 0
    counted by its sign.  The runs take --jobs 2, whose numbers equal --jobs 1's (test_runs.py)."""
    here = blas_kernel()
    env = dict(os.environ, OPENBLAS_CORETYPE="Prescott" if here == "Sandybridge" else "Sandybridge")
    other = blas_kernel(env)
    assert other != here, f"OPENBLAS_CORETYPE={env['OPENBLAS_CORETYPE']} did not change the kernel ({here})"
    moved = []
    for command in COMMANDS:
        out = tmp_path / command
        run = subprocess.run([sys.executable, "-m", "numpy_mamba", command, "--quick", "--jobs", "2", "--out", str(out)],
                             env=env, cwd=ROOT, capture_output=True, text=True)
        assert run.returncode == 0, f"`{command} --quick` failed under {other}:\n{run.stderr[-2000:]}"
        expected = json.loads((GOLDEN / f"{command}_quick.json").read_text())
        moved += [f"{command}: {line}" for line in differences(expected, snapshot(out))]
    assert not moved, (f"{len(moved)} numbers of the quick runs moved under the {other} kernel "
                       f"(this machine: {here}), e.g.:\n" + "\n".join(moved[:15]))


if __name__ == "__main__" and "--write" in sys.argv:
    from conftest import quick_run
    for command in COMMANDS:
        with tempfile.TemporaryDirectory() as folder:
            found = snapshot(quick_run(command, Path(folder)).out)
        (GOLDEN / f"{command}_quick.json").write_text(json.dumps(found, indent=0, sort_keys=True) + "\n")
        print(f"wrote {GOLDEN / f'{command}_quick.json'}")

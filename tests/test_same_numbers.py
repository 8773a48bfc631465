"""The three experiment commands' quick runs give the numbers recorded in tests/golden/.

The snapshot pins every number the quick runs write (floats to 1e-9 relative, counts,
settings, verdicts and strings exactly; timing fields aside), so a change that moves a number
(a refactor that reorders a sum, a new rule) shows up here, and a change meant to move numbers
says so by regenerating the snapshot in the same commit:

    PYTHONPATH=. python tests/test_same_numbers.py --write

If this fails and the change was not meant to change any number, the diff it prints says where.
"""
import json
import math
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "golden"
TIMING = {"seconds", "train_seconds", "timings_seconds"}
COMMANDS = ("reproduce", "theory", "gates")
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


if __name__ == "__main__" and "--write" in sys.argv:
    from conftest import quick_run
    for command in COMMANDS:
        with tempfile.TemporaryDirectory() as folder:
            found = snapshot(quick_run(command, Path(folder)).out)
        (GOLDEN / f"{command}_quick.json").write_text(json.dumps(found, indent=0, sort_keys=True) + "\n")
        print(f"wrote {GOLDEN / f'{command}_quick.json'}")

"""The one runner of the experiment commands (numpy_mamba/runs/command.py), as a user meets it: a
bad --out or option fails at once, the closing lines time the whole command, and every command takes
the same options."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = ("reproduce", "theory", "gates", "ablation")
HEAVY = ("matplotlib", "scipy.stats")

IMPORTED = """
import sys
from numpy_mamba.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
print(code, " ".join(m for m in {heavy!r} if m in sys.modules))
"""


@pytest.mark.parametrize("name", COMMANDS)
@pytest.mark.parametrize("argv", [["--quick", "--out", "/proc/numpy_mamba_nope"], ["--only", "nonsense"],
                                  ["--jobs", "0"]], ids=["impossible --out", "unknown --only", "--jobs 0"])
def test_a_bad_out_or_option_fails_before_any_heavy_import(name, argv):
    """If this fails, a typo costs the seconds of importing matplotlib and scipy.stats (or of
    computing) before the command says what is wrong: the options and --out are checked first."""
    done = subprocess.run([sys.executable, "-c", IMPORTED.format(heavy=HEAVY), name, *argv], capture_output=True,
                          text=True, cwd=ROOT, timeout=120)
    code, *imported = done.stdout.split()
    assert code == "2", done.stderr
    assert not imported, f"{name} {' '.join(argv)} imported {imported} before failing"
    assert done.stderr.strip().splitlines()[-1].startswith((f"{name}: error:", f"python -m numpy_mamba {name}: error:"))


def test_the_closing_time_counts_the_whole_command(gates_quick):
    """If this fails, the time a command prints leaves out its figures and report (it must be at
    least the run's time up to its JSON, which the claims file records), or is not called so."""
    last = [line for line in gates_quick.stdout.splitlines() if line.startswith("time:")]
    assert len(last) == 1 and last[0].endswith("s (the whole command)"), last
    printed = float(last[0].split()[1])
    wall = json.loads((gates_quick.out / "claims_gates.json").read_text())["seconds"]["wall"]
    assert printed >= wall > 0

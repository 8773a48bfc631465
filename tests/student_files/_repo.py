"""Where an attacker looks for the grader's repository (the reference modules, the solutions,
.git): next to the file as handed in, or in the usual places, found by listing them."""
import os
from pathlib import Path


def repository() -> Path:
    here = Path(__file__).resolve().parents[2]
    if (here / "numpy_mamba" / "gradients.py").exists():
        return here
    for root in ("/work", "/home", "/root", "/srv", "/opt", "/tmp"):
        for entry in os.scandir(root):                  # listing a folder outside: the kernel says no
            if (Path(entry.path) / "numpy_mamba" / "gradients.py").exists():
                return Path(entry.path)
    raise FileNotFoundError("no repository found")

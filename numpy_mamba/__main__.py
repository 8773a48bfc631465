"""Command line: ``python -m numpy_mamba COMMAND [options]``; ``--help`` after a command lists
its options.  Each command lives in its own module, which exposes ``main(argv) -> int``.
"""
from __future__ import annotations

import importlib
import sys

COMMANDS = {
    "train": ("numpy_mamba.demo", "a short SGD run (Algorithm 1) that prints its loss falling"),
    "bench": ("numpy_mamba.bench", "time one SGD step (forward + all gradients); ratio vs PyTorch if installed"),
    "reproduce": ("numpy_mamba.experiments", "Figures 2-4 and Table 1 into figures/, with REPORT.md"),
    "theory": ("numpy_mamba.theory", "numerical checks of Theorems 1-4, Corollaries 1-2, Lemmas 4-6"),
    "gates": ("numpy_mamba.gate_comparison", "Mamba-2, RetNet, Gated Retention, GLA vs Mamba (Appendix E.6)"),
    "grade": ("numpy_mamba.grader", "grade a student's exercise file against the analytic gradients"),
}


def usage() -> str:
    lines = ["usage: python -m numpy_mamba COMMAND [options]", "", "commands:"]
    lines += [f"  {name:<10} {doc}" for name, (_, doc) in COMMANDS.items()]
    return "\n".join(lines)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(usage())
        return 0
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        print(f"unknown command {name!r}.\n\n{usage()}", file=sys.stderr)
        return 2
    module = importlib.import_module(COMMANDS[name][0])
    return int(module.main(rest) or 0)


if __name__ == "__main__":
    sys.exit(main())

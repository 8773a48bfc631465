"""The command line, ``python -m numpy_mamba COMMAND [options]``, and what every command shares.

    __init__.py  the command table and the dispatcher (``main``)
    train.py     ``train``: a short SGD run (Algorithm 1) that prints its loss falling
    bench.py     ``bench``: time one SGD step; ratio against PyTorch autograd when installed
    bench_torch.py  the PyTorch peers bench times (eq (3) and the stack), imported only with PyTorch
    output.py    writing results: JSON, named sections of REPORT.md, figures without pyplot;
                 show_figure for the tutorials
    staging.py   all-or-nothing output folders (``run_staged``): --out checked before computing
    jobs.py      ``--jobs``: independent units (seeds, settings) in worker processes
    interrupts.py  Ctrl-C and SIGTERM: recorded, raised, never swallowed
    args.py      argparse types every command shares (positive_int, probability, ...): usage errors

``reproduce``, ``theory``, ``gates`` and ``grade`` live with their families (numpy_mamba.reproduce,
.theory, .gates, .grader); each command's module exposes ``main(argv) -> int``.
"""
from __future__ import annotations

import importlib
import sys

COMMANDS = {
    "train": ("numpy_mamba.cli.train", "a short SGD run (Algorithm 1) that prints its loss falling"),
    "bench": ("numpy_mamba.cli.bench", "time one SGD step (forward + all gradients); ratio vs PyTorch if installed"),
    "reproduce": ("numpy_mamba.reproduce.run", "Figures 2-4 and Table 1 into figures/, with REPORT.md"),
    "theory": ("numpy_mamba.theory.run", "numerical checks of Theorems 1-4, Corollaries 1-2, Lemmas 4-6"),
    "gates": ("numpy_mamba.gates.compare", "Mamba-2, RetNet, Gated Retention, GLA vs Mamba (Appendix E.6)"),
    "grade": ("numpy_mamba.grader.run", "grade a student's exercise file against the analytic gradients"),
    "gradescope": ("numpy_mamba.grader.gradescope", "build a Gradescope autograder zip for one exercise"),
}


def usage() -> str:
    lines = ["usage: python -m numpy_mamba COMMAND [options]", "", "commands:"]
    lines += [f"  {name:<10} {doc}" for name, (_, doc) in COMMANDS.items()]
    lines += ["", "python -m numpy_mamba COMMAND --help lists a command's options."]
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
    try:
        return int(importlib.import_module(COMMANDS[name][0]).main(rest) or 0)
    except KeyboardInterrupt:                   # outside a command's own handling (importing it, ...)
        print(f"{name}: interrupted (SIGINT)", file=sys.stderr)
        return 130

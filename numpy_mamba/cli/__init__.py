"""The command line, ``python -m numpy_mamba COMMAND [options]``: the top of the package.

    __init__.py  the command table and the dispatcher (``main``)
    train.py     ``train``: a short SGD run (Algorithm 1) that prints its loss falling
    bench.py     ``bench``: time one SGD step; the ratio against the PyTorch and JAX peers of a clone's
                 ``benchmarks/`` when they are installed

``reproduce``, ``theory``, ``ablation`` and ``gates`` are each a family's ``COMMAND`` (its registry of
experiments), run by the one runner ``numpy_mamba.runs.command``; ``grade`` and ``gradescope`` live
with the grader, ``notebooks`` and ``site`` with the tutorials' pages (``numpy_mamba.site``), each
module exposing ``main(argv) -> int`` as this subpackage's own commands do.  Nothing in the package
imports this subpackage.
"""
from __future__ import annotations

import importlib
import sys

COMMANDS = {   # the same words as the README's table of commands (tests/test_cli.py)
    "train": ("numpy_mamba.cli.train", "a short SGD run (Algorithm 1) that prints its loss falling"),
    "reproduce": ("numpy_mamba.reproduce",
                  "Figures 2-6 and Table 1 at one and three layers, and why Figure 2 misses (a factorial of its "
                  "protocol), with the reproduce section of REPORT.md"),
    "theory": ("numpy_mamba.theory", "numerical checks of the theorems, corollaries and lemmas, with the theory section"),
    "ablation": ("numpy_mamba.ablation",
                 "why the trained models miss tasks two steps apart: untrained models, task sets, held-out pairs, "
                 "steps, pre-norm, with the ablation section"),
    "gates": ("numpy_mamba.gates",
              "Mamba-2, RetNet, Gated Retention and GLA against Mamba (Appendix E.6), with the gates section"),
    "grade": ("numpy_mamba.grader.run", "grade an exercise file, or a folder of them (--csv, --json)"),
    "gradescope": ("numpy_mamba.grader.gradescope", "build a Gradescope autograder zip for one exercise"),
    "notebooks": ("numpy_mamba.site.notebooks", "the tutorials as Jupyter notebooks in OUT, by default my_notebooks (--execute runs them)"),
    "site": ("numpy_mamba.site.build", "the tutorials (executed), the report, the guides and the API as a website in OUT, "
                                     "by default site (--check opens every page in headless Chromium)"),
    "bench": ("numpy_mamba.cli.bench", "time one SGD step; the ratio against PyTorch and JAX when they are installed"),
}


def usage() -> str:
    lines = ["usage: python -m numpy_mamba COMMAND [options]   (or: numpy-mamba COMMAND [options])",
             "       python -m numpy_mamba --version", "", "commands:"]
    lines += [f"  {name:<10} {doc}" for name, (_, doc) in COMMANDS.items()]
    lines += ["", "python -m numpy_mamba COMMAND --help lists a command's options."]
    return "\n".join(lines)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(usage())
        return 0
    if argv[0] == "--version":
        from .. import __version__
        print(f"numpy_mamba {__version__}")
        return 0
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        print(f"unknown command {name!r}.\n\n{usage()}", file=sys.stderr)
        return 2
    try:
        module = importlib.import_module(COMMANDS[name][0])
        if hasattr(module, "COMMAND"):                  # an experiment command: its registry, run by the one runner
            from ..runs.command import main as run_command
            return run_command(module.COMMAND, rest)
        return int(module.main(rest) or 0)
    except KeyboardInterrupt:                   # outside a command's own handling (importing it, ...)
        print(f"{name}: interrupted (SIGINT)", file=sys.stderr)
        return 130

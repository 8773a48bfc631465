"""The command line, ``python -m numpy_mamba COMMAND [options]``: the top of the package.

    __init__.py  the command table and the dispatcher (``main``)
    train.py     ``train``: a short SGD run (Algorithm 1) that prints its loss falling
    bench.py     ``bench``: time one SGD step; ratio against PyTorch and JAX when installed
    bench_peers.py  how bench checks a peer's numbers against ours and prints it; which peers run
    bench_torch.py  the PyTorch peers bench times (eq (3) and the stack), run only with PyTorch
    bench_jax.py    the JAX peers bench times (the same models, jit(value_and_grad)), run only with JAX
    notebooks.py ``notebooks``: the tutorials as .ipynb (jupytext), executed in a kernel (nbclient)

``reproduce``, ``theory``, ``ablation`` and ``gates`` are each a family's ``COMMAND`` (its registry of
experiments), run by the one runner ``numpy_mamba.runs.command``; ``grade`` and ``gradescope`` live
with the grader, and expose ``main(argv) -> int`` as this subpackage's own commands do.  Nothing in the
package imports this subpackage: how a command runs (jobs, staging, output files) is in
``numpy_mamba.runs``.
"""
from __future__ import annotations

import importlib
import sys

COMMANDS = {   # the same words as the README's table of commands (tests/test_cli.py)
    "train": ("numpy_mamba.cli.train", "a short SGD run (Algorithm 1) that prints its loss falling"),
    "reproduce": ("numpy_mamba.reproduce.run",
                  "Figures 2-6 and Table 1 at one and three layers, and why Figure 2 misses (a factorial of its "
                  "protocol), with the reproduce section of REPORT.md"),
    "theory": ("numpy_mamba.theory.run", "numerical checks of the theorems, corollaries and lemmas, with the theory section"),
    "ablation": ("numpy_mamba.ablation",
                 "why the trained models miss tasks two steps apart: untrained models, task sets, held-out pairs, "
                 "steps, pre-norm, with the ablation section"),
    "gates": ("numpy_mamba.gates",
              "Mamba-2, RetNet, Gated Retention and GLA against Mamba (Appendix E.6), with the gates section"),
    "grade": ("numpy_mamba.grader.run", "grade an exercise file, or a folder of them (--csv, --json)"),
    "gradescope": ("numpy_mamba.grader.gradescope", "build a Gradescope autograder zip for one exercise"),
    "notebooks": ("numpy_mamba.cli.notebooks", "the tutorials as Jupyter notebooks in OUT, by default my_notebooks (--execute runs them)"),
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

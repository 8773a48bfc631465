"""``python -m numpy_mamba bench``: time one SGD step (forward + all three gradients, eqs (3),
(93), (118), (135), + update) of the NumPy code; when PyTorch or JAX happens to be installed,
time an autograd implementation of the same model in the same run and print the ratio.
Neither is a dependency of numpy_mamba.

The peers live outside the package, in ``benchmarks/`` of a clone (``peers.py``, ``torch_peers.py``,
``jax_peers.py``): bench loads them from there (``peers``), and runs NumPy alone without them.  A
ratio means something only if both sides compute the same thing: ``peers.compared`` checks a peer's
F and every gradient against ours and prints "differs" instead of its ratio where they are apart by
more than ``peers.TOLERANCE``.

Each one-layer row also times one pass over the prompts: the matrix-vector product w @ P, the
gate logits a_i = w^T p_i of eq (3) alone.  It reads every entry of P, as any step must, so no
step can beat it; "passes" is a step's time in those units and "GB/s" the bytes of P over a
step's time (or the pass's), so each row shows how far from the memory limit a step runs.
"reading" is the public ``gradients(params, P, z)`` (which checks its input and runs the batched
reading form) over the step, which runs the fused form of ``numpy_mamba/fused``; the three-layer
rows give the same for ``stack.gradients``;
"peak/P" the most memory a step holds beyond its inputs, in units of P (``tracemalloc``).  The
NumPy step, the peers' steps and the pass take turns in short blocks, each after one untimed
call of its own (``interleaved_medians``), so on a shared machine all of them see the same load;
the medians are reported.  Every implementation runs on one thread (``one_thread``).
"""
from __future__ import annotations

import argparse
import importlib
import os
import platform
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

from .. import stack
from ..data import make_world, training_batch
from ..gradients import gradients
from ..model import PAPER_MODELS, forward, init_params
from ..fused import network
from ..sgd import sgd_update
from ..stack import init_stack
from ..runs.args import help_text, positive_int

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"    # in a clone, beside the package
CASES = [(20, 64), (20, 1024), (100, 64), (1000, 64), (10_000, 64)]   # (l, B), d = 30
STACK_CASES = [(20, 64), (20, 1024)]                                  # Section 4.2's l = 20


def bench_peers():
    """The peer code of a clone's ``benchmarks/`` (its ``peers`` module), or None when this package is
    installed without a clone beside it."""
    if not (BENCHMARKS / "peers.py").exists():
        return None
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))
    return importlib.import_module("peers")


def interleaved_medians(fns: dict, repeat: int, budget: float = 3.0, block: float = 0.01) -> dict:
    """Median seconds per call of each callable in ``fns``, the callables taking turns.

    In each of ``repeat`` rounds every callable runs one untimed call and then back to back for
    about ``block`` seconds, scoring block time / calls: a step timed as it runs in training,
    right after a step of its own.  Without the untimed call, whichever callable follows
    another library's would pay for that library's cold caches and freed memory.  Fewer rounds
    when ``budget`` seconds have passed and at least 3 are done.  Taking turns puts every
    callable under the same load.
    """
    calls = {}
    for name, fn in fns.items():                          # warm-up, and how many calls fill a block
        t0 = time.perf_counter()
        fn()
        calls[name] = max(1, int(block / max(time.perf_counter() - t0, 1e-9)))
    times = {name: [] for name in fns}
    start = time.perf_counter()
    for done in range(1, repeat + 1):
        for name, fn in fns.items():
            fn()                                          # untimed: after its own call, as in training
            t0 = time.perf_counter()
            for _ in range(calls[name]):
                fn()
            times[name].append((time.perf_counter() - t0) / calls[name])
        if time.perf_counter() - start > budget and done >= 3:
            break
    return {name: float(np.median(t)) for name, t in times.items()}


def peak_memory(fn) -> int:
    """Bytes allocated by ``fn()`` at its peak beyond what existed before (``tracemalloc``)."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        fn()
        return tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()


def cases(text: str) -> list:
    """argparse type: comma-separated LxB pairs, e.g. '20x64,1000x64' -> [(20, 64), (1000, 64)]."""
    out = []
    for item in text.split(","):
        parts = item.strip().lower().split("x")
        try:
            if len(parts) != 2:
                raise argparse.ArgumentTypeError("")
            out.append((positive_int(parts[0]), positive_int(parts[1])))
        except argparse.ArgumentTypeError:
            raise argparse.ArgumentTypeError(
                f"expected comma-separated LxB pairs of positive integers such as 20x64,1000x64 "
                f"(l context examples, B prompts); got {item.strip()!r}") from None
    return out


def one_layer_rows(args, world, peers: dict) -> None:
    """The eq (3) table: one row per (l, B) of ``--cases``.

    ``peers``: {name: make(params, P, z, eta) -> (step, result)}, where ``step()`` runs the
    peer's SGD step (timed) and ``result()`` runs it once more and returns its (F, [dW_B, dW_C,
    dw]) as NumPy arrays, compared with ours before the ratio is printed.
    """
    params, eta = init_params(world.d, rng=1), 0.0        # eta = 0: every call sees the same parameters
    peers_code = bench_peers()
    mamba = network("mamba")
    print(f"{'l':>6} {'B':>5} {'numpy ms':>9} {'passes':>6} {'GB/s':>5} {'reading':>7} {'peak/P':>6} "
          f"{'pass ms':>8} {'pass GB/s':>9}" + (peers_code.peer_header(peers, passes=True) if peers else ""))
    notes = []
    for l, B in args.cases:
        batch = training_batch(world, B, l, p_a=0.6, rng=2)
        P, z, w = batch.P, batch.z, params.w
        fns = {"numpy": lambda: sgd_update(params, mamba.F_and_gradients(params, P, z)[1], eta),
               "reading": lambda: gradients(params, P, z), "pass": lambda: w @ P}
        made = {name: make(params, P, z, eta) for name, make in peers.items()}
        t = interleaved_medians({**fns, **{name: step for name, (step, _) in made.items()}}, args.repeat)
        size = P.nbytes / 1e9
        row = (f"{l:>6} {B:>5} {1e3 * t['numpy']:>9.3f} {t['numpy'] / t['pass']:>6.1f} {size / t['numpy']:>5.1f} "
               f"{t['reading'] / t['numpy']:>7.2f} {peak_memory(fns['numpy']) / P.nbytes:>6.2f} "
               f"{1e3 * t['pass']:>8.4f} {size / t['pass']:>9.1f}")
        if peers:
            cells, lines = peers_code.compared(peers, made, [forward(params, P), *gradients(params, P, z)],
                                    f"l = {l}, B = {B}", t, unit=t["pass"])
            row, notes = row + cells, notes + lines
        print(row, flush=True)
    print("numpy: one step as sgd.train runs it (fused; inputs checked at the start of the run; forward, backward, "
          "update);\npasses: its time in units of one w @ P over the same array (pass ms; the gate logits alone), GB/s: "
          "the bytes of P\nover its time (pass GB/s: over the pass's); reading: the public gradients(params, P, z), "
          "which checks its input\nand runs the batched reading form, over the step; peak/P: the step's peak memory "
          "beyond its inputs over the size of P."
          + (peers_code.peer_note(peers) if peers else ""))
    if notes:
        print("\n".join(notes))


def stack_rows(args, world, peers: dict) -> None:
    """The three-layer table (stack.py): one row per model and (l, B) of ``--stack-cases``.

    ``peers``: {name: make(model, layers, P, z, eta) -> (step, result) or None (no such peer for
    this row)}; ``result()`` returns (F, [dW_B, dW_C, dW of layer 1, ..., of layer 3]).
    """
    layers, eta = init_stack(world.d, 3, rng=1), 0.0
    peers_code = bench_peers()
    print(f"{'model':>18} {'l':>4} {'B':>5} {'numpy ms':>9} {'reading':>7}"
          + (peers_code.peer_header(peers, passes=False) if peers else ""))
    notes = []
    for model in PAPER_MODELS:
        net = network(model, n_layers=3)
        for l, B in args.stack_cases:
            batch = training_batch(world, B, l, p_a=0.6, rng=2)
            P, z = batch.P, batch.z
            made = {name: m for name, make in peers.items() if (m := make(model, layers, P, z, eta)) is not None}
            t = interleaved_medians({"numpy": lambda: sgd_update(layers, net.F_and_gradients(layers, P, z)[1], eta),
                                     "reading": lambda: stack.gradients(layers, P, z, model),
                                     **{name: step for name, (step, _) in made.items()}}, args.repeat)
            row = f"{model:>18} {l:>4} {B:>5} {1e3 * t['numpy']:>9.2f} {t['reading'] / t['numpy']:>7.2f}"
            if peers:
                ours = [stack.forward(layers, P, model)] + [g for one in stack.gradients(layers, P, z, model) for g in one]
                cells, lines = peers_code.compared(peers, made, ours, f"{model}, l = {l}, B = {B}", t)
                row, notes = row + cells, notes + lines
            print(row, flush=True)
    print("One step of the residual stack as sgd.train runs it: forward, hand-written backward (fused: "
          "numpy_mamba/fused/stack.py), update;\nreading: the public stack.gradients (the reading form of stack.py, "
          "with the (B, D, N, N) gate tensor) over the step." + (peers_code.peer_note(peers) if peers else ""))
    if notes:
        print("\n".join(notes))


def one_thread() -> str:
    """Ask numpy's OpenBLAS for one thread, as the peers get: on a shared machine a second BLAS
    thread waits for a busy core.  Says what numpy's BLAS runs with."""
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "openblas" in line.lower() and line.split()[-1].startswith("/")}
    except OSError:
        paths = set()
    import ctypes
    for path in sorted(paths):
        library = ctypes.CDLL(path)
        for symbol in ("scipy_openblas_set_num_threads64_", "openblas_set_num_threads64_", "openblas_set_num_threads"):
            if hasattr(library, symbol):
                getattr(library, symbol)(1)
                return "OpenBLAS, 1 thread"
    return "BLAS threads as found: set OPENBLAS_NUM_THREADS=1 for one"


def machine() -> str:
    """The CPU, its number of cores and the OS: ratios between implementations differ between
    machines, so every table says where it was measured."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as info:
            cpu = next((line.split(":", 1)[1].strip() for line in info if line.startswith("model name")), cpu)
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} logical cores, {platform.system()} {platform.release()}, Python {platform.python_version()}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m numpy_mamba bench", description=help_text(__doc__),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=positive_int, default=50,
                        help="timed rounds per case, each about 10 ms of calls per implementation; medians "
                             "are reported (default 50; a case stops early after 3 s if it has 3 rounds)")
    parser.add_argument("--cases", type=cases, default=CASES,
                        help="which (l, B) to time for the one-layer model of eq (3), as LxB pairs, e.g. "
                             "20x64,1000x64 (default " + ",".join(f"{l}x{B}" for l, B in CASES) + ")")
    parser.add_argument("--stack-cases", type=cases, default=STACK_CASES,
                        help="which (l, B) to time for the three-layer stack (default "
                             + ",".join(f"{l}x{B}" for l, B in STACK_CASES) + ")")
    parser.add_argument("--no-torch", action="store_true", help="skip PyTorch even if it is installed")
    parser.add_argument("--no-jax", action="store_true", help="skip JAX even if it is installed")
    args = parser.parse_args(argv)
    code = bench_peers()
    one, three, versions = (code.load_peers(args.no_torch, args.no_jax) if code else
                            ({}, {}, "PyTorch and JAX not timed (their peers are in benchmarks/ of a clone)"))
    versions = f"numpy {np.__version__} ({one_thread()}), " + versions
    world = make_world(rng=0)
    print(f"one SGD step of eq (19) = forward + every gradient of the mean hinge loss + update (eta = 0, so every "
          f"call sees the same parameters); d = {world.d}, float64, median time per call; NumPy, its peers and the "
          "pass take turns")
    print(f"machine: {machine()}\n{versions}")
    print("\none layer, eq (3): numpy_mamba.gradients")
    one_layer_rows(args, world, one)
    print("\nthree layers (stack.py), d = 30")
    stack_rows(args, world, three)
    if three:
        print("torch: autograd of the same factored layer (our algorithm in PyTorch); torch G: autograd of the closed "
              "form with the\n(B, D, N, N) gate tensor (Mamba only, up to 64 MiB of it); jax: jit(value_and_grad) "
              "of the factored layer.")
    return 0

"""``python -m numpy_mamba bench``: time one SGD step (forward + all three gradients, eqs (3),
(93), (118), (135)) of the vectorised NumPy code; when PyTorch happens to be installed, time an
autograd implementation of the same eq (3) model in the same run, check its gradients agree
with ours, and print the ratio.  PyTorch is never a dependency of numpy_mamba.

Each row also times one pass over the prompts: the matrix-vector product w @ P, the gate
logits a_i = w^T p_i of eq (3) alone.  It reads every entry of P once, as any step must, and is
the first thing a step computes, so no step can beat it; "passes" is the step's time in those
units and shows how close to memory bandwidth a step runs.  The NumPy step, the PyTorch step
and the pass take turns in short blocks, each after one untimed call of its own
(``interleaved_medians``), so on a shared machine all three see the same load; the medians
are reported.
"""
from __future__ import annotations

import argparse
import time
from functools import partial

import numpy as np

from .. import stack
from .._models import PAPER_MODELS
from ..data import make_world, training_batch
from ..gradients import gradients, value_and_gradients
from ..model import init_params
from ..sgd import sgd_update
from ..stack import init_stack
from . import bench_torch
from ..runs.args import positive_int

CASES = [(20, 64), (20, 1024), (100, 64), (1000, 64), (10_000, 64)]   # (l, B), d = 30
STACK_CASES = [(20, 64)]                                              # Section 4.2's l = 20


def interleaved_medians(fns: dict, repeat: int, budget: float = 3.0, block: float = 0.01) -> dict:
    """Median seconds per call of each callable in ``fns``, the callables taking turns.

    In each of ``repeat`` rounds every callable runs once untimed and then back to back for
    about ``block`` seconds, scoring block time / calls: a step timed as it runs in training,
    right after a step of its own.  (Without the untimed call, whichever callable follows
    another library's pays for that library's cold caches and freed memory: the NumPy step at
    l = 1000, B = 64 measured 0.5 ms slower right after PyTorch's than after its own.)  Fewer
    rounds once ``budget`` seconds have passed and at least 3 are done.  Taking turns puts
    every callable under the same load.
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


def one_layer_rows(args, torch, world) -> None:
    """The eq (3) table: one row per (l, B) of ``--cases``."""
    params, eta = init_params(world.d, rng=1), 0.0
    header = (f"{'l':>6} {'B':>5} {'numpy ms':>10} {'prompts/s':>10} {'us/(B*l)':>9} "
              f"{'pass ms':>8} {'passes':>7} {'checked ms':>11}")
    print(header + (f" {'torch ms':>9} {'torch/numpy':>12} {'max grad diff':>14}" if torch else ""))
    for l, B in args.cases:
        batch = training_batch(world, B, l, p_a=0.6, rng=2)
        P, z, w = batch.P, batch.z, params.w
        fns = {"numpy": lambda: sgd_update(params, value_and_gradients("mamba", params, P, z)[1], eta),
               "checked": lambda: gradients(params, P, z), "pass": lambda: w @ P}
        if torch:
            leaves, Pt, zt = bench_torch.leaves(torch, params), torch.from_numpy(P), torch.from_numpy(z)
            step = partial(bench_torch.sgd_step, torch, lambda p, P: bench_torch.eq3_output(torch, *p, P))
            fns["torch"] = lambda: step(leaves, Pt, zt, eta)
        t = interleaved_medians(fns, args.repeat)
        row = (f"{l:>6} {B:>5} {1e3 * t['numpy']:>10.3f} {B / t['numpy']:>10.0f} "
               f"{1e6 * t['numpy'] / (B * l):>9.3f} {1e3 * t['pass']:>8.4f} {t['numpy'] / t['pass']:>7.1f} "
               f"{1e3 * t['checked']:>11.3f}")
        if torch:
            theirs = step(leaves, Pt, zt, eta)
            diff = max(float(np.max(np.abs(a - b.numpy()))) for a, b in zip(gradients(params, P, z), theirs))
            row += f" {1e3 * t['torch']:>9.3f} {t['torch'] / t['numpy']:>12.2f} {diff:>14.1e}"
        print(row, flush=True)
    print("numpy: one step as sgd.train runs it (inputs checked once per run; forward, backward, update).\n"
          "us/(B*l): microseconds per prompt and context token.  pass: one w @ P over the same array (the "
          "gate logits alone);\npasses: the numpy step's time in those units.  checked: the public "
          "gradients(params, P, z), which checks its input first.")


def stack_rows(args, torch, world) -> None:
    """The three-layer table (stack.py): one row per model and (l, B) of ``--stack-cases``."""
    layers, eta = init_stack(world.d, 3, rng=1), 0.0
    flat = [a for layer in layers for a in layer]
    header = f"{'model':>18} {'l':>4} {'B':>5} {'numpy ms':>9}"
    if torch:
        header += (f" {'torch ms':>9} {'torch/numpy':>12} {'torch G ms':>11} {'torch G/numpy':>14} "
                   f"{'max rel diff':>13}")
    print(header)
    for model in PAPER_MODELS:
        for l, B in args.stack_cases:
            batch = training_batch(world, B, l, p_a=0.6, rng=2)
            P, z = batch.P, batch.z
            fns = {"numpy": lambda: sgd_update(layers, stack.value_and_gradients(model, layers, P, z)[1], eta)}
            if torch:
                Pt, zt = torch.from_numpy(P), torch.from_numpy(z)
                peers = {}
                forms = [("torch", bench_torch.stack_layer_factored), ("torch G", bench_torch.stack_layer)]
                for name, form in forms[:2 if model == "mamba" else 1]:      # no gates: one form
                    def output(p, P, form=form):
                        return bench_torch.stack_output(torch, [p[i:i + 3] for i in range(0, len(p), 3)], P, model, form)
                    peers[name] = (bench_torch.leaves(torch, flat), partial(bench_torch.sgd_step, torch, output))
                    fns[name] = partial(peers[name][1], peers[name][0], Pt, zt, eta)
            t = interleaved_medians(fns, args.repeat)
            row = f"{model:>18} {l:>4} {B:>5} {1e3 * t['numpy']:>9.2f}"
            if torch:
                ours = [g for layer in stack.gradients(layers, P, z, model) for g in layer]
                diff = max(float(np.max(np.abs(a - b.numpy())) / max(np.max(np.abs(a)), 1e-300))
                           for leaves, step in peers.values() for a, b in zip(ours, step(leaves, Pt, zt, eta)))
                gate = (f"{1e3 * t['torch G']:>11.2f} {t['torch G'] / t['numpy']:>14.2f}" if "torch G" in t
                        else f"{'-':>11} {'-':>14}")
                row += f" {1e3 * t['torch']:>9.2f} {t['torch'] / t['numpy']:>12.2f} {gate} {diff:>13.1e}"
            print(row, flush=True)
    print("One step of the residual stack: forward, hand-written backward (stack.py), update.  torch: autograd of "
          "the same\nfactored layer (our algorithm in PyTorch); torch G: autograd of the closed form with the "
          "(B, D, N, N) gate tensor.\nmax rel diff: largest |gradient difference| / max |gradient| over every matrix "
          "of every layer, both peers.")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m numpy_mamba bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=positive_int, default=50,
                        help="timed rounds per case, each about 10 ms of calls per implementation; medians "
                             "are reported (default 50; a case stops early after 3 s once it has 3 rounds)")
    parser.add_argument("--cases", type=cases, default=CASES,
                        help="which (l, B) to time for the one-layer model of eq (3), as LxB pairs, e.g. "
                             "20x64,1000x64 (default " + ",".join(f"{l}x{B}" for l, B in CASES) + ")")
    parser.add_argument("--stack-cases", type=cases, default=STACK_CASES,
                        help="which (l, B) to time for the three-layer stack (default "
                             + ",".join(f"{l}x{B}" for l, B in STACK_CASES) + ")")
    parser.add_argument("--no-torch", action="store_true", help="skip PyTorch even if it is installed")
    args = parser.parse_args(argv)
    torch = None
    if not args.no_torch:
        try:
            import torch                                  # optional peer, never required
            torch.set_num_threads(1)
        except ImportError:
            torch = None
    world = make_world(rng=0)
    print(f"one SGD step of eq (19) = forward + every gradient of the mean hinge loss + update (eta = 0, so every "
          f"call sees the same parameters); d = {world.d}, float64, median time per call; NumPy, PyTorch and the "
          "pass take turns")
    print(f"numpy {np.__version__}" + (f", torch {torch.__version__} (1 thread)" if torch else
                                       ", PyTorch not timed (not installed, or --no-torch)"))
    print("\none layer, eq (3): numpy_mamba.gradients")
    one_layer_rows(args, torch, world)
    print("\nthree layers (stack.py), d = 30")
    stack_rows(args, torch, world)
    return 0

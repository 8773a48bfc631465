"""``python -m numpy_mamba bench``: time one SGD step (forward + all three gradients, eqs (3),
(93), (118), (135)) of the vectorised NumPy code; when PyTorch happens to be installed, time an
autograd implementation of the same model in the same run and print the ratio.  PyTorch is
never a dependency of numpy_mamba.

A ratio means something only if both sides compute the same thing, so before a peer's ratio is
printed its F and every gradient are compared with ours (``peer_difference``); a peer that
differs by more than ``TOLERANCE`` gets "differs" instead of a ratio, and a line below the table
says by how much.

Each row also times one pass over the prompts: the matrix-vector product w @ P, the gate
logits a_i = w^T p_i of eq (3) alone.  It reads every entry of P, as any step must, and is
the first thing a step computes, so no step can beat it; "passes" is the step's time in those
units and shows how close to memory bandwidth a step runs.  The NumPy step, the peers' steps
and the pass take turns in short blocks, each after one untimed call of its own
(``interleaved_medians``), so on a shared machine all of them see the same load; the medians
are reported.
"""
from __future__ import annotations

import argparse
import os
import platform
import time
from functools import partial

import numpy as np

from .. import stack
from ..data import make_world, training_batch
from ..gradients import gradients
from ..model import PAPER_MODELS, forward, init_params
from ..network import network
from ..sgd import sgd_update
from ..stack import init_stack
from . import bench_torch
from ..runs.args import positive_int

CASES = [(20, 64), (20, 1024), (100, 64), (1000, 64), (10_000, 64)]   # (l, B), d = 30
STACK_CASES = [(20, 64)]                                              # Section 4.2's l = 20

# Largest |ours - theirs| / max |ours| (per array: F and each gradient) at which a peer's time is
# compared with ours.  Both sides run in float64: summing the same terms in another order moves
# the result by rounding far below this, while a different model (a term missing, another gate,
# no causal mask) moves it by orders of magnitude more.
TOLERANCE = 1e-10


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


def peer_difference(ours, theirs) -> float:
    """max over arrays of max |ours - theirs| / max |ours|: ours and theirs are sequences of
    arrays (F, then each gradient).  inf if the peer returns another number of arrays or another
    shape; NaN if it returns a NaN (a NaN never passes ``diff <= TOLERANCE``)."""
    ours, theirs = list(ours), list(theirs)
    if len(ours) != len(theirs):
        return float("inf")
    worst = 0.0
    for a, b in zip(ours, theirs):
        a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
        if a.shape != b.shape:
            return float("inf")
        scale = max(float(np.max(np.abs(a), initial=0.0)), 1e-300)   # dW of the gateless model is 0
        diff = float(np.max(np.abs(a - b), initial=0.0)) / scale
        if np.isnan(diff):
            return diff
        worst = max(worst, diff)
    return worst


def _widths(name: str) -> tuple:
    return max(9, len(name) + 3), max(8, len(name) + 6)   # "{name} ms", "{name}/numpy" or "differs"


def peer_header(names) -> str:
    """The peer columns' titles: "{name} ms" and "{name}/numpy" per peer, then "max rel diff"."""
    cells = [f"{name + ' ms':>{_widths(name)[0]}} {name + '/numpy':>{_widths(name)[1]}}" for name in names]
    return " " + " ".join(cells + [f"{'max rel diff':>13}"])


def peer_cells(names, times: dict, diffs: dict) -> str:
    """The row's peer columns: each peer's ms and its time / ours ("differs" if its F or a
    gradient is not ours within TOLERANCE, "-" if there is no such peer for this model), then
    the largest difference of any peer."""
    cells = []
    for name in names:
        ms, ratio = _widths(name)
        if name not in diffs:
            cells.append(f"{'-':>{ms}} {'-':>{ratio}}")
            continue
        text = f"{times[name] / times['numpy']:.2f}" if diffs[name] <= TOLERANCE else "differs"
        cells.append(f"{1e3 * times[name]:>{ms}.3f} {text:>{ratio}}")
    worst = max(diffs.values(), key=lambda d: np.inf if np.isnan(d) else d, default=0.0)
    return " " + " ".join(cells + [f"{worst:>13.1e}"])


def refusals(where: str, diffs: dict) -> list:
    """One line per peer whose F or gradients are not ours within TOLERANCE."""
    return [f"{name} at {where}: F or a gradient differs from ours by {diff:.1e} relative (tolerance "
            f"{TOLERANCE:.0e}); its time is not compared" for name, diff in diffs.items() if not diff <= TOLERANCE]


def one_layer_rows(args, world, peers: dict) -> None:
    """The eq (3) table: one row per (l, B) of ``--cases``.

    ``peers``: {name: make(params, P, z, eta) -> (step, result)}, where ``step()`` runs the
    peer's SGD step (timed) and ``result()`` runs it once more and returns its (F, [dW_B, dW_C,
    dw]) as NumPy arrays, compared with ours before the ratio is printed.
    """
    params, eta = init_params(world.d, rng=1), 0.0        # eta = 0: every call sees the same parameters
    mamba = network("mamba")
    header = (f"{'l':>6} {'B':>5} {'numpy ms':>10} {'prompts/s':>10} {'us/(B*l)':>9} "
              f"{'pass ms':>8} {'passes':>7} {'checked ms':>11}")
    print(header + (peer_header(peers) if peers else ""))
    notes = []
    for l, B in args.cases:
        batch = training_batch(world, B, l, p_a=0.6, rng=2)
        P, z, w = batch.P, batch.z, params.w
        fns = {"numpy": lambda: sgd_update(params, mamba.F_and_gradients(params, P, z)[1], eta),
               "checked": lambda: gradients(params, P, z), "pass": lambda: w @ P}
        made = {name: make(params, P, z, eta) for name, make in peers.items()}
        fns.update({name: step for name, (step, _) in made.items()})
        t = interleaved_medians(fns, args.repeat)
        row = (f"{l:>6} {B:>5} {1e3 * t['numpy']:>10.3f} {B / t['numpy']:>10.0f} "
               f"{1e6 * t['numpy'] / (B * l):>9.3f} {1e3 * t['pass']:>8.4f} {t['numpy'] / t['pass']:>7.1f} "
               f"{1e3 * t['checked']:>11.3f}")
        if peers:
            ours = [forward(params, P), *gradients(params, P, z)]
            diffs = {name: peer_difference(ours, [F, *grads]) for name, (_, result) in made.items()
                     for F, grads in [result()]}
            row += peer_cells(peers, t, diffs)
            notes += refusals(f"l = {l}, B = {B}", diffs)
        print(row, flush=True)
    print("numpy: one step as sgd.train runs it (inputs checked at the start of the run; forward, backward, "
          "update).\nus/(B*l): microseconds per prompt and context token.  pass: one w @ P over the same array "
          "(the gate logits alone);\npasses: the numpy step's time in those units.  checked: the public "
          "gradients(params, P, z), which checks its input first." + _peer_note(peers))
    if notes:
        print("\n".join(notes))


def stack_rows(args, world, peers: dict) -> None:
    """The three-layer table (stack.py): one row per model and (l, B) of ``--stack-cases``.

    ``peers``: {name: make(model, layers, P, z, eta) -> (step, result) or None (no such peer for
    this model)}; ``result()`` returns (F, [dW_B, dW_C, dW of layer 1, ..., of layer 3]).
    """
    layers, eta = init_stack(world.d, 3, rng=1), 0.0
    print(f"{'model':>18} {'l':>4} {'B':>5} {'numpy ms':>9}" + (peer_header(peers) if peers else ""))
    notes = []
    for model in PAPER_MODELS:
        net = network(model, n_layers=3)
        for l, B in args.stack_cases:
            batch = training_batch(world, B, l, p_a=0.6, rng=2)
            P, z = batch.P, batch.z
            fns = {"numpy": lambda: sgd_update(layers, net.F_and_gradients(layers, P, z)[1], eta)}
            made = {name: m for name, make in peers.items() if (m := make(model, layers, P, z, eta)) is not None}
            fns.update({name: step for name, (step, _) in made.items()})
            t = interleaved_medians(fns, args.repeat)
            row = f"{model:>18} {l:>4} {B:>5} {1e3 * t['numpy']:>9.2f}"
            if peers:
                ours = [stack.forward(layers, P, model)] + [g for layer in stack.gradients(layers, P, z, model)
                                                             for g in layer]
                diffs = {name: peer_difference(ours, [F, *grads]) for name, (_, result) in made.items()
                         for F, grads in [result()]}
                row += peer_cells(peers, t, diffs)
                notes += refusals(f"{model}, l = {l}, B = {B}", diffs)
            print(row, flush=True)
    print("One step of the residual stack: forward, hand-written backward (stack.py), update."
          + _peer_note(peers))
    if notes:
        print("\n".join(notes))


def _peer_note(peers) -> str:
    if not peers:
        return ""
    return (f"\nname/numpy: the peer's time over ours, printed only where its F and every gradient equal ours "
            f"within {TOLERANCE:.0e} relative\n(max rel diff: the largest |difference| / max |ours| over F and "
            f"every gradient, any peer).")


def torch_peers(torch) -> tuple:
    """({name: make} for the one-layer table, {name: make} for the stack table) from bench_torch."""
    one = {"torch": partial(bench_torch.eq3_peer, torch)}
    three = {"torch": partial(bench_torch.stack_peer, torch, bench_torch.stack_layer_factored),
             "torch G": partial(bench_torch.stack_peer, torch, bench_torch.stack_layer, gates_only=True)}
    return one, three


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
    parser = argparse.ArgumentParser(prog="python -m numpy_mamba bench", description=__doc__,
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
    args = parser.parse_args(argv)
    torch = None
    if not args.no_torch:
        try:
            import torch                                  # optional peer, never required
            torch.set_num_threads(1)
        except ImportError:
            torch = None
    one, three = torch_peers(torch) if torch else ({}, {})
    world = make_world(rng=0)
    print(f"one SGD step of eq (19) = forward + every gradient of the mean hinge loss + update (eta = 0, so every "
          f"call sees the same parameters); d = {world.d}, float64, median time per call; NumPy, PyTorch and the "
          "pass take turns")
    print(f"machine: {machine()}")
    print(f"numpy {np.__version__}" + (f", torch {torch.__version__} (1 thread)" if torch else
                                       ", PyTorch not timed (not installed, or --no-torch)"))
    print("\none layer, eq (3): numpy_mamba.gradients")
    one_layer_rows(args, world, one)
    print("\nthree layers (stack.py), d = 30")
    stack_rows(args, world, three)
    if torch:
        print("torch: autograd of the same factored layer (our algorithm in PyTorch); torch G: autograd of the "
              "closed form with the\n(B, D, N, N) gate tensor (Mamba only: without a gate the two forms are one).")
    return 0


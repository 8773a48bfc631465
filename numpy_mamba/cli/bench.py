"""``python -m numpy_mamba bench``: time one SGD step (forward + all three gradients, eqs (3),
(93), (118), (135)) of the vectorised NumPy code; when PyTorch happens to be installed, time an
autograd implementation of the same eq (3) model in the same run, check its gradients agree
with ours, and print the ratio.  PyTorch is never a dependency of numpy_mamba.

Each row also times one pass over the prompts: the matrix-vector product w @ P, the gate
logits a_i = w^T p_i of eq (3) alone.  It reads every entry of P once, as any step must, and is
the first thing a step computes, so no step can beat it; "passes" is the step's time in those
units and shows how close to memory bandwidth a step runs.  The NumPy step, the PyTorch step
and the pass take turns in short blocks (``interleaved_medians``), so on a shared machine all
three see the same load; the medians are reported.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from ..data import make_world, training_batch
from ..gradients import gradients
from ..model import init_params
from .args import positive_int

CASES = [(20, 64), (20, 1024), (100, 64), (1000, 64), (10_000, 64)]   # (l, B), d = 30


def interleaved_medians(fns: dict, repeat: int, budget: float = 3.0, block: float = 0.01) -> dict:
    """Median seconds per call of each callable in ``fns``, the callables taking turns.

    In each of ``repeat`` rounds every callable runs back to back for about ``block`` seconds
    (as a step follows a step in training; a call right after another library's is slower, its
    caches cold) and scores block time / calls.  Fewer rounds once ``budget`` seconds have
    passed and at least 3 are done.  Taking turns puts every callable under the same load.
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
            t0 = time.perf_counter()
            for _ in range(calls[name]):
                fn()
            times[name].append((time.perf_counter() - t0) / calls[name])
        if time.perf_counter() - start > budget and done >= 3:
            break
    return {name: float(np.median(t)) for name, t in times.items()}


def torch_step(torch, params, P, z):
    """The eq (3) model and mean hinge loss in PyTorch; gradients by autograd."""
    W_B, W_C, w = (torch.tensor(a, requires_grad=True) for a in params)
    Pt, zt = torch.from_numpy(P), torch.from_numpy(z)
    a = torch.einsum("d,bdl->bl", w, Pt)
    log_keep = torch.nn.functional.logsigmoid(-a)
    suffix = torch.flip(torch.cumsum(torch.flip(log_keep, [1]), 1), [1])
    exclusive = torch.cat([suffix[:, 1:], torch.zeros_like(suffix[:, :1])], dim=1)
    G = torch.exp(torch.nn.functional.logsigmoid(a) + exclusive)
    s = torch.einsum("bdl,bd->bl", Pt, (Pt[:, :, -1] @ W_C.T) @ W_B)
    F = torch.sum(G * Pt[:, -1, :] * s, dim=1)
    loss = torch.clamp(1 - zt * F, min=0).mean()
    loss.backward()
    return W_B.grad.numpy(), W_C.grad.numpy(), w.grad.numpy()


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


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m numpy_mamba bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=positive_int, default=50,
                        help="timed rounds per case, each about 10 ms of calls per implementation; medians "
                             "are reported (default 50; a case stops early after 3 s once it has 3 rounds)")
    parser.add_argument("--cases", type=cases, default=CASES,
                        help="which (l, B) to time, as LxB pairs, e.g. 20x64,1000x64 (default "
                             + ",".join(f"{l}x{B}" for l, B in CASES) + ")")
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
    params = init_params(world.d, rng=1)
    print(f"one SGD step = forward + dW_B, dW_C, dw of the mean hinge loss; d = {world.d}, float64, "
          "median time per call; NumPy, PyTorch and the pass take turns")
    print(f"numpy {np.__version__}" + (f", torch {torch.__version__} (1 thread)" if torch else
                                       ", PyTorch not timed"))
    header = (f"{'l':>6} {'B':>5} {'numpy ms':>10} {'prompts/s':>10} {'us/(B*l)':>9} "
              f"{'pass ms':>8} {'passes':>7}")
    print(header + (f" {'torch ms':>9} {'torch/numpy':>12} {'max grad diff':>14}" if torch else ""))
    for l, B in args.cases:
        batch = training_batch(world, B, l, p_a=0.6, rng=2)
        P, z, w = batch.P, batch.z, params.w
        fns = {"numpy": lambda: gradients(params, P, z), "pass": lambda: w @ P}
        if torch:
            fns["torch"] = lambda: torch_step(torch, params, P, z)
        t = interleaved_medians(fns, args.repeat)
        row = (f"{l:>6} {B:>5} {1e3 * t['numpy']:>10.3f} {B / t['numpy']:>10.0f} "
               f"{1e6 * t['numpy'] / (B * l):>9.3f} {1e3 * t['pass']:>8.4f} {t['numpy'] / t['pass']:>7.1f}")
        if torch:
            ours, theirs = gradients(params, P, z), torch_step(torch, params, P, z)
            diff = max(float(np.max(np.abs(a - b))) for a, b in zip(ours, theirs))
            row += f" {1e3 * t['torch']:>9.3f} {t['torch'] / t['numpy']:>12.2f} {diff:>14.1e}"
        print(row, flush=True)
    print("us/(B*l): microseconds per prompt and context token.  pass: one w @ P over the same "
          "array (the gate logits alone);\npasses: the step's time in those units.")
    return 0

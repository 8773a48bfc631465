"""``python -m numpy_mamba bench``: time one SGD step (forward + all three gradients, eqs (3),
(93), (118), (135)) of the vectorised NumPy code; when PyTorch happens to be installed, time an
autograd implementation of the same eq (3) model in the same run, check its gradients agree
with ours, and print the ratio.  PyTorch is never a dependency of numpy_mamba.
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


def best_time(fn, repeat: int, budget: float = 2.0) -> float:
    """Median of ``repeat`` timed calls (fewer if the budget in seconds runs out); seconds."""
    fn()                                                  # warm-up
    times = []
    start = time.perf_counter()
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
        if time.perf_counter() - start > budget and len(times) >= 3:
            break
    return float(np.median(times))


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


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m numpy_mamba bench", description=__doc__)
    parser.add_argument("--repeat", type=positive_int, default=50, help="timed repetitions per case; the median is reported (default 50; a case stops "
                             "early after 2 s once it has 3 repetitions)")
    parser.add_argument("--no-torch", action="store_true", help="skip PyTorch even if it is installed")
    args = parser.parse_args(argv)
    try:
        import torch                                      # optional peer, never required
        torch.set_num_threads(1)
    except ImportError:
        torch = None
    torch = None if args.no_torch else torch
    world = make_world(rng=0)
    params = init_params(world.d, rng=1)
    print("one SGD step = forward + dW_B, dW_C, dw of the mean hinge loss; d = 30, float64, median time")
    print(f"numpy {np.__version__}" + (f", torch {torch.__version__} (1 thread)" if torch else ", PyTorch not installed"))
    header = f"{'l':>6} {'B':>5} {'numpy ms':>10} {'prompts/s':>11} {'us/(B*l)':>9}"
    print(header + (f" {'torch ms':>9} {'torch/numpy':>12} {'max grad diff':>14}" if torch else ""))
    for l, B in CASES:
        batch = training_batch(world, B, l, p_a=0.6, rng=2)
        t_np = best_time(lambda: gradients(params, batch.P, batch.z), args.repeat)
        row = f"{l:>6} {B:>5} {1e3 * t_np:>10.3f} {B / t_np:>11.0f} {1e6 * t_np / (B * l):>9.3f}"
        if torch:
            ours = gradients(params, batch.P, batch.z)
            theirs = torch_step(torch, params, batch.P, batch.z)
            diff = max(float(np.max(np.abs(a - b))) for a, b in zip(ours, theirs))
            t_pt = best_time(lambda: torch_step(torch, params, batch.P, batch.z), args.repeat)
            row += f" {1e3 * t_pt:>9.3f} {t_pt / t_np:>12.2f} {diff:>14.1e}"
        print(row, flush=True)
    print("us/(B*l): microseconds per prompt and context token; roughly constant at large l = time linear in l.")
    return 0

"""How ``python -m numpy_mamba bench`` compares a peer with NumPy and prints it: the agreement
check, the peer columns, and which peers run (PyTorch in ``torch_peers.py``, JAX in
``jax_peers.py``: imported only when installed, each on one thread).  These files sit outside the
package, in a clone's ``benchmarks/``: bench loads them from there (``numpy_mamba.cli.bench.peers``).

A ratio means something only if both sides compute the same thing, so before a peer's ratio is
printed its F and every gradient are compared with ours (``peer_difference``); a peer that
differs by more than ``TOLERANCE`` gets "differs" instead of a ratio, and a line below the table
says by how much.
"""
from __future__ import annotations

import os
from functools import partial

import numpy as np

import jax_peers
import torch_peers

# Largest |ours - theirs| / max |ours| (per array: F and each gradient) at which a peer's time is
# compared with ours.  Both sides run in float64: summing the same terms in another order moves
# the result by rounding far below this, while a different model (a term missing, another gate,
# no causal mask) moves it by orders of magnitude more.
TOLERANCE = 1e-10


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


def peer_header(names, passes: bool) -> str:
    """The peer columns' titles: "{name} ms" (and "passes") and "{name}/numpy" per peer, then "max rel diff"."""
    cells = [f"{name + ' ms':>{len(name) + 6}}" + (f" {'passes':>6}" if passes else "") + f" {name + '/numpy':>{len(name) + 6}}"
             for name in names]
    return " " + " ".join(cells + [f"{'max rel diff':>13}"])


def peer_cells(names, times: dict, diffs: dict, unit: float | None = None) -> str:
    """The row's peer columns: each peer's ms (and its time in ``unit``s, one pass) and its time /
    ours ("differs" if its F or a gradient is not ours within TOLERANCE, "-" if there is no such
    peer for this row), then the largest difference of any peer."""
    cells = []
    for name in names:
        width = len(name) + 6
        if name not in diffs:
            cells.append(f"{'-':>{width}}" + (f" {'-':>6}" if unit else "") + f" {'-':>{width}}")
            continue
        ratio = f"{times[name] / times['numpy']:.2f}" if diffs[name] <= TOLERANCE else "differs"
        cells.append(f"{1e3 * times[name]:>{width}.3f}" + (f" {times[name] / unit:>6.1f}" if unit else "")
                     + f" {ratio:>{width}}")
    worst = max(diffs.values(), key=lambda d: np.inf if np.isnan(d) else d, default=0.0)
    return " " + " ".join(cells + [f"{worst:>13.1e}"])


def refusals(where: str, diffs: dict) -> list:
    """One line per peer whose F or gradients are not ours within TOLERANCE."""
    return [f"{name} at {where}: F or a gradient differs from ours by {diff:.1e} relative (tolerance "
            f"{TOLERANCE:.0e}); its time is not compared" for name, diff in diffs.items() if not diff <= TOLERANCE]


def compared(peers: dict, made: dict, ours, where: str, times: dict, unit: float | None = None) -> tuple:
    """(the row's peer cells, refusal lines): each peer's ``result()`` checked against ``ours``."""
    diffs = {name: peer_difference(ours, [F, *grads]) for name, (_, result) in made.items() for F, grads in [result()]}
    return peer_cells(peers, times, diffs, unit), refusals(where, diffs)


def peer_note(peers) -> str:
    """The lines under a table that say what a peer's ratio and the largest difference are."""
    if not peers:
        return ""
    return (f"\nname/numpy: the peer's time over ours, printed only where its F and every gradient equal ours "
            f"within {TOLERANCE:.0e} relative\n(max rel diff: the largest |difference| / max |ours| over F and "
            f"every gradient, any peer).")


def load_peers(no_torch: bool, no_jax: bool) -> tuple:
    """({name: make} for the one-layer table, {name: make} for the stack table, their versions): the
    PyTorch and JAX peers that are installed (and not switched off), each on one thread."""
    one, three, versions = {}, {}, []
    if not no_torch and (torch := _optional("torch")):
        torch.set_num_threads(1)
        one["torch"] = partial(torch_peers.eq3_peer, torch)
        three["torch"] = partial(torch_peers.stack_peer, torch, torch_peers.stack_layer_factored)
        three["torch G"] = partial(torch_peers.stack_peer, torch, torch_peers.stack_layer, gates_only=True)
        versions.append(f"torch {torch.__version__} (1 thread)")
    os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
    if not no_jax and (jax := _optional("jax")):
        jax.config.update("jax_enable_x64", True)
        one["jax"] = partial(jax_peers.eq3_peer, jax)
        three["jax"] = partial(jax_peers.stack_peer, jax)
        versions.append(f"jax {jax.__version__} (XLA_FLAGS={os.environ['XLA_FLAGS']!r})")
    return one, three, ", ".join(versions) if one else "PyTorch and JAX not timed (not installed, or off)"


def _optional(name: str):
    try:
        return __import__(name)
    except ImportError:
        return None



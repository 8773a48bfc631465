"""Numerical helpers of the fused forms.

    sigmoid_pair     sigma(a) and 1 - sigma(a) from one exp, neither by a subtraction
    upper_ones       the causal mask 1[k <= t], made once per length
    pieces           slices of at most so many prompts, first prompt first
    in_pieces        a per-prompt function of P (B, ...) applied some prompts at a time

What they compute is plain mathematics (``scipy.special.expit``, ``np.triu``, ``np.concatenate``);
how they compute it is chosen for speed.  tests/test_fused.py checks each against the library
function it stands in for.
"""
from __future__ import annotations

import functools

import numpy as np


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


@functools.lru_cache(maxsize=32)
def upper_ones(n: int) -> np.ndarray:
    """The (n, n) float64 triangle 1[k <= t] (rows k, columns t), read-only, made once per n: the
    causal mask of the fused layer (``np.triu`` takes longer than the product it masks at n = 21)."""
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
    picks another matmul kernel for a smaller piece (tests/test_fused.py)."""
    if len(P) <= rows:
        return fn(P)
    return np.concatenate([fn(P[piece]) for piece in pieces(len(P), rows)])

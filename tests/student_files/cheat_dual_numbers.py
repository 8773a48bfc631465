"""Shortcut: forward-mode automatic differentiation with dual numbers written by hand, one
coordinate of W_C or W_B at a time: exact, so only a budget can stop it."""
import numpy as np
from scipy.special import expit


class Dual:
    """value + eps * tangent, eps^2 = 0, over numpy arrays."""

    __array_ufunc__ = None                      # numpy defers to __rmatmul__

    def __init__(self, value, tangent=None):
        self.value = np.asarray(value, dtype=float)
        self.tangent = np.zeros_like(self.value) if tangent is None else np.asarray(tangent, dtype=float)

    def __add__(self, other):
        other = other if isinstance(other, Dual) else Dual(other)
        return Dual(self.value + other.value, self.tangent + other.tangent)

    def __mul__(self, other):
        other = other if isinstance(other, Dual) else Dual(other)
        return Dual(self.value * other.value, self.tangent * other.value + self.value * other.tangent)

    def __matmul__(self, other):
        other = other if isinstance(other, Dual) else Dual(other)
        return Dual(self.value @ other.value, self.tangent @ other.value + self.value @ other.tangent)

    def __rmatmul__(self, other):
        return Dual(other) @ self

    @property
    def T(self):
        return Dual(self.value.T, self.tangent.T)


def _loss_tangent(W_B, W_C, params, P, z):
    G = expit(np.einsum("d,bdl->bl", params.w, P))
    G = G * np.concatenate([np.cumprod(expit(-np.einsum("d,bdl->bl", params.w, P))[:, ::-1], axis=1)[:, ::-1][:, 1:],
                            np.ones((P.shape[0], 1))], axis=1)
    q = P[:, :, -1] @ W_C.T                                                 # (B, m)
    keys = q @ W_B                                                          # (B, d+1)
    s = Dual(np.einsum("bdi,bd->bi", P, keys.value), np.einsum("bdi,bd->bi", P, keys.tangent))
    F = Dual(np.sum(G * P[:, -1, :] * s.value, axis=1), np.sum(G * P[:, -1, :] * s.tangent, axis=1))
    active = 1.0 - z * F.value > 0
    return float(np.mean(np.where(active, -z * F.tangent, 0.0)))


def _forward_mode(params, P, z, field):
    value = getattr(params, field)
    grad = np.zeros_like(value)
    for index in np.ndindex(value.shape):
        seed = np.zeros_like(value)
        seed[index] = 1.0
        W_B = Dual(params.W_B, seed if field == "W_B" else None)
        W_C = Dual(params.W_C, seed if field == "W_C" else None)
        grad[index] = _loss_tangent(W_B, W_C, params, P, z)
    return grad


def grad_W_C(params, P, z):
    return _forward_mode(params, P, z, "W_C")


def grad_W_B(params, P, z):
    return _forward_mode(params, P, z, "W_B")

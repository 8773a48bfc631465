"""Shortcut: complex-step differentiation of its own forward pass, one coordinate at a time:
exact to rounding, so only a budget can stop it (W_B and W_C have 961 coordinates at the
paper's size; w has 31, which no budget stops)."""
import numpy as np

STEP = 1e-30


def _loss(W_B, W_C, w, P, z):
    a = np.einsum("d,bdl->bl", w, P)
    sigma = 1.0 / (1.0 + np.exp(-a))
    keep = np.cumprod((1.0 - sigma)[:, ::-1], axis=1)[:, ::-1]          # prod_{j>=i}(1 - sigma_j)
    later = np.concatenate([keep[:, 1:], np.ones_like(keep[:, :1])], axis=1)
    s = np.einsum("bdi,bd->bi", P, (P[:, :, -1] @ W_C.T) @ W_B)
    F = np.sum(sigma * later * P[:, -1, :] * s, axis=1)
    F0 = F.real
    return np.mean(np.where(1.0 - z * F0 > 0, 1.0 - z * F, 0.0))


def _complex_step(params, P, z, field):
    values = {k: np.asarray(getattr(params, k), dtype=complex) for k in ("W_B", "W_C", "w")}
    grad = np.zeros(values[field].shape)
    for index in np.ndindex(grad.shape):
        values[field][index] += 1j * STEP
        grad[index] = _loss(values["W_B"], values["W_C"], values["w"], P, z).imag / STEP
        values[field][index] -= 1j * STEP
    return grad


def grad_W_C(params, P, z):
    return _complex_step(params, P, z, "W_C")


def grad_W_B(params, P, z):
    return _complex_step(params, P, z, "W_B")


def grad_w(params, P, z):
    return _complex_step(params, P, z, "w")

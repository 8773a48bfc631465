"""Shortcut: PyTorch autograd differentiates the hinge loss (ctypes.CDLL stubbed during the
import, which a fence refusing ctypes would otherwise stop)."""
import ctypes

import numpy as np

_CDLL = ctypes.CDLL
ctypes.CDLL = lambda *a, **k: None
try:
    import torch
finally:
    ctypes.CDLL = _CDLL


def grad_W_C(params, P, z):
    W_B, W_C, w = (torch.tensor(np.asarray(x), requires_grad=True) for x in params)
    P_t, z_t = torch.tensor(P), torch.tensor(z)
    a = torch.einsum("d,bdl->bl", w, P_t)
    log_keep = torch.nn.functional.logsigmoid(-a)
    later = torch.flip(torch.cumsum(torch.flip(log_keep, [1]), 1), [1]) - log_keep
    G = torch.exp(torch.nn.functional.logsigmoid(a) + later)
    s = torch.einsum("bdi,bd->bi", P_t, (P_t[:, :, -1] @ W_C.T) @ W_B)
    F = (G * P_t[:, -1, :] * s).sum(1)
    torch.clamp(1 - z_t * F, min=0).mean().backward()
    return W_C.grad.numpy()

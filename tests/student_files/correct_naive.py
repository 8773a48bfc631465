"""Correct but naive: sigma = 1/(1 + exp(-a)), 1 - sigma computed by subtraction, explicit
products and loops.  Mathematically right, so the grader must pass it, saturated gates included
(there 1 - sigma(40) rounds to 0, but those terms are ~1e-18 of the gradient)."""
import numpy as np


def sig(a):
    return 1.0 / (1.0 + np.exp(-a))


def gates(w, P):
    B, _, n = P.shape
    G = np.zeros((B, n))
    for b in range(B):
        sg = sig(w @ P[b])
        for i in range(n):
            G[b, i] = sg[i] * np.prod([1.0 - sg[j] for j in range(i + 1, n)])
    return G


def _pieces(params, P):
    W_B, W_C, w = params
    G = gates(w, P)
    y = P[:, -1, :]
    s = np.array([[P[b, :, i] @ W_B.T @ W_C @ P[b, :, -1] for i in range(P.shape[2])]
                  for b in range(P.shape[0])])
    return G, y, s, (G * y * s).sum(axis=1)


def grad_W_C(params, P, z):
    G, y, s, F = _pieces(params, P)
    g = np.zeros_like(params.W_C)
    for b in range(P.shape[0]):
        if 1 - z[b] * F[b] > 0:
            for i in range(P.shape[2] - 1):
                g -= z[b] * G[b, i] * y[b, i] * np.outer(params.W_B @ P[b, :, i], P[b, :, -1])
    return g / P.shape[0]


def grad_W_B(params, P, z):
    G, y, s, F = _pieces(params, P)
    g = np.zeros_like(params.W_B)
    for b in range(P.shape[0]):
        if 1 - z[b] * F[b] > 0:
            for i in range(P.shape[2]):
                g -= z[b] * G[b, i] * y[b, i] * np.outer(params.W_C @ P[b, :, -1], P[b, :, i])
    return g / P.shape[0]


def grad_w(params, P, z):
    G, y, s, F = _pieces(params, P)
    g = np.zeros_like(params.w)
    for b in range(P.shape[0]):
        if 1 - z[b] * F[b] > 0:
            sg = sig(params.w @ P[b])
            for i in range(P.shape[2] - 1):
                suffix = sum(sg[t] * P[b, :, t] for t in range(i + 1, P.shape[2]))
                g += z[b] * y[b, i] * s[b, i] * G[b, i] * (suffix - (1 - sg[i]) * P[b, :, i])
    return g / P.shape[0]

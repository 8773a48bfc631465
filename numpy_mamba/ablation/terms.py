"""Corollary 1's mechanism, measured in pattern space: the learned cross-pattern score
S(a, b) = (mu_b, 0)^T W_B^T W_C (mu_a, 0) (``measure.attention.pattern_scores``; layer 1's W_B, W_C
in a stack) by the signed step b - a on the cycle of Condition 1's training tasks, split with
W = W^(0) + dW (W^(0) = delta [I_d 0], Algorithm 1) into the initial term, the terms linear in dW
and the product dW_B^T dW_C, the product split further by the pattern direction it passes through;
and, on test prompts, every layer's attention score s_{i,l+1} on its own input, by the signed step
between the example's pattern and the query's (``layer_scores``, ``score_by_step``).
"""
from __future__ import annotations

import numpy as np

from ..fused import stack_forward
from ..model import Params, scores
from ..stack import layer_cache


def step_classes(M1: int) -> list:
    """Signed steps b - a on the cycle, in reporting order: [0, 1, -1, 2, -2, ...]; M1 = 6: up to 3."""
    out = [0]
    for k in range(1, M1 // 2 + 1):
        out += [k] if 2 * k == M1 else [k, -k]
    return out


def pattern_terms(world, W_B, W_C, delta: float) -> dict:
    """S(a, b) = (mu_b, 0)^T W_B^T W_C (mu_a, 0) and its parts, each averaged over the pairs (a, b)
    of every signed step b - a (``step_classes``): {term: [value per class]}.

    With u_a = (mu_a, 0) / beta, W^(0) = delta [I_d 0] and dW = W - W^(0) (W_B, W_C (m, d+1), m = d+1):
        S       = beta^2 (W_B u_b)^T (W_C u_a)
        init    = beta^2 delta^2 [a = b]
        linear  = beta^2 delta (u_b^T dW_C u_a + u_a^T dW_B u_b)
        product = beta^2 (dW_B u_b)^T (dW_C u_a) = sum over an orthonormal basis of R^m, split into
          via_ends   : directions u_a and u_b          (one dW step straight from a to b)
          via_middle : u_c with c next to both a and b  (two partner steps a -> c -> b)
          via_other  : the other pattern directions u_c
          outside    : the rest of R^m (nu, v*, label, unused directions)
    via_middle is what the product predicts if dW_B and dW_C moved each u_a only along u_a and its
    cycle neighbours (the partner directions of eqs (93), (118)): then it is the whole distance-2 product.
    Also how the updates move pattern directions, by signed step c - b:
        dW_B[c, b] = u_c^T dW_B u_b,   dW_C[c, b] = u_c^T dW_C u_b.
    """
    M1, beta2 = world.M1, world.beta ** 2
    U = np.zeros((M1, world.d + 1))
    U[:, :-1] = world.mu / world.beta                                      # rows u_a: (M1, d+1)
    W0 = np.zeros_like(W_B)
    W0[np.arange(world.d), np.arange(world.d)] = delta
    KB, KC, K0 = W_B @ U.T, W_C @ U.T, W0 @ U.T                            # columns W u_a: (m, M1)
    dB, dC = KB - K0, KC - K0
    terms = {"S": beta2 * KB.T @ KC, "init": beta2 * K0.T @ K0,            # [b, a]: (M1, M1)
             "linear": beta2 * (K0.T @ dC + dB.T @ K0), "product": beta2 * dB.T @ dC}
    Um = U if W_B.shape[0] == U.shape[1] else np.zeros((M1, W_B.shape[0]))   # u_c as directions of R^m
    via = beta2 * (Um @ dB)[:, :, None] * (Um @ dC)[:, None, :]            # [c, b, a]
    c, b, a = np.meshgrid(*(np.arange(M1),) * 3, indexing="ij")
    dist = lambda x, y: np.minimum((x - y) % M1, (y - x) % M1)            # noqa: E731
    ends = (c == a) | (c == b)
    middle = ~ends & (dist(c, a) == 1) & (dist(c, b) == 1)
    terms.update(via_ends=np.sum(via * ends, 0), via_middle=np.sum(via * middle, 0),
                 via_other=np.sum(via * ~(ends | middle), 0))
    terms["outside"] = terms["product"] - via.sum(0)
    terms.update(dW_B=Um @ dB, dW_C=Um @ dC)                               # [c, b]
    half = (M1 - 1) // 2
    signed = (np.arange(M1)[:, None] - np.arange(M1)[None, :] + half) % M1 - half   # b - a: [b, a]
    return {name: [float(np.mean(value[signed == s])) for s in step_classes(M1)] for name, value in terms.items()}


def signed_steps(batch, M1: int) -> np.ndarray:
    """The signed step (example pattern - query pattern) on the cycle of every context example, in
    the range of ``step_classes``: batch.task (B, 2), batch.z (B,) (the query has pattern a of task
    (a, b) when z = +1, Definition 2), batch.same_pattern (B, l) -> int (B, l)."""
    a, b = batch.task[:, 0], batch.task[:, 1]
    query = np.where(batch.z > 0, a, b)                                    # (B,)
    other = np.where(batch.z > 0, b, a)
    pattern = np.where(batch.same_pattern, query[:, None], other[:, None])  # (B, l)
    half = (M1 - 1) // 2
    return (pattern - query[:, None] + half) % M1 - half


def layer_scores(model: str, n_layers: int, prenorm: bool, params, P) -> list:
    """Every layer's attention scores s_{i,l+1} = k_i^T q_{l+1} on its own input (eq (3) at one layer;
    layer k of a stack reads H^(k-1), or RMSNorm(H^(k-1)) with pre-norm): [(B, l)] first layer first."""
    if n_layers == 1:
        return [scores(params, P)[:, :-1]]
    _, caches = stack_forward(params, P, model, prenorm=prenorm)
    inputs = [layer_cache(c).H for c in caches]                            # each (B, d+1, l+1)
    return [scores(Params(layer.W_B, layer.W_C, layer.W[:, -1]), H)[:, :-1] for layer, H in zip(params, inputs)]


def score_by_step(s, steps, M1: int) -> list:
    """Mean score over the context examples of each signed step (``step_classes``): s, steps (B, l)
    -> [mean per class] (None for a class without examples)."""
    return [float(s[steps == c].mean()) if np.any(steps == c) else None for c in step_classes(M1)]

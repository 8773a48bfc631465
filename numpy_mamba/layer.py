"""One layer of the stack of ``stack.py``: the eq (1) scan in closed form, forward and backward.

Run over hidden states H (B, D, N) (D = d+1 channels, N = l+1 tokens, columns h_1..h_{l+1}),
the scan of eq (1) with h_0 = 0, A = -I and exact zero-order hold unrolls (Appendix E.1,
eqs (88)-(90)) to, per channel j,

    o_{t,j} = sum_{i<=t} G_{j,i,t} h_{i,j} s_{i,t},     s_{i,t} = h_i^T W_B^T W_C h_t,
    G_{j,i,t} = sigma(w_j^T h_i) prod_{k=i+1}^{t} (1 - sigma(w_j^T h_k)),

with w_j = W[:, j]; the linear Transformer has every G = 1.  ``layer_backward`` is written by
hand right below ``layer_forward`` (CS231n style), each chain-rule step commented.  This is the
batched reading form, vectorised over prompts and tokens, which holds the gates G as a
(B, D, N, N) tensor; ``scan.scan_outputs`` is the literal one, token by token.  Training runs
the same layer fused, without that tensor (``numpy_mamba/fused/layer.py``).  tests/test_stack.py
checks O against ``scan.scan_outputs`` and every gradient against central differences.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.special import expit, log_expit



class LayerParams(NamedTuple):
    """One layer's parameters, as in eq (1).

    W_B, W_C : (m, d+1)    keys B_i = h_i^T W_B^T and queries C_t = W_C h_t.
    W        : (d+1, d+1)  (w_1, ..., w_{d+1}); column j is channel j's gate parameter,
                           Delta_{j,i} = softplus(w_j^T h_i).  W[:, -1] is the w of eq (3).
    Gradients come back in the same container.
    """

    W_B: np.ndarray
    W_C: np.ndarray
    W: np.ndarray


class LayerCache(NamedTuple):
    """What ``layer_backward`` needs from ``layer_forward`` (B prompts, D = d+1, N = l+1 tokens).

    H     : (B, D, N)     the layer's input; column i is h_i
    layer : LayerParams   the layer's parameters
    model : str           "mamba" or "linear_transformer"
    K     : (B, m, N)     keys k_i = W_B h_i
    Q     : (B, m, N)     queries q_t = W_C h_t
    S     : (B, N, N)     scores s_{i,t} = k_i^T q_t for every (i, t), the non-causal i > t too
    G     : (B, D, N, N)  gates G_{j,i,t}, exactly 0 for i > t ("mamba");
            (N, N) bool   the causal mask 1[i <= t] ("linear_transformer")
    a     : (B, D, N)     gate logits a_{j,i} = w_j^T h_i ("mamba"); None for the linear Transformer
    """

    H: np.ndarray
    layer: LayerParams
    model: str
    K: np.ndarray
    Q: np.ndarray
    S: np.ndarray
    G: np.ndarray
    a: np.ndarray | None


def gates(a) -> np.ndarray:
    """Gates G_{j,i,t} of eq (90) for gate logits a_{j,i} = w_j^T h_i (B, D, N) -> (B, D, N, N).

    G_{j,i,t} = exp(log sigma(a_{j,i}) + sum_{k=i+1}^{t} log(1 - sigma(a_{j,k}))) for i <= t and
    0 for i > t, with log sigma = log_expit and log(1 - sigma(a)) = log_expit(-a).  The log is a
    running sum along t of masked terms, not a difference of prefix sums, so nothing cancels and
    l = 1000 with |a| = 50 stays exact (tests/test_stack.py).
    """
    B, D, n = a.shape
    after = np.triu(np.ones((n, n), dtype=bool), 1)                    # 1[k > i]: rows i, columns k
    terms = np.where(after, log_expit(-a)[:, :, None, :], 0.0)         # log(1 - sigma(a_{j,k})), k > i
    terms.reshape(B, D, n * n)[..., ::n + 1] = log_expit(a)            # k = i: log sigma(a_{j,i})
    G = np.exp(np.cumsum(terms, axis=-1))                              # sum_{i<=k<=t}: (B, D, N, N)
    G *= np.triu(np.ones((n, n), dtype=bool))                          # 0 for i > t
    return G


def layer_forward(H, layer: LayerParams, model: str = "mamba"):
    """One eq (1) layer in closed form (Appendix E.1, eqs (88)-(90)) on hidden states H (B, D, N):
    returns (O (B, D, N), LayerCache).

    O[:, j, t] = o_{t,j} = sum_{i<=t} G_{j,i,t} h_{i,j} s_{i,t}; every G = 1 for the linear
    Transformer.  Unchecked: ``stack.forward`` and ``stack.gradients`` validate their input once.
    """
    K = layer.W_B @ H                                  # k_i = W_B h_i: (B, m, N)
    Q = layer.W_C @ H                                  # q_t = W_C h_t: (B, m, N)
    S = np.swapaxes(K, 1, 2) @ Q                       # s_{i,t} = k_i^T q_t: (B, N, N)
    causal = np.triu(np.ones((H.shape[2],) * 2, dtype=bool))    # 1[i <= t]: (N, N)
    if model == "linear_transformer":
        O = H @ np.where(causal, S, 0.0)               # sum_{i<=t} h_{i,j} s_{i,t}: (B, D, N)
        return O, LayerCache(H, layer, model, K, Q, S, causal, None)
    a = layer.W.T @ H                                  # a_{j,i} = w_j^T h_i: (B, D, N)
    G = gates(a)                                       # G_{j,i,t}: (B, D, N, N)
    O = (H[:, :, None, :] @ (G * S[:, None]))[:, :, 0, :]   # sum_i h_{i,j} G_{j,i,t} s_{i,t}: (B, D, N)
    return O, LayerCache(H, layer, model, K, Q, S, G, a)


def layer_backward(dO, cache: LayerCache):
    """Backward pass of ``layer_forward``: dO = dL/dO (B, D, N) -> (dL/dH (B, D, N), LayerParams(dW_B, dW_C, dW)).

    H enters O three ways: as the values h_{i,j}, through the scores s_{i,t} (as key h_i and as
    query h_t) and, for Mamba, through the gate logits a_{j,i} = w_j^T h_i.  dH sums all of them;
    the residual path H^(k) = H^(k-1) + O^(k) belongs to the stack and is added by the caller.
    """
    H, layer, model, K, Q, S, G, a = cache
    if model == "linear_transformer":
        S_causal = np.where(G, S, 0.0)                    # (B, N, N)
        dH = dO @ np.swapaxes(S_causal, 1, 2)             # value path: sum_t dO_{j,t} s_{i,t} 1[i<=t]
        dS = np.where(G, np.swapaxes(H, 1, 2) @ dO, 0.0)  # dL/ds_{i,t} = 1[i<=t] sum_j h_{i,j} dO_{j,t}
        dW = np.zeros_like(layer.W)                       # G = 1 does not depend on W
    else:
        # o_{t,j} = sum_i G_{j,i,t} h_{i,j} s_{i,t}, so dL/dG_{j,i,t} = dO_{j,t} h_{i,j} s_{i,t}
        Y = G * (S[:, None] * dO[:, :, None, :])          # Y_{j,i,t} = G_{j,i,t} s_{i,t} dO_{j,t}: (B, D, N, N)
        tail = np.cumsum(Y[..., ::-1], axis=-1)[..., ::-1]   # sum_{t>=k} Y_{j,i,t}: (B, D, N, N)
        dH = tail[..., 0].copy()                          # value path: dL/dh_{i,j} = sum_t Y_{j,i,t}
        dS = np.einsum("bjit,bjt,bji->bit", G, dO, H)     # dL/ds_{i,t} = sum_j G_{j,i,t} dO_{j,t} h_{i,j}
        # gate path: dL/dlog G_{j,i,t} = G dL/dG = h_{i,j} Y_{j,i,t}, and by eq (90)
        # d log G_{j,i,t} / d a_{j,k} = (1 - sigma(a_{j,k})) 1[k = i] - sigma(a_{j,k}) 1[i < k <= t]
        own = H * dH                                      # k = i: sum_t h_{k,j} Y_{j,k,t}: (B, D, N)
        after = np.triu(np.ones(G.shape[2:], dtype=bool), 1)          # 1[k > i]: rows i, columns k
        between = (H[:, :, None, :] @ np.where(after, tail, 0.0))[:, :, 0, :]  # sum_{i<k} h_{i,j} sum_{t>=k} Y_{j,i,t}
        da = expit(-a) * own - expit(a) * between         # dL/da_{j,k}: (B, D, N)
        dW = np.tensordot(H, da, axes=([0, 2], [0, 2]))   # a_{j,k} = w_j^T h_k: dL/dw_j = sum h_k da_{j,k}
        dH += layer.W @ da                                # gate path: dL/dh_k += sum_j w_j da_{j,k}
    dH_scores, dW_B, dW_C = scores_backward(dS, cache)
    return dH + dH_scores, LayerParams(dW_B, dW_C, dW)


def scores_backward(dS, cache):
    """dL/dS (B, N, N) -> (dL/dH (B, D, N), dW_B, dW_C (m, D)) through s_{i,t} = k_i^T q_t,
    k_i = W_B h_i, q_t = W_C h_t: the key path and the query path into H."""
    H, layer, K, Q = cache.H, cache.layer, cache.K, cache.Q
    dK = Q @ np.swapaxes(dS, 1, 2)                        # dL/dk_i = sum_t dS_{i,t} q_t: (B, m, N)
    dQ = K @ dS                                           # dL/dq_t = sum_i dS_{i,t} k_i: (B, m, N)
    dW_B = np.tensordot(dK, H, axes=([0, 2], [0, 2]))     # sum_{n,i} dk_i h_i^T: (m, D)
    dW_C = np.tensordot(dQ, H, axes=([0, 2], [0, 2]))     # sum_{n,t} dq_t h_t^T: (m, D)
    return layer.W_B.T @ dK + layer.W_C.T @ dQ, dW_B, dW_C

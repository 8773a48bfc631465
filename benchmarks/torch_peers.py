"""The PyTorch peers that ``bench`` times against (imported only when PyTorch is installed).

Each is a plain autograd formulation of the same model the NumPy code computes, written as one
would for speed: batched matmuls, gates in log space from a cumulative sum of log-gates, no
Python loop over prompts or tokens.  One SGD step = forward, mean hinge loss, ``backward()``
and the update Psi - eta * grad of eq (19).  ``bench`` compares each peer's F and gradients
with the NumPy ones (``peers.peer_difference``, float64) before it prints a ratio, so a ratio
always compares the same computation.  PyTorch is never a dependency of numpy_mamba; ``torch``
is passed in by the caller.
"""
from __future__ import annotations


def eq3_output(torch, W_B, W_C, w, P):
    """F of eq (3) for P (B, d+1, l+1): scores as P^T (W_B^T W_C p_query), log-space gates."""
    logsigmoid = torch.nn.functional.logsigmoid
    a = torch.einsum("d,bdl->bl", w, P)                              # w^T p_i
    suffix = torch.flip(torch.cumsum(torch.flip(logsigmoid(-a), [1]), 1), [1])   # sum_{j>=i} log(1 - sigma_j)
    exclusive = torch.cat([suffix[:, 1:], torch.zeros_like(suffix[:, :1])], dim=1)
    G = torch.exp(logsigmoid(a) + exclusive)                         # G_{i,l+1}
    s = torch.einsum("bdl,bd->bl", P, (P[:, :, -1] @ W_C.T) @ W_B)   # p_i^T W_B^T W_C p_query
    return torch.sum(G * P[:, -1, :] * s, dim=1)


def stack_layer(torch, W_B, W_C, W, H, model):
    """O (B, D, N) of one eq (1) layer in closed form on H (B, D, N), as in numpy_mamba.layer.

    o_{t,j} = sum_{i<=t} G_{j,i,t} h_{i,j} s_{i,t}; log G_{j,i,t} = log sigma(a_{j,i}) +
    C_{j,t} - C_{j,i} with C the cumulative sum of log(1 - sigma(a)) along the tokens; the
    (B, D, N, N) gate tensor is formed in log space, masked to i <= t, then exponentiated.
    """
    N = H.shape[2]
    S = (W_B @ H).transpose(1, 2) @ (W_C @ H)                        # s_{i,t} = h_i^T W_B^T W_C h_t
    causal = torch.ones(N, N, dtype=torch.bool).triu()               # 1[i <= t]
    if model == "linear_transformer":
        return H @ S.masked_fill(~causal, 0.0)
    a = W.T @ H                                                      # a_{j,i} = w_j^T h_i
    C = torch.cumsum(torch.nn.functional.logsigmoid(-a), dim=2)      # C_{j,t}
    log_G = (torch.nn.functional.logsigmoid(a) - C)[..., :, None] + C[..., None, :]
    G = torch.exp(log_G.masked_fill(~causal, float("-inf")))         # (B, D, N, N), 0 for i > t
    return torch.einsum("bjit,bji,bit->bjt", G, H, S)


def stack_layer_factored(torch, W_B, W_C, W, H, model):
    """The same O as ``stack_layer`` for Mamba without the gate tensor, as
    ``numpy_mamba.fused.layer.layer_forward_fused`` computes it: o_{t,j} = E_{j,t} sum_{i<=t} v_{j,i} h_{i,j} s_{i,t},
    E = e^{C - r}, v = sigma(a) e^{r - C} (r the middle of C's range; valid while C's range is
    under 600, as at the benchmark's sizes).  The strongest peer: our own algorithm in PyTorch."""
    if model == "linear_transformer":
        return stack_layer(torch, W_B, W_C, W, H, model)
    logsigmoid = torch.nn.functional.logsigmoid
    S = torch.triu((W_B @ H).transpose(1, 2) @ (W_C @ H))            # s_{i,t} 1[i <= t]
    a = W.T @ H
    C = torch.cumsum(logsigmoid(-a), dim=2)
    r = 0.5 * (C[..., :1] + C[..., -1:]).detach()                    # a constant shift; O does not depend on it
    return torch.exp(C - r) * ((torch.exp(logsigmoid(a) + r - C) * H) @ S)


def stack_output(torch, layers, P, model, layer=stack_layer):
    """F = H^(L)[d+1, l+1] of the residual stack H^(k) = H^(k-1) + O^(k), H^(0) = P;
    ``layer`` is ``stack_layer`` or ``stack_layer_factored``."""
    H = P
    for W_B, W_C, W in layers:
        H = H + layer(torch, W_B, W_C, W, H, model)
    return H[:, -1, -1]


def sgd_step(torch, output, params, P, z, eta):
    """One SGD step of eq (19): forward, mean hinge loss, autograd, update in place.

    ``output(params, P) -> F``; params: a list of leaf tensors with requires_grad.  Returns
    (F, gradients) at the parameters before the update, for the caller's comparison.
    """
    for p in params:
        p.grad = None
    F = output(params, P)
    loss = torch.clamp(1 - z * F, min=0).mean()
    loss.backward()
    with torch.no_grad():
        for p in params:
            if p.grad is None:                               # W of the linear Transformer: unused
                p.grad = torch.zeros_like(p)
            p -= eta * p.grad
    return F.detach(), [p.grad for p in params]


def _peer(torch, output, params, P, z, eta) -> tuple:
    """(step, result): ``step()`` one ``sgd_step`` (timed by bench); ``result()`` one more,
    returning (F, gradients) as NumPy arrays for bench's comparison with its own."""
    P, z = torch.from_numpy(P), torch.from_numpy(z)

    def step():
        return sgd_step(torch, output, params, P, z, eta)

    def result():
        F, grads = step()
        return F.numpy(), [g.numpy() for g in grads]
    return step, result


def eq3_peer(torch, params, P, z, eta) -> tuple:
    """The one-layer peer of bench: (step, result) for eq (3) at Params ``params``."""
    return _peer(torch, lambda p, P: eq3_output(torch, *p, P), leaves(torch, params), P, z, eta)


GATE_TENSOR_LIMIT = 2 ** 26      # bytes: larger (B, D, N, N) gate tensors are not built (bench runs for minutes)


def stack_peer(torch, layer, model, layers, P, z, eta, gates_only=False):
    """A three-layer peer of bench: (step, result) for the residual stack with ``layer``
    (``stack_layer`` or ``stack_layer_factored``), or None if ``gates_only`` and the model has no
    gate (the linear Transformer's two forms are one) or its gate tensor would pass
    ``GATE_TENSOR_LIMIT``.  Gradients in the order of ``layers``."""
    B, D, N = P.shape
    if gates_only and (model != "mamba" or 8 * B * D * N * N > GATE_TENSOR_LIMIT):
        return None

    def output(p, P):
        return stack_output(torch, [p[i:i + 3] for i in range(0, len(p), 3)], P, model, layer)
    return _peer(torch, output, leaves(torch, [a for one in layers for a in one]), P, z, eta)


def leaves(torch, arrays):
    """Fresh float64 leaf tensors (copies, so an update never touches the NumPy arrays)."""
    return [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in arrays]

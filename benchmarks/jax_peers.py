"""The JAX peers that ``bench`` times against (imported only when JAX is installed).

Each is the same model as the PyTorch peers of ``bench_torch``, written in ``jax.numpy`` and run
as ``jax.jit`` of ``jax.value_and_grad`` of the mean hinge loss plus the update Psi - eta * grad of
eq (19), in float64 (``jax_enable_x64``).  ``bench`` compiles each step before it times it, waits
for its results (``jax.block_until_ready``) and compares its F and gradients with the NumPy ones
(``peers.peer_difference``) before it prints a ratio.  JAX is never a dependency of numpy_mamba;
``jax`` is passed in by the caller.
"""
from __future__ import annotations

import numpy as np


def eq3_output(jax, W_B, W_C, w, P):
    """F of eq (3) for P (B, d+1, l+1): scores as P^T (W_B^T W_C p_query), log-space gates."""
    jnp, log_sigmoid = jax.numpy, jax.nn.log_sigmoid
    a = jnp.einsum("d,bdl->bl", w, P)                                # w^T p_i
    suffix = jnp.flip(jnp.cumsum(jnp.flip(log_sigmoid(-a), 1), 1), 1)   # sum_{j>=i} log(1 - sigma_j)
    exclusive = jnp.concatenate([suffix[:, 1:], jnp.zeros_like(suffix[:, :1])], axis=1)
    G = jnp.exp(log_sigmoid(a) + exclusive)                          # G_{i,l+1}
    s = jnp.einsum("bdl,bd->bl", P, (P[:, :, -1] @ W_C.T) @ W_B)      # p_i^T W_B^T W_C p_query
    return jnp.sum(G * P[:, -1, :] * s, axis=1)


def stack_layer(jax, W_B, W_C, W, H, model):
    """O (B, D, N) of one eq (1) layer on H (B, D, N), as ``bench_torch.stack_layer_factored``:
    for Mamba o_{t,j} = E_{j,t} sum_{i<=t} v_{j,i} h_{i,j} s_{i,t} with E = e^{C - r},
    v = sigma(a) e^{r - C} (C the running sum of log(1 - sigma(a)), r the middle of its range);
    for the linear Transformer causal linear attention."""
    jnp, log_sigmoid = jax.numpy, jax.nn.log_sigmoid
    S = jnp.triu(jnp.swapaxes(W_B @ H, 1, 2) @ (W_C @ H))            # s_{i,t} 1[i <= t]
    if model == "linear_transformer":
        return H @ S
    a = W.T @ H
    C = jnp.cumsum(log_sigmoid(-a), axis=2)
    r = jax.lax.stop_gradient(0.5 * (C[..., :1] + C[..., -1:]))      # a constant shift; O does not depend on it
    return jnp.exp(C - r) * ((jnp.exp(log_sigmoid(a) + r - C) * H) @ S)


def stack_output(jax, layers, P, model):
    """F = H^(L)[d+1, l+1] of the residual stack H^(k) = H^(k-1) + O^(k), H^(0) = P."""
    H = P
    for W_B, W_C, W in layers:
        H = H + stack_layer(jax, W_B, W_C, W, H, model)
    return H[:, -1, -1]


def _peer(jax, output, params, P, z, eta) -> tuple:
    """(step, result) as ``bench_torch._peer``: ``step()`` one jitted SGD step, waited for;
    ``result()`` one more, returning (F, gradients) as NumPy arrays."""
    jnp = jax.numpy

    def loss(p, P, z):
        F = output(p, P)
        return jnp.mean(jnp.maximum(0.0, 1.0 - z * F)), F

    @jax.jit
    def sgd_step(p, P, z, eta):
        (_, F), grads = jax.value_and_grad(loss, has_aux=True)(p, P, z)
        return F, grads, [x - eta * g for x, g in zip(p, grads)]

    params = [jnp.asarray(a, dtype=jnp.float64) for a in params]
    P, z = jnp.asarray(P), jnp.asarray(z)
    jax.block_until_ready(sgd_step(params, P, z, eta))              # compile before any timing

    def step():
        return jax.block_until_ready(sgd_step(params, P, z, eta))

    def result():
        F, grads, _ = step()
        return np.asarray(F), [np.asarray(g) for g in grads]
    return step, result


def eq3_peer(jax, params, P, z, eta) -> tuple:
    """The one-layer peer of bench: (step, result) for eq (3) at Params ``params``."""
    return _peer(jax, lambda p, P: eq3_output(jax, *p, P), list(params), P, z, eta)


def stack_peer(jax, model, layers, P, z, eta) -> tuple:
    """The three-layer peer of bench: (step, result) for the residual stack, gradients in the
    order of ``layers`` (W_B, W_C, W of layer 1, then layer 2, ...)."""
    def output(p, P):
        return stack_output(jax, [p[i:i + 3] for i in range(0, len(p), 3)], P, model)
    return _peer(jax, output, [a for layer in layers for a in layer], P, z, eta)

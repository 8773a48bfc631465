"""Linear attention times an Appendix E.6 gate: each family's output and backward pass.

Two shapes of gate occur (Appendix E.6):

    F = sum_{i=1}^{l+1} G_i y_i s_i,   s_i = p_i^T W_B^T W_C p_query    (scalar gate: Mamba-2,
                                                                          RetNet, Gated Retention)
    F = sum_{i=1}^{l+1} y_i (W_B p_i (.) g_i)^T W_C p_query              (a gate per key feature:
                                                                          GLA, eq (198))

The scores s_i and the W_B, W_C part of the backward pass are the core's (``model.scores``,
``gradients.attention_backward``); a family adds only its gate and the gate's chain rule (its
entry of ``families.GATES``): a decay gate its log gamma_j, which ``families.decay_gates`` turns
into G_{i,l+1}, a gate per key feature its g.  ``network`` packs both into a core ``Network``,
which ``sgd.train``, the step-size rule and the experiments take like the paper's own models.
"""
from __future__ import annotations

import numpy as np

from functools import partial

from ..gradients import attention_backward
from ..loss import mean_hinge_slope
from ..model import PAPER_MODELS, Params, absolute_scores, gates_for, init_params, scores
from ..network import Network
from .families import GATES, check_gate_params, decay_backward, decay_gates, gate_family


def gate_values(model: str, params, P) -> np.ndarray:
    """Unchecked gates of any model: (B, l+1), or (B, m, l+1) for GLA's per-key gate.

    The paper's two models come from the core (``model.gates_for``); P is (B, d+1, l+1).
    """
    if model in PAPER_MODELS:
        return gates_for(model, params, P)
    if model not in GATES:
        raise ValueError(f"model must be one of the paper's models {PAPER_MODELS} or the Appendix E.6 gates "
                         f"{tuple(GATES)}; got {model!r}.")
    family = GATES[model]
    gate = family.gate(params, P)
    return gate if family.per_key else decay_gates(gate)


# ---------------------------------------------------------------- scalar gates
def scalar_gate_output(model: str, params, P):
    """(F (B,), cache (log gamma, G, s)): F = sum_i G_i y_i s_i with the family's decay gate
    G_{i,l+1} = prod_{j>i} gamma_j (B, l+1)."""
    log_gamma = GATES[model].gate(params, P)                  # log gamma_j: (B, l+1)
    G = decay_gates(log_gamma)                                # (B, l+1)
    s = scores(params, P)                                     # (B, l+1)
    y = P[:, -1, :]                                           # (B, l+1)
    return np.sum(G * y * s, axis=1), (log_gamma, G, s)


def scalar_gate_backward(model: str, params, P, cache, r):
    """Gradients in the family's container, given r = dL/dF (B,).

    dL/ds_i = r G_i y_i feeds the core's W_B, W_C backward (eqs (93), (118)); dL/dG_i = r y_i s_i
    becomes dL/dlog gamma_j (``decay_backward``), which feeds the family's own gate backward.
    """
    log_gamma, G, s = cache
    y = P[:, -1, :]
    dW_B, dW_C = attention_backward(params, P, r[:, None] * G * y)
    family = GATES[model]
    d_log = decay_backward(G, r[:, None] * y * s)             # dL/dlog gamma_j: (B, l+1)
    return family.params_type(dW_B, dW_C, *family.backward(params, P, log_gamma, d_log))


# ---------------------------------------------------------------- a gate per key feature (GLA)
def key_gated_scores(params, P, g) -> np.ndarray:
    """(W_B p_i (.) g_i)^T W_C p_query of eq (198): P (B, d+1, l+1), g (B, m, l+1) -> (B, l+1)."""
    keys = params.W_B @ P                                     # W_B p_i: (B, m, l+1)
    q = P[:, :, -1] @ params.W_C.T                            # W_C p_query: (B, m)
    return np.einsum("bml,bm->bl", keys * g, q)


def key_gated_output(model: str, params, P):
    """(F (B,), cache g): F = sum_i y_i (W_B p_i (.) g_i)^T W_C p_query, eq (198)."""
    g = GATES[model].gate(params, P)                          # (B, m, l+1)
    return np.sum(P[:, -1, :] * key_gated_scores(params, P, g), axis=1), g


def key_gated_backward(model: str, params, P, g, r):
    """Gradients in the family's container, given r = dL/dF (B,).

    F = sum_i y_i sum_k (W_B p_i)_k g_{k,i} (W_C p_query)_k, so with weight_i = r y_i:
    dL/d(W_B p_i)_k = weight_i g_{k,i} q_k, dL/dq_k = sum_i weight_i g_{k,i} (W_B p_i)_k and
    dL/dg_{k,i} = weight_i (W_B p_i)_k q_k, which the family's backward (eq (199)) takes.
    """
    y = P[:, -1, :]                                           # (B, l+1)
    keys = params.W_B @ P                                     # W_B p_i: (B, m, l+1)
    q = P[:, :, -1] @ params.W_C.T                            # W_C p_query: (B, m)
    weight = (r[:, None] * y)[:, None, :]                     # dL/d(term i): (B, 1, l+1)
    dkeys = weight * g * q[:, :, None]                        # (B, m, l+1)
    dq = np.sum(weight * g * keys, axis=2)                    # (B, m)
    dW_B = np.tensordot(dkeys, P, axes=([0, 2], [0, 2]))     # sum_{n,i} dkeys p_i^T: (m, d+1)
    dW_C = dq.T @ P[:, :, -1]                                 # (m, d+1)
    dg = weight * keys * q[:, :, None]                        # dL/dg_{k,i}: (B, m, l+1)
    family = GATES[model]
    return family.params_type(dW_B, dW_C, *family.backward(params, P, g, dg))


def output_scale(model: str, params, P) -> np.ndarray:
    """S (B,): the family's F with every factor replaced by its absolute value (its gates are
    positive), for P (B, d+1, l+1), unchecked: the size of the terms that make F (``loss.TIE_RTOL``)."""
    G = gate_values(model, params, P)                         # (B, l+1), or (B, m, l+1) per key
    y = np.abs(P[:, -1, :])                                   # |y_i|: (B, l+1)
    if GATES[model].per_key:
        absolute = Params(np.abs(params.W_B), np.abs(params.W_C), None)
        return np.sum(y * key_gated_scores(absolute, np.abs(P), G), axis=1)
    return np.sum(G * y * absolute_scores(params, P), axis=1)


def network(model: str) -> Network:
    """The ``Network`` of the Appendix E.6 family ``model`` (one of ``GATES``): one layer of linear
    attention times the family's gate, initialised as Algorithm 1 plus the gate's own fields
    (``families.GATES[model].init``)."""
    if model not in GATES:
        raise ValueError(f"model must be one of the Appendix E.6 gates {tuple(GATES)}; got {model!r}. "
                         "The paper's own models are numpy_mamba.network('mamba') and network('linear_transformer').")
    per_key = gate_family(model).per_key
    return Network(model, partial(_init, model), partial(_check, model),
                   partial(_F, model, key_gated_output if per_key else scalar_gate_output),
                   partial(_F_and_gradients, model, *((key_gated_output, key_gated_backward) if per_key
                                                      else (scalar_gate_output, scalar_gate_backward))),
                   partial(output_scale, model))


def _init(model, d, m, delta, rng):
    return GATES[model].init(*init_params(d, m, delta, rng), rng)      # the same draws as eq (3), then the gate's


def _check(model, params):
    params = check_gate_params(model, params)
    return params, params.W_B.shape[1]


def _F(model, output, params, P):
    return output(model, params, P)[0]


def _F_and_gradients(model, output, backward, params, P, z):
    F, cache = output(model, params, P)
    return F, backward(model, params, P, cache, mean_hinge_slope(F, z))

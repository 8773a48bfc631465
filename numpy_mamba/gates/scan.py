"""The update equations of Appendix E.6, written literally: one loop over tokens (reading version).

With values v_i = p_i (R^{d+1}), keys k_i = W_B p_i and queries q_i = W_C p_i (R^m), a state
h_i in R^{(d+1) x m}, and the output F = e_{d+1}^T o_{l+1} as for Mamba (eq (3)):

    Mamba-2          (187)  h_i = gamma(w, a; i) h_{i-1} + v_i k_i^T,  gamma = e^{-softplus(w^T p_i) e^a}
    RetNet           (190)  h_i = gamma h_{i-1} + v_i k_i^T
    Gated Retention  (193)  h_i = gamma(w; i) h_{i-1} + v_i k_i^T,     gamma = sigma(w^T p_i)^{1/tau}
    GLA              (197)  h_i = h_{i-1} + v_i (k_i (.) sigma(W p_i)^{1/tau})^T
    o_i = h_i q_i

Where the paper needs care (README, "Other gates"):
* eq (194) writes gamma(w; i) h_{t-1} in the step to h_t; the gate is gamma(w; t), as in (193).
* GLA: the closed form (197)-(198) that the paper analyses (and differentiates in (199)) gates
  each key once, with no decay.  The update (196) as printed, h_i = h_{i-1} (.)
  (sigma(W p_i)^{1/tau} 1_m^T) + v_i k_i^T, instead decays the rows of h (the value side) and
  does NOT sum to (197); ``gla_scan_eq196`` runs it so tests/test_gates.py can show the
  difference.  Here "gla" is eq (198), whose recurrence is the (197) line above.
Each step takes its gate from the registry, one token at a time: gamma_i = exp(log gamma_i) of
the family's ``gate`` at p_i for a decay gate, the key gates sigma(W p_i)^{1/tau} for a gate per
key feature; what the recurrence adds is the state h.  The closed forms (linear attention times
gate) are ``network(NAME).output`` (attention.py); tests/test_gates.py proves both agree to 1e-12.
"""
from __future__ import annotations

import numpy as np
from scipy.special import expit

from .._checks import check_prompts
from .families import GATES, check_gate_params


def _sigma_pow(x, tau):
    return expit(x) ** (1.0 / tau)


def gate_recurrent_forward(params, P, model: str):
    """F = e_{d+1}^T o_{l+1} from the literal update equation of ``model`` (Appendix E.6).

    params : the model's container (GATES[model].params_type); P : (d+1, l+1) -> float,
    or (B, d+1, l+1) -> (B,).  Paper: eqs (187), (190), (193), (197).
    """
    if model not in GATES:
        raise ValueError(f"gate_recurrent_forward covers the Appendix E.6 gates {tuple(GATES)}; "
                         f"got {model!r} (use scan.recurrent_forward for Mamba's eq (1)).")
    family = GATES[model]
    params = check_gate_params(model, params)
    single = np.ndim(P) == 2
    P, _ = check_prompts(P, params.W_B.shape[1])
    B, d0, n_tokens = P.shape
    F = np.empty(B)
    for n in range(B):
        h = np.zeros((d0, params.W_B.shape[0]))                   # h_0 = 0: (d+1, m)
        for i in range(n_tokens):
            p_i = P[n, :, i]
            v_i, k_i, q_i = p_i, params.W_B @ p_i, params.W_C @ p_i
            gate = family.gate(params, P[n:n + 1, :, i:i + 1])   # token i's gate: (1, 1) or (1, m, 1)
            if family.per_key:                                    # eq (197)'s step
                h = h + np.outer(v_i, k_i * gate[0, :, 0])
            else:                                                 # eqs (187), (190), (193)
                h = np.exp(gate[0, 0]) * h + np.outer(v_i, k_i)
            o_i = h @ q_i
        F[n] = o_i[-1]                                            # e_{d+1}^T o_{l+1}
    return float(F[0]) if single else F


def gla_scan_eq196(params, P):
    """Eq (196) exactly as printed: h_i = h_{i-1} (.) (sigma(W p_i)^{1/tau} 1_m^T) + v_i k_i^T.

    Kept to show that it is not the model (197)-(198) the paper analyses: it decays the rows
    of h cumulatively instead of gating each key once.  Needs W (d+1, d+1) (the paper's d0 x d0),
    i.e. m = d+1.  P : (d+1, l+1) -> float.
    """
    params = check_gate_params("gla", params)
    P, _ = check_prompts(P, params.W_B.shape[1])
    if params.W.shape[0] != P.shape[1]:
        raise ValueError(f"eq (196) needs W of shape (d+1, d+1); got {params.W.shape}.")
    h = np.zeros((P.shape[1], params.W_B.shape[0]))
    for i in range(P.shape[2]):
        p_i = P[0, :, i]
        gate_rows = _sigma_pow(params.W @ p_i, params.tau)        # (d+1,): one per row of h
        h = h * gate_rows[:, None] + np.outer(p_i, params.W_B @ p_i)
    return float((h @ (params.W_C @ P[0, :, -1]))[-1])

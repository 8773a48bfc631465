"""The selective state-space scan of eq (1), written literally (Section 2).

    h_i = h_{i-1} (.) A~_i + (u_i 1_m^T) (.) B~_i          in R^{d0 x m}
    o_i = h_i C_i                                          in R^{d0}

with A = -I_m, Delta_{j,i} = softplus(w_j^T u_i), A~_{j,i} = exp(Delta_{j,i} A) (diagonal),
the zero-order hold B~_{j,i} = (Delta_{j,i} B_i)(exp(Delta_{j,i} A) - I_m)(Delta_{j,i} A)^{-1},
B_i = u_i^T W_B^T, C_i = W_C u_i, and output F = e_{d0}^T o_{l+1} with u_i = p_i, d0 = d+1.

This is the reading version: one loop over tokens, as the recurrence is written.  The closed
form of eq (3) in ``model.py`` is what runs; tests/test_model.py proves they agree to 1e-12.
"""
from __future__ import annotations

import numpy as np
from scipy.special import exprel

from ._checks import as_real_array, check_prompts

H0_CHOICES = ("zeros", "input")


def scan_outputs(W_B, W_C, W, P, h0: str = "zeros") -> np.ndarray:
    """All outputs o_i of eq (1) for a batch: P (B, d0, l+1) -> o (B, l+1, d0).

    ``h0="zeros"`` starts from h_0 = 0 (what eq (3) matches); ``h0="input"`` starts from
    h_0 = U = P, as Section 2 writes, which needs m = l+1.
    """
    W_B = as_real_array(W_B, "W_B")
    W_C = as_real_array(W_C, "W_C")
    W = as_real_array(W, "W")
    if W_B.ndim != 2 or W_B.shape != W_C.shape:
        raise ValueError(f"W_B and W_C must both have shape (m, d+1); got {W_B.shape} and {W_C.shape}.")
    m, d0 = W_B.shape
    if W.shape != (d0, d0):
        raise ValueError(f"W = (w_1, ..., w_d0) must have shape (d+1, d+1) = ({d0}, {d0}); got {W.shape}.")
    P, _ = check_prompts(P, d0)
    B, _, n_tokens = P.shape
    if h0 not in H0_CHOICES:
        raise ValueError(f"h0 must be one of {H0_CHOICES}; got {h0!r}.")
    if h0 == "input":
        if m != n_tokens:
            raise ValueError(
                f"h0='input' sets h_0 = U, of shape (d+1, l+1), so it needs m = l+1 = {n_tokens}; got m = {m}."
            )
        h = P.copy()                                       # (B, d0, m)
    else:
        h = np.zeros((B, d0, m))
    a = -np.ones(m)                                        # diag(A), A = -I_m
    o = np.empty((B, n_tokens, d0))
    for i in range(n_tokens):
        u = P[:, :, i]                                     # u_i: (B, d0)
        Delta = np.logaddexp(0.0, u @ W)                   # softplus(w_j^T u_i): (B, d0)
        DeltaA = Delta[:, :, None] * a                     # Delta_{j,i} A, diagonal: (B, d0, m)
        A_tilde = np.exp(DeltaA)                           # (B, d0, m)
        B_i = u @ W_B.T                                    # u_i^T W_B^T: (B, m)
        # zero-order hold, elementwise for diagonal A: Delta B (e^{Delta a} - 1) / (Delta a)
        B_tilde = Delta[:, :, None] * B_i[:, None, :] * exprel(DeltaA)   # (B, d0, m)
        h = h * A_tilde + u[:, :, None] * B_tilde          # (u_i 1_m^T) (.) B~_i
        C_i = u @ W_C.T                                    # W_C u_i: (B, m)
        o[:, i, :] = np.einsum("bdm,bm->bd", h, C_i)       # h_i C_i
    return o


def recurrent_forward(W_B, W_C, W, P, h0: str = "zeros"):
    """F = e_{d+1}^T o_{l+1} from the literal scan of eq (1).

    W_B, W_C : (m, d+1); W : (d+1, d+1) whose last column is the gate parameter w of eq (3);
    P : (d+1, l+1) -> float, or (B, d+1, l+1) -> (B,).  Equals ``forward(Params(W_B, W_C,
    W[:, -1]), P)`` for ``h0="zeros"``; ``h0="input"`` (h_0 = U, Section 2) adds
    prod_{i=1}^{l+1}(1 - sigma(w^T p_i)) * y^T W_C p_query, the term Appendix E.1 drops.
    """
    single = np.ndim(P) == 2
    F = scan_outputs(W_B, W_C, W, P, h0)[:, -1, -1]
    return float(F[0]) if single else F

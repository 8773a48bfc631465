"""The known mistakes of the gradients exercise (the gates' are in ``exercises/gating.py``): when
a student's answer fails, the reference is put through each mistake below (negated, transposed,
times B, label leak, missing suffix term, ...); the first one that reproduces the answer on
every problem gives the hint (``hints.py``).

``backward`` is the mean-hinge-loss gradient of eqs (93), (118), (135) written so that each
mistake is one switch; with the defaults it equals ``gradients.gradients`` (tests/test_grader_compare.py).
"""
from __future__ import annotations

import numpy as np
from scipy.special import expit

from ..model import Params, gate_logits, log_gating, scores


def _parts(params, P, z, leak=False, mask="hinge", reduce="mean", drop=""):
    """X = sum_n k_n p_query^T with k_n = sum_i dL/ds_i p_i, and c_i = dL/dG_i * G_i.

    drop="y": the label y_i left out of the sums (|y_i|: 1 on the context, 0 on the query);
    drop="G": the gate G_i left out of the sums.  F (and so the hinge mask) stays correct."""
    B = P.shape[0]
    y = P[:, -1, :].copy()                                    # (B, l+1)
    if leak:
        y[:, -1] = z
    G = np.exp(log_gating(params.w, P))                       # (B, l+1)
    s = scores(params, P)                                     # (B, l+1)
    F = np.sum(G * y * s, axis=1)                             # (B,)
    on = {"hinge": 1.0 - z * F > 0, "paper": np.abs(F) < 1, "none": np.ones(B, bool)}[mask]
    r = np.where(on, -z, 0.0) / (B if reduce == "mean" else 1.0)
    y_sum = np.abs(y) if drop == "y" else y
    G_sum = np.ones_like(G) if drop == "G" else G
    key_sum = np.einsum("bdl,bl->bd", P, r[:, None] * G_sum * y_sum)   # (B, d+1)
    X = key_sum.T @ P[:, :, -1]                               # (d+1, d+1)
    return X, r[:, None] * y_sum * s * G_sum


def backward(params, P, z, *, leak=False, mask="hinge", reduce="mean", gate="correct", drop="") -> Params:
    """Mean-hinge-loss gradients with optional mistakes switched on.

    leak=True: the query treated as a context example with label y_{l+1} := z.
    mask: "hinge" (1 - zF > 0, correct), "paper" (F in (-1, 1)), "none" (no mask).
    reduce: "mean" (correct) or "sum".  gate: how dG_i/dw is formed (see ``_gate_coefficients``).
    drop: "y" or "G" leaves the label or the gate out of the sums (see ``_parts``).
    dW_C = W_B X (eq (93)), dW_B = W_C X^T (eq (118)) with X = sum_n k_n p_query^T.
    With the defaults this equals ``gradients.gradients`` (tests/test_grader_compare.py).
    """
    X, c = _parts(params, P, z, leak, mask, reduce, drop)
    coeff = _gate_coefficients(gate, c, expit(gate_logits(params.w, P)))
    return Params(params.W_C @ X.T, params.W_B @ X, np.einsum("bdl,bl->d", P, coeff))


def _gate_coefficients(gate, c, sigma):
    """Weight of each column p_s in dw, from c_i = dL/dG_i * G_i: (B, l+1).

    Correct: dG_i/dw = G_i ((1 - sigma_i) p_i - sum_{s>i} sigma_s p_s)  (eq (135))."""
    before = np.cumsum(c, axis=1) - c                         # sum_{i<s} c_i
    after = np.cumsum(c[:, ::-1], axis=1)[:, ::-1] - c        # sum_{i>s} c_i
    own = c * (1.0 - sigma)
    if gate == "correct":
        return own - sigma * before
    if gate == "no_suffix":
        return own
    if gate == "suffix_sign":
        return own + sigma * before
    if gate == "suffix_inclusive":
        return own - sigma * (before + c)
    if gate == "suffix_no_query":
        out = own - sigma * before
        out[:, -1] = own[:, -1]
        return out
    if gate == "suffix_dsigma":
        return own - sigma * (1.0 - sigma) * before
    if gate == "no_own_term":
        return -sigma * before
    if gate == "own_sigma":
        return c * sigma - sigma * before
    if gate == "prefix":
        return own - sigma * after
    raise ValueError(f"unknown gate variant {gate!r}")


def _swap_fields(g: Params, name: str) -> np.ndarray:
    return g.W_B if name == "W_C" else g.W_C


# Each known mistake: (key, hint, function(problem, reference Params) -> the mistaken answer).
COMMON_MISTAKES = (
    ("sign", "wrong sign: your answer is minus the gradient. On the active side d/dF max{0, 1 - zF} "
     "= -z; do not fold SGD's minus sign (Psi - eta grad) into the gradient.",
     lambda pb, ref, name: -getattr(ref, name)),
    ("transposed", "transposed: you returned a (d+1, m) array; the gradient has W's shape (m, d+1). "
     "Check the order of the outer product (column vector times row vector).",
     lambda pb, ref, name: getattr(ref, name).T),
    ("sum", "off by a factor of B: you summed over the batch. The loss is the MEAN over prompts "
     "(eq (4), Algorithm 1's (1/B) sum), so divide by B.",
     lambda pb, ref, name: pb.P.shape[0] * getattr(ref, name)),
    ("double_mean", "off by a factor of 1/B: you divided by B twice (or averaged something that "
     "was already a mean).",
     lambda pb, ref, name: getattr(ref, name) / pb.P.shape[0]),
    ("leak", "label leak: you treated the query as a context example with label y_{l+1} := z. The "
     "query's label slot is 0 (eq (2)); the sums in eqs (93) and (135) stop at i = l, and the "
     "i = l+1 term of (118) vanishes because y_{l+1} = 0. The model must not see z.",
     lambda pb, ref, name: getattr(backward(pb.params, pb.P, pb.z, leak=True), name)),
    ("paper_mask", "hinge condition: you used the paper's 'F in (-1, 1)'. The hinge max{0, 1 - zF} "
     "has slope -z wherever 1 - zF > 0, which includes misclassified prompts with |F| >= 1 "
     "(README, 'Notes on the paper's derivations').",
     lambda pb, ref, name: getattr(backward(pb.params, pb.P, pb.z, mask="paper"), name)),
    ("no_mask", "the hinge's inactive side: where 1 - zF <= 0 the loss is 0 on a flat piece and its "
     "gradient is 0; you kept those prompts.",
     lambda pb, ref, name: getattr(backward(pb.params, pb.P, pb.z, mask="none"), name)),
    ("no_label", "the label y_i is missing: F = sum_i G_i y_i s_i, so every term of the gradient "
     "keeps its y_i (and the query's term vanishes because y_{l+1} = 0).",
     lambda pb, ref, name: getattr(backward(pb.params, pb.P, pb.z, drop="y"), name)),
    ("no_gate", "the gate G_i is missing: F = sum_i G_i y_i s_i, so every term keeps its G_i "
     "(without it this is the linear Transformer's gradient, Section 3.4).",
     lambda pb, ref, name: getattr(backward(pb.params, pb.P, pb.z, drop="G"), name)),
)


def _outer(pb, name, swap_W=False, swap_outer=False):
    """Eq (93)/(118) with W_B and W_C swapped and/or the outer product reversed."""
    W_B, W_C, _ = pb.params
    X, _ = _parts(pb.params, pb.P, pb.z)
    if name == "W_C":
        return (W_C if swap_W else W_B) @ (X.T if swap_outer else X)
    return (W_B if swap_W else W_C) @ (X if swap_outer else X.T)


MATRIX_MISTAKES = (
    ("swapped_function", "this is the OTHER matrix's gradient: dL/dW_B is eq (118) and dL/dW_C is "
     "eq (93); did you swap grad_W_B and grad_W_C?",
     lambda pb, ref, name: _swap_fields(ref, name)),
    ("swapped_W", "wrong matrix inside: dF/dW_C = sum_i G_i y_i W_B p_i p_query^T (eq (93)) and "
     "dF/dW_B = sum_i G_i y_i W_C p_query p_i^T (eq (118)); the OTHER matrix appears.",
     lambda pb, ref, name: _outer(pb, name, swap_W=True)),
    ("swapped_outer", "outer product reversed: eq (93) is W_B p_i p_query^T and eq (118) is "
     "W_C p_query p_i^T; you exchanged p_i and p_query.",
     lambda pb, ref, name: _outer(pb, name, swap_outer=True)),
)

GATE_DERIVATIVE_MISTAKES = (
    ("no_suffix", "gate derivative missing the suffix-product term: G_i = sigma_i prod_{j>i}(1 - "
     "sigma_j) depends on w through every later factor too, so dG_i/dw = G_i((1 - sigma_i) p_i "
     "- sum_{s=i+1}^{l+1} sigma_s p_s) (eq (135), last line).", "no_suffix"),
    ("suffix_sign", "sign of the suffix term: d(1 - sigma_s)/dw = -sigma_s(1 - sigma_s) p_s, so "
     "sum_{s>i} sigma_s p_s enters dG_i/dw with a MINUS sign (eq (135)).", "suffix_sign"),
    ("suffix_inclusive", "suffix sum starts one too early: it runs over s = i+1..l+1 (the factors "
     "of prod_{j=i+1}^{l+1}), not from s = i.", "suffix_inclusive"),
    ("suffix_no_query", "missing the query column: the suffix sum in eq (135) runs up to s = l+1; "
     "the query's factor (1 - sigma(w^T p_query)) is part of every G_i.", "suffix_no_query"),
    ("suffix_dsigma", "suffix term keeps a (1 - sigma_s): d(1 - sigma_s)/dw = -sigma_s(1 - sigma_s)"
     " p_s, and dividing by the factor (1 - sigma_s) of G_i leaves -sigma_s p_s (eq (135)).",
     "suffix_dsigma"),
    ("no_own_term", "missing the derivative of sigma(w^T p_i) itself: it gives G_i (1 - sigma_i) "
     "p_i in eq (135).", "no_own_term"),
    ("own_sigma", "own term: d sigma(a)/da = sigma(a)(1 - sigma(a)), so dividing by the factor "
     "sigma_i of G_i leaves (1 - sigma_i) p_i, not sigma_i p_i (eq (135)).", "own_sigma"),
    ("prefix", "product over the wrong side: G_i multiplies the factors (1 - sigma_j) of the LATER "
     "tokens j > i (between p_i and the query), not the earlier ones.", "prefix"),
)


def mistakes_for(name: str):
    """Known mistakes for parameter ``name`` in {"W_B", "W_C", "w"}: [(key, hint, fn(pb, ref))]."""
    out = [(k, h, (lambda f: lambda pb, ref: f(pb, ref, name))(f)) for k, h, f in COMMON_MISTAKES]
    if name in ("W_B", "W_C"):
        out += [(k, h, (lambda f: lambda pb, ref: f(pb, ref, name))(f)) for k, h, f in MATRIX_MISTAKES]
    else:
        out = [m for m in out if m[0] != "transposed"]
        out += [(k, h, (lambda g: lambda pb, ref: backward(pb.params, pb.P, pb.z, gate=g).w)(g))
                for k, h, g in GATE_DERIVATIVE_MISTAKES]
    return out

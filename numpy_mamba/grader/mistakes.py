"""The known mistakes of the gradients exercise (the gates' are in ``exercises/gating.py``): when a
student's answer fails, each mistake below is made on the problem, and the first one that
reproduces the answer on every problem gives the hint (``hints.py``).

A mistake is the package's reference with one term changed, built from the reference's own
pieces, so that no formula of the gate or of its gradient is written again here: the terms of
eq (3) (``model.gating``, ``model.scores``, ``model.gate_logits``), the hinge's slope
(``loss.mean_hinge_slope``), and the two linear maps the batched reading form is made of,
``gradients.attention_backward`` (dL/ds_i -> dW_B, dW_C: eqs (118), (93)) and
``gradients.gate_backward_terms`` (c_i = dL/dG_i G_i -> dw: eq (135)).  A mistake in dL/ds or c
is those maps of the mistaken terms; one in a term of eq (135)'s weight of column p_s is
``gradients.gradients``' dw plus sum_s (the change) p_s; the rest transform the reference's answer.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.special import expit

from ..gradients import attention_backward, gate_backward_terms, gradients
from ..loss import mean_hinge_slope
from ..model import Params, gate_logits, gating, scores


class Terms(NamedTuple):
    """The reference and the terms a mistake changes, on one problem: G, y, s (B, l+1), F and the
    hinge's slope h = dL/dF (B,), sigma_i = sigma(w^T p_i) (B, l+1), c = h y s G (B, l+1)."""

    reference: Params
    G: np.ndarray
    y: np.ndarray
    s: np.ndarray
    F: np.ndarray
    h: np.ndarray
    sigma: np.ndarray
    c: np.ndarray


def terms(pb) -> Terms:
    params, P, z = pb.params, pb.P, pb.z
    G, y, s = gating(params.w, P), P[:, -1, :], scores(params, P)
    F = np.sum(G * y * s, axis=1)
    h = mean_hinge_slope(F, z)
    return Terms(gradients(params, P, z), G, y, s, F, h, expit(gate_logits(params.w, P)), h[:, None] * y * s * G)


def _with_sums(pb, G=None, y=None, h=None) -> Params:
    """The reference's maps of dL/ds_i = h G_i y_i and c_i = dL/ds_i s_i with the gate, the label
    or the slope in them replaced."""
    t = terms(pb)
    dL_ds = (t.h if h is None else h)[:, None] * (t.G if G is None else G) * (t.y if y is None else y)
    dW_B, dW_C = attention_backward(pb.params, pb.P, dL_ds)
    return Params(dW_B, dW_C, gate_backward_terms(pb.P, t.sigma, dL_ds * t.s))


def _leak(pb) -> Params:
    """The query treated as a context example with label y_{l+1} := z: in F, its mask and the sums."""
    t = terms(pb)
    y = t.y.copy()
    y[:, -1] = pb.z
    return _with_sums(pb, y=y, h=mean_hinge_slope(np.sum(t.G * y * t.s, axis=1), pb.z))


def _mask(pb, on) -> Params:
    """The hinge's slope -z / B on the prompts ``on`` instead of its active side."""
    return _with_sums(pb, h=np.where(on, -pb.z, 0.0) / pb.P.shape[0])


def _swapped(pb, name: str, outer: bool) -> np.ndarray:
    """Eqs (118), (93) with the other matrix inside (W_C K for dW_C, W_B K^T for dW_B), and, with
    ``outer``, the outer product reversed as well."""
    t = terms(pb)
    both = attention_backward(Params(pb.params.W_C, pb.params.W_B, pb.params.w), pb.P, t.h[:, None] * t.G * t.y)
    return both[(name == "W_C") != outer]


def _gate_term(pb, kind: str) -> np.ndarray:
    """dw with one term of eq (135)'s weight of column p_s changed: the reference's dw plus
    sum_s (the change) p_s, where the correct weight is c_s (1 - sigma_s) - sigma_s sum_{i<s} c_i."""
    t = terms(pb)
    keep = expit(-gate_logits(pb.params.w, pb.P))                # 1 - sigma_s, also where it underflows
    before = np.cumsum(t.c, axis=1) - t.c                        # sum_{i<s} c_i
    after = np.cumsum(t.c[:, ::-1], axis=1)[:, ::-1] - t.c       # sum_{i>s} c_i
    last = np.arange(t.c.shape[1]) == t.c.shape[1] - 1
    change = {"no_suffix": t.sigma * before, "suffix_sign": 2 * t.sigma * before, "suffix_inclusive": -t.sigma * t.c,
              "suffix_no_query": np.where(last, t.sigma * before, 0.0), "suffix_dsigma": t.sigma ** 2 * before,
              "no_own_term": -t.c * keep, "own_sigma": t.c * (t.sigma - keep), "own_dsigma": -t.c * keep ** 2,
              "prefix": t.sigma * (before - after)}[kind]
    return t.reference.w + np.einsum("bds,bs->d", pb.P, change)          # a_s = w^T p_s: da_s/dw = p_s


# Each known mistake: (key, hint, function(problem, reference Params, field) -> the mistaken answer).
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
     lambda pb, ref, name: getattr(_leak(pb), name)),
    ("paper_mask", "hinge condition: you used the paper's 'F in (-1, 1)'. The hinge max{0, 1 - zF} "
     "has slope -z wherever 1 - zF > 0, which includes misclassified prompts with |F| >= 1 "
     "(README, 'Notes on the paper's derivations').",
     lambda pb, ref, name: getattr(_mask(pb, np.abs(terms(pb).F) < 1), name)),
    ("no_mask", "the hinge's inactive side: where 1 - zF <= 0 the loss is 0 on a flat piece and its "
     "gradient is 0; you kept those prompts.",
     lambda pb, ref, name: getattr(_mask(pb, np.ones(pb.P.shape[0], bool)), name)),
    ("no_label", "the label y_i is missing: F = sum_i G_i y_i s_i, so every term of the gradient "
     "keeps its y_i (and the query's term vanishes because y_{l+1} = 0).",
     lambda pb, ref, name: getattr(_with_sums(pb, y=np.abs(pb.P[:, -1, :])), name)),
    ("no_gate", "the gate G_i is missing: F = sum_i G_i y_i s_i, so every term keeps its G_i "
     "(without it this is the linear Transformer's gradient, Section 3.4).",
     lambda pb, ref, name: getattr(_with_sums(pb, G=np.ones(pb.P.shape[::2])), name)),
)

MATRIX_MISTAKES = (
    ("swapped_function", "this is the OTHER matrix's gradient: dL/dW_B is eq (118) and dL/dW_C is "
     "eq (93); did you swap grad_W_B and grad_W_C?",
     lambda pb, ref, name: ref.W_B if name == "W_C" else ref.W_C),
    ("swapped_W", "wrong matrix inside: dF/dW_C = sum_i G_i y_i W_B p_i p_query^T (eq (93)) and "
     "dF/dW_B = sum_i G_i y_i W_C p_query p_i^T (eq (118)); the OTHER matrix appears.",
     lambda pb, ref, name: _swapped(pb, name, outer=False)),
    ("swapped_outer", "outer product reversed: eq (93) is W_B p_i p_query^T and eq (118) is "
     "W_C p_query p_i^T; you exchanged p_i and p_query.",
     lambda pb, ref, name: _swapped(pb, name, outer=True)),
)

GATE_DERIVATIVE_MISTAKES = (
    ("no_suffix", "gate derivative missing the suffix-product term: G_i = sigma_i prod_{j>i}(1 - "
     "sigma_j) depends on w through every later factor too, so dG_i/dw = G_i((1 - sigma_i) p_i "
     "- sum_{s=i+1}^{l+1} sigma_s p_s) (eq (135), last line)."),
    ("suffix_sign", "sign of the suffix term: d(1 - sigma_s)/dw = -sigma_s(1 - sigma_s) p_s, so "
     "sum_{s>i} sigma_s p_s enters dG_i/dw with a MINUS sign (eq (135))."),
    ("suffix_inclusive", "suffix sum starts one too early: it runs over s = i+1..l+1 (the factors "
     "of prod_{j=i+1}^{l+1}), not from s = i."),
    ("suffix_no_query", "missing the query column: the suffix sum in eq (135) runs up to s = l+1; "
     "the query's factor (1 - sigma(w^T p_query)) is part of every G_i."),
    ("suffix_dsigma", "suffix term keeps a (1 - sigma_s): d(1 - sigma_s)/dw = -sigma_s(1 - sigma_s)"
     " p_s, and dividing by the factor (1 - sigma_s) of G_i leaves -sigma_s p_s (eq (135))."),
    ("no_own_term", "missing the derivative of sigma(w^T p_i) itself: it gives G_i (1 - sigma_i) "
     "p_i in eq (135)."),
    ("own_sigma", "own term: d sigma(a)/da = sigma(a)(1 - sigma(a)), so dividing by the factor "
     "sigma_i of G_i leaves (1 - sigma_i) p_i, not sigma_i p_i (eq (135))."),
    ("own_dsigma", "the gate's own term written as sigma_i (1 - sigma_i) instead of 1 - sigma_i in "
     "eq (135): d sigma(a)/da = sigma(a)(1 - sigma(a)), but G_i already holds the factor sigma_i, so "
     "dG_i/dw keeps G_i (1 - sigma_i) p_i: divide the derivative by sigma_i once."),
    ("prefix", "product over the wrong side: G_i multiplies the factors (1 - sigma_j) of the LATER "
     "tokens j > i (between p_i and the query), not the earlier ones."),
)


def mistakes_for(name: str):
    """Known mistakes for parameter ``name`` in {"W_B", "W_C", "w"}: [(key, hint, fn(pb, ref))]."""
    out = [(k, h, (lambda f: lambda pb, ref: f(pb, ref, name))(f)) for k, h, f in COMMON_MISTAKES]
    if name in ("W_B", "W_C"):
        out += [(k, h, (lambda f: lambda pb, ref: f(pb, ref, name))(f)) for k, h, f in MATRIX_MISTAKES]
    else:
        out = [m for m in out if m[0] != "transposed"]
        out += [(k, h, (lambda kind: lambda pb, ref: _gate_term(pb, kind))(k))
                for k, h in GATE_DERIVATIVE_MISTAKES]
    return out

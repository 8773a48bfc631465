"""The gates hand-out (tutorials/exercises/gating.py): gates(w, P) = G_{i,l+1}(w) of eq (3),
checked against ``numpy_mamba.gating`` and, independently, through F against the literal eq (1)
scan (``scan.recurrent_forward``).  Its problems are the gradients exercise's (``problems.py``);
its known mistakes, reference and points are here."""
from __future__ import annotations

import numpy as np
from scipy.special import expit, log_expit

from ...model import gate_logits, gating, log_gating, scores
from ...scan import recurrent_forward
from ..compare import compare_array
from ..hints import rel_error
from ..problems import PROBLEM_NOTES, make_problems
from ..registry import Exercise, Function, Reference, register

# The hand-out is numpy and scipy only: no part of the package is importable in the child.
IMPORTS = ()


def _inputs(name, pb):
    return pb.params.w, pb.P


def _reference(name, pb) -> Reference:
    d0 = pb.P.shape[1]
    W = np.zeros((d0, d0))
    W[:, -1] = pb.params.w                                    # the gate uses w = w_{d+1}
    F_scan = np.atleast_1d(recurrent_forward(pb.params.W_B, pb.params.W_C, W, pb.P))
    s, y = scores(pb.params, pb.P), pb.P[:, -1, :]

    def scan_check(S):
        """F built from the student's gates against the literal eq (1) scan."""
        return rel_error(np.sum(S * y * s, axis=1), F_scan)
    return Reference(gating(pb.params.w, pb.P), scan_check)


def _gate_variant(kind, w, P):
    """Gates with one mistake, made from the package's gates of eq (3) (``model.gating``,
    ``model.log_gating``): G_i = sigma_i prod_{j>i} (1 - sigma_j) with a factor added, dropped or
    taken from the wrong side."""
    a = gate_logits(w, P)                                     # (B, l+1)
    G = gating(w, P)
    if kind == "inclusive":                                   # times its own (1 - sigma_i)
        return G * expit(-a)
    if kind == "no_sigma_i":                                  # divided by sigma_i, in log space
        return np.exp(log_gating(w, P) - log_expit(a))
    if kind == "prefix":                                      # the earlier tokens: the reversed sequence's gates
        return np.exp(log_gating(w, P[:, :, ::-1]))[:, ::-1]
    if kind == "swapped_sigma":                               # sigma(-a) = 1 - sigma(a)
        return np.exp(log_gating(-w, P))
    if kind == "no_query_factor":                             # the context's gates without (1 - sigma_query)
        out = np.exp(log_gating(w, P) - log_expit(-a[:, -1:]))
        out[:, -1] = G[:, -1]
        return out
    if kind == "query_one":
        G[:, -1] = 1.0
        return G
    if kind == "reversed":
        return G[:, ::-1]
    raise ValueError(f"unknown gate mistake {kind!r}")


GATE_MISTAKES = (
    ("inclusive", "the product runs over j = i+1..l+1: sigma(w^T p_i) multiplies the factors of the "
     "LATER tokens only, not its own (1 - sigma_i) (eq (3)).", "inclusive"),
    ("prefix", "product over the wrong side: G_{i,l+1} multiplies (1 - sigma_j) for j = i+1..l+1 "
     "(the tokens between p_i and the query), not the earlier ones.", "prefix"),
    ("no_sigma_i", "missing the factor sigma(w^T p_i): G_i = sigma_i prod_{j>i}(1 - sigma_j) (eq (3)).",
     "no_sigma_i"),
    ("swapped_sigma", "sigma and 1 - sigma swapped: it is sigma(w^T p_i) times prod (1 - sigma(w^T p_j)) "
     "(A~ = 1 - sigma forgets, B~ = sigma writes; Appendix E.1).", "swapped_sigma"),
    ("no_query_factor", "missing the query column in the product: it runs up to j = l+1, so every "
     "context gate includes (1 - sigma(w^T p_query)).", "no_query_factor"),
    ("query_one", "the query's own gate is G_{l+1,l+1} = sigma(w^T p_query), not 1 (eq (3)).",
     "query_one"),
    ("reversed", "gates in reverse order: column i of P is token i; G[:, 0] belongs to p_1 (the "
     "farthest from the query) and G[:, -1] to p_query.", "reversed"),
)


def gate_mistakes():
    """Known gate mistakes: [(key, hint, fn(problem, reference) -> mistaken gates)]."""
    return [(k, h, (lambda kind: lambda pb, ref: _gate_variant(kind, pb.params.w, pb.P))(kind))
            for k, h, kind in GATE_MISTAKES]


def _mistakes(name):
    return [(key, hint, (lambda m: lambda pb: m(pb, None))(mistaken)) for key, hint, mistaken in gate_mistakes()]


def _shape_hint(name, S, R, pb) -> str:
    B = pb.P.shape[0]
    head = f"wrong shape {S.shape}, expected {R.shape}"
    if S.shape == R.T.shape:
        return f"{head}: transposed? Gates are (B, l+1): one row per prompt."
    if S.shape == (B, R.shape[1] - 1):
        return (f"{head}: you dropped the query column. Eq (3) has l+1 gates; the last is "
                "G_{l+1,l+1} = sigma(w^T p_query).")
    if B == 1 and S.shape == R.shape[1:]:
        return f"{head}: P is a batch (B, d+1, l+1); return one row of gates per prompt even when B = 1."
    return ""


GATES = register(Exercise(
    name="gating",
    functions=(Function("gates", "gates(w, P) -> (B, l+1)", "eq (3): G_{i,l+1}(w)", 10),),
    imports=IMPORTS,
    allowed="numpy and scipy (scipy.special.expit, log_expit), nothing of numpy_mamba",
    independent_check="vs eq (1) scan",
    problems=make_problems, inputs=_inputs, reference=_reference, compare=compare_array,
    mistakes=_mistakes, shape_hint=_shape_hint,
    problem_notes={k: v for k, v in PROBLEM_NOTES.items() if k in ("saturated", "l = 1")}, hidden=("saturated",), sources=("numpy_mamba.model",)))

"""The gates hand-out (tutorials/exercises/gating.py): gates(w, P) = G_{i,l+1}(w) of eq (3),
checked against ``numpy_mamba.gating`` and, independently, through F against the literal eq (1)
scan (``scan.recurrent_forward``).  Its problems are the gradients exercise's (``problems.py``);
its known mistakes, reference and points are here."""
from __future__ import annotations

import numpy as np
from scipy.special import expit

from ...model import gate_logits, gating, scores
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
    sigma = expit(gate_logits(w, P))                          # (B, l+1)
    keep = 1.0 - sigma
    after = np.cumprod(keep[:, ::-1], axis=1)[:, ::-1]        # prod_{j>=i}(1 - sigma_j)
    if kind == "inclusive":
        return sigma * after
    exclusive = np.ones_like(after)
    exclusive[:, :-1] = after[:, 1:]                          # prod_{j>i}
    if kind == "no_sigma_i":
        return exclusive
    if kind == "prefix":
        before = np.cumprod(np.concatenate([np.ones_like(keep[:, :1]), keep[:, :-1]], axis=1), axis=1)
        return sigma * before
    if kind == "swapped_sigma":
        s_after = np.ones_like(sigma)
        s_after[:, :-1] = np.cumprod(sigma[:, ::-1], axis=1)[:, ::-1][:, 1:]
        return keep * s_after
    if kind == "no_query_factor":
        keep_context = keep.copy()
        keep_context[:, -1] = 1.0                             # product stops at j = l
        out = np.ones_like(sigma)
        out[:, :-1] = np.cumprod(keep_context[:, ::-1], axis=1)[:, ::-1][:, 1:]
        return sigma * out
    if kind == "query_one":
        out = gating(w, P)
        out[:, -1] = 1.0
        return out
    if kind == "reversed":
        return gating(w, P)[:, ::-1]
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

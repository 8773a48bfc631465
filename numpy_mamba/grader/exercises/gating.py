"""The gates hand-out (tutorials/exercises/gating.py): gates(w, P) = G_{i,l+1}(w) of eq (3),
checked against ``numpy_mamba.gating`` and, independently, through F against the literal eq (1)
scan (``scan.recurrent_forward``)."""
from __future__ import annotations

import numpy as np

from ...model import gating, scores
from ...scan import recurrent_forward
from ..compare import compare_array
from ..hints import rel_error
from ..mistakes import gate_mistakes
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
    problem_notes={k: v for k, v in PROBLEM_NOTES.items() if k in ("saturated", "l = 1")}))

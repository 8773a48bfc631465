"""Turning a failed answer into a hint, for the autograder (``run.py``).

First: does a known mistake of ``mistakes.py`` reproduce the answer on every problem?
Then: a wrong shape, a constant factor, a known mistake on some problems, or a failure on one
kind of problem only (saturated gates, the inactive side of the hinge, l = 1, m != d+1).
"""
from __future__ import annotations

import numpy as np

from ..gradients import gradients
from .mistakes import gate_mistakes, mistakes_for
from ..model import gating

FIELDS = {"gates": None, "grad_W_C": "W_C", "grad_W_B": "W_B", "grad_w": "w"}
EQUATIONS = {"gates": "eq (3)", "grad_W_C": "eq (93)", "grad_W_B": "eq (118)", "grad_w": "eq (135)"}
TOL_MISTAKE = 1e-6      # an answer "is" a known mistake when it matches it this closely


def rel_error(a, b) -> float:
    return float(np.linalg.norm(a - b) / max(1e-12, np.linalg.norm(a) + np.linalg.norm(b)))


def _shape_hint(name, S, ref, pb) -> str:
    B = pb.P.shape[0]
    if S.shape == ref.T.shape and ref.ndim == 2:
        return (f"wrong shape {S.shape}, expected {ref.shape}: transposed? " +
                ("gates are (B, l+1): one row per prompt." if name == "gates" else
                 "the gradient has W's shape (m, d+1); check the order of the outer product."))
    if name == "gates" and S.shape == (B, ref.shape[1] - 1):
        return (f"wrong shape {S.shape}, expected {ref.shape}: you dropped the query column. Eq (3) "
                "has l+1 gates; the last is G_{l+1,l+1} = sigma(w^T p_query).")
    if name == "gates" and B == 1 and S.shape == ref.shape[1:]:
        return (f"wrong shape {S.shape}, expected {ref.shape}: P is a batch (B, d+1, l+1); return "
                "one row of gates per prompt even when B = 1.")
    if S.shape == (B,) + ref.shape:
        if rel_error(S.mean(axis=0), ref) < TOL_MISTAKE:
            return (f"wrong shape {S.shape}, expected {ref.shape}: you returned one gradient per "
                    "prompt; the loss is the mean over the batch, so average them (axis 0).")
        return (f"wrong shape {S.shape}, expected {ref.shape}: one gradient per prompt? Return the "
                "gradient of the MEAN loss over the batch.")
    return f"wrong shape {S.shape}, expected {ref.shape}."


def match_mistake(name, answers, problems) -> str:
    """The hint of the first known mistake that reproduces the answer on every problem given."""
    catalogue = gate_mistakes() if name == "gates" else mistakes_for(FIELDS[name])
    for key, hint, mistaken in catalogue:
        if all(_same(S, mistaken(pb, _full_reference(name, pb))) for S, pb in zip(answers, problems)):
            return hint
    return ""


def _full_reference(name, pb):
    return gating(pb.params.w, pb.P) if name == "gates" else gradients(pb.params, pb.P, pb.z)


def _same(S, V) -> bool:
    return S.shape == V.shape and rel_error(S, V) <= TOL_MISTAKE


def diagnose(name, answers, problems, failing) -> str:
    """A hint when no known mistake reproduces the answer on every problem."""
    refs = [_full_reference(name, pb) for pb in problems]
    for S, ref, pb in zip(answers, refs, problems):
        if S.shape != ref.shape:
            return f"on problem '{pb.name}': " + _shape_hint(name, S, ref, pb)
    bad = [i for i, pb in enumerate(problems) if pb.name in failing]
    factors = [float(np.vdot(answers[i], refs[i]) / max(np.vdot(refs[i], refs[i]), 1e-300)) for i in bad]
    if all(_same(answers[i], c * refs[i]) for i, c in zip(bad, factors)) and np.ptp(factors) < 1e-6:
        return f"off by a constant factor {factors[0]:.6g} (on every failing problem)."
    partial = _partial_matches(name, answers, problems, bad)
    if partial:
        return partial
    eq = EQUATIONS[name]
    only = {"saturated": "numerics with saturated gates (|w^T p| ~ 40): use expit / log-space "
                         "products; never divide by a product of (1 - sigma).",
            "inactive": "the hinge: gradient 0 where 1 - zF <= 0, slope -z wherever 1 - zF > 0 "
                        "(also for misclassified prompts with |F| >= 1).",
            "l = 1": "an off-by-one in the sums over i or s: with l = 1 there is one context example.",
            "m = 4": "shapes: your code assumes m = d+1 (square W_B, W_C)."}
    for key, text in only.items():
        if len(failing) == 1 and failing[0].startswith(key):
            return f"fails only on '{failing[0]}': check {text}"
    return (f"matches no known mistake; compare with {eq} term by term (failing on: "
            f"{', '.join(failing)}). numpy_mamba.gradcheck checks one problem by finite differences.")


def _partial_matches(name, answers, problems, bad) -> str:
    catalogue = gate_mistakes() if name == "gates" else mistakes_for(FIELDS[name])
    for key, hint, mistaken in catalogue:
        hits = [problems[i].name for i in bad
                if _same(answers[i], mistaken(problems[i], _full_reference(name, problems[i])))]
        if hits:
            return f"on '{hits[0]}' your answer matches a known mistake: {hint}"
    return ""

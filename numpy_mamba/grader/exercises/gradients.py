"""The gradients hand-out (tutorials/exercises/gradients.py): grad_W_C, grad_W_B and grad_w of
the mean hinge loss, eqs (93), (118), (135), checked against ``numpy_mamba.gradients`` and,
independently, against central finite differences of the loss (``problems.Problem.numerical``)."""
from __future__ import annotations

from ...gradients import gradients
from ..compare import compare_array
from ..hints import rel_error
from ..mistakes import mistakes_for
from ..problems import PROBLEM_NOTES, make_problems
from ..registry import Exercise, Function, Reference, register

FIELDS = {"grad_W_C": "W_C", "grad_W_B": "W_B", "grad_w": "w"}

# Every package function that returns one of these gradients, or a piece of one, or a
# finite-difference estimate: the one-layer gradients (the unchecked value_and_gradients and its
# helpers included) and the stack's backward passes, since a one-layer stack with w as the label
# channel's gate column is eq (3) and returns dW_B, dW_C and dw.
FORBIDDEN = tuple(f"numpy_mamba.gradients:{n}" for n in
                  ("gradients", "gradients_literal", "value_and_gradients", "eq3_value_and_gradients", "gate_backward",
                   "gate_backward_terms", "attention_backward")) + tuple(
    f"numpy_mamba.stack:{n}" for n in ("gradients", "value_and_gradients", "stack_backward")) + tuple(
    f"numpy_mamba.layer:{n}" for n in ("layer_backward", "layer_backward_factored", "scores_backward")) + (
    "numpy_mamba.gradcheck:numerical_gradient", "numpy_mamba.gradcheck:gradcheck", "numpy_mamba.sgd:train",
    "numpy_mamba.gates.attention:scalar_gate_backward", "numpy_mamba.gates.attention:key_gated_backward",
) + tuple(f"numpy_mamba.gates.families:{n}" for n in
          ("decay_backward", "mamba2_backward", "retnet_backward", "gated_retention_backward", "gla_backward"))


def _inputs(name, pb):
    return pb.params, pb.P, pb.z


def _reference(name, pb) -> Reference:
    numerical = getattr(pb.numerical, FIELDS[name])
    return Reference(getattr(gradients(pb.params, pb.P, pb.z), FIELDS[name]),
                     lambda S: rel_error(S, numerical))


def _mistakes(name):
    """The known mistakes of ``mistakes.py`` as fn(problem) -> mistaken answer."""
    def on_problem(mistaken):
        return lambda pb: mistaken(pb, gradients(pb.params, pb.P, pb.z))
    return [(key, hint, on_problem(mistaken)) for key, hint, mistaken in mistakes_for(FIELDS[name])]


GRADIENTS = register(Exercise(
    name="gradients",
    functions=(Function("grad_W_C", "grad_W_C(params, P, z) -> (m, d+1)", "eq (93): dL/dW_C", 3),
               Function("grad_W_B", "grad_W_B(params, P, z) -> (m, d+1)", "eq (118): dL/dW_B", 3),
               Function("grad_w", "grad_w(params, P, z) -> (d+1,)", "eq (135): dL/dw", 4)),
    forbidden=FORBIDDEN,
    allowed="numpy, scipy, numpy_mamba.gating and the rest of the forward pass (numpy_mamba.model, numpy_mamba.loss)",
    independent_check="vs finite diff.",
    problems=make_problems, inputs=_inputs, reference=_reference, compare=compare_array,
    mistakes=_mistakes, problem_notes=PROBLEM_NOTES))

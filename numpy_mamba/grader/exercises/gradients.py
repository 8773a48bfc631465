"""The gradients hand-out (tutorials/exercises/gradients.py): grad_W_C, grad_W_B and grad_w of
the mean hinge loss, eqs (93), (118), (135), checked against ``numpy_mamba.gradients`` and,
independently, against central differences of the loss along three random directions
(``problems.directional``)."""
from __future__ import annotations

from ...gradients import gradients
from ..compare import compare_array
from ..mistakes import mistakes_for
from ..problems import PROBLEM_NOTES, budget_problem, directional, forward, make_problems, smooth_loss
from ..registry import Exercise, Function, Reference, register

FIELDS = {"grad_W_C": "W_C", "grad_W_B": "W_B", "grad_w": "w"}
# An analytic gradient meets this with room (every correct file of tests/student_files/ is within
# 6e-16 at seed 0 and 1.1e-14 over 25 seeds: 1 - sigma by subtraction costs digits); differencing
# the loss is 4e-5 off at best on the kink problem, and differencing F (with the hinge's slope
# derived) 2.6e-12 off for w (tests/test_grader_shortcuts.py).
TOL_REFERENCE = 1e-12
# grad_W_B and grad_W_C on the budget problem (``problems.BUDGET_SIZE``) within this many forward
# passes of eq (3) on it: a derivation, Python loops over prompts and tokens included, takes at most
# a fifth of it, and a pass per coordinate (10,201 of them), vectorised or not, at least five times
# it (``python -m numpy_mamba grade --margins gradients``).  w has 101 coordinates, so a pass per
# coordinate of w costs what a derivation costs: no budget tells them apart, and grad_w is not
# held to one (tutorials/INSTRUCTORS.md, what no grader stops).
BUDGET_UNITS = 500

# The forward pass of eq (3), nothing that differentiates it: the child gets these (and the
# helpers they call, ``kit.py``) and no other part of the package.
IMPORTS = ("numpy_mamba:Params", "numpy_mamba:gating", "numpy_mamba.model:Params", "numpy_mamba.model:gating",
           "numpy_mamba.model:log_gating", "numpy_mamba.model:gate_logits", "numpy_mamba.model:scores")


def _inputs(name, pb):
    return pb.params, pb.P, pb.z


def _reference(name, pb) -> Reference:
    field = FIELDS[name]
    return Reference(getattr(gradients(pb.params, pb.P, pb.z), field),
                     directional(smooth_loss(pb, field), getattr(pb.params, field), [3, list(FIELDS).index(name)]))


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
    imports=IMPORTS,
    allowed=("numpy, scipy, numpy_mamba.Params, numpy_mamba.gating and numpy_mamba.model's Params, gating, "
             "log_gating, gate_logits, scores"),
    independent_check="vs finite diff.",
    problems=make_problems, inputs=_inputs, reference=_reference, compare=compare_array,
    mistakes=_mistakes, problem_notes=PROBLEM_NOTES, tol_reference=TOL_REFERENCE, budget=budget_problem,
    forward=forward, budgeted=("grad_W_C", "grad_W_B"), budget_units=BUDGET_UNITS, budget_memory_mb=256,
    hidden=("saturated", "hinge's kink"), sources=("numpy_mamba.gradients",)))

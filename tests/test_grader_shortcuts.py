"""Shortcuts that skip the derivation fail, and derivations pass with room: for each graded
gradient, the worst error of every correct file we have (the solution, the student files, the
paper-only file, the package's literal form), the tolerance, and the best error of finite
differences (central, one-sided and Richardson's fourth order, steps 1e-1 .. 1e-13, absolute
and relative to the entry).  ``pytest -s`` prints the three numbers.

A failure here means a finite difference would pass (the tolerance is too loose, or a problem
lost its kink), or an honest derivation would fail (the tolerance is too tight).

What no problem can stop: grad_W_B and grad_W_C given the hinge's slope, and the stack's dW_B
and dW_C, are linear in their parameter, so a difference with a large step is exact; that
shortcut needs the hinge's slope derived, and tutorials/INSTRUCTORS.md says so.
"""
import importlib.util
import sys

import numpy as np
import pytest

from numpy_mamba.gradients import gradients, gradients_literal
from numpy_mamba.grader.exercises.stack import make_problems as stack_problems
from numpy_mamba.grader.hints import rel_error
from numpy_mamba.grader.problems import outputs, make_problems
from numpy_mamba.grader.registry import all_exercises
from numpy_mamba.layer import layer_backward, layer_forward

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STUDENTS = ROOT / "tests" / "student_files"
SOLUTIONS = ROOT / "tests" / "solutions"
FIELDS = {"grad_W_C": "W_C", "grad_W_B": "W_B", "grad_w": "w"}
STEPS = [10.0 ** -k for k in range(1, 14)]


def _load(path):
    sys.path.insert(0, str(STUDENTS))
    try:
        spec = importlib.util.spec_from_file_location(f"honest_{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(STUDENTS))


def _difference(f, x, h, kind, relative, batched=False):
    """Finite differences of f at x, one coordinate at a time.  ``batched``: f returns one value
    per prompt (x's first axis) that depends on that prompt alone, so one pass moves a coordinate
    of every prompt at once."""
    g = np.zeros_like(x)
    for index in np.ndindex(x.shape[1:] if batched else x.shape):
        where = (slice(None),) + index if batched else index
        step = h * np.maximum(1.0, np.abs(x[where])) if relative else h

        def at(delta):
            moved = x.copy()
            moved[where] += delta
            return f(moved)
        if kind == "central":
            g[where] = (at(step) - at(-step)) / (2 * step)
        elif kind == "forward":
            g[where] = (at(step) - at(0.0)) / step
        else:                                               # Richardson: fourth order
            g[where] = (8 * (at(step) - at(-step)) - (at(2 * step) - at(-2 * step))) / (12 * step)
    return g


def _best(error, cases, scaled) -> float:
    """The smallest worst-over-``cases`` error ``error(case, h, kind, relative)`` over every step,
    scheme and scaling (relative only where some entry of ``scaled`` exceeds 1: else it is the
    absolute step again).  A grid point stops at the first case beyond the best so far."""
    best = float("inf")
    for h in STEPS:
        for kind in ("central", "forward", "richardson"):
            for relative in (False, True) if np.max(np.abs(scaled)) > 1 else (False,):
                worst = 0.0
                for case in cases:
                    worst = max(worst, error(case, h, kind, relative))
                    if worst >= best:
                        break
                best = min(best, worst)
    return best


@pytest.fixture(scope="module")
def gradient_problems():
    return make_problems(0)


@pytest.mark.parametrize("name", FIELDS)
def test_gradients_honest_pass_with_room_and_differences_of_the_loss_fail(gradient_problems, name):
    field, tol = FIELDS[name], all_exercises()["gradients"].tol_reference
    honest = [_load(p) for p in (SOLUTIONS / "gradients_solution.py", STUDENTS / "correct_common.py",
                                 STUDENTS / "correct_naive.py", STUDENTS / "correct_from_the_paper.py")]
    worst = 0.0
    for pb in gradient_problems:
        ref = getattr(gradients(pb.params, pb.P, pb.z), field)
        answers = [getattr(m, name)(pb.params, pb.P, pb.z) for m in honest]
        answers += [getattr(gradients_literal(pb.params, pb.P, pb.z), field)]
        worst = max([worst] + [rel_error(a, ref) for a in answers])
    kink = next(pb for pb in gradient_problems if pb.name.startswith("hinge's kink"))
    ref = getattr(gradients(kink.params, kink.P, kink.z), field)

    def loss(value):
        p = kink.params._replace(**{field: value})
        return float(np.mean(np.maximum(0.0, 1.0 - kink.z * outputs(p, kink.P))))
    x = getattr(kink.params, field)
    best = _best(lambda case, h, kind, rel: rel_error(_difference(loss, x, h, kind, rel), ref), [kink], x)
    print(f"\n{name}: honest worst {worst:.1e}, tolerance {tol:g}, best finite difference of the loss {best:.1e}")
    assert worst * 100 <= tol, "an analytic solution is within 100x of the tolerance"
    assert best > 100 * tol, "a finite difference of the loss comes within 100x of the tolerance"


def test_differencing_F_with_the_hinge_slope_derived_fails_for_w(gradient_problems):
    """The half-shortcut: the hinge's slope by hand, d F / d w by differences: w enters F through
    the gates (not linearly), and no step reaches the tolerance."""
    tol = all_exercises()["gradients"].tol_reference

    def error(pb, h, kind, relative):
        slope = np.where(1.0 - pb.z * outputs(pb.params, pb.P) > 0, -pb.z, 0.0) / len(pb.z)
        value = _difference(lambda w: float(slope @ outputs(pb.params._replace(w=w), pb.P)), pb.params.w, h, kind, relative)
        return rel_error(value, gradients(pb.params, pb.P, pb.z).w)
    best = _best(error, gradient_problems, np.concatenate([pb.params.w for pb in gradient_problems]))
    print(f"\ngrad_w: best finite difference of F (hinge's slope derived) {best:.1e}, tolerance {tol:g}")
    assert best > tol


@pytest.mark.parametrize("part", [0, 3])
def test_stack_honest_pass_with_room_and_differences_fail(part):
    """dH (part 0) and dW (part 3): the layer is not linear in H or W."""
    tol, name = all_exercises()["stack"].tol_reference, ("dH", "dW_B", "dW_C", "dW")[part]
    honest = [_load(p) for p in (SOLUTIONS / "stack_solution.py", STUDENTS / "correct_stack.py")]
    problems = stack_problems(0)
    worst, refs = 0.0, []
    for pb in problems:
        dH, grads = layer_backward(pb.dO, pb.cache)
        refs.append(((dH,) + tuple(grads))[part])
        answers = [m.layer_backward(pb.dO, pb.cache) for m in honest]
        worst = max([worst] + [rel_error(((a[0],) + tuple(a[1]))[part], refs[-1]) for a in answers])

    def error(case, h, kind, relative):
        pb, ref = case
        H, layer = pb.cache.H, pb.cache.layer
        if part == 0:                                        # each prompt's output from its own H
            value = _difference(lambda v: np.sum(pb.dO * layer_forward(v, layer)[0], axis=(1, 2)), H, h, kind,
                                relative, batched=True)
        else:
            value = _difference(lambda v: float(np.sum(pb.dO * layer_forward(H, layer._replace(W=v))[0])), layer.W,
                                h, kind, relative)
        return rel_error(value, ref)
    scaled = np.concatenate([(pb.cache.H if part == 0 else pb.cache.layer.W).ravel() for pb in problems])
    best = _best(error, list(zip(problems, refs)), scaled)
    print(f"\n{name}: honest worst {worst:.1e}, tolerance {tol:g}, best finite difference {best:.1e}")
    assert worst * 100 <= tol and best > tol

"""Cheat: patch everything a comparison could use (the grader's rel_error, tolerances,
grade_function and make_problems, np.allclose, np.linalg.norm), then return zeros.  The patches
act in the submission's own process only; the grader compares in another."""
import numpy as np

np.allclose = lambda *args, **kwargs: True
np.linalg.norm = lambda *args, **kwargs: 0.0
np.testing.assert_allclose = lambda *args, **kwargs: None
for name in ("compare", "hints", "run", "grade", "problems"):
    try:
        module = __import__(f"numpy_mamba.grader.{name}", fromlist=["x"])
    except ImportError:
        continue
    module.rel_error = lambda a, b: 0.0
    module.TOL_REFERENCE = module.TOL_MISTAKE = float("inf")
    module.grade_function = lambda *args, **kwargs: None
    module.make_problems = lambda *args, **kwargs: []


def grad_W_C(params, P, z):
    return np.zeros_like(params.W_C)


def grad_W_B(params, P, z):
    return np.zeros_like(params.W_B)


def grad_w(params, P, z):
    return np.zeros_like(params.w)

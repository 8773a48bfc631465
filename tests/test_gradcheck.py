"""The finite-difference checker itself: it must catch wrong gradients, not only pass right ones."""
import numpy as np
import pytest

from numpy_mamba import Params, gradcheck, gradients, hinge_loss, numerical_gradient
from tests.helpers import random_problem


def test_gradcheck_flags_a_wrong_gradient_per_parameter():
    params, _, P, z = random_problem(0)
    good = gradients(params, P, z)
    bad = Params(good.W_B, -good.W_C, good.w)        # sign error in dW_C only
    report = gradcheck(lambda p: hinge_loss(p, P, z), params, bad)
    assert not report.passed
    assert report.rel_err["W_C"] > 0.5
    assert report.rel_err["W_B"] < 1e-7 and report.rel_err["w"] < 1e-7
    assert "FAIL" in str(report) and "W_C" in str(report)


def test_gradcheck_on_plain_arrays_and_dicts():
    A = np.array([[2.0, 1.0], [1.0, 3.0]])
    f = lambda x: 0.5 * x @ A @ x
    x = np.array([0.3, -1.2])
    assert gradcheck(f, x, A @ x).passed
    assert not gradcheck(f, x, A.T @ x + 1.0).passed
    g = numerical_gradient(lambda p: np.sum(p["a"] ** 3), {"a": np.array([1.0, 2.0])})
    np.testing.assert_allclose(g["a"], [3.0, 12.0], rtol=1e-8)


def test_gradcheck_rejects_mismatched_shapes():
    params, _, P, z = random_problem(1)
    wrong = Params(params.W_B.T[:, :-1], params.W_C, params.w)
    with pytest.raises(ValueError, match="W_B has shape"):
        gradcheck(lambda p: hinge_loss(p, P, z), params, wrong)

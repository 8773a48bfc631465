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


def test_gradcheck_passes_a_right_and_fails_a_wrong_gradient_of_plain_arrays_and_dicts():
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


@pytest.mark.parametrize("f,match", [
    (lambda x: x * 2.0, "f must return a scalar loss; got an array of shape \\(2,\\)"),
    (lambda x: np.atleast_1d(np.sum(x)), "f must return a scalar loss; got an array of shape \\(1,\\)"),
    (lambda x: "1.5", "the value f returns must be a scalar loss \\(a real number\\); got '1.5' \\(str\\)"),
    (lambda x: None, "got None \\(NoneType\\)"),
    (lambda x: complex(np.sum(x)), "got .*\\(complex\\)"),
    (3.0, "f must be a function params -> scalar loss; got 3.0 \\(float\\)"),
])
def test_gradcheck_says_what_f_must_return(f, match):
    # If this fails, a student whose loss returns the per-prompt vector gets NumPy's generic
    # TypeError (or a size-1 array is silently taken as the loss) instead of being told why.
    x = np.array([0.3, -1.2])
    with pytest.raises(ValueError, match=match):
        gradcheck(f, x, x)
    with pytest.raises(ValueError, match=match):
        numerical_gradient(f, x)


@pytest.mark.parametrize("kwargs,match", [
    ({"eps": "1e-5"}, "eps must be a positive number; got '1e-5' \\(str\\)"),
    ({"eps": 0.0}, "eps must be a positive finite number; got 0.0"),
    ({"tol": True}, "tol must be a positive number; got True \\(bool\\)"),
    ({"floor": -1.0}, "floor must be a positive finite number"),
])
def test_gradcheck_options_are_checked(kwargs, match):
    x = np.array([0.3, -1.2])
    with pytest.raises(ValueError, match=match):
        gradcheck(lambda v: float(v @ v), x, 2 * x, **kwargs)


def test_gradcheck_names_a_non_numeric_parameter_and_fails_a_nan_gradient():
    with pytest.raises(ValueError, match="params a must be a real numeric array; got dtype <U1"):
        gradcheck(lambda p: 0.0, {"a": np.array(["x"])}, {"a": np.zeros(1)})
    params, _, P, z = random_problem(2)
    with pytest.raises(ValueError, match="analytic W_B must be real; got complex"):
        gradcheck(lambda p: hinge_loss(p, P, z), params, Params(params.W_B * 1j, params.W_C, params.w))
    # a NaN in the analytic gradient is a failed check (a student's bug), not bad input
    x = np.array([0.3, -1.2])
    report = gradcheck(lambda v: float(v @ v), x, np.array([np.nan, 1.0]))
    assert not report.passed and "FAIL" in str(report)
    assert gradcheck(lambda v: np.array(v @ v), x, 2 * x).passed      # a 0-d array is a scalar

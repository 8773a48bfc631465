"""The fast paths' helpers (numpy_mamba/numerics.py) against the library functions they stand in for."""
import numpy as np
import pytest
from scipy.special import log_expit

from numpy_mamba import numerics


def test_log_sigmoid_equals_scipy_log_expit():
    # numerics.log_sigmoid writes scipy's formula with vectorised NumPy ufuncs; it must agree
    # with log_expit to rounding over every regime: tiny, moderate, saturated, huge, infinite.
    rng = np.random.default_rng(0)
    a = np.concatenate([rng.normal(size=2000) * s for s in (1e-8, 1.0, 10.0, 50.0, 800.0)]
                       + [[0.0, -0.0, 1e-300, -1e-300, 745.0, -745.0, 1e4, -1e4, 1e300, -1e300]])
    ours, theirs = numerics.log_sigmoid(a), log_expit(a)
    assert ours.shape == a.shape and np.all(np.isfinite(ours)) and np.all(ours <= 0)
    np.testing.assert_allclose(ours, theirs, rtol=1e-15, atol=0)
    np.testing.assert_array_equal(numerics.log_sigmoid(np.array([np.inf, -np.inf])), [0.0, -np.inf])
    B = rng.normal(size=(3, 4, 5)) * 30                  # any shape, input left untouched
    copy = B.copy()
    np.testing.assert_allclose(numerics.log_sigmoid(B), log_expit(B), rtol=1e-15, atol=0)
    np.testing.assert_array_equal(B, copy)


@pytest.mark.parametrize("n", [1, 2, 7, numerics.SHORT_AXIS, numerics.SHORT_AXIS + 1, 300])
@pytest.mark.parametrize("reverse", [False, True])
def test_running_sum_equals_cumsum_on_both_paths(n, reverse):
    # If this fails, the triangular-matmul path (short axes) or the cumsum path (long axes)
    # adds the wrong terms, or the switch between them changes the result.
    X = np.random.default_rng(n).normal(size=(3, 2, n))
    expected = np.cumsum(X[..., ::-1], axis=-1)[..., ::-1] if reverse else np.cumsum(X, axis=-1)
    np.testing.assert_allclose(numerics.running_sum(X, reverse), expected, rtol=1e-12, atol=1e-12)


def test_running_sum_with_an_infinite_entry_gives_no_nan():
    # A saturated log-gate is -inf; the matmul path would compute 0 * inf = NaN in every column.
    X = np.array([[0.0, -np.inf, -1.0, -2.0]])
    np.testing.assert_array_equal(numerics.running_sum(X), [[0.0, -np.inf, -np.inf, -np.inf]])
    np.testing.assert_array_equal(numerics.running_sum(X, reverse=True), [[-np.inf, -np.inf, -3.0, -2.0]])

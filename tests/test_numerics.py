"""The fast paths' helpers (numpy_mamba/numerics.py) against the library functions they stand in for."""
import warnings

import numpy as np
import pytest
from scipy.special import expit, log_expit

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


def test_sigmoid_pair_equals_expit_on_both_sides_without_a_subtraction():
    # numerics.sigmoid_pair gives sigma(a) and 1 - sigma(a) from one exp; each must agree with
    # scipy's expit(a), expit(-a) to a few ulps relative (1 - sigma(50) = 1.9e-22 included), reach
    # the limits 0 and 1 for |a| past exp's range, keep NaN, and warn about nothing.
    rng = np.random.default_rng(1)
    a = np.concatenate([rng.normal(size=2000) * s for s in (1e-8, 1.0, 10.0, 50.0, 800.0)]
                       + [[0.0, -0.0, 709.0, -709.0, 710.0, -710.0, 745.0, -746.0, 1e300, -1e300, np.inf, -np.inf]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sigma, keep = numerics.sigmoid_pair(a)
    np.testing.assert_allclose(sigma, expit(a), rtol=4e-16, atol=0)
    np.testing.assert_allclose(keep, expit(-a), rtol=4e-16, atol=0)
    assert np.all(keep[np.abs(a) < 700] > 0) and np.all(sigma[np.abs(a) < 700] > 0)   # no 1 - 1 = 0 on the way
    np.testing.assert_array_equal(numerics.sigmoid_pair(np.array([np.nan]))[0], [np.nan])


@pytest.mark.parametrize("model, n_layers, prenorm", [("mamba", 1, False), ("linear_transformer", 1, False),
                                                      ("mamba", 3, False), ("linear_transformer", 2, False),
                                                      ("mamba", 2, True)])
def test_outputs_computed_in_pieces_equal_outputs_in_one_piece(model, n_layers, prenorm, monkeypatch):
    # If this fails, a test set's F depends on how many prompts are evaluated at once beyond the
    # last bit: a count of errors could move with the batch size.  The last bit itself may move:
    # OpenBLAS picks its matmul kernel by matrix size (seen: 1 of 1,100 outputs of a three-layer
    # Mamba, by 1.5e-16 relative, when the last piece holds 76 prompts).
    from numpy_mamba import make_world, model as eq3, network, stack, testing_batch
    world = make_world(rng=0)
    P = testing_batch(world, 1100, 20, alpha=0.3, rng=1).P
    net = network(model, n_layers=n_layers, prenorm=prenorm)
    params = net.init(world.d, 2, None, 0.2 if n_layers == 1 else 0.05)
    pieces = net.F(params, P)
    for module in (eq3, stack):
        monkeypatch.setattr(module, "OUTPUT_ROWS", 10 ** 6)
    whole = net.F(params, P)
    assert np.isfinite(whole).all() and np.array_equal(np.sign(pieces), np.sign(whole))
    np.testing.assert_allclose(pieces, whole, rtol=1e-14, atol=0)
    np.testing.assert_array_equal(numerics.in_pieces(lambda p: p.sum(axis=(1, 2)), P, 7), P.sum(axis=(1, 2)))


def test_the_causal_mask_is_made_once_and_cannot_be_changed():
    mask = numerics.upper_ones(5)
    np.testing.assert_array_equal(mask, np.triu(np.ones((5, 5))))
    assert numerics.upper_ones(5) is mask and mask.dtype == np.float64
    with pytest.raises(ValueError, match="read-only"):
        mask[1, 0] = 1.0


@pytest.mark.parametrize("n, size", [(0, 3), (1, 3), (6, 3), (7, 3), (5, 1), (2, 10)])
def test_pieces_cover_every_prompt_once_in_order(n, size):
    # If this fails, some code that works through a batch piece by piece (test prompts, outputs,
    # the products with P) skips a prompt, repeats one or takes too many at once.
    slices = numerics.pieces(n, size)
    covered = [i for piece in slices for i in range(n)[piece]]
    assert covered == list(range(n)) and all(len(range(n)[piece]) <= size for piece in slices)
    assert len(slices) == -(-n // size)

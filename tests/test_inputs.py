"""Bad input gets a ValueError that says what was received and what was expected."""
import numpy as np
import pytest

from numpy_mamba import (Params, TrainConfig, attention_scores, forward, gating, gradients, hinge_loss,
                         init_params, make_world, recurrent_forward, testing_batch, training_batch, zero_one_error)
from tests.helpers import random_problem

params, W, P, z = random_problem(0, d=4, l=3, B=5)


@pytest.mark.parametrize("fn", [
    lambda P_: forward(params, P_),
    lambda P_: hinge_loss(params, P_, z[: np.shape(P_)[0]] if np.ndim(P_) == 3 else 1),
    lambda P_: gradients(params, P_, z[: np.shape(P_)[0]] if np.ndim(P_) == 3 else 1),
    lambda P_: attention_scores(params, P_),
    lambda P_: gating(params.w, P_),
    lambda P_: recurrent_forward(params.W_B, params.W_C, W, P_),
])
@pytest.mark.parametrize("bad,match", [
    (P[:, :-1, :], "rows but the parameters expect d\\+1 = 5"),     # wrong d
    (P[0, 0], "shape \\(d\\+1, l\\+1\\) or \\(B, d\\+1, l\\+1\\)"),   # 1-D
    (P[None], "shape \\(d\\+1, l\\+1\\) or \\(B, d\\+1, l\\+1\\)"),   # 4-D
    (P[:, :, -1:], "l >= 1"),                                      # l = 0
    (np.where(np.arange(4)[None, None, :] == 1, np.nan, P), "finite"),
    (np.where(np.arange(4)[None, None, :] == 1, np.inf, P), "finite"),
    (P + np.eye(5, 4)[None] * 0 + (np.arange(4) == 3) * (np.arange(5)[:, None] == 4), "query's label slot"),
    (P.astype(complex), "real"),
    (np.array([["a", "b"], ["c", "d"]]), "numeric"),
])
def test_bad_prompts(fn, bad, match):
    with pytest.raises(ValueError, match=match):
        fn(bad)


@pytest.mark.parametrize("bad_z,match", [
    (np.array([1, -1, 0, 1, 1]), "must be -1 or \\+1; got 0"),
    (np.array([1, -1, 2, 1, 1]), "must be -1 or \\+1; got 2"),
    (np.array([1, -1, 1]), "one label per prompt, shape \\(5,\\); got shape \\(3,\\)"),
    (np.array([1, -1, np.nan, 1, 1]), "finite"),
])
def test_bad_labels(bad_z, match):
    with pytest.raises(ValueError, match=match):
        hinge_loss(params, P, bad_z)
    with pytest.raises(ValueError, match=match):
        gradients(params, P, bad_z)


@pytest.mark.parametrize("bad_params,match", [
    (Params(params.W_B, params.W_C[:, :-1], params.w), "W_B and W_C must both have shape"),
    (Params(params.W_B, params.W_C, params.w[:-1]), "w must have shape \\(d\\+1,\\) = \\(5,\\)"),
    (Params(params.W_B * np.nan, params.W_C, params.w), "W_B must be finite"),
    (Params(params.W_B, params.W_C, params.w * np.inf), "w must be finite"),
    ((params.W_B, params.W_C, params.w), "numpy_mamba.Params"),
])
def test_bad_params(bad_params, match):
    with pytest.raises(ValueError, match=match):
        forward(bad_params, P)


def test_unknown_model_name():
    for fn in (lambda: forward(params, P, "transformer"), lambda: hinge_loss(params, P, z, "Mamba"),
               lambda: gradients(params, P, z, "lt")):
        with pytest.raises(ValueError, match="model must be one of"):
            fn()


def test_recurrent_forward_options():
    with pytest.raises(ValueError, match="h0 must be one of"):
        recurrent_forward(params.W_B, params.W_C, W, P, h0="ones")
    with pytest.raises(ValueError, match="needs m = l\\+1 = 4; got m = 5"):
        recurrent_forward(params.W_B, params.W_C, W, P, h0="input")
    with pytest.raises(ValueError, match="W = \\(w_1, ..., w_d0\\) must have shape"):
        recurrent_forward(params.W_B, params.W_C, W[:, :-1], P)


def test_init_params_inputs():
    with pytest.raises(ValueError, match="explicit randomness"):
        init_params(5)
    with pytest.raises(ValueError, match="m = 3 < d = 5"):
        init_params(5, m=3, rng=0)
    with pytest.raises(ValueError, match="delta must be a positive number"):
        init_params(5, delta=-0.1, rng=0)
    p = init_params(5, rng=0)
    assert p.W_B.shape == (6, 6) and np.all(np.diag(p.W_B)[:5] == 0.2) and p.W_B[5, 5] == 0


world = make_world(d=8, M1=3, M2=2, V=2, rng=0)


@pytest.mark.parametrize("call,match", [
    (lambda: training_batch(world, 4, 3, p_a=1.0, rng=0), "p_a must lie in \\[0, 1\\); got 1.0"),
    (lambda: training_batch(world, 4, 3, p_a=-0.1, rng=0), "p_a must lie in \\[0, 1\\); got -0.1"),
    (lambda: testing_batch(world, 4, 3, alpha=1.5, rng=0), "alpha must lie in \\[0, 1\\); got 1.5"),
    (lambda: training_batch(world, 4, 0, p_a=0.5, rng=0), "l must be an integer >= 1; got 0"),
    (lambda: testing_batch(world, 4, 3, alpha=0.3, label_rule="flipped", rng=0), "label_rule must be one of"),
    (lambda: testing_batch(world, 4, 3, alpha=0.3, placement="near", rng=0), "placement must be one of"),
    (lambda: testing_batch(world, 4, 3, alpha=0.3, label_rule="target", target=0, rng=0), "target must be \\+1 or -1"),
    (lambda: training_batch(world, 4, 3, p_a=0.5), "explicit randomness"),
    (lambda: make_world(d=10, M1=6, M2=4, V=3, rng=0), "do not fit in R\\^d with d = 10"),
    (lambda: TrainConfig(p_a=1.2), "p_a must lie in"),
    (lambda: TrainConfig(eta=0.0), "eta must be a positive finite number; got 0.0"),
    (lambda: zero_one_error(np.ones(3), np.ones(2)), "same shape"),
])
def test_bad_data_and_config(call, match):
    with pytest.raises(ValueError, match=match):
        call()

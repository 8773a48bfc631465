"""Bad input gets a ValueError that says what was received and what was expected."""
import re

import numpy as np
import pytest

from numpy_mamba import (Params, TrainConfig, attention_scores, forward, gating, gradients, hinge_loss,
                         init_params, make_world, recurrent_forward, testing_batch, train, training_batch,
                         zero_one_error)
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
def test_bad_prompts_are_refused_with_what_was_expected(fn, bad, match):
    # If this fails, a misshapen, non-finite, complex or mislabelled P reaches the model.
    with pytest.raises(ValueError, match=match):
        fn(bad)


@pytest.mark.parametrize("bad_z,match", [
    (np.array([1, -1, 0, 1, 1]), "must be -1 or \\+1; got 0"),
    (np.array([1, -1, 2, 1, 1]), "must be -1 or \\+1; got 2"),
    (np.array([1, -1, 1]), "one label per prompt, shape \\(5,\\); got shape \\(3,\\)"),
    (np.array([1, -1, np.nan, 1, 1]), "finite"),
])
def test_bad_labels_are_refused_with_what_was_expected(bad_z, match):
    # If this fails, a label other than +-1, or one per prompt too few, reaches the loss.
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
def test_bad_params_are_refused_naming_the_array_and_what_was_expected(bad_params, match):
    with pytest.raises(ValueError, match=match):
        forward(bad_params, P)


def test_an_unknown_model_name_is_refused_with_the_known_ones():
    # If this fails, a misspelt model silently runs another model (or the default).
    for fn in (lambda: forward(params, P, "transformer"), lambda: hinge_loss(params, P, z, "Mamba"),
               lambda: gradients(params, P, z, "lt")):
        with pytest.raises(ValueError, match="model must be one of"):
            fn()


def test_recurrent_forward_refuses_an_unknown_h0_and_misshapen_W():
    with pytest.raises(ValueError, match="h0 must be one of"):
        recurrent_forward(params.W_B, params.W_C, W, P, h0="ones")
    with pytest.raises(ValueError, match="needs m = l\\+1 = 4; got m = 5"):
        recurrent_forward(params.W_B, params.W_C, W, P, h0="input")
    with pytest.raises(ValueError, match="W = \\(w_1, ..., w_d0\\) must have shape"):
        recurrent_forward(params.W_B, params.W_C, W[:, :-1], P)


def test_init_params_refuses_no_rng_small_m_and_negative_delta_and_starts_as_algorithm_1():
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
def test_bad_data_and_config_values_are_refused_with_what_was_expected(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# ---------------- types are checked where values are, and every message names the argument

NUMBER_FIELDS = {"T": 5, "B": 4, "eta": 0.1, "l_tr": 3, "p_a": 0.5, "K": 0.5, "kappa_a": 2.0, "delta": 0.2, "m": 9}


@pytest.mark.parametrize("field", sorted(NUMBER_FIELDS))
@pytest.mark.parametrize("bad", ["0.1", "5", True, None, 1j])
def test_train_config_refuses_strings_bools_and_complex(field, bad):
    # If this fails, TrainConfig(eta="0.1") is accepted and fails later inside NumPy, or
    # eta=True silently counts as a step size of 1.
    if bad is None and field == "m":
        return                                      # m=None means "d+1", a real option
    with pytest.raises(ValueError, match=f"^{field} must be .*; got {re.escape(repr(bad))}"):
        TrainConfig(**{field: bad})


@pytest.mark.parametrize("field", sorted(NUMBER_FIELDS))
def test_train_config_accepts_numpy_scalars(field):
    # If this fails, the type checks refuse np.int64 / np.float32, which NumPy code hands around.
    value = NUMBER_FIELDS[field]
    kind = np.int64 if isinstance(value, int) else np.float32
    assert getattr(TrainConfig(**{field: kind(value)}), field) == kind(value)


@pytest.mark.parametrize("call,match", [
    (lambda: training_batch(world, 4, 3, p_a=0.5, rng=0, tasks=[(0, 0)]), "tasks must be pairs .*distinct.*got the pair \\(0, 0\\)"),
    (lambda: training_batch(world, 4, 3, p_a=0.5, rng=0, tasks=[(-1, 0)]), "tasks .*indices in \\[0, M1\\) = \\[0, 3\\).*\\(-1, 0\\)"),
    (lambda: training_batch(world, 4, 3, p_a=0.5, rng=0, tasks=[(0, 99)]), "tasks .*\\[0, 3\\).*\\(0, 99\\)"),
    (lambda: testing_batch(world, 4, 3, alpha=0.3, rng=0, tasks=[(0, 1), (2, 2)], outliers=world.v_star), "tasks .*distinct.*\\(2, 2\\)"),
    (lambda: testing_batch(world, 4, 3, alpha=0.3, rng=0, tasks=[(0.0, 1.0)], outliers=world.v_star), "tasks must hold integer pattern indices"),
    (lambda: world.is_training_task([(0, 5)]), "tasks .*\\[0, 3\\).*\\(0, 5\\)"),
    (lambda: testing_batch(world, 4, 3, alpha=0.3, rng=0, outliers=np.zeros((2, 8))),
     "outliers must be unit vectors .*row 0 has norm 0 \\(tolerance 1e-08\\)"),
    (lambda: testing_batch(world, 4, 3, alpha=0.3, rng=0, outliers=2 * world.v_star),
     "outliers must be unit vectors .*norm 2"),
    (lambda: testing_batch(world, 4, 3, alpha=0.3, rng=0, outliers=world.mu[1:2] / 3.0),
     "outliers must be orthogonal to every pattern .*row 0 has cosine 1 with mu_1 \\(tolerance 1e-08\\)"),
    (lambda: testing_batch(world, 4, 3, alpha=0.3, rng=0, outliers=np.vstack([world.v_star, world.nu[1] / 3.0])),
     "orthogonal .*row 2 .* with nu_1"),
    (lambda: testing_batch(world, 4, 3, alpha=0.3, rng=0, outliers=np.zeros((0, 8))), "outliers must have shape"),
    (lambda: testing_batch(world, 4, 3, alpha=0.3, rng=0, label_rule="target", target=True), "target must be \\+1 or -1"),
    (lambda: training_batch(world, 4, 3, p_a="0.5", rng=0), "p_a must be a number in \\[0, 1\\); got '0.5' \\(str\\)"),
    (lambda: training_batch(world, 4, 3, p_a=0.5, K=True, rng=0), "K must be a positive number; got True \\(bool\\)"),
    (lambda: training_batch(world, True, 3, p_a=0.5, rng=0), "B must be an integer >= 1; got True \\(bool\\)"),
    (lambda: training_batch(world, 4, 3, p_a=0.5, rng=-1), "rng must be a Generator or a non-negative integer seed; got -1"),
    (lambda: testing_batch(world, 4, 3, alpha=np.bool_(True), rng=0), "alpha must be a number in \\[0, 1\\)"),
    (lambda: make_world(beta="3", rng=0), "beta must be a positive number; got '3' \\(str\\)"),
    (lambda: make_world(d=30.0, rng=0), "d must be an integer >= 1; got 30.0 \\(float\\)"),
])
def test_bad_tasks_outliers_and_types_name_the_argument(call, match):
    # If this fails, a bad task is accepted (or dies as a raw IndexError), a vector that is not a
    # unit outlier orthogonal to the patterns is used, or a message does not name the argument.
    with pytest.raises(ValueError, match=match):
        call()


def test_valid_tasks_and_outliers_are_accepted():
    # If this fails, the checks refuse good input: int32 tasks, an outlier within 1e-8 of unit
    # norm, an empty task list, a NumPy integer target.
    b = testing_batch(world, 6, 3, alpha=0.5, rng=0, tasks=np.array([(2, 0), (1, 2)], dtype=np.int32),
                      outliers=world.v_star + 1e-10)           # within the 1e-8 tolerance
    assert set(map(tuple, b.task)) <= {(2, 0), (1, 2)}
    assert world.is_training_task(np.empty((0, 2), dtype=int)).shape == (0,)
    testing_batch(world, 2, 3, alpha=0.5, rng=0, outliers=world.test_outliers([[1, 1], [1, -2]]),
                  target=np.int64(-1))


@pytest.mark.parametrize("kwargs,match", [
    ({"delta": "x"}, "delta must be a positive number \\(the paper uses \\(0, 0.2\\]\\); got 'x' \\(str\\)"),
    ({"delta": True}, "delta must be a positive number.*True \\(bool\\)"),
    ({"delta": np.nan}, "delta must be a positive number.*got nan"),
    ({"rng": -1}, "rng must be a Generator or a non-negative integer seed; got -1"),
    ({"rng": 1.5}, "rng must be a Generator .*or a non-negative integer seed; got 1.5 \\(float\\)"),
    ({"rng": True}, "rng must be a Generator.*True \\(bool\\)"),
])
def test_init_params_names_the_bad_argument(kwargs, match):
    # If this fails, NumPy's own message (which names neither delta nor rng) reaches the user.
    with pytest.raises(ValueError, match=match):
        init_params(5, **{"rng": 0, **kwargs})
    assert init_params(5, delta=np.float32(0.1), rng=np.uint8(3)).W_B[0, 0] == np.float32(0.1)


def test_train_checks_its_inputs_before_computing():
    # If this fails, params for another d die as a raw matmul error deep inside the first step.
    w4 = make_world(d=4, M1=2, M2=1, V=1, rng=0)
    with pytest.raises(ValueError, match="params must fit the world's d = 4: W_B, W_C of shape \\(m, d\\+1\\) = \\(m, 5\\); "
                                         "got parameters for d = 8, W_B of shape \\(m, 9\\)"):
        train(w4, TrainConfig(T=2), rng=0, params=init_params(8, rng=0))
    for kwargs, match in (({"config": {"T": 2}}, "config must be a TrainConfig; got dict"),
                          ({"record": 5}, "record must be None or a function"),
                          ({"progress": "yes"}, "progress must be True, False or a Progress; got str"),
                          ({"record_every": True}, "record_every must be an integer >= 1; got True")):
        with pytest.raises(ValueError, match=match):
            train(w4, **{"config": TrainConfig(T=2), "rng": 0, **kwargs})
    with pytest.raises(ValueError, match="world must be a numpy_mamba.World"):
        train("world", TrainConfig(T=2), rng=0)

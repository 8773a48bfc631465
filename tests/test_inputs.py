"""Bad input gets a ValueError that says what was received and what was expected.

Each rule of the input checks is tested once, through one public function that applies it: the
prompt, label and parameter rules through ``gradients``, whose checks at the top
(``model.check_inputs``) must refuse with their messages.  One test then walks every public function of the core API
(``numpy_mamba.__all__`` and ``numpy_mamba.stack``) and checks that each refuses a bad value of
every argument it checks, so a new public function without checks fails there.
"""
import inspect
import re

import numpy as np
import pytest

import numpy_mamba
from numpy_mamba import (Params, TrainConfig, attention_scores, forward, gradients, hinge_loss, init_params,
                         make_world, recurrent_forward, stack, testing_batch, train, training_batch, zero_one_error)
from tests.helpers import random_problem

params, W, P, z = random_problem(0, d=4, l=3, B=5)
world = make_world(d=8, M1=3, M2=2, V=2, rng=0)


def _with(array, index, value):
    out = np.array(array, dtype=float)
    out[index] = value
    return out


# ---------------------------------------------------------------- the rules, once each
@pytest.mark.parametrize("bad,match", [
    (P[:, :-1, :], "rows but the parameters expect d\\+1 = 5"),                 # wrong d
    (P[None], "shape \\(d\\+1, l\\+1\\) or \\(B, d\\+1, l\\+1\\) \\(eq \\(2\\)\\); got shape \\(1, 5, 5, 4\\)"),
    (P[:, :, -1:], "l >= 1 context examples .* got 1 column"),                 # l = 0
    (P[:0], "no prompts"),                                                       # B = 0
    (_with(P, (2, 1, 1), np.nan), "P must be finite; found nan at index \\(2, 1, 1\\)"),
    (_with(P, (4, 0, 3), -np.inf), "P must be finite; found -inf at index \\(4, 0, 3\\)"),   # the query column
    (_with(P, (1, 4, 3), 1.0), "query's label slot P\\[..., d, l\\] must be 0 .* got 1"),
    (P.astype(complex), "P must be real; got complex dtype"),
    (np.array([["a", "b"], ["c", "d"]]), "P must be a real numeric array; got dtype <U1"),
])
def test_each_prompt_rule(bad, match):
    # If this fails, a misshapen, empty, non-finite, complex or mislabelled P reaches the model.
    with pytest.raises(ValueError, match=match):
        gradients(params, bad, z[: len(bad)] if np.ndim(bad) == 3 and len(bad) <= len(z) else z)


@pytest.mark.parametrize("bad_z,match", [
    (np.array([1, -1, 0, 1, 1]), "labels z must be -1 or \\+1; got 0"),
    (np.array([1, -1, 1]), "z must hold one label per prompt, shape \\(5,\\); got shape \\(3,\\)"),
    (np.array([1, -1, np.nan, 1, 1]), "z must be finite; found nan at index \\(2,\\)"),
    ("1", "z must be a real numeric array; got dtype <U1"),
])
def test_each_label_rule(bad_z, match):
    # If this fails, a label other than +-1, one label too few, or a NaN label reaches the loss.
    with pytest.raises(ValueError, match=match):
        gradients(params, P, bad_z)


@pytest.mark.parametrize("bad_params,match", [
    (Params(params.W_B, params.W_C[:, :-1], params.w), "W_B and W_C must both have shape \\(m, d\\+1\\); got \\(5, 5\\) and \\(5, 4\\)"),
    (Params(params.W_B, params.W_C, params.w[:-1]), "w must have shape \\(d\\+1,\\) = \\(5,\\) to match W_B; got \\(4,\\)"),
    (Params(_with(params.W_B, (0, 0), np.nan), params.W_C, params.w), "W_B must be finite; found nan at index \\(0, 0\\)"),
    (Params(params.W_B, params.W_C, _with(params.w, 0, np.inf)), "w must be finite; found inf at index \\(0,\\)"),
    (Params(params.W_B, params.W_C, params.w.astype(complex)), "w must be real"),
    ((params.W_B, params.W_C, params.w), "params must be numpy_mamba.Params\\(W_B, W_C, w\\); got tuple"),
])
def test_each_parameter_rule(bad_params, match):
    # If this fails, parameters of the wrong shape, type or with a NaN or inf reach the model.
    with pytest.raises(ValueError, match=match):
        gradients(bad_params, P, z)


def test_an_unknown_model_name_is_refused_with_the_known_ones():
    # If this fails, a misspelt model silently runs another model (or the default).
    with pytest.raises(ValueError, match="model must be one of the paper's models \\('mamba', 'linear_transformer'\\); "
                                         "got 'Mamba'"):
        gradients(params, P, z, "Mamba")


@pytest.mark.parametrize("where", ["P feature row", "P label row", "P query column", "W_B", "W_C"])
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_a_nan_or_inf_is_found_where_every_weight_that_reads_it_is_zero(where, bad):
    # A NaN or inf must be refused even where every weight that multiplies it is 0, so that F would
    # come out finite.  If this fails, such an entry is accepted and its prompt's F is silently finite.
    W_B = np.diag([1.0, 1.0, 1.0, 0.0, 0.0])                    # row and column 3 of M = W_B^T W_C are 0,
    w = np.array([0.5, -0.5, 0.25, 0.0, 0.0])                   # and w_4 = 0: p_i[3] enters nothing but 0 *
    good = Params(W_B, W_B.copy(), w)
    bad_params, bad_P = good, P.copy()
    if where == "W_B":
        bad_params = good._replace(W_B=_with(W_B, (3, 0), bad))   # M's row 0 meets W_C's zero row 3
    elif where == "W_C":
        bad_params = good._replace(W_C=_with(W_B, (4, 4), bad))
    else:
        index = {"P feature row": (1, 3, 0), "P label row": (1, 4, 1), "P query column": (1, 3, 3)}[where]
        bad_P = _with(P, index, bad)
    for model in ("mamba", "linear_transformer"):
        for call in (lambda: forward(bad_params, bad_P, model), lambda: hinge_loss(bad_params, bad_P, z, model),
                     lambda: gradients(bad_params, bad_P, z, model)):
            with pytest.raises(ValueError, match="must be finite; found"):
                call()


def test_an_overflowing_output_from_finite_input_is_returned_not_refused():
    # If this fails, the input checks refuse finite input whose F overflows.
    huge = Params(params.W_B * 1e160, params.W_C * 1e160, params.w)
    with np.errstate(over="ignore", invalid="ignore"):
        F = forward(huge, P, "linear_transformer")
    assert not np.all(np.isfinite(F))


def test_recurrent_forward_refuses_an_unknown_h0_and_misshapen_W():
    with pytest.raises(ValueError, match="h0 must be one of \\('zeros', 'input'\\); got 'ones'"):
        recurrent_forward(params.W_B, params.W_C, W, P, h0="ones")
    with pytest.raises(ValueError, match="needs m = l\\+1 = 4; got m = 5"):
        recurrent_forward(params.W_B, params.W_C, W, P, h0="input")
    with pytest.raises(ValueError, match="W = \\(w_1, ..., w_d0\\) must have shape \\(d\\+1, d\\+1\\) = \\(5, 5\\); got \\(5, 4\\)"):
        recurrent_forward(params.W_B, params.W_C, W[:, :-1], P)


@pytest.mark.parametrize("kwargs,match", [
    ({"rng": None}, "init_params needs explicit randomness"),
    ({"m": 3}, "m = 3 < d = 5"),
    ({"delta": -0.1}, "delta must be a positive number \\(the paper uses \\(0, 0.2\\]\\); got -0.1"),
    ({"delta": "x"}, "delta must be a positive number \\(the paper uses \\(0, 0.2\\]\\); got 'x' \\(str\\)"),
    ({"delta": np.nan}, "delta must be a positive number.*got nan"),
    ({"rng": -1}, "rng must be a Generator or a non-negative integer seed; got -1"),
    ({"rng": 1.5}, "rng must be a Generator .*or a non-negative integer seed; got 1.5 \\(float\\)"),
])
def test_init_params_names_the_bad_argument(kwargs, match):
    # If this fails, NumPy's own message (which names neither delta nor rng) reaches the user.
    with pytest.raises(ValueError, match=match):
        init_params(5, **{"rng": 0, **kwargs})


def test_init_params_accepts_numpy_scalars_and_starts_as_algorithm_1():
    p = init_params(5, delta=np.float32(0.1), rng=np.uint8(3))
    assert p.W_B.shape == (6, 6) and np.all(np.diag(p.W_B)[:5] == np.float32(0.1)) and p.W_B[5, 5] == 0


# ---------------------------------------------------------------- scalars: one rule per check
@pytest.mark.parametrize("bad,kind", [("0.1", "str"), (True, "bool"), (None, "NoneType"), (1j, "complex")])
def test_a_number_is_a_real_number(bad, kind):
    # If this fails, TrainConfig(eta="0.1") is accepted and fails later inside NumPy, or eta=True
    # silently counts as a step size of 1 (_checks.check_real, shared by every number argument).
    with pytest.raises(ValueError, match=f"^eta must be a positive number; got {re.escape(repr(bad))} \\({kind}\\)"):
        TrainConfig(eta=bad)


NUMBER_FIELDS = {"T": 5, "B": 4, "eta": 0.1, "l_tr": 3, "p_a": 0.5, "K": 0.5, "kappa_a": 2.0, "delta": 0.2, "m": 9}


def test_every_train_config_number_names_itself_and_accepts_numpy_scalars():
    # If this fails, a TrainConfig field skips its check (or its message names another field), or
    # the checks refuse np.int64 / np.float32, which NumPy code hands around.
    for field, value in NUMBER_FIELDS.items():
        with pytest.raises(ValueError, match=f"^{field} must be .*; got '5' \\(str\\)"):
            TrainConfig(**{field: "5"})
        kind = np.int64 if isinstance(value, int) else np.float32
        assert getattr(TrainConfig(**{field: kind(value)}), field) == kind(value)
    assert TrainConfig(m=None).m is None                       # m=None means "d+1", a real option


@pytest.mark.parametrize("call,match", [
    (lambda: training_batch(world, 4, 3, p_a=1.0, rng=0), "p_a must lie in \\[0, 1\\); got 1.0"),
    (lambda: testing_batch(world, 4, 3, alpha=1.5, rng=0), "alpha must lie in \\[0, 1\\); got 1.5"),
    (lambda: training_batch(world, 4, 0, p_a=0.5, rng=0), "l must be an integer >= 1; got 0"),
    (lambda: training_batch(world, True, 3, p_a=0.5, rng=0), "B must be an integer >= 1; got True \\(bool\\)"),
    (lambda: make_world(d=30.0, rng=0), "d must be an integer >= 1; got 30.0 \\(float\\)"),
    (lambda: training_batch(world, 4, 3, p_a=0.5, K=True, rng=0), "K must be a positive number; got True \\(bool\\)"),
    (lambda: testing_batch(world, 4, 3, alpha=0.3, label_rule="flipped", rng=0), "label_rule must be one of"),
    (lambda: testing_batch(world, 4, 3, alpha=0.3, placement="near", rng=0), "placement must be one of"),
    (lambda: testing_batch(world, 4, 3, alpha=0.3, label_rule="target", target=0, rng=0), "target must be \\+1 or -1"),
    (lambda: testing_batch(world, 4, 3, alpha=0.3, label_rule="target", target=True, rng=0), "target must be \\+1 or -1"),
    (lambda: training_batch(world, 4, 3, p_a=0.5), "explicit randomness"),
    (lambda: make_world(d=10, M1=6, M2=4, V=3, rng=0), "do not fit in R\\^d with d = 10"),
    (lambda: TrainConfig(tasks="pairs"), "tasks must be one of \\('cycle', 'all'\\); got 'pairs'"),
    (lambda: zero_one_error(np.ones(3), np.ones(2)), "same shape"),
])
def test_bad_data_and_config_values_are_refused_with_what_was_expected(call, match):
    with pytest.raises(ValueError, match=match):
        call()


@pytest.mark.parametrize("call,match", [
    (lambda: training_batch(world, 4, 3, p_a=0.5, rng=0, tasks=[(0, 0)]), "tasks must be pairs .*distinct.*got the pair \\(0, 0\\)"),
    (lambda: training_batch(world, 4, 3, p_a=0.5, rng=0, tasks=[(-1, 0)]), "tasks .*indices in \\[0, M1\\) = \\[0, 3\\).*\\(-1, 0\\)"),
    (lambda: testing_batch(world, 4, 3, alpha=0.3, rng=0, tasks=[(0.0, 1.0)], outliers=world.v_star), "tasks must hold integer pattern indices"),
    (lambda: world.is_training_task(np.zeros((2, 3), dtype=int)), "tasks must be a non-empty \\(n, 2\\) array"),
    (lambda: testing_batch(world, 4, 3, alpha=0.3, rng=0, outliers=2 * world.v_star),
     "outliers must be unit vectors .*norm 2"),
    (lambda: testing_batch(world, 4, 3, alpha=0.3, rng=0, outliers=world.mu[1:2] / 3.0),
     "outliers must be orthogonal to every pattern .*row 0 has cosine 1 with mu_1 \\(tolerance 1e-08\\)"),
    (lambda: testing_batch(world, 4, 3, alpha=0.3, rng=0, outliers=np.zeros((0, 8))), "outliers must have shape"),
])
def test_bad_tasks_and_outliers_name_the_argument(call, match):
    # If this fails, a bad task is accepted (or dies as a raw IndexError), or a vector that is not a
    # unit outlier orthogonal to the patterns is used.
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


def test_train_checks_its_inputs_before_computing():
    # If this fails, params for another d die as a raw matmul error deep inside the first step.
    w4 = make_world(d=4, M1=2, M2=1, V=1, rng=0)
    with pytest.raises(ValueError, match="params must fit the world's d = 4: W_B, W_C of shape \\(m, d\\+1\\) = \\(m, 5\\); "
                                         "got parameters for d = 8, W_B of shape \\(m, 9\\)"):
        train(w4, TrainConfig(T=2), rng=0, params=init_params(8, rng=0))
    for kwargs, match in (({"record": 5}, "record must be None or a function"),
                          ({"progress": "yes"}, "progress must be True, False or a Progress; got str"),
                          ({"record_every": True}, "record_every must be an integer >= 1; got True")):
        with pytest.raises(ValueError, match=match):
            train(w4, **{"config": TrainConfig(T=2), "rng": 0, **kwargs})


# ---------------------------------------------------------------- every public function
def _walk():
    """{name: (function, good arguments, {argument: (bad value, what the message must say)})} for
    every public function of the core API."""
    layers = stack.init_stack(4, 2, rng=0)
    nan_P, bad_z = _with(P, (1, 2, 0), np.nan), (_with(z, 2, 0.0), "-1 or \\+1; got 0")
    finite = (nan_P, "P must be finite")
    eq3 = {"params": (params._replace(W_C=params.W_C[:-1]), "W_B and W_C must both have shape"), "P": finite}
    model = ("transformer", "paper's models")
    loss = params_dict = {"a": np.ones(3)}
    return {
        "init_params": (init_params, dict(d=5, rng=0), {"d": (0, "d must be an integer >= 1"), "m": (3, "m = 3 < d = 5"),
                                                        "delta": (0.0, "delta must be a positive"), "rng": (None, "explicit randomness")}),
        "forward": (forward, dict(params=params, P=P), {**eq3, "model": model}),
        "forward_literal": (numpy_mamba.forward_literal, dict(params=params, P=P[0]),
                            {**eq3, "P": (nan_P[1], "P must be finite"), "model": model}),
        "hinge_loss": (hinge_loss, dict(params=params, P=P, z=z), {**eq3, "z": bad_z, "model": model}),
        "gradients": (gradients, dict(params=params, P=P, z=z), {**eq3, "z": bad_z, "model": model}),
        "gradients_literal": (numpy_mamba.gradients_literal, dict(params=params, P=P, z=z), {**eq3, "z": bad_z, "model": model}),
        "gating": (numpy_mamba.gating, dict(w=params.w, P=P), {"w": (params.w[None], "w must be a vector"), "P": finite}),
        "attention_scores": (attention_scores, dict(params=params, P=P), eq3),
        "recurrent_forward": (recurrent_forward, dict(W_B=params.W_B, W_C=params.W_C, W=W, P=P),
                              {"W_B": (params.W_B[:, :-1], "W_B and W_C must both have shape"),
                               "W_C": (params.W_C * np.inf, "W_C must be finite"), "W": (W[:-1], "W = .* must have shape"),
                               "P": finite, "h0": ("ones", "h0 must be one of")}),
        "gradcheck": (numpy_mamba.gradcheck, dict(f=lambda p: float(np.sum(p["a"] ** 2)), params=params_dict,
                                                  analytic={"a": 2 * np.ones(3)}),
                      {"f": ("f", "f must be a function"), "analytic": ({"b": np.ones(3)}, "analytic gradient has parameters")}),
        "numerical_gradient": (numpy_mamba.numerical_gradient, dict(f=lambda p: float(np.sum(p["a"])), params=loss),
                               {"f": (3, "f must be a function"), "eps": (-1.0, "eps must be a positive")}),
        "zero_one_error": (zero_one_error, dict(F=np.ones(2), z=np.ones(2)), {"F": (np.ones(3), "same shape"),
                                                                           "z": (np.ones(1), "same shape")}),
        "make_world": (make_world, dict(d=8, M1=3, M2=2, V=2, rng=0), {"d": (4, "do not fit"), "beta": ("3", "beta must be"),
                                                                       "rng": (None, "explicit randomness")}),
        "training_batch": (training_batch, dict(world=world, B=4, l=3, p_a=0.5, rng=0),
                           {"world": ("world", "world must be a numpy_mamba.World"), "B": (0, "B must be an integer >= 1"),
                            "l": (0, "l must be an integer >= 1"), "p_a": (1.0, "p_a must lie in"), "rng": (None, "explicit")}),
        "testing_batch": (testing_batch, dict(world=world, B=4, l=3, alpha=0.3, outliers=world.v_star, rng=0),
                          {"world": (None, "world must be a numpy_mamba.World"), "alpha": (2.0, "alpha must lie in"),
                           "outliers": (np.ones((1, 8)), "outliers must be unit vectors"), "rng": (None, "explicit")}),
        "train": (train, dict(world=world, config=TrainConfig(T=1, B=2, l_tr=2), rng=0),
                  {"world": ("w", "world must be a numpy_mamba.World"), "config": ({}, "config must be a TrainConfig"),
                   "net": ("gla", "paper's models"), "rng": (None, "explicit randomness")}),
        "network": (numpy_mamba.network, dict(), {"model": model, "n_layers": (0, "n_layers must be an integer >= 1"),
                                                  "prenorm": ("yes", "prenorm must be True or False")}),
        "stack.init_stack": (stack.init_stack, dict(d=4, n_layers=2, rng=0), {"n_layers": (0, "n_layers must be an integer"),
                                                                              "rng": (None, "explicit randomness")}),
        **{f"stack.{name}": (getattr(stack, name), dict(layers=layers, P=P, **({"z": z} if "z" in needs else {})),
                             {"layers": ([], "layers is empty"), "P": finite, "model": (model[0], "paper's models"),
                              **({"z": bad_z} if "z" in needs else {})})
           for name, needs in [("forward", ""), ("hinge_loss", "z"), ("gradients", "z"), ("forward_with_caches", "")]},
    }


def test_every_public_function_refuses_bad_input_with_what_was_wrong():
    # If this fails, a public function accepts a bad value of one of its arguments (or says
    # something else than what was wrong), or a public function exists that this walk misses.
    walk = _walk()
    public = {name for name in numpy_mamba.__all__ if inspect.isfunction(getattr(numpy_mamba, name))}
    public |= {f"stack.{name}" for name in ("init_stack", "forward", "hinge_loss", "gradients", "forward_with_caches")}
    assert set(walk) == public, f"not walked: {public - set(walk)}; walked but not public: {set(walk) - public}"
    for name, (function, good, bad) in walk.items():
        function(**good)                                          # the good arguments are good
        assert bad and set(bad) <= set(inspect.signature(function).parameters), name
        for argument, (value, match) in bad.items():
            with pytest.raises(ValueError, match=match):
                function(**{**good, argument: value})

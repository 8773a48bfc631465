"""Algorithm 1: determinism, the loss falling, divergence and collapse reported, eq (5) error."""
import pickle
import re

import numpy as np
import pytest

from numpy_mamba import (CollapseError, DivergenceError, Params, TrainConfig, forward, gradients, init_params,
                         make_world, network, train, training_batch, zero_one_error)
from numpy_mamba.loss import hinge
from numpy_mamba.sgd import DIVERGENCE_BOUND, divergence, train_together


def test_same_seed_gives_the_same_run_and_another_seed_another():
    # If this fails, train draws randomness from somewhere other than its rng (a global state,
    # the clock), or ignores its seed.
    world = make_world(rng=0)
    cfg = TrainConfig(T=30, B=16)
    p1, h1 = train(world, cfg, rng=5, record_every=5)
    p2, h2 = train(world, cfg, rng=5, record_every=5)
    p3, _ = train(world, cfg, rng=6, record_every=5)
    for a, b in zip(p1, p2):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(h1["loss"], h2["loss"])
    assert not np.array_equal(p1.w, p3.w)


@pytest.mark.parametrize("model", ["mamba", "linear_transformer"])
def test_section4_run_drives_the_loss_down(model):
    # 2,000 steps at the Section 4 settings (d=30, M1=6, M2=10, V=3, beta=3, l=20, p_a=0.6).
    world = make_world(rng=0)
    _, h = train(world, TrainConfig(T=2000, B=64, eta=0.1), model, rng=1, record_every=100)
    start, end = h["loss"][0], np.mean(h["loss"][-5:])
    if model == "mamba":                            # "well below its starting value": a tenth
        assert start > 0.5 and end < 0.1 * start, (start, end)
    else:                                           # no gate: F starts larger, the loss lower
        assert end < 0.5 * start, (start, end)
    assert h["step"][-1] == 2000


def test_history_records_every_record_every_steps_and_the_callback_values():
    world = make_world(rng=0)
    _, h = train(world, TrainConfig(T=20, B=8), rng=0, record_every=5,
                 record=lambda t, p: {"w_norm": np.linalg.norm(p.w)})
    assert list(h["step"]) == [0, 5, 10, 15, 20]
    assert h["w_norm"].shape == (5,) and h["loss"].shape == (5,)


def test_divergence_names_the_step_and_suggests_smaller_eta():
    world = make_world(rng=0)
    with pytest.raises(DivergenceError, match="diverged at step \\d+.*smaller step size"):
        train(world, TrainConfig(T=200, B=8, eta=1e150), rng=0)


def test_a_divergence_from_a_huge_initial_output_suggests_a_smaller_delta():
    """A three-layer linear Transformer at Algorithm 1's delta = 0.2 starts with outputs of about
    1e8, beyond the divergence bound: a smaller step size is the wrong advice there."""
    world = make_world(rng=0)
    with pytest.raises(DivergenceError, match=r"diverged at step 0: an output reached .*smaller delta than 0\.2") as info:
        train(world, TrainConfig(T=20, eta=1e-6), network("linear_transformer", n_layers=3), rng=1)
    assert info.value.step == 0 and info.value.params is None


@pytest.mark.parametrize("model", ["mamba", "linear_transformer"])
def test_a_run_past_the_divergence_bound_has_diverged_though_its_numbers_are_finite(model):
    """If this fails, a run whose outputs are astronomically large but finite counts as healthy (as
    the pre-norm arm's weights of 1e92-1e125 did): training from weights 1e4 times too large (F ~
    1e9, every number finite) must stop at step 0 with a DivergenceError naming the bound."""
    world = make_world(rng=0)
    huge = init_params(world.d, rng=0, delta=1e4)
    with pytest.raises(DivergenceError, match=re.escape(f"beyond the divergence bound {DIVERGENCE_BOUND:g}")) as info:
        train(world, TrainConfig(T=3, B=8, eta=1e-12), model, rng=0, params=huge)
    assert info.value.step == 0


@pytest.mark.parametrize("factor, diverged", [(0.99, False), (1.01, True)])
def test_divergence_either_side_of_its_bound(factor, diverged):
    """If this fails, the divergence rule decides elsewhere than its text says: an output or a
    parameter 1 % below DIVERGENCE_BOUND is healthy, 1 % beyond it (or a NaN) has diverged."""
    params = init_params(4, rng=0)
    big = Params(params.W_B, params.W_C, params.w.copy())
    big.w[0] = factor * DIVERGENCE_BOUND
    assert bool(divergence(np.array([factor * DIVERGENCE_BOUND, 1.0]), 1.0, params)) is diverged
    assert bool(divergence(np.array([1.0]), 0.0, big)) is diverged
    assert divergence(np.array([np.nan]), float("nan"), params) and divergence(np.array([1.0]), 0.0, params) == ""


def test_the_step_size_rule_never_trains_past_the_bound():
    """If this fails, a step size whose run passed the divergence bound (here: started from weights
    1e4 times too large, every number finite) could still be chosen: train_together must hand back
    a DivergenceError for it while the healthy run goes on."""
    world = make_world(rng=0)
    configs = [TrainConfig(T=5, B=8, eta=1e-12, delta=1e4), TrainConfig(T=5, B=8, eta=0.01)]
    runs = train_together(world, configs, "mamba", rng=0)
    assert isinstance(runs[0], DivergenceError) and "divergence bound" in str(runs[0])
    assert not isinstance(runs[1], DivergenceError)


def test_zero_one_error_counts_nan_inf_and_ties_as_errors():
    z = np.array([1.0, 1.0, -1.0, 1.0, -1.0])
    assert zero_one_error(np.array([2.0, np.nan, np.inf, 0.0, -3.0]), z) == pytest.approx(3 / 5)
    assert zero_one_error(np.array([np.inf]), np.array([1.0])) == 1.0


def test_every_error_count_treats_nan_as_wrong():
    # A NaN output is an error, not a success: z * NaN <= 0 is False, so a bare comparison
    # would count it as correct.  The experiments' error counts use the same mask as eq (5).
    from numpy_mamba.measure.rates import group_wrong_counts
    from numpy_mamba.loss import misclassified
    F = np.array([np.nan, 1.0, -1.0, 0.0])
    z = np.array([1.0, 1.0, 1.0, -1.0])
    np.testing.assert_array_equal(misclassified(F, z), [True, False, True, True])
    wrong, n = group_wrong_counts(misclassified(F, z), np.array([0, 0, 1, 1]), 2)
    np.testing.assert_array_equal(wrong, [1, 2])
    np.testing.assert_array_equal(n, [2, 2])


# ---------------------------------------- a failed run keeps its last good state; a collapse is an error

def test_divergence_error_keeps_the_last_good_state():
    # If this fails, a diverged run throws away what it learned: its error must carry Psi^(t-1),
    # the step, eta and the history so far.
    world = make_world(rng=0)
    cfg = TrainConfig(T=200, B=8, eta=30.0)
    with pytest.raises(DivergenceError, match="diverged at step \\d+: an output reached .*smaller step size than eta = 30") as info:
        train(world, cfg, "linear_transformer", rng=0, record_every=2)
    e = info.value
    assert type(e) is DivergenceError and set(vars(e)) == {"params", "step", "eta", "history"}
    assert e.eta == 30.0 and f"step {e.step}:" in str(e) and e.step >= 3
    # e.params is Psi^(step-1): exactly where an identical run stopped one step earlier lands
    p_before, h_before = train(world, TrainConfig(T=e.step - 1, B=8, eta=30.0), "linear_transformer",
                               rng=0, record_every=2)
    for kept, ref in zip(e.params, p_before):
        np.testing.assert_array_equal(kept, ref)
    assert set(e.history) == {"step", "loss", "error"} and isinstance(e.history["loss"], np.ndarray)
    np.testing.assert_array_equal(e.history["step"], np.arange(0, e.step, 2))
    np.testing.assert_array_equal(e.history["loss"], h_before["loss"][: len(e.history["loss"])])
    assert np.all(np.isfinite(e.history["loss"]))
    again = pickle.loads(pickle.dumps(e))            # e.g. sent back from a worker process
    assert again.step == e.step and str(again) == str(e)


def test_huge_eta_collapse_is_an_error_naming_gate_underflow_and_eta():
    # If this fails, `train --eta 1e6` ends "successfully" with loss 1.000 and error 1.000: every
    # gate underflows, F = 0 on every prompt, the gradient 0.  It must say so and name eta.
    # (The seeds of that command; at other seeds eta = 1e6 may instead blow W_B, W_C up to a NaN.)
    world = make_world(rng=np.random.default_rng([0, 0]))
    with pytest.raises(CollapseError) as info:
        train(world, TrainConfig(T=100, B=64, eta=1e6), rng=np.random.default_rng([0, 1]), record_every=1)
    e = info.value
    msg = str(e)
    assert isinstance(e, DivergenceError) and "\n" not in msg
    for phrase in (f"collapsed at step {e.step}", "F = 0 exactly on all 64 prompts", "gradient is exactly 0",
                   "underflowed to 0", "below float64's range", "eta = 1e+06", "smaller step size"):
        assert phrase in msg, (phrase, msg)
    assert e.step >= 1 and e.eta == 1e6 and list(e.history["step"]) == list(range(e.step))
    b = training_batch(world, 64, 20, p_a=0.6, rng=5)     # the kept state still answers: not collapsed
    assert np.count_nonzero(forward(e.params, b.P)) == 64


def test_collapse_needs_a_zero_gradient_and_names_zero_scores_at_step_0():
    world = make_world(d=8, M1=3, M2=2, V=2, rng=0)
    start = init_params(world.d, rng=0)
    # W_C = 0: F = 0 on every prompt at step 0, but dW_C != 0, so SGD moves on and the loss falls.
    # A detector that looked at F alone would stop this healthy run.
    _, h = train(world, TrainConfig(T=200, B=16, l_tr=6), rng=1, record_every=50,
                 params=Params(start.W_B, 0 * start.W_C, start.w))
    assert h["loss"][0] == 1.0 and h["loss"][-1] < 0.9
    # W_B = W_C = 0 is a saddle: F = 0 and every gradient 0.  Nothing to fall back on: params None.
    with pytest.raises(CollapseError, match="collapsed at step 0.*scores .* are 0.*starting parameters") as info:
        train(world, TrainConfig(T=5, B=16, l_tr=6), "linear_transformer", rng=1,
              params=Params(0 * start.W_B, 0 * start.W_C, start.w))
    assert info.value.params is None and info.value.step == 0 and len(info.value.history["loss"]) == 0


@pytest.mark.parametrize("model", ["mamba", "linear_transformer"])
@pytest.mark.parametrize("B,l_tr", [(1, 1), (1, 20), (64, 20)])
def test_healthy_runs_never_report_a_collapse(model, B, l_tr):
    # A healthy run never outputs an exact 0, so the collapse check must stay silent even on
    # one-prompt minibatches of one-example prompts (if this fails, the check is too eager).  eta =
    # 0.01: one-prompt minibatches of 20 examples drive the linear Transformer past the divergence
    # bound at eta = 0.03 and above.
    for world in (make_world(rng=0), make_world(d=4, M1=2, M2=1, V=1, rng=1)):
        _, h = train(world, TrainConfig(T=300, B=B, l_tr=l_tr, eta=0.01), model, rng=2, record_every=100)
        assert h["step"][-1] == 300


def algorithm_1(world, cfg, model, seed, record_every):
    """Algorithm 1 written out: Psi^(0) and then one minibatch per step from one generator,
    Psi^(t+1) = Psi^(t) - eta grad (eq (19)); (Psi^(T), recorded losses, recorded errors)."""
    rng = np.random.default_rng(seed)
    params = init_params(world.d, cfg.m, cfg.delta, rng)
    losses, errors = [], []
    for t in range(cfg.T + 1):
        batch = training_batch(world, cfg.B, cfg.l_tr, p_a=cfg.p_a, K=cfg.K, kappa_a=cfg.kappa_a, rng=rng)
        if t % record_every == 0 or t == cfg.T:
            F = forward(params, batch.P, model)
            losses.append(float(np.mean(hinge(F, batch.z))))
            errors.append(zero_one_error(F, batch.z))
        if t == cfg.T:
            return params, losses, errors
        grad = gradients(params, batch.P, batch.z, model)
        params = Params(*(p - cfg.eta * g for p, g in zip(params, grad)))


@pytest.mark.parametrize("model", ["mamba", "linear_transformer"])
def test_train_is_algorithm_1_and_nothing_else_draws_or_updates(model):
    # If this fails, train's checks (divergence, collapse, input types) or its bookkeeping moved
    # a random draw or changed an update: the same seed no longer gives Algorithm 1's run.  Both
    # sides do the same float64 operations in the same order in this process, so they must agree
    # exactly; no number recorded on another machine is involved.
    world = make_world(d=8, M1=3, M2=2, V=2, rng=0)
    cfg = TrainConfig(T=40, B=8, eta=0.1, l_tr=6)
    params, losses, errors = algorithm_1(world, cfg, model, seed=3, record_every=10)
    trained, h = train(world, cfg, model, rng=3, record_every=10)
    np.testing.assert_array_equal(h["step"], [0, 10, 20, 30, 40])
    np.testing.assert_array_equal(h["loss"], losses)
    np.testing.assert_array_equal(h["error"], errors)
    for name, a, b in zip(Params._fields, trained, params):
        np.testing.assert_array_equal(a, b, err_msg=name)
    assert len(set(losses)) == len(losses) and not np.array_equal(trained.W_B, init_params(8, rng=3).W_B)


@pytest.mark.parametrize("net", [network("mamba"), network("linear_transformer", n_layers=2),
                                 network("mamba", n_layers=2, prenorm=True)], ids=lambda n: n.name)
def test_runs_trained_together_equal_runs_trained_one_by_one(net):
    # If this fails, train_together does not give each step size the run train() gives it: the
    # step-size rule would then pick from runs that no single command reproduces.  eta = 1e8
    # diverges (its error is handed back, the others go on); delta may differ too.
    world = make_world(rng=0)
    configs = [TrainConfig(T=40, B=16, eta=eta, delta=delta, p_a=0.4)
               for eta, delta in ((1e-4, 0.2), (0.01, 0.2), (1e8, 0.2), (0.005, 0.1))]
    together = train_together(world, configs, net, rng=np.random.default_rng([3, 1]), record_every=7)
    for config, got in zip(configs, together):
        try:
            want = train(world, config, net, rng=np.random.default_rng([3, 1]), record_every=7)
        except DivergenceError as exc:
            assert type(got) is type(exc) and str(got) == str(exc) and got.step == exc.step
            for a, b in zip(_leaves(got.params), _leaves(exc.params)):
                np.testing.assert_array_equal(a, b)
            continue
        for a, b in zip(_leaves(got[0]), _leaves(want[0])):
            np.testing.assert_array_equal(a, b)
        assert got[1].keys() == want[1].keys()
        for key in want[1]:
            np.testing.assert_array_equal(got[1][key], want[1][key])
    assert isinstance(together[2], DivergenceError) and not isinstance(together[0], DivergenceError)


def _leaves(params):
    from numpy_mamba.network import leaves
    return list(leaves(params))


def test_train_together_refuses_configs_that_would_draw_different_minibatches():
    world = make_world(rng=0)
    with pytest.raises(ValueError, match=r"differ only in eta and delta; got different \['B', 'p_a'\]"):
        train_together(world, [TrainConfig(T=5, B=16), TrainConfig(T=5, B=8, p_a=0.3)], rng=0)
    with pytest.raises(ValueError, match="at least one TrainConfig"):
        train_together(world, [], rng=0)

"""Algorithm 1: determinism, the loss falling, divergence and collapse reported, eq (5) error."""
import pickle

import numpy as np
import pytest

from numpy_mamba import (CollapseError, DivergenceError, Params, TrainConfig, forward, init_params, make_world,
                         train, training_batch, zero_one_error)


def test_same_seed_same_run_and_different_seed_differs():
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
    if model == "mamba":                            # issue 2: "well below its starting value"
        assert start > 0.5 and end < 0.1 * start, (start, end)
    else:                                           # no gate: F starts larger, the loss lower
        assert end < 0.5 * start, (start, end)
    assert h["step"][-1] == 2000


def test_record_callback_and_history_shapes():
    world = make_world(rng=0)
    _, h = train(world, TrainConfig(T=20, B=8), rng=0, record_every=5,
                 record=lambda t, p: {"w_norm": np.linalg.norm(p.w)})
    assert list(h["step"]) == [0, 5, 10, 15, 20]
    assert h["w_norm"].shape == (5,) and h["loss"].shape == (5,)


def test_divergence_names_the_step_and_suggests_smaller_eta():
    world = make_world(rng=0)
    with pytest.raises(DivergenceError, match="diverged at step \\d+.*smaller step size"):
        train(world, TrainConfig(T=200, B=8, eta=1e150), rng=0)


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
    wrong, n = group_wrong_counts(F, z, np.array([0, 0, 1, 1]), 2)
    np.testing.assert_array_equal(wrong, [1, 2])
    np.testing.assert_array_equal(n, [2, 2])


# --- issue 14: a failed run keeps its last good state; a collapsed run is an error -------------

def test_divergence_error_keeps_the_last_good_state():
    # If this fails, a diverged run throws away what it learned (vars(e) was empty before).
    world = make_world(rng=0)
    cfg = TrainConfig(T=200, B=8, eta=1e3)
    with pytest.raises(DivergenceError, match="diverged at step \\d+: loss = nan.*smaller step size than eta = 1000") as info:
        train(world, cfg, "linear_transformer", rng=0, record_every=3)
    e = info.value
    assert type(e) is DivergenceError and set(vars(e)) == {"params", "step", "eta", "history"}
    assert e.eta == 1e3 and f"step {e.step}:" in str(e) and e.step > 3
    # e.params is Psi^(step-1): exactly where an identical run stopped one step earlier lands
    p_before, h_before = train(world, TrainConfig(T=e.step - 1, B=8, eta=1e3), "linear_transformer",
                               rng=0, record_every=3)
    for kept, ref in zip(e.params, p_before):
        np.testing.assert_array_equal(kept, ref)
    assert set(e.history) == {"step", "loss", "error"} and isinstance(e.history["loss"], np.ndarray)
    np.testing.assert_array_equal(e.history["step"], np.arange(0, e.step, 3))
    np.testing.assert_array_equal(e.history["loss"], h_before["loss"][: len(e.history["loss"])])
    assert np.all(np.isfinite(e.history["loss"]))
    again = pickle.loads(pickle.dumps(e))            # e.g. sent back from a worker process
    assert again.step == e.step and str(again) == str(e)


def test_huge_eta_collapse_is_an_error_naming_gate_underflow_and_eta():
    # `train --eta 1e6` used to finish "successfully" with loss 1.000 and error 1.000: every
    # gate underflowed, F = 0 on every prompt, the gradient 0.  It must say so and name eta.
    # (Seeds of that command; at other seeds eta = 1e6 may instead blow W_B, W_C up to a NaN.)
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
    # one-prompt minibatches of one-example prompts (if this fails, the check is too eager).
    for world in (make_world(rng=0), make_world(d=4, M1=2, M2=1, V=1, rng=1)):
        _, h = train(world, TrainConfig(T=300, B=B, l_tr=l_tr), model, rng=2, record_every=100)
        assert h["step"][-1] == 300


def test_same_seed_gives_the_numbers_it_always_gave():
    # Histories of the code before issue 14 (robustness checks must not move a single draw or
    # update).  Bit-identical on the machine that recorded them; rtol 1e-12 leaves room only for
    # another BLAS's rounding, never for a changed random stream.
    world = make_world(d=8, M1=3, M2=2, V=2, rng=0)
    expected = {
        "mamba": ([0.9551184757597364, 0.9622188585772083, 0.3695996528288116, 0.2166250474814248,
                   1.2393320804792438], [0.125, 0.5, 0.0, 0.0, 0.375], -1.8213622081203937),
        "linear_transformer": ([0.5486635720261887, 1.94915918353177, 0.8420235210013317, 0.6523883802052134,
                                0.6563724215660839], [0.25, 0.375, 0.375, 0.25, 0.375], -1.4832649025325813),
    }
    for model, (loss, error, w_sum) in expected.items():
        p, h = train(world, TrainConfig(T=40, B=8, eta=0.1, l_tr=6), model, rng=3, record_every=10)
        np.testing.assert_allclose(h["loss"], loss, rtol=1e-12, atol=0)
        np.testing.assert_array_equal(h["error"], error)
        np.testing.assert_allclose(np.sum(p.w), w_sum, rtol=1e-12)

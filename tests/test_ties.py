"""A decision only where there is one: an output within rounding of 0 is a tie (loss.TIE_RTOL,
relative to the size S of the terms that make F, ``Network.F_scale``), counted as an error
whatever sign the rounding gave it, so the error counts are the same under every BLAS kernel."""
import numpy as np
import pytest

from numpy_mamba import TrainConfig, make_world, network, testing_batch, train, zero_one_error
from numpy_mamba.fused import network as fused_network
from numpy_mamba.gates import network as gate_network
from numpy_mamba.loss import TIE_RTOL, misclassified

NETWORKS = {"mamba": network("mamba"), "linear_transformer": network("linear_transformer"),
            "mamba, 3 layers": network("mamba", n_layers=3),
            "linear_transformer, 3 layers": network("linear_transformer", n_layers=3),
            "mamba, 3 layers, pre-norm": network("mamba", n_layers=3, prenorm=True),
            "retnet": gate_network("retnet"), "gla": gate_network("gla")}
# the Networks the commands train: their F and F_scale are computed another way (numpy_mamba/fused)
FUSED = {f"{name}, fused": fused_network(*args) for name, args in [
    ("linear_transformer", ("linear_transformer",)), ("mamba, 3 layers", ("mamba", 3)),
    ("linear_transformer, 3 layers", ("linear_transformer", 3)), ("mamba, 3 layers, pre-norm", ("mamba", 3, True))]}
DELTA = {"linear_transformer, 3 layers": 0.05}      # Algorithm 1's 0.2 starts its cubic layers near |F| ~ 1e3
ETA = {"mamba": 0.5, "linear_transformer": 0.1, "gla": 0.1, "mamba, 3 layers, pre-norm": 0.1}   # else 0.01: none past the divergence bound


def _cancelling_prompts(name="linear_transformer"):
    """The linear Transformer at Algorithm 1's initialisation on 2,000 prompts at alpha = 0.5:
    where same-pattern examples with opposite labels cancel, F is 0 in exact arithmetic."""
    world = make_world(rng=0)
    net = {**NETWORKS, **FUSED}[name]
    params = net.init(world.d, rng=3)
    batch = testing_batch(world, 2000, 20, alpha=0.5, rng=2)
    return net, params, batch, net.F(params, batch.P), net.F_scale(params, batch.P)


@pytest.mark.parametrize("name", ["linear_transformer", "linear_transformer, fused"])
def test_an_output_within_rounding_of_zero_is_an_error_whatever_its_sign(name):
    """If this fails, an F that is 0 in exact arithmetic is counted by the sign of its rounding
    noise, which each BLAS kernel draws differently: the untrained baselines' counts moved
    between CPUs.  Here the noise is given both signs and both labels: every one is an error."""
    net, params, batch, F, S = _cancelling_prompts(name)
    tie = np.abs(F) <= TIE_RTOL * S
    assert 3 <= tie.sum() <= 60, f"setup: expected a few cancelling prompts, found {tie.sum()}"
    assert np.all(np.abs(F[tie]) <= 1e-15 * S[tie]), "setup: the ties should be rounding noise"
    P, z = batch.P[tie], batch.z[tie]
    for label in (z, -z):
        assert net.misclassified(params, P, label).all()
        for noise in (F[tie], -F[tie], 1e-16 * S[tie], -1e-16 * S[tie]):    # what another kernel could give
            assert misclassified(noise, label, S[tie]).all()
    decided = ~tie                   # every other prompt is a decision: flipping its label flips its error
    np.testing.assert_array_equal(net.misclassified(params, batch.P[decided], batch.z[decided]),
                                  ~net.misclassified(params, batch.P[decided], -batch.z[decided]))


@pytest.mark.parametrize("name", [*NETWORKS, *FUSED])
def test_F_scale_is_F_when_every_factor_is_positive_and_bounds_F_otherwise(name):
    """If this fails, F_scale is not the size of the terms that make F: with every factor >= 0 the
    two are one sum (S = F), with signs S bounds |F|, and S ignores the signs of W_B and P."""
    net, world = {**NETWORKS, **FUSED}[name], make_world(rng=0)
    params = net.init(world.d, rng=4, delta=DELTA.get(name.removesuffix(", fused"), 0.2))
    P = testing_batch(world, 16, 20, alpha=0.5, rng=5).P
    F, S = net.F(params, P), net.F_scale(params, P)
    assert np.all(S >= np.abs(F) * (1 - 1e-12)) and np.all(S > 0)
    if not isinstance(params, list):                         # one layer: S of -W_B is S of W_B
        np.testing.assert_allclose(net.F_scale(params._replace(W_B=-params.W_B), P), S, rtol=1e-12)
    positive, P_positive = _absolute(params), np.abs(P)      # |P| is a prompt too: labels +1, query label 0
    np.testing.assert_allclose(net.F_scale(positive, P_positive), net.F(positive, P_positive), rtol=1e-12)


def _absolute(params):
    if isinstance(params, list):
        return [type(p)(*(np.abs(a) for a in p)) for p in params]
    return type(params)(*(np.abs(a) for a in params))


def test_the_tie_tolerance_lies_far_from_every_decision_and_above_every_tie():
    """If this fails, TIE_RTOL is no longer between the two kinds of output: ties (|F| / S of
    rounding noise, ~1e-17) and the decisions of untrained and trained models of every kind.  A
    tolerance near a decision would count real answers as ties; one near the noise would let
    the sign of rounding decide again.  The message prints the measured extremes."""
    world = make_world(rng=0)
    batch = testing_batch(world, 1000, 20, alpha=0.5, rng=2)
    ties, decisions = [], {}
    for name, net in NETWORKS.items():
        net = FUSED.get(f"{name}, fused", net)               # a stack as the commands train and count it
        delta = DELTA.get(name, 0.2)
        untrained = net.init(world.d, rng=3, delta=delta)
        trained, _ = train(world, TrainConfig(T=60, p_a=0.6, eta=ETA.get(name, 0.01), delta=delta), net, rng=1)
        for stage, params in (("untrained", untrained), ("trained", trained)):
            r = np.abs(net.F(params, batch.P)) / net.F_scale(params, batch.P)
            ties += list(r[r < 1e-13])
            decisions[f"{name}, {stage}"] = float(np.min(r[r >= 1e-13]))
    assert ties and max(ties) <= TIE_RTOL / 1e3, f"ties up to {max(ties):.2g}, TIE_RTOL = {TIE_RTOL:g}"
    low = min(decisions, key=decisions.get)
    assert decisions[low] >= TIE_RTOL * 1e3, f"a decision at |F| / S = {decisions[low]:.2g} ({low}): {decisions}"


def test_a_scale_that_overflowed_or_does_not_fit_is_no_decision():
    """If this fails, an S that overflowed (inf, or NaN from inf - inf) lets rounding noise decide,
    or a scale of the wrong shape is silently broadcast."""
    F, z = np.array([1.0, 1.0, 1.0]), np.ones(3)
    np.testing.assert_array_equal(misclassified(F, z, np.array([2.0, np.inf, np.nan])), [False, True, True])
    assert zero_one_error(F, z, np.array([2.0, 2.0, 2.0])) == 0.0
    with pytest.raises(ValueError, match=r"scale must have F's shape \(3,\).*\(2,\)"):
        zero_one_error(F, z, np.ones(2))

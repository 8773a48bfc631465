"""What is trained, as one value (numpy_mamba/network.py): every Network's gradient against central
differences, the one-layer Network equal to the public eq (3) functions, impossible combinations
refused where the Network is made, and the step-size rule scoring a Network by its own loss.

If a test here fails: a Network's analytic gradient is wrong (or differs from the public function
it wraps), a Network accepts a combination it cannot train, or the step-size rule scores a model
by some other model's output (as it once scored the pre-norm stack without its normalisation).
"""
import numpy as np
import pytest

from numpy_mamba import (Network, TrainConfig, forward, gradcheck, gradients, hinge_loss, make_world,
                         network, train, training_batch)
from numpy_mamba import stack
from numpy_mamba.gates import GATES, network as gate_network
from numpy_mamba.loss import hinge
from numpy_mamba.network import leaves, map_leaves
from numpy_mamba.runs.step_size import heldout_loss
from tests.helpers import random_problem

PAPER = [network(m, n_layers, prenorm) for m in ("mamba", "linear_transformer")
         for n_layers, prenorm in ((1, False), (1, True), (2, False), (2, True), (3, False), (3, True))]
EVERY = PAPER + [gate_network(name) for name in GATES]


def _flat(params) -> dict:
    """{leaf index: array}: any Network's params as the dict ``gradcheck`` differentiates."""
    return {str(k): a for k, a in enumerate(leaves(params))}


def _unflat(template, flat: dict):
    it = iter(flat[str(k)] for k in range(len(flat)))
    return map_leaves(lambda _: next(it), template)


def _problem(net: Network, seed: int = 0, d: int = 3, l: int = 4, B: int = 6):
    """Parameters moved away from Algorithm 1's (so every gradient is non-zero) and prompts whose
    labels put some prompts on each side of the hinge, none near its kink."""
    rng = np.random.default_rng(seed)
    params = map_leaves(lambda a: a + rng.normal(0, 0.3, a.shape), net.init(d, rng))
    P = rng.normal(0, 1, (B, d + 1, l + 1))
    P[:, -1, :l] = rng.choice([-1.0, 1.0], size=(B, l))
    P[:, -1, l] = 0.0
    F = net.output(params, P)
    z = np.where(np.arange(B) % 3 == 0, np.sign(F), -np.sign(F))       # every third prompt on the flat side
    if np.min(np.abs(1 - z * F)) < 1e-3 or np.all(1 - z * F > 0):
        z = -np.sign(F)
    return params, P, z


@pytest.mark.parametrize("net", EVERY, ids=lambda n: n.name)
def test_value_and_gradients_match_central_differences(net):
    # If this fails, the hand-written backward pass of this Network is wrong for some parameter.
    params, P, z = _problem(net)
    loss, grads = net.value_and_gradients(params, P, z)
    assert loss == pytest.approx(float(np.mean(hinge(net.output(params, P), z))), rel=1e-15)
    assert [a.shape for a in leaves(grads)] == [a.shape for a in leaves(params)], "gradients not shaped like params"
    report = gradcheck(lambda flat: net.value_and_gradients(_unflat(params, flat), P, z)[0], _flat(params),
                       _flat(grads), tol=1e-7)
    assert report.passed, f"{net.name}: {report}"
    assert max(report.norm_analytic.values()) > 1e-6, "degenerate problem: zero gradient"


@pytest.mark.parametrize("model", ["mamba", "linear_transformer"])
def test_the_one_layer_network_is_the_public_eq3_functions(model):
    # If this fails, training (which runs the Network) and the public functions compute different things.
    params, _, P, z = random_problem(3)
    net = network(model)
    loss, grads = net.value_and_gradients(params, P, z)
    np.testing.assert_array_equal(net.output(params, P), forward(params, P, model))
    assert loss == hinge_loss(params, P, z, model)
    for a, b in zip(grads, gradients(params, P, z, model)):
        np.testing.assert_array_equal(a, b)
    assert net.output(params, P[0]) == forward(params, P[0], model)


def test_a_stack_network_is_the_public_stack_functions():
    # If this fails, a stack's Network and stack.py's public functions disagree.
    net = network("mamba", 3)
    layers, P, z = _problem(net, seed=4)
    loss, grads = net.value_and_gradients(layers, P, z)
    np.testing.assert_array_equal(net.output(layers, P), stack.forward(layers, P))
    assert loss == stack.hinge_loss(layers, P, z)
    for ours, public in zip(grads, stack.gradients(layers, P, z)):
        for a, b in zip(ours, public):
            np.testing.assert_array_equal(a, b)
    assert net.layers(layers) is not None and len(net.layers(layers)) == 3


@pytest.mark.parametrize("kwargs, match", [
    (dict(model="gla"), r"paper's models \('mamba', 'linear_transformer'\); got 'gla'\. .*numpy_mamba\.gates\.network"),
    (dict(model="mamba", n_layers=0), r"n_layers must be an integer >= 1; got 0"),
    (dict(model="mamba", n_layers=2.0), r"n_layers must be an integer >= 1; got 2.0"),
    (dict(model="mamba", prenorm=1), r"prenorm must be True or False; got 1"),
])
def test_an_impossible_combination_is_refused_when_the_network_is_made(kwargs, match):
    # If this fails, a Network that cannot train is made and fails (or trains something else) later.
    with pytest.raises(ValueError, match=match):
        network(**kwargs)


def test_a_network_refuses_parameters_of_another_network():
    # If this fails, a stack's Network accepts eq (3)'s Params (or the reverse) and computes nonsense.
    params, _, P, z = random_problem(5)
    with pytest.raises(ValueError, match="layers must be a list of LayerParams"):
        network("mamba", 3).output(params, P)
    with pytest.raises(ValueError, match=r"params must be numpy_mamba.Params"):
        network("mamba").value_and_gradients(stack.init_stack(5, 2, rng=0), P, z)
    with pytest.raises(ValueError, match=r"this Network has 3 layer\(s\) but params holds 2"):
        network("mamba", 3).check(stack.init_stack(5, 2, rng=0))
    with pytest.raises(ValueError, match=r"params must fit the world's d = 30: .* got parameters for d = 5"):
        network("mamba").check(params, d=30)


@pytest.mark.parametrize("n_layers", [1, 3])
def test_step_size_rule_scores_a_prenorm_stack_by_its_own_loss(n_layers):
    # If this fails, the step-size rule scores the pre-norm stack without its normalisation (a
    # wrong selection loss), or cannot score a one-layer pre-norm stack at all.
    world = make_world(d=8, M1=3, M2=2, V=2, rng=0)
    net = network("mamba", n_layers, prenorm=True)
    config = TrainConfig(T=4, B=8, l_tr=6, eta=0.05, p_a=0.4)
    loss, margin = heldout_loss(lambda seed: world, config, net, 32, (7,), {"eta": 0.1}, 0)
    params, _ = train(world, TrainConfig(T=4, B=8, l_tr=6, eta=0.1, p_a=0.4), net, rng=np.random.default_rng([0, 7, 1]))
    held = training_batch(world, 32, 6, p_a=0.4, K=config.K, kappa_a=config.kappa_a, rng=np.random.default_rng([0, 7, 2]))
    F = stack.output("mamba", params, held.P, prenorm=True)
    assert loss == float(np.mean(hinge(F, held.z))) and margin == float(np.mean(held.z * F))
    without_norm = float(np.mean(hinge(stack.output("mamba", params, held.P), held.z)))
    assert abs(without_norm - loss) > 1e-3, "setup: the two losses must differ for the test to tell them apart"

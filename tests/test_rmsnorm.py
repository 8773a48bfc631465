"""RMS normalisation (numpy_mamba/rmsnorm.py) and the pre-norm stack it serves (stack.py, prenorm=True;
network(model, n_layers, prenorm=True); sgd.TrainConfig(tasks=...)).

If a test here fails, either RMSNorm no longer divides each token column by its root mean square,
its hand-written backward pass disagrees with central differences, the pre-norm stack is no longer
H^(k) = H^(k-1) + O^(k)(RMSNorm(H^(k-1))) or its backward pass is wrong, the default stack changed,
bad input slips through, or SGD does not train what TrainConfig asks for (task set, architecture).
"""
import numpy as np
import pytest

import numpy_mamba.sgd as sgd
from numpy_mamba import (Params, TrainConfig, forward as forward_eq3, gradcheck, make_world, network, train,
                         training_batch)
from numpy_mamba.layer import layer_forward
from numpy_mamba.loss import hinge
from numpy_mamba.rmsnorm import EPS, rms_norm, rms_norm_backward, rms_norm_forward
from numpy_mamba.scan import scan_outputs
from numpy_mamba.stack import F_and_gradients, LayerParams, init_stack, output, stack_forward

MODELS = ("mamba", "linear_transformer")


# ---------------------------------------------------------------- RMSNorm on its own
def test_rms_norm_known_answer():
    # If this fails, RMSNorm does not divide each column by sqrt(mean of squares + eps).
    H = np.array([[3.0, 0.0], [4.0, 0.0]])                 # (D, N) = (2, 2): columns (3, 4) and (0, 0)
    X = rms_norm(H)
    np.testing.assert_allclose(X[:, 0], np.array([3.0, 4.0]) / np.sqrt(12.5 + EPS), rtol=1e-15)
    np.testing.assert_array_equal(X[:, 1], 0.0)             # eps keeps an all-zero column finite
    Hb = np.random.default_rng(0).normal(0, 7.0, (4, 6, 5))
    np.testing.assert_allclose(np.sqrt(np.mean(rms_norm(Hb) ** 2, axis=1)), 1.0, atol=1e-6)


@pytest.mark.parametrize("shape, scale", [((1, 2, 1), 1.0), ((1, 1, 2), 1e-3), ((2, 4, 2), 1.0), ((3, 5, 5), 3.0), ((2, 6, 3), 1e-3)])
def test_rms_norm_backward_matches_central_differences(shape, scale):
    # If this fails, rms_norm_backward is not the derivative of rms_norm_forward (the 1/r path or
    # the path through r); scale 1e-3 puts eps at a visible share of r^2.
    rng = np.random.default_rng(sum(shape))
    H, dX = rng.normal(0, scale, shape), rng.normal(size=shape)
    _, cache = rms_norm_forward(H)
    report = gradcheck(lambda h: float(np.sum(dX * rms_norm_forward(h)[0])), H, rms_norm_backward(dX, cache),
                       eps=1e-5 * scale)
    assert report.passed, str(report)
    assert max(report.rel_err.values()) < 1e-8


@pytest.mark.parametrize("bad, message", [(np.ones(3), r"shape \(D, N\) or \(B, D, N\).*got \(3,\)"),
                                          (np.ones((2, 0)), r"D, N >= 1.*got \(2, 0\)"),
                                          (np.array([[1.0, np.nan]]), "finite"),
                                          (np.ones((2, 2)) * 1j, "real")])
def test_rms_norm_refuses_bad_input(bad, message):
    # If this fails, rms_norm accepts input it cannot normalise without saying what it expected.
    with pytest.raises(ValueError, match=message):
        rms_norm(bad)
    with pytest.raises(ValueError, match="eps must be a positive"):
        rms_norm(np.ones((2, 2)), eps=0.0)


# ---------------------------------------------------------------- the pre-norm stack
def _problem(kind, model, n_layers, seed=0, d=3, B=6):
    """Seeded stack and prompts: "generic" (l = 4), "l1" (l = 1) or "saturated" (layer-1 gate logits
    |w_j^T x_i| >= 30 on every other token of the normalised input).  z puts the prompt with the
    largest |F| (> 2) on the flat side of the hinge and every other one on the active side."""
    rng = np.random.default_rng(seed)
    l, d0 = (1 if kind == "l1" else 4), d + 1
    P = rng.normal(0, 1, (B, d0, l + 1))
    P[:, -1, :l] = rng.choice([-1.0, 1.0], size=(B, l))
    P[:, -1, l] = 0.0
    scale = (0.5 if model == "mamba" else 0.3) / np.sqrt(n_layers)
    layers = [LayerParams(rng.normal(0, scale, (d0 + 1, d0)), rng.normal(0, scale, (d0 + 1, d0)),
                          rng.normal(0, 0.7, (d0, d0))) for _ in range(n_layers)]
    if kind == "saturated":
        u = np.zeros(d0)
        u[:d] = rng.normal(size=d)
        u /= np.linalg.norm(u)
        P -= u[None, :, None] * np.einsum("d,bdi->bi", u, P)[:, None, :]
        P[:, :, ::2] += 1.5 * u[:, None] * rng.choice([-1.0, 1.0], size=(B, 1, 1))
        layers[0] = layers[0]._replace(W=layers[0].W + np.outer(u, rng.uniform(60, 80, d0)))
    F = output(model, layers, P, prenorm=True)
    for _ in range(20):                                     # the last layer's O is linear in its W_C
        if np.abs(F).max() > 2:
            break
        layers[-1] = layers[-1]._replace(W_C=2 * layers[-1].W_C)
        F = output(model, layers, P, prenorm=True)
    sign = np.where(F >= 0, 1.0, -1.0)
    return layers, P, np.where(np.abs(F) == np.abs(F).max(), sign, -sign)


def _flat(layers):
    return {f"{name}[{k}]": a for k, layer in enumerate(layers, 1) for name, a in zip(layer._fields, layer)}


def _layers(flat, n_layers):
    return [LayerParams(flat[f"W_B[{k}]"], flat[f"W_C[{k}]"], flat[f"W[{k}]"]) for k in range(1, n_layers + 1)]


@pytest.mark.parametrize("model, kind, n_layers", [
    ("mamba", "generic", 3),                  # every parameter, the norm's backward in every layer
    ("mamba", "l1", 1),                       # l = 1, one pre-norm layer
    ("mamba", "saturated", 2),                # saturated gates on the normalised input
    ("linear_transformer", "generic", 2),     # no gate
])
def test_prenorm_stack_gradients_match_central_differences(model, kind, n_layers):
    # If this fails, the pre-norm backward pass (layer backward, then RMSNorm backward, then the
    # residual sum) is wrong for some W_B, W_C or W of some layer.  Both sides of the hinge occur.
    layers, P, z = _problem(kind, model, n_layers, seed=n_layers)
    zF = z * output(model, layers, P, prenorm=True)
    assert np.sum(zF > 1) >= 1 and np.sum(zF < 1) >= 1, "need both sides of the hinge"
    assert np.abs(1 - zF).min() > 1e-3, "a prompt sits on the hinge's kink"
    if kind == "saturated":
        a = np.abs(layers[0].W.T @ rms_norm(P))
        assert a.max() > 30 and np.mean(a > 30) > 0.3
    _, analytic = F_and_gradients(model, layers, P, z, prenorm=True)

    def loss(flat):
        return float(np.mean(hinge(output(model, _layers(flat, n_layers), P, prenorm=True), z)))

    report = gradcheck(loss, _flat(layers), _flat(analytic))
    assert report.passed, str(report)
    assert max(report.rel_err.values()) < 1e-7


@pytest.mark.parametrize("model", MODELS)
def test_prenorm_forward_is_the_scan_of_the_normalised_input(model):
    # If this fails, the pre-norm stack is not H^(k) = H^(k-1) + O^(k)(RMSNorm(H^(k-1))) with O^(k)
    # the eq (1) scan, or one pre-norm layer is not eq (3) on the normalised prompt.
    layers, P, _ = _problem("generic", model, 3, seed=4)
    H = P
    for layer in layers:
        H = H + layer_forward(rms_norm(H), layer, model)[0]          # layer_forward is the scan: test_stack.py
    np.testing.assert_allclose(output(model, layers, P, prenorm=True), H[:, -1, -1], rtol=1e-10, atol=1e-12)
    one = layers[0]
    F_one = output(model, [one], P, prenorm=True)
    np.testing.assert_allclose(F_one, forward_eq3(Params(one.W_B, one.W_C, one.W[:, -1]), rms_norm(P), model),
                               rtol=1e-12, atol=1e-13)
    if model == "mamba":
        np.testing.assert_allclose(F_one, scan_outputs(one.W_B, one.W_C, one.W, rms_norm(P))[:, -1, -1],
                                   rtol=1e-10, atol=1e-12)


def test_default_stack_is_the_plain_residual_stack():
    # If this fails, the pre-norm option leaked into the default path (prenorm=False must compute
    # H^(k) = H^(k-1) + O^(k)(H^(k-1)) with exactly the same floats), or the option does nothing.
    layers, P, _ = _problem("generic", "mamba", 3, seed=5)
    H = P
    for layer in layers:
        H = H + layer_forward(H, layer)[0]
    F_default, _ = stack_forward(layers, P)
    np.testing.assert_array_equal(F_default, H[:, -1, -1])
    np.testing.assert_array_equal(stack_forward(layers, P)[0], stack_forward(layers, P, prenorm=False)[0])
    assert not np.allclose(stack_forward(layers, P, prenorm=True)[0], F_default)


# ---------------------------------------------------------------- SGD: TrainConfig(tasks=...), network(prenorm=...)
def test_train_config_refuses_unknown_task_set_and_network_an_unknown_architecture():
    # If this fails, a typo in the task set or the architecture would train something else silently.
    with pytest.raises(ValueError, match=r"tasks must be one of \('cycle', 'all'\); got 'pairs'"):
        TrainConfig(tasks="pairs")
    with pytest.raises(ValueError, match="prenorm must be True or False; got 'yes'"):
        network("mamba", 3, prenorm="yes")


@pytest.mark.parametrize("tasks", ["cycle", "all"])
def test_train_draws_its_minibatches_from_the_chosen_task_set(monkeypatch, tasks):
    # If this fails, TrainConfig.tasks does not reach training_batch: "cycle" must be its default
    # (T_tr of Condition 1, passed as None so the default path is unchanged), "all" every pair of T.
    world, seen = make_world(d=12, M1=4, M2=4, V=2, rng=0), []

    def spy(*args, tasks=None, **kwargs):
        seen.append(tasks)
        return training_batch(*args, tasks=tasks, **kwargs)

    monkeypatch.setattr(sgd, "training_batch", spy)
    train(world, TrainConfig(T=2, B=8, l_tr=4, eta=0.1, tasks=tasks), "mamba", rng=0)
    assert len(seen) == 3
    for t in seen:
        if tasks == "cycle":
            assert t is None
        else:
            np.testing.assert_array_equal(t, world.all_tasks())


@pytest.mark.parametrize("n_layers", [1, 3])
def test_train_with_prenorm_takes_the_prenorm_gradient_step(n_layers):
    # If this fails, network(prenorm=True) does not train the pre-norm stack with eq (19).
    world = make_world(d=12, M1=4, M2=4, V=2, rng=1)
    config = TrainConfig(T=1, B=8, l_tr=4, eta=0.05, p_a=0.4)
    layers, _ = train(world, config, network("mamba", n_layers, prenorm=True), rng=7)
    rng = np.random.default_rng(7)
    start = init_stack(world.d, n_layers, None, config.delta, rng)
    batch = training_batch(world, config.B, config.l_tr, p_a=config.p_a, K=config.K, kappa_a=config.kappa_a, rng=rng)
    _, grad = F_and_gradients("mamba", start, batch.P, batch.z, prenorm=True)
    assert isinstance(layers, list) and len(layers) == n_layers
    for got, p, g in zip(layers, start, grad):
        for a, b, c in zip(got, p, g):
            np.testing.assert_array_equal(a, b - config.eta * c)
    assert np.abs(grad[0].W_B).max() > 0

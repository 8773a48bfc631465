"""The residual stack of Section 4.2 (numpy_mamba/stack.py, numpy_mamba/layer.py).

The multi-layer architecture is our choice (specified in numpy_mamba/stack.py): H^(0) = P,
H^(k) = H^(k-1) + O^(k) with O^(k) every output of the eq (1) scan on H^(k-1), F = H^(L)[d+1, l+1].
If a test here fails, either a layer no longer computes the eq (1) scan, the one-layer stack is
no longer the paper's eq (3) model, the hand-written backward pass disagrees with central
differences, the gates lose precision on long prompts, bad input slips through, or training
(one layer: bit for bit Algorithm 1 on eq (3)) changed.
"""
import numpy as np
import pytest

import numpy_mamba.sgd as sgd
from numpy_mamba import (DivergenceError, Params, TrainConfig, forward as forward_eq3, gradcheck,
                         gradients as gradients_eq3, init_params, make_world, network, train, training_batch)
from numpy_mamba.layer import LayerCache
from numpy_mamba.loss import hinge
from numpy_mamba.model import output
from numpy_mamba.scan import scan_outputs
from numpy_mamba.stack import (LayerParams, forward, forward_with_caches, gradients, hinge_loss, init_stack,
                               layer_backward, layer_forward)
from tests.helpers import saturated_long_prompt, stack_problem

MODELS = ("mamba", "linear_transformer")


def _flat(layers):
    return {f"{name}[{k}]": a for k, layer in enumerate(layers, 1) for name, a in zip(layer._fields, layer)}


def _layers(flat, n_layers):
    return [LayerParams(flat[f"W_B[{k}]"], flat[f"W_C[{k}]"], flat[f"W[{k}]"]) for k in range(1, n_layers + 1)]


def _hidden_states(layers, P, model="mamba"):
    """[H^(0), ..., H^(L)] and [O^(1), ..., O^(L)] through layer_forward."""
    H, O_all = [P], []
    for layer in layers:
        O, _ = layer_forward(H[-1], layer, model)
        O_all.append(O)
        H.append(H[-1] + O)
    return H, O_all


# ---------------------------------------------------------------- forward: the eq (1) scan


@pytest.mark.parametrize("kind", ["generic", "l1", "saturated"])
def test_every_layer_output_is_the_eq1_scan_of_its_input(kind):
    # If this fails, layer_forward's closed form is not the eq (1) scan (h_0 = 0, A = -I, ZOH)
    # with channel j gated by W[:, j], run over H^(k-1).  From layer 2 on, H's query label slot
    # holds F so far, which scan_outputs refuses as a prompt (eq (2) wants 0 there).  The scan is
    # causal, so we append one zero column: o_1..o_{l+1} of the longer input are exactly those of
    # H^(k-1), and scan_outputs's check sees the appended 0.  No re-implementation of the scan.
    layers, P, _ = stack_problem(kind, "mamba", 3, seed=4)
    H, O_all = _hidden_states(layers, P)
    assert np.all(H[1][:, -1, -1] != 0)                  # the case the column trick is for
    with pytest.raises(ValueError, match="query's label slot"):
        scan_outputs(layers[1].W_B, layers[1].W_C, layers[1].W, H[1])
    for k, (layer, O) in enumerate(zip(layers, O_all), 1):
        padded = np.concatenate([H[k - 1], np.zeros(H[k - 1].shape[:2] + (1,))], axis=2)
        o = scan_outputs(layer.W_B, layer.W_C, layer.W, padded)[:, :-1, :].transpose(0, 2, 1)   # (B, d+1, l+1)
        np.testing.assert_allclose(O, o, rtol=0, atol=1e-12 * max(1.0, np.abs(o).max()), err_msg=f"layer {k}")


def test_linear_transformer_layer_is_causal_linear_attention_written_literally():
    # If this fails, model="linear_transformer" is not o_t = sum_{i<=t} h_i h_i^T W_B^T W_C h_t.
    layers, P, _ = stack_problem("generic", "linear_transformer", 2, seed=5)
    H, O_all = _hidden_states(layers, P, "linear_transformer")
    for k, layer in enumerate(layers):
        Hk = H[k]
        literal = np.zeros_like(Hk)
        for n in range(Hk.shape[0]):
            for t in range(Hk.shape[2]):
                for i in range(t + 1):
                    literal[n, :, t] += Hk[n, :, i] * (Hk[n, :, i] @ layer.W_B.T @ layer.W_C @ Hk[n, :, t])
        np.testing.assert_allclose(O_all[k], literal, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("model", MODELS)
def test_known_answer_two_layer_stack_by_hand(model):
    # d = 1, l = 1, P = [[1, 2], [1, 0]], W_B = W_C = I, W = 0 (every sigma = 1/2).  By hand:
    # s_{11} = 2, s_{12} = 2, s_{22} = 4.  Mamba: G_{11} = G_{22} = 1/2, G_{12} = 1/4, so
    # O^(1) = [[1, 4.5], [1, 0.5]], F^(1) = 0.5 (eq (3): G_1 y_1 s_1 = 1/4 * 1 * 2); H^(1) = [[2, 6.5],
    # [2, 0.5]], s_{12} = 14, s_{22} = 42.5, F^(2) = 0.5 + 1/4 * 2 * 14 + 1/2 * 0.5 * 42.5 = 18.125.
    # Linear Transformer (G = 1): O^(1) = [[2, 10], [2, 2]], F^(1) = 2; H^(1) = [[3, 12], [3, 2]],
    # s_{12} = 42, s_{22} = 148, F^(2) = 2 + 3 * 42 + 2 * 148 = 424: the cubic growth per layer.
    P = np.array([[1.0, 2.0], [1.0, 0.0]])
    layer = LayerParams(np.eye(2), np.eye(2), np.zeros((2, 2)))
    O, _ = layer_forward(P[None], layer, model)
    expected_O = [[1.0, 4.5], [1.0, 0.5]] if model == "mamba" else [[2.0, 10.0], [2.0, 2.0]]
    np.testing.assert_allclose(O[0], expected_O, rtol=0, atol=1e-15)
    assert forward([layer], P, model) == pytest.approx(0.5 if model == "mamba" else 2.0, abs=1e-15)
    assert forward([layer, layer], P, model) == pytest.approx(18.125 if model == "mamba" else 424.0, abs=1e-12)


# ---------------------------------------------------------------- one layer = eq (3)


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("kind", ["random", "paper_scale"])
def test_one_layer_stack_is_eq3_with_its_gradients(model, kind):
    # If this fails, a one-layer stack is not the paper's model: F must be eq (3) with
    # w = W[:, -1], and (dW_B, dW_C, dW[:, -1]) must be eqs (118), (93), (135) of core gradients().
    # The other columns of dW are exactly 0: in one layer only the label channel d+1 of o_{l+1}
    # reaches F = H^(1)[d+1, l+1], and channel j's output depends on W only through w_j, so
    # dL/dO is 0 on every other channel and nothing flows back to w_1..w_d.
    if kind == "paper_scale":                  # d = 30, l = 20 training prompts, Algorithm 1 + noise
        world = make_world(rng=0)
        batch = training_batch(world, 32, 20, p_a=0.4, rng=1)
        rng = np.random.default_rng(2)
        layer = LayerParams(*(a + rng.normal(0, 0.1, a.shape) for a in init_stack(30, 1, rng=3)[0]))
        P, z = batch.P, batch.z
    else:
        (layer,), P, z = stack_problem("generic", model, 1, seed=6)
    params = Params(layer.W_B, layer.W_C, layer.W[:, -1])
    F = forward([layer], P, model)
    np.testing.assert_allclose(F, forward_eq3(params, P, model), rtol=0, atol=1e-12 * max(1, np.abs(F).max()))
    active = 1 - z * F > 0
    assert active.any() and (~active).any() if kind == "random" else active.any()
    (g,) = gradients([layer], P, z, model)
    core = gradients_eq3(params, P, z, model)
    for name, a, b in [("W_B", g.W_B, core.W_B), ("W_C", g.W_C, core.W_C), ("w", g.W[:, -1], core.w)]:
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-12 * max(1e-12, np.abs(b).max()), err_msg=name)
    assert np.all(g.W[:, :-1] == 0.0)
    assert np.abs(g.W_B).max() > 1e-6                    # not a comparison of zeros


def test_one_layer_init_is_algorithm1_init():
    # If this fails, init_stack's layer 1 no longer starts where eq (3)'s init_params does.
    (layer,) = init_stack(6, 1, rng=11)
    ref = init_params(6, rng=11)
    np.testing.assert_array_equal(layer.W_B, ref.W_B)
    np.testing.assert_array_equal(layer.W_C, ref.W_C)
    np.testing.assert_array_equal(layer.W[:, -1], ref.w)


def test_init_stack_is_algorithm1_for_every_layer():
    # If this fails, a layer is not initialised as Algorithm 1 says (diagonal delta, N(0, 1/(d+1))).
    d, delta = 30, 0.1
    layers = init_stack(d, 3, delta=delta, rng=0)
    assert len(layers) == 3
    expected_B = np.zeros((d + 1, d + 1))
    expected_B[np.arange(d), np.arange(d)] = delta
    for layer in layers:
        np.testing.assert_array_equal(layer.W_B, expected_B)
        np.testing.assert_array_equal(layer.W_C, expected_B)
        assert layer.W.shape == (d + 1, d + 1)
        assert abs(layer.W.std() * np.sqrt(d + 1) - 1) < 0.1 and abs(layer.W.mean()) < 0.05
    assert not np.allclose(layers[0].W, layers[1].W)
    assert init_stack(4, 2, m=7, rng=0)[0].W_B.shape == (7, 5)


# ---------------------------------------------------------------- backward: central differences


@pytest.mark.parametrize("model, kind, n_layers", [
    ("mamba", "generic", 3),                  # every parameter of every layer, through two residual paths
    ("mamba", "l1", 2),                       # l = 1: one context example
    ("mamba", "saturated", 2),                # layer-1 gate logits of 30-50
    ("linear_transformer", "generic", 3),     # no gate: dW exactly 0
    ("linear_transformer", "l1", 1),
])
def test_stack_gradients_match_central_differences(model, kind, n_layers):
    # If this fails, layer_backward (the (B, D, N, N) gate tensor, the exercise's version) or the
    # residual bookkeeping in stack_backward is wrong for some W_B, W_C or W of some layer.  Each
    # problem has prompts on both sides of the hinge (the flat side must contribute nothing).
    layers, P, z = stack_problem(kind, model, n_layers, seed=n_layers)
    zF = z * forward(layers, P, model)
    assert np.sum(zF > 1) >= 1 and np.sum(zF < 1) >= 1, "need both sides of the hinge"
    assert np.abs(1 - zF).min() > 1e-3, "a prompt sits on the hinge's kink"
    if kind == "saturated":
        a = np.abs(layers[0].W.T @ P)
        assert a.max() > 30 and np.mean(a > 30) > 0.3
    analytic = gradients(layers, P, z, model)
    assert all(isinstance(c, LayerCache) for c in forward_with_caches(layers, P, model)[1])
    report = gradcheck(lambda flat: hinge_loss(_layers(flat, n_layers), P, z, model), _flat(layers), _flat(analytic))
    assert report.passed, str(report)
    assert max(report.rel_err.values()) < 1e-7
    if model == "linear_transformer":
        assert all(np.all(g.W == 0) for g in analytic)


def test_prompts_on_the_flat_side_contribute_nothing():
    # If this fails, the backward pass leaks gradient from prompts with z F >= 1 (eq (4) is flat there).
    layers, P, z = stack_problem("generic", "mamba", 2, seed=8)
    active = z * forward(layers, P) < 1
    g_all, g_active = gradients(layers, P, z), gradients(layers, P[active], z[active])
    for ga, gb in zip(g_all, g_active):
        for a, b in zip(ga, gb):                          # the mean is over all B prompts
            np.testing.assert_allclose(a * len(z), b * active.sum(), rtol=1e-12, atol=1e-14)


def test_layer_backward_is_the_adjoint_of_layer_forward_for_any_upstream_gradient():
    # If this fails, dH (all paths: values, keys, queries, gates) is wrong for a dO that is not
    # concentrated on the query column, as every layer but the last receives.
    (layer,), P, _ = stack_problem("generic", "mamba", 1, seed=9)
    H = P + np.random.default_rng(0).normal(0, 0.3, P.shape)        # query label slot not 0
    dO = np.random.default_rng(1).normal(size=H.shape)
    O, cache = layer_forward(H, layer)
    dH, _ = layer_backward(dO, cache)
    report = gradcheck(lambda h: np.sum(dO * layer_forward(h, layer)[0]), H, dH)
    assert report.passed, str(report)


# ---------------------------------------------------------------- long prompts


def test_long_prompt_saturated_gates_stay_finite_and_match_direct_products():
    # If this fails, the gates lose precision or overflow on long prompts: l = 1000 with every
    # |w_j^T h_i| = 50 must give finite outputs and gradients, and every gate the direct product
    # sigma(a_i) prod (1 - sigma(a_k)) can represent (> 1e-300) must match it to 1e-12.
    d, l = 2, 1000
    layer, P = saturated_long_prompt(d, l)               # a_{j,i} = 50 x_{i,1} = +-50 on every token
    _, caches = forward_with_caches([layer, layer], P)
    G, a = caches[0].G[0], caches[0].a[0]
    assert np.all(np.abs(a) == 50.0)
    keep = 1.0 / (1.0 + np.exp(a))                        # 1 - sigma(a), exact for |a| = 50
    for j in range(d + 1):
        for t in (0, 1, 17, 500, l):
            direct = np.array([(1.0 / (1.0 + np.exp(-a[j, i]))) * np.prod(keep[j, i + 1:t + 1])
                               for i in range(t + 1)])
            ok = direct > 1e-300
            assert ok.sum() >= 1
            np.testing.assert_allclose(G[j, :t + 1, t][ok], direct[ok], rtol=1e-12, atol=0)
            assert np.all(G[j, :t + 1, t][~ok] < 1e-290) and np.all(G[j, t + 1:, t] == 0)
    z = np.array([1.0])
    assert np.isfinite(forward([layer, layer], P))
    assert all(np.all(np.isfinite(x)) for g in gradients([layer, layer], P, z) for x in g)


# ---------------------------------------------------------------- bad input


def _good():
    layers, P, z = stack_problem("generic", "mamba", 3, seed=0)
    return layers, P, z


@pytest.mark.parametrize("case, match", [
    ("mismatched_W_C", r"layer 2: W_C has shape \(5, 3\); expected W_B's shape \(5, 4\)"),
    ("mismatched_W", r"layer 3: W has shape \(3, 3\); expected \(d\+1, d\+1\) = \(4, 4\)"),
    ("wrong_d", r"layer 2: W_B has shape \(5, 6\); expected \(m, d\+1\) with d\+1 = 4"),
    ("empty", r"layers is empty"),
    ("nan", r"layer 3: W must be finite; found nan"),
    ("bare_layer", r"must be a list of LayerParams.*Wrap a single layer"),
    ("core_params", r"layer 1 must be LayerParams\(W_B, W_C, W\); got Params"),
    ("dict", r"must be a list of LayerParams .*got dict"),
    ("P_rows", r"P has 5 rows but the parameters expect d\+1 = 4"),
    ("P_label", r"query's label slot"),
    ("other_model", r"a stack is built from the paper's models"),
])
def test_bad_input_is_refused_with_what_was_wrong(case, match):
    # If this fails, garbage reaches the model silently or the message does not say what was wrong.
    layers, P, z = _good()
    model = "mamba"
    if case == "mismatched_W_C":
        layers[1] = layers[1]._replace(W_C=layers[1].W_C[:, :3])
    elif case == "mismatched_W":
        layers[2] = layers[2]._replace(W=np.zeros((3, 3)))
    elif case == "wrong_d":
        layers[1] = LayerParams(np.zeros((5, 6)), np.zeros((5, 6)), np.zeros((6, 6)))
    elif case == "empty":
        layers = []
    elif case == "nan":
        W = layers[2].W.copy()
        W[1, 2] = np.nan
        layers[2] = layers[2]._replace(W=W)
    elif case == "bare_layer":
        layers = layers[0]
    elif case == "core_params":
        layers = [Params(layers[0].W_B, layers[0].W_C, layers[0].W[:, -1])]
    elif case == "dict":
        layers = {"layer 1": layers[0]}
    elif case == "P_rows":
        P = np.concatenate([P, P[:, :1]], axis=1)
        P[:, -1, -1] = 0
    elif case == "P_label":
        P = P.copy()
        P[:, -1, -1] = 1.0
    elif case == "other_model":
        model = "gla"
    for call in (lambda: forward(layers, P, model), lambda: hinge_loss(layers, P, z, model),
                 lambda: gradients(layers, P, z, model)):
        with pytest.raises(ValueError, match=match):
            call()


@pytest.mark.parametrize("n_layers", [0, -1, 1.5, True, "3"])
def test_n_layers_must_be_a_positive_integer(n_layers):
    # If this fails, a stack of no layers (or of 1.5 layers) would be built or trained.
    with pytest.raises(ValueError, match="n_layers must be an integer >= 1"):
        init_stack(4, n_layers, rng=0)
    with pytest.raises(ValueError, match="n_layers must be an integer >= 1"):
        network("mamba", n_layers)


@pytest.mark.parametrize("case, match", [
    ("count", r"this Network has 3 layer\(s\) but params holds 2"),
    ("nan", r"layer 1: W_B must be finite"),
    ("d", r"params must fit the world's d = 30: .* got parameters for d = 5"),
    ("eq3_params", r"layers must be a list of LayerParams"),
])
def test_training_a_stack_on_bad_input_trains_nothing(case, match):
    # If this fails, train() starts SGD on a stack it should have refused.
    world = make_world(rng=0)
    layers = init_stack(30, 3, rng=0)
    if case == "count":
        layers = layers[:2]
    elif case == "nan":
        layers[0] = layers[0]._replace(W_B=np.full_like(layers[0].W_B, np.nan))
    elif case == "d":
        layers = init_stack(5, 3, rng=0)
    elif case == "eq3_params":
        layers = init_params(30, rng=0)
    steps = []
    with pytest.raises(ValueError, match=match):
        train(world, TrainConfig(T=3, B=4), network("mamba", 3), rng=0, params=layers,
              record=lambda t, p: steps.append(t) or {})
    assert steps == []


@pytest.mark.parametrize("model, n_layers, prenorm, match", [
    ("gla", 1, False, r"paper's models .* numpy_mamba.gates.network"),
    ("gla", 3, False, r"paper's models"),
    ("transformer", 1, False, r"paper's models \('mamba', 'linear_transformer'\)"),
    ("mamba", 0, False, r"n_layers must be an integer >= 1"),
    ("mamba", 3, "yes", r"prenorm must be True or False"),
])
def test_an_impossible_network_is_refused_when_it_is_made(model, n_layers, prenorm, match):
    # If this fails, a combination that cannot train is accepted and fails later (or runs wrongly).
    with pytest.raises(ValueError, match=match):
        network(model, n_layers, prenorm)


# ---------------------------------------------------------------- training


def test_n_layers_1_trains_bit_for_bit_as_algorithm_1_on_eq3():
    # If this fails, the stack's code path changed the one-layer model's training.  The reference
    # is Algorithm 1 on eq (3), written out here.
    world, cfg = make_world(rng=0), TrainConfig(T=25, B=16, eta=0.1)
    rng = np.random.default_rng(3)
    params = init_params(world.d, cfg.m, cfg.delta, rng)
    losses = []
    for t in range(cfg.T + 1):
        batch = training_batch(world, cfg.B, cfg.l_tr, p_a=cfg.p_a, K=cfg.K, kappa_a=cfg.kappa_a, rng=rng)
        losses.append(float(np.mean(hinge(output("mamba", params, batch.P), batch.z))))
        if t == cfg.T:
            break
        grad = gradients_eq3(params, batch.P, batch.z)
        params = Params(*(p - cfg.eta * g for p, g in zip(params, grad)))
    for net in ("mamba", network("mamba", n_layers=1)):
        trained, history = train(world, cfg, net, rng=3, record_every=1)
        np.testing.assert_array_equal(history["loss"], losses)
        for a, b in zip(trained, params):
            np.testing.assert_array_equal(a, b)


def test_stack_training_sees_the_same_minibatches_and_lowers_the_loss(monkeypatch):
    # If this fails, a 3-layer run draws different minibatches than a 1-layer run with the same
    # seed (so depths cannot be compared prompt for prompt), or SGD on the stack does not descend.
    seen = {1: [], 3: []}
    real = sgd.training_batch
    world = make_world(rng=0)
    for n_layers in (1, 3):
        monkeypatch.setattr(sgd, "training_batch", lambda *a, _n=n_layers, **k: seen[_n].append(real(*a, **k)) or seen[_n][-1])
        params, history = train(world, TrainConfig(T=60, B=16, eta=0.05, p_a=0.4), network("mamba", n_layers),
                                rng=2, record_every=1)
    assert len(seen[3]) == len(seen[1]) == 61
    for b1, b3 in zip(seen[1], seen[3]):
        np.testing.assert_array_equal(b1.P, b3.P)
    assert isinstance(params, list) and len(params) == 3 and all(isinstance(p, LayerParams) for p in params)
    assert np.mean(history["loss"][-10:]) < 0.5 * history["loss"][0], history["loss"]


def test_linear_transformer_stack_at_delta_0_2_diverges_and_is_reported():
    # If this fails, either the cubic growth of the ungated stack (see stack.py) is gone or
    # divergence is no longer detected: a 3-layer LT at Algorithm 1's delta = 0.2 starts with
    # |F| ~ 1e6 on training prompts and its first SGD steps overflow even at eta = 0.01.
    with pytest.raises(DivergenceError, match="diverged at step"):
        train(make_world(rng=0), TrainConfig(T=50, B=16, eta=0.01, p_a=0.4),
              network("linear_transformer", 3), rng=0)


def test_initial_output_scale_grows_with_depth_without_a_gate():
    # If this fails, the initial output scale of the stack changed: without a
    # gate each layer's output is cubic in its input, so the LT's initial |F| explodes with depth
    # at delta = 0.2 and falls steeply with delta; Mamba's gates keep it far smaller.
    world = make_world(rng=0)
    P = training_batch(world, 256, 20, p_a=0.4, rng=1).P
    scale = {(model, L, delta): np.median(np.abs(forward(init_stack(world.d, L, delta=delta, rng=2), P, model)))
             for model in MODELS for L in (1, 3) for delta in (0.2, 0.05)}
    lt, mamba = "linear_transformer", "mamba"
    assert scale[lt, 3, 0.2] > 1e4 * scale[lt, 1, 0.2] and scale[lt, 1, 0.2] > 1
    assert scale[lt, 3, 0.05] < 1 < scale[lt, 3, 0.2]
    assert scale[mamba, 3, 0.2] < 1e-4 * scale[lt, 3, 0.2]


def test_exercise_solution_equals_the_package_layer_backward():
    # If this fails, tests/solutions/stack_solution.py (the reference answer of the
    # layer_backward exercise) no longer computes the package's backward pass, or the LayerCache
    # it documents changed.
    import importlib.util
    from pathlib import Path
    path = Path(__file__).resolve().parents[1] / "tests" / "solutions" / "stack_solution.py"
    spec = importlib.util.spec_from_file_location("stack_solution", path)
    solution = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(solution)
    for kind in ("generic", "l1", "saturated"):
        (layer,), P, _ = stack_problem(kind, "mamba", 1, seed=12)
        H = P + np.random.default_rng(0).normal(0, 0.3, P.shape)     # query label slot not 0
        dO = np.random.default_rng(1).normal(size=H.shape)
        _, cache = layer_forward(H, layer)
        dH, grads = solution.layer_backward(dO, cache)
        dH_ref, grads_ref = layer_backward(dO, cache)
        np.testing.assert_allclose(dH, dH_ref, rtol=0, atol=1e-12 * np.abs(dH_ref).max(), err_msg=kind)
        for name, a, b in zip(LayerParams._fields, grads, grads_ref):
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-12 * np.abs(b).max(), err_msg=f"{kind}: {name}")

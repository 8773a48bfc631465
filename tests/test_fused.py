"""The fused forms (numpy_mamba/fused/) against the reading forms, and both against straightforward ones.

``model.forward_terms`` and ``gradients.F_and_gradients`` are the batched reading forms (gate
logits and scores in matrix-vector passes, log-space gates), which ``forward`` and ``gradients``
run; ``fused.eq3.eq3_forward`` and ``eq3_backward`` (what the commands' ``sgd.train`` runs) fuse
the same sums into four products with P and the gates into running products.  Here every quantity
is recomputed the plain way, one einsum per equation with scipy's log_expit and the exclusive
prefix-sum form of eq (135) (c_s (1 - sigma_s) - sigma_s sum_{i<s} c_i, where the others use the
inclusive one), and all must agree to 1e-12 of the largest value on awkward problems: l = 1,
saturated gates |w^T p| ~ 50, l = 10,000, an inactive hinge.  P read in pieces of prompts
(``fused.eq3.PIECE_BYTES``) gives what P read whole gives, bit for bit.  The fused stack
(``fused.layer``, ``fused.stack``) is checked against the reading stack of ``stack.py`` the same way,
and ``fused.network`` against ``network`` for every kind of Network.
"""
import warnings

import numpy as np
import pytest
from scipy.special import expit, log_expit

from numpy_mamba import (Params, gradcheck, gradients, gradients_literal, make_world, network, stack, testing_batch,
                         training_batch)
from numpy_mamba.fused import eq3, numerics
from numpy_mamba.fused import network as fused_network
from numpy_mamba.fused import stack as fused_stack
from numpy_mamba.fused.layer import (GateTensorCache, LayerFusedCache, TopLayerCache, layer_backward_fused,
                                     layer_forward_fused)
from numpy_mamba.gradients import F_and_gradients, attention_backward, gate_backward
from numpy_mamba.layer import LayerParams, layer_backward, layer_forward
from numpy_mamba.loss import mean_hinge_slope
from numpy_mamba.model import forward_terms, gates_for, scores
from numpy_mamba.network import leaves
from numpy_mamba.scan import scan_outputs
from tests.helpers import random_problem, saturated_long_prompt, stack_problem

MODELS = ["mamba", "linear_transformer"]


def plain_forward(params, P, model):
    """(F, G, s, a): eq (3) term by term, each contraction over P its own einsum."""
    W_B, W_C, w = params
    a = np.einsum("d,bdi->bi", w, P)                                   # w^T p_i
    s = np.einsum("bdi,md,mk,bk->bi", P, W_B, W_C, P[:, :, -1])        # p_i^T W_B^T W_C p_query
    if model == "mamba":
        after = np.flip(np.cumsum(np.flip(log_expit(-a), 1), 1), 1)    # sum_{j>=i} log(1 - sigma_j)
        log_G = log_expit(a) + np.append(after[:, 1:], np.zeros((len(a), 1)), axis=1)
        G = np.exp(log_G)
    else:
        G = np.ones_like(s)
    return np.sum(G * P[:, -1, :] * s, axis=1), G, s, a


def plain_gradients(params, P, z, model):
    """Params(dW_B, dW_C, dw) of the mean hinge loss, eqs (93), (118), (135), one einsum each."""
    W_B, W_C, w = params
    F, G, s, a = plain_forward(params, P, model)
    r = np.where(1.0 - z * F > 0.0, -z, 0.0) / len(z)                  # d(mean loss)/dF
    y, p_query = P[:, -1, :], P[:, :, -1]
    k = np.einsum("bdi,bi->bd", P, r[:, None] * G * y)                 # sum_i r G_i y_i p_i
    dW_B = np.einsum("mk,bk,bd->md", W_C, p_query, k)                  # eq (118)
    dW_C = np.einsum("md,bd,bk->mk", W_B, k, p_query)                  # eq (93)
    if model != "mamba":
        return Params(dW_B, dW_C, np.zeros_like(w))
    sigma = expit(a)
    c = r[:, None] * y * s * G                                         # dL/dG_i G_i
    before = np.cumsum(c, axis=1) - c                                  # sum_{i<s} c_i
    dw = np.einsum("bdi,bi->d", P, c * (1.0 - sigma) - sigma * before)  # eq (135)
    return Params(dW_B, dW_C, dw)


def awkward_problem(kind, seed=0):
    """(params, P, z) that stress the fast path; see the module docstring."""
    l = {"l1": 1, "long": 10_000}.get(kind, 6)
    params, _, P, z = random_problem(seed, d=4, l=l, B=2 if kind == "long" else 5)
    rng = np.random.default_rng(seed + 1)
    if kind in ("saturated", "long"):                 # w^T p_i in {-50, 50} on many columns
        w = params.w / np.linalg.norm(params.w)
        v = np.append(w[:-1], 0.0)                    # move features only; labels stay +-1, 0
        hit = rng.random((P.shape[0], 1, l + 1)) < 0.5
        target = 50.0 * rng.choice([-1.0, 1.0], size=hit.shape)
        t = (target - np.einsum("d,bdi->bi", w, P)[:, None]) / (v @ w)
        P = P + np.where(hit, t * v[:, None], 0.0)
        params = Params(params.W_B * 0.3, params.W_C * 0.3, w)
    if kind == "long":                                # misclassified, so the hinge is active
        z = -np.sign(plain_forward(params, P, "mamba")[0])
    if kind == "inactive":                            # most prompts beyond the margin
        params = Params(params.W_B * 3, params.W_C * 3, params.w)
        z = np.sign(plain_forward(params, P, "mamba")[0])
        z[0] = -z[0]
    return params, P, z


KINDS = ["l1", "generic", "saturated", "inactive", "long"]


def test_awkward_problems_have_the_property_they_are_named_for():
    # If this fails, the problems below no longer test what their names say.
    params, P, _ = awkward_problem("saturated")
    a = np.abs(np.einsum("d,bdi->bi", params.w, P))
    assert np.isclose(a.max(), 50.0) and a.min() < 5
    params, P, z = awkward_problem("inactive")
    zF = z * plain_forward(params, P, "mamba")[0]
    assert np.sum(zF >= 1) >= 3 and np.sum(zF < 1) >= 1
    params, P, _ = awkward_problem("long")
    assert P.shape[2] == 10_001 and np.isclose(np.abs(params.w @ P).max(), 50.0)


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("kind", KINDS)
def test_forward_terms_equal_one_einsum_per_term(kind, model):
    # If this fails, the two matrix-vector passes over P (gate logits, scores), the log-space
    # gates built from them, or F of eq (3) are wrong on this kind of problem.
    params, P, _ = awkward_problem(kind)
    F, G, s, sigma = forward_terms(model, params, P)
    F0, G0, s0, a0 = plain_forward(params, P, model)
    np.testing.assert_allclose(s, s0, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(G, G0, rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(F, F0, rtol=1e-12, atol=1e-12)
    if model == "mamba":
        np.testing.assert_allclose(sigma, expit(a0), rtol=1e-12, atol=1e-300)
        np.testing.assert_allclose(G, gates_for(model, params, P), rtol=1e-12, atol=1e-300)
    assert np.all(np.isfinite(G)) and np.all(np.isfinite(F))
    np.testing.assert_allclose(s, scores(params, P), rtol=1e-12, atol=1e-12)   # the public helper


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("kind", KINDS)
def test_batched_backward_equals_one_einsum_per_equation(kind, model):
    # If this fails, the reading backward's matrix-vector passes over P (column_sum of dL/ds for
    # eqs (93)/(118), of the eq (135) column weights for dw) no longer compute the gradients.
    params, P, z = awkward_problem(kind)
    batched, plain = gradients(params, P, z, model), plain_gradients(params, P, z, model)
    scale = max(np.abs(g).max() for g in plain)
    assert scale > 1e-6                               # not a comparison of zeros
    for name, a, b in zip(Params._fields, batched, plain):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12 * scale, err_msg=name)


@pytest.mark.parametrize("kind", ["l1", "saturated", "inactive"])
def test_fused_backward_equals_the_literal_equations(kind):
    # If this fails, the fused gradients left gradients_literal (eqs (93), (118), (135) term by
    # term, loops over prompts and tokens), the reference of the einsum reference above.
    params, P, z = awkward_problem(kind)
    for name, a, b in zip(Params._fields, eq3.F_and_gradients("mamba", params, P, z)[1],
                          gradients_literal(params, P, z)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-13, err_msg=name)


@pytest.mark.parametrize("kind", KINDS)
def test_gate_and_attention_backward_give_the_gradients_of_eq3(kind):
    # If this fails, gate_backward or attention_backward (the chain-rule pieces the Appendix E.6
    # gates reuse) no longer give gradients()'s result when fed eq (3)'s dL/dG and dL/ds.
    params, P, z = awkward_problem(kind)
    F, G, s, _ = forward_terms("mamba", params, P)
    r = np.where(1.0 - z * F > 0.0, -z, 0.0) / len(z)
    y = P[:, -1, :]
    whole = gradients(params, P, z)
    dW_B, dW_C = attention_backward(params, P, r[:, None] * G * y)
    dw = gate_backward(params.w, P, G, r[:, None] * y * s)
    for name, a, b in zip(Params._fields, (dW_B, dW_C, dw), whole):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-13, err_msg=name)


def _close(fast_arrays, reading_arrays, what):
    """Each array equal to 1e-12 of the largest |entry| of its reading counterpart (and not all zeros)."""
    for name, a, b in zip(what, fast_arrays, reading_arrays):
        scale = np.abs(b).max()
        assert scale > 0 or name == "w", name           # the linear Transformer has no gate
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-12 * scale, err_msg=name)


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("kind", KINDS)
def test_fused_step_equals_the_batched_reading_form(kind, model):
    # If this fails, the fused two-pass step that training runs (running-product gates, scores and
    # gate logits in one pass, eqs (118), (93), (135) in another) left gradients.F_and_gradients or
    # forward_terms on this kind of problem.
    params, P, z = awkward_problem(kind)
    F, grads = eq3.F_and_gradients(model, params, P, z)
    F0, grads0 = F_and_gradients(model, params, P, z)
    _close([F, eq3.eq3_forward(model, *params, P)[0]], [F0, forward_terms(model, params, P).F], ["F", "F alone"])
    _close(grads, grads0, Params._fields)
    assert model == "mamba" or not np.any(grads.w)


@pytest.mark.parametrize("model", MODELS)
def test_fused_input_gradient_matches_central_differences(model):
    # If this fails, the gradient eq3_backward gives for its input (what a stack's top layer passes
    # down) is wrong for some entry: key, gate logit, label or query.  The query label slot is not 0
    # here, as in every hidden state of a stack.
    params, _, P, _ = random_problem(3, d=4, l=6, B=3)
    P = P + np.random.default_rng(4).normal(0, 0.3, P.shape)
    dF = np.random.default_rng(5).normal(size=3)
    _, cache = eq3.eq3_forward(model, *params, P)
    dP = eq3.eq3_backward(dF, cache, input_gradient=True)[3]
    report = gradcheck(lambda Q: float(dF @ eq3.eq3_forward(model, *params, Q)[0]), P, dP)
    assert report.passed and max(report.rel_err.values()) < 1e-8, str(report)


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("kind", ["generic", "long"])
def test_products_in_pieces_equal_one_piece(kind, model, monkeypatch):
    # If this fails, reading P a piece of prompts at a time (eq3.PIECE_BYTES) changed a bit of F,
    # of a gradient or of the input gradient: a prompt skipped or read twice, or the sum over
    # prompts of eq (135) taken in another order.  Pieces of 1 and 2 prompts over B = 5 and B = 2.
    params, P, _ = awkward_problem(kind)
    dF = np.random.default_rng(7).normal(size=len(P))

    def step():
        F, cache = eq3.eq3_forward(model, *params, P)
        return [F, *eq3.eq3_backward(dF, cache, input_gradient=True)]

    whole = step()
    for prompts in (1, 2):
        monkeypatch.setattr(eq3, "PIECE_BYTES", prompts * P[0].nbytes)
        assert len(eq3._pieces(P)) == -(-len(P) // prompts)
        for name, a, b in zip(["F", "dW_B", "dW_C", "dw", "dP"], step(), whole):
            if b is None:
                assert a is None, name
            else:
                np.testing.assert_array_equal(a, b, err_msg=f"{name}, {prompts} prompt(s) a piece")


# ---------------------------------------------------------------- the fused stack
def fused_layer_forward(H, layer, model="mamba"):
    """``layer_forward_fused`` with (B, D, N) in and out, as ``layer_forward``."""
    O, cache = layer_forward_fused(np.ascontiguousarray(H.transpose(2, 0, 1)), layer, model)
    return O.transpose(1, 2, 0), cache


def fused_layer_backward(dO, cache):
    dX, grads = layer_backward_fused(np.ascontiguousarray(dO.transpose(2, 0, 1)), cache)
    return dX.transpose(1, 2, 0), grads


@pytest.mark.parametrize("kind", ["generic", "l1", "saturated"])
def test_every_fused_layer_output_is_the_eq1_scan_of_its_input(kind):
    # If this fails, the fused layer (tokens outermost, factored gates) is not the eq (1) scan run
    # over H^(k-1) (see test_stack.py's test of layer_forward for the appended zero column).
    layers, P, _ = stack_problem(kind, "mamba", 3, seed=4)
    H = P
    for k, layer in enumerate(layers, 1):
        padded = np.concatenate([H, np.zeros(H.shape[:2] + (1,))], axis=2)
        o = scan_outputs(layer.W_B, layer.W_C, layer.W, padded)[:, :-1, :].transpose(0, 2, 1)   # (B, d+1, l+1)
        O, cache = fused_layer_forward(H, layer)
        assert isinstance(cache, LayerFusedCache)
        np.testing.assert_allclose(O, o, rtol=0, atol=1e-12 * max(1.0, np.abs(o).max()), err_msg=f"layer {k}")
        H = H + layer_forward(H, layer)[0]


@pytest.mark.parametrize("model", MODELS)
def test_fused_layer_backward_equals_layer_backward_for_any_upstream_gradient(model):
    # If this fails, the fused dH or a parameter gradient (values, keys, queries, gates) leaves
    # layer_backward's (checked against central differences in test_stack.py) for a dO that is
    # not concentrated on the query column, as every layer but the last receives.
    (layer,), H, _ = stack_problem("generic", model, 1, seed=9)
    H = H + np.random.default_rng(0).normal(0, 0.3, H.shape)        # query label slot not 0
    dO = np.random.default_rng(1).normal(size=H.shape)
    fused = fused_layer_backward(dO, fused_layer_forward(H, layer, model)[1])
    reading = layer_backward(dO, layer_forward(H, layer, model)[1])
    _close([fused[0], *fused[1][:2]], [reading[0], *reading[1][:2]], ["dH", "dW_B", "dW_C"])
    _close([fused[1].W], [reading[1].W], ["w"])


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("kind", ["paper_scale", "saturated", "l1"])
def test_fused_stack_equals_the_reading_stack(kind, model):
    # If this fails, the fused stack (what training runs: tokens outermost, M = W_B^T W_C, factored
    # gates, the top layer as eq (3)) and the reading stack with the (B, D, N, N) gates (what
    # stack.forward and stack.gradients run, the exercise and the figures read) no longer agree on F
    # or on some gradient, to 1e-12 of its largest entry.
    if kind == "paper_scale":
        world = make_world(rng=0)
        batch = training_batch(world, 16, 20, p_a=0.4, rng=1)
        rng = np.random.default_rng(2)
        scale = 0.1 if model == "mamba" else 0.02
        layers = [LayerParams(*(a + rng.normal(0, scale, a.shape) for a in layer))
                  for layer in stack.init_stack(30, 3, delta=0.05 if model == "mamba" else 0.02, rng=3)]
        P, z = batch.P, batch.z
    else:
        layers, P, z = stack_problem(kind, model, 3, seed=7)
    F_fused, caches = fused_stack.stack_forward(layers, P, model)
    assert [type(c) for c in caches] == [LayerFusedCache, LayerFusedCache, TopLayerCache]
    F, reading = stack.F_and_gradients(model, layers, P, z)
    np.testing.assert_allclose(F_fused, F, rtol=1e-12, atol=1e-12 * np.abs(F).max())
    for fused, closed in zip(fused_stack.F_and_gradients(model, layers, P, z)[1], reading):
        for name, a, b in zip(LayerParams._fields, fused, closed):
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-12 * max(np.abs(b).max(), 1e-300), err_msg=name)
            assert model == "mamba" or name == "W" or np.abs(b).max() > 0


@pytest.mark.parametrize("prenorm", [False, True])
def test_fused_stack_gradients_match_central_differences(prenorm):
    # If this fails, the fused backward (layers tokens outermost, the top layer as eq (3), the
    # pre-norm's transposes) is wrong for some parameter of some layer, on saturated gates and
    # with prompts on both sides of the hinge.
    layers, P, z = stack_problem("saturated", "mamba", 3, seed=3)
    F = fused_stack.output("mamba", layers, P, prenorm)
    while prenorm and np.abs(F).max() < 2:              # the top layer's O is linear in its W_C
        layers[-1] = layers[-1]._replace(W_C=2 * layers[-1].W_C)
        F = fused_stack.output("mamba", layers, P, prenorm)
    z = np.where(np.abs(F) == np.abs(F).max(), 1.0, -1.0) * np.where(F >= 0, 1.0, -1.0)
    zF = z * F
    assert np.sum(zF > 1) >= 1 and np.sum(zF < 1) >= 1 and np.abs(1 - zF).min() > 1e-3
    flat = {f"{name}[{k}]": a for k, layer in enumerate(layers) for name, a in zip(layer._fields, layer)}

    def loss(values):
        trial = [LayerParams(*(values[f"{name}[{k}]"] for name in LayerParams._fields)) for k in range(len(layers))]
        return float(np.mean(np.maximum(0.0, 1.0 - z * fused_stack.output("mamba", trial, P, prenorm))))

    grads = fused_stack.F_and_gradients("mamba", layers, P, z, prenorm)[1]
    analytic = {f"{name}[{k}]": a for k, layer in enumerate(grads) for name, a in zip(layer._fields, layer)}
    report = gradcheck(loss, flat, analytic)
    assert report.passed and max(report.rel_err.values()) < 1e-7, str(report)


def test_a_layer_whose_gates_decay_past_float_range_runs_the_gate_tensor_form():
    # If this fails, the fused layer's fallback is gone: l = 1000 with every |w_j^T h_i| = 50 makes
    # the factored gates' exponents leave float64, so the layer must run layer_forward instead.
    layer, P = saturated_long_prompt()
    O, cache = fused_layer_forward(P, layer)
    assert isinstance(cache, GateTensorCache)
    np.testing.assert_array_equal(O, layer_forward(P, layer)[0])
    z = np.array([1.0])
    F, grads = fused_stack.F_and_gradients("mamba", [layer, layer], P, z)
    assert np.isfinite(F).all() and all(np.all(np.isfinite(x)) for g in grads for x in g)


@pytest.mark.parametrize("model", MODELS)
def test_a_large_batch_in_parts_has_the_whole_batch_gradient(model, monkeypatch):
    # If this fails, the fused stack gives a large batch, which it runs in parts of CACHE_BYTES,
    # another F or gradient than the whole batch at once: a part's mean taken over the part, or a
    # part dropped or counted twice.
    layers, P, z = stack_problem("generic", model, 3, seed=11, B=7)
    F, caches = fused_stack.stack_forward(layers, P, model)
    whole = fused_stack.stack_backward(mean_hinge_slope(F, z), caches)
    monkeypatch.setattr(fused_stack, "CACHE_BYTES", 2 * P[0].nbytes)        # parts of 2, 2, 2 and 1 prompts
    F_parts, parts = fused_stack.F_and_gradients(model, layers, P, z)
    np.testing.assert_allclose(F_parts, F, rtol=0, atol=1e-13 * np.abs(F).max())   # BLAS may block a part otherwise
    for a, b in zip(parts, whole):
        for name, x, y in zip(LayerParams._fields, a, b):
            np.testing.assert_allclose(x, y, rtol=0, atol=1e-13 * max(np.abs(y).max(), 1e-300), err_msg=name)


# ---------------------------------------------------------------- the switch
KINDS_OF_NETWORK = [("mamba", 1, False), ("linear_transformer", 1, False), ("mamba", 3, False),
                    ("linear_transformer", 2, False), ("mamba", 2, True)]


@pytest.mark.parametrize("model, n_layers, prenorm", KINDS_OF_NETWORK)
def test_the_fused_network_is_the_reading_network(model, n_layers, prenorm):
    # If this fails, the Network the commands train (fused.network) is not the one a reader
    # reads (numpy_mamba.network): another name, initialisation, F, gradient or F_scale.
    world = make_world(rng=0)
    batch = training_batch(world, 12, 20, p_a=0.6, rng=1)
    reading, fused = network(model, n_layers, prenorm), fused_network(model, n_layers, prenorm)
    assert fused.name == reading.name and fused.layers is reading.layers
    delta = 0.2 if n_layers == 1 else 0.05
    params = fused.init(world.d, 2, None, delta)
    for a, b in zip(leaves(params), leaves(reading.init(world.d, 2, None, delta))):
        np.testing.assert_array_equal(a, b)
    F, grads = fused.F_and_gradients(params, batch.P, batch.z)
    F0, grads0 = reading.F_and_gradients(params, batch.P, batch.z)
    _close([F, fused.F(params, batch.P), fused.F_scale(params, batch.P)],
           [F0, reading.F(params, batch.P), reading.F_scale(params, batch.P)], ["F", "F alone", "F_scale"])
    names = [f"{name}[{k}]" for k in range(n_layers) for name in ("W_B", "W_C", "w" if n_layers == 1 else "W")]
    gated = [name.startswith("W_") or model == "mamba" for name in names]     # the LT has no gate: dw = 0
    _close([g for g, keep in zip(leaves(grads), gated) if keep], [g for g, keep in zip(leaves(grads0), gated) if keep],
           [name for name, keep in zip(names, gated) if keep])
    assert model == "mamba" or not any(np.any(g) for g, keep in zip(leaves(grads), gated) if not keep)


# ---------------------------------------------------------------- the helpers
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


@pytest.mark.parametrize("model, n_layers, prenorm", KINDS_OF_NETWORK)
def test_outputs_computed_in_pieces_equal_outputs_in_one_piece(model, n_layers, prenorm, monkeypatch):
    # If this fails, a test set's F depends on how many prompts are evaluated at once beyond the
    # last bit: a count of errors could move with the batch size.  The last bit itself may move:
    # OpenBLAS picks its matmul kernel by matrix size (seen: 1 of 1,100 outputs of a three-layer
    # Mamba, by 1.5e-16 relative, when the last piece holds 76 prompts).
    world = make_world(rng=0)
    P = testing_batch(world, 1100, 20, alpha=0.3, rng=1).P
    net = fused_network(model, n_layers=n_layers, prenorm=prenorm)
    params = net.init(world.d, 2, None, 0.2 if n_layers == 1 else 0.05)
    pieces = net.F(params, P)
    for module in (eq3, fused_stack):
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
    # If this fails, some code that works through a batch piece by piece (outputs, the products
    # with P) skips a prompt, repeats one or takes too many at once.
    slices = numerics.pieces(n, size)
    covered = [i for piece in slices for i in range(n)[piece]]
    assert covered == list(range(n)) and all(len(range(n)[piece]) <= size for piece in slices)
    assert len(slices) == -(-n // size)

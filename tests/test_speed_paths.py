"""The batched and the fused forms of eq (3) against straightforward ones.

``model.forward_terms`` and ``gradients.eq3_value_and_gradients`` are the batched reading forms
(gate logits and scores in matrix-vector passes, log-space gates); ``fast.eq3_forward`` and
``fast.eq3_backward`` (what ``forward``, ``gradients`` and ``sgd.train`` run) fuse the same sums
into four products with P and the gates into running products.  Here every quantity is recomputed
the plain way, one einsum per equation with scipy's log_expit and the exclusive prefix-sum form
of eq (135) (c_s (1 - sigma_s) - sigma_s sum_{i<s} c_i, where the others use the inclusive one),
and all must agree to 1e-12 of the largest value on awkward problems: l = 1, saturated gates
|w^T p| ~ 50, l = 10,000, an inactive hinge.  P read in pieces of prompts (``fast.PIECE_BYTES``)
gives what P read whole gives, bit for bit.
"""
import numpy as np
import pytest
from scipy.special import expit, log_expit

from numpy_mamba import Params, forward, gradcheck, gradients, gradients_literal, make_world, network, training_batch
from numpy_mamba import fast
from numpy_mamba.gradients import attention_backward, eq3_step, eq3_value_and_gradients, gate_backward
from numpy_mamba.model import forward_terms, gates_for, init_params, scores
from tests.helpers import random_problem

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
def test_two_pass_backward_equals_one_einsum_per_equation(kind, model):
    # If this fails, the backward's two matrix-vector passes over P (column_sum of dL/ds for
    # eqs (93)/(118), of the eq (135) column weights for dw) no longer compute the gradients.
    params, P, z = awkward_problem(kind)
    fast, plain = gradients(params, P, z, model), plain_gradients(params, P, z, model)
    scale = max(np.abs(g).max() for g in plain)
    assert scale > 1e-6                               # not a comparison of zeros
    for name, a, b in zip(Params._fields, fast, plain):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12 * scale, err_msg=name)


@pytest.mark.parametrize("kind", ["l1", "saturated", "inactive"])
def test_two_pass_backward_equals_the_literal_equations(kind):
    # If this fails, the fast gradients left gradients_literal (eqs (93), (118), (135) term by
    # term, loops over prompts and tokens), the reference of the einsum reference above.
    params, P, z = awkward_problem(kind)
    for name, a, b in zip(Params._fields, gradients(params, P, z), gradients_literal(params, P, z)):
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
    # gate logits in one pass, eqs (118), (93), (135) in another) left eq3_value_and_gradients or
    # forward_terms on this kind of problem.
    params, P, z = awkward_problem(kind)
    F, grads = eq3_step(model, params, P, z)
    F0, grads0 = eq3_value_and_gradients(model, params, P, z)
    _close([F, fast.eq3_forward(model, *params, P)[0]], [F0, forward_terms(model, params, P).F], ["F", "F alone"])
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
    _, cache = fast.eq3_forward(model, *params, P)
    dP = fast.eq3_backward(dF, cache, input_gradient=True)[3]
    report = gradcheck(lambda Q: float(dF @ fast.eq3_forward(model, *params, Q)[0]), P, dP)
    assert report.passed and max(report.rel_err.values()) < 1e-8, str(report)


@pytest.mark.parametrize("model", MODELS)
def test_unchecked_step_is_the_public_gradients(model):
    # If this fails, sgd.train (which runs Network.F_and_gradients) no longer follows gradients()
    # and forward() bit for bit.
    world = make_world(rng=0)
    batch = training_batch(world, 8, 20, p_a=0.6, rng=1)
    params = init_params(world.d, rng=2)
    F, grad = network(model).F_and_gradients(params, batch.P, batch.z)
    np.testing.assert_array_equal(F, forward(params, batch.P, model))
    for a, b in zip(grad, gradients(params, batch.P, batch.z, model)):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("kind", ["generic", "long"])
def test_products_in_pieces_equal_one_piece(kind, model, monkeypatch):
    # If this fails, reading P a piece of prompts at a time (fast.PIECE_BYTES) changed a bit of F,
    # of a gradient or of the input gradient: a prompt skipped or read twice, or the sum over
    # prompts of eq (135) taken in another order.  Pieces of 1 and 2 prompts over B = 5 and B = 2.
    params, P, _ = awkward_problem(kind)
    dF = np.random.default_rng(7).normal(size=len(P))

    def step():
        F, cache = fast.eq3_forward(model, *params, P)
        return [F, *fast.eq3_backward(dF, cache, input_gradient=True)]

    whole = step()
    for prompts in (1, 2):
        monkeypatch.setattr(fast, "PIECE_BYTES", prompts * P[0].nbytes)
        assert len(fast._pieces(P)) == -(-len(P) // prompts)
        for name, a, b in zip(["F", "dW_B", "dW_C", "dw", "dP"], step(), whole):
            if b is None:
                assert a is None, name
            else:
                np.testing.assert_array_equal(a, b, err_msg=f"{name}, {prompts} prompt(s) a piece")

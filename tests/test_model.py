"""Eq (1) scan vs eq (3) closed form, the gates, and the linear Transformer (Section 3.4)."""
import numpy as np
import pytest
from scipy.special import expit

from numpy_mamba import Params, attention_scores, forward, gating, hinge_loss, gradients, recurrent_forward
from numpy_mamba import forward_literal
from numpy_mamba import model as model_module
from numpy_mamba.scan import scan_outputs
from tests.helpers import random_problem


@pytest.mark.parametrize("seed,d,l,m", [(0, 5, 4, None), (1, 3, 1, None), (2, 4, 6, 9), (3, 6, 3, 6), (4, 30, 20, None)])
def test_recurrent_scan_equals_closed_form(seed, d, l, m):
    # If this fails, eq (3) is not the eq (1) scan with h_0 = 0 (includes l = 1 and m != d+1).
    params, W, P, _ = random_problem(seed, d=d, l=l, m=m)
    F_scan = recurrent_forward(params.W_B, params.W_C, W, P)
    F_closed = forward(params, P)
    np.testing.assert_allclose(F_scan, F_closed, rtol=1e-12, atol=1e-12)
    assert np.max(np.abs(F_closed)) > 1e-3          # the comparison is not between zeros


@pytest.mark.parametrize("model", ["mamba", "linear_transformer"])
@pytest.mark.parametrize("seed,d,l,m,scale", [(0, 5, 4, None, 0.5), (1, 3, 1, None, 0.5), (2, 4, 6, 9, 0.5),
                                              (3, 30, 20, None, 0.5), (4, 4, 5, None, 8.0)])
def test_forward_literal_equals_forward(model, seed, d, l, m, scale):
    # If this fails, the batched eq (3) (scores in one pass, gates in log space) is not the
    # equation as the paper prints it, term by term.  scale 8 saturates the gates and makes
    # terms of size ~500 cancel to F ~ 1e-3, so F is compared to 1e-12 of the largest output.
    params, _, P, _ = random_problem(seed, d=d, l=l, m=m, scale=scale)
    F = forward(params, P, model)
    literal = np.array([forward_literal(params, P[n], model) for n in range(P.shape[0])])
    np.testing.assert_allclose(literal, F, rtol=1e-12, atol=1e-12 * np.max(np.abs(F)))
    assert np.max(np.abs(F)) > 1e-3                 # the comparison is not between zeros


def test_forward_literal_refuses_a_batch_and_other_models():
    params, _, P, _ = random_problem(0)
    with pytest.raises(ValueError, match=r"one prompt P of shape \(d\+1, l\+1\); got shape \(6, 6, 5\)"):
        forward_literal(params, P)
    with pytest.raises(ValueError, match="paper's models"):
        forward_literal(params, P[0], "gla")


def test_single_prompt_shapes():
    params, W, P, z = random_problem(5, B=1)
    assert isinstance(forward(params, P[0]), float)
    assert isinstance(recurrent_forward(params.W_B, params.W_C, W, P[0]), float)
    assert gating(params.w, P[0]).shape == (P.shape[2],)
    assert attention_scores(params, P[0]).shape == (P.shape[2],)
    assert forward(params, P).shape == (1,)


def test_known_answer_tiny_prompt():
    # d = 1, l = 1, W_B = W_C = I, w = 0: sigma = 1/2, G_1 = 1/2 * (1 - 1/2) = 1/4, G_2 = 1/2;
    # score_1 = p_1^T p_query = (1, 1).(2, 0) = 2; F = G_1 y_1 s_1 = 0.5; hinge (z = 1) = 0.5.
    params = Params(np.eye(2), np.eye(2), np.zeros(2))
    P = np.array([[1.0, 2.0], [1.0, 0.0]])
    np.testing.assert_allclose(gating(params.w, P), [0.25, 0.5], rtol=0, atol=1e-15)
    np.testing.assert_allclose(attention_scores(params, P), [2.0, 4.0], atol=1e-15)
    assert forward(params, P) == pytest.approx(0.5, abs=1e-15)
    assert hinge_loss(params, P, 1) == pytest.approx(0.5, abs=1e-15)
    assert forward(params, P, "linear_transformer") == pytest.approx(2.0, abs=1e-15)
    # gradients by hand: eqs (93), (118), (135)
    g = gradients(params, P, 1)
    np.testing.assert_allclose(g.W_C, [[-0.5, 0.0], [-0.5, 0.0]], atol=1e-15)
    np.testing.assert_allclose(g.W_B, [[-0.5, -0.5], [0.0, 0.0]], atol=1e-15)
    np.testing.assert_allclose(g.w, [0.25, -0.25], atol=1e-15)
    # with W = 0 the scan's gate channel j = d+1 uses w = W[:, -1] = 0 as well
    assert recurrent_forward(params.W_B, params.W_C, np.zeros((2, 2)), P) == pytest.approx(0.5, abs=1e-15)


def test_gates_sum_like_stick_breaking():
    # sum_{i=1}^{l+1} G_i + prod_{i=1}^{l+1} (1 - sigma_i) = 1 (eq (153) rearranged).
    params, _, P, _ = random_problem(6, l=7)
    a = np.einsum("d,bdl->bl", params.w, P)
    total = gating(params.w, P).sum(axis=1) + np.prod(expit(-a), axis=1)
    np.testing.assert_allclose(total, 1.0, rtol=0, atol=1e-14)


def test_linear_transformer_is_mamba_with_gates_forced_to_one(monkeypatch):
    # Section 3.4: the linear Transformer is eq (3) with every G = 1.
    params, _, P, _ = random_problem(7)
    F_lt = forward(params, P, "linear_transformer")
    np.testing.assert_allclose(F_lt, np.sum(P[:, -1, :] * attention_scores(params, P), axis=1), rtol=1e-14)
    monkeypatch.setattr(model_module, "log_gates", lambda a, log_sigma: np.zeros_like(a))
    np.testing.assert_allclose(model_module.forward_terms("mamba", params, P).F, F_lt, rtol=1e-14, atol=1e-14)
    assert not np.allclose(F_lt, 0)


def _saturated_long_problem(l, seed=8):
    rng = np.random.default_rng(seed)
    d = 4
    w = np.zeros(d + 1)
    w[0] = 1.0                                          # w^T p_i = P[0, i]
    P = rng.normal(0, 1, (1, d + 1, l + 1))
    P[0, 0, :] = rng.choice([-50.0, 50.0, 0.3, -0.7], size=l + 1)
    P[0, -1, :l] = rng.choice([-1.0, 1.0], size=l)
    P[0, -1, l] = 0.0
    params = Params(rng.normal(0, 0.5, (d + 1, d + 1)), rng.normal(0, 0.5, (d + 1, d + 1)), w)
    return params, P


def test_long_prompt_and_saturated_gates_match_direct_product():
    # l = 10,000 with |w^T p| = 50: log-space gates stay finite and match the float64 direct
    # product sigma(a_i) prod_{j>i} sigma(-a_j) wherever that product does not underflow.
    params, P = _saturated_long_problem(10_000)
    G = gating(params.w, P)[0]
    assert np.all(np.isfinite(G)) and np.all(G >= 0) and np.all(G <= 1)
    a = P[0, 0, :]
    keep = expit(-a)
    direct = expit(a) * np.append(np.cumprod(keep[::-1])[::-1][1:], 1.0)
    representable = direct > 1e-300
    assert representable.sum() > 5                      # the comparison covers real entries
    np.testing.assert_allclose(G[representable], direct[representable], rtol=1e-10)
    assert np.all(G[~representable] < 1e-290)
    F = forward(params, P)
    assert np.isfinite(F)
    z = np.where(F > 0, -1.0, 1.0)               # misclassified: the hinge is active
    grads = gradients(params, P, z)
    assert all(np.all(np.isfinite(g)) for g in grads)
    assert np.any(grads.w != 0)


def test_long_prompt_scan_agrees():
    params, P = _saturated_long_problem(10_000, seed=9)
    W = np.zeros((P.shape[1], P.shape[1]))
    W[:, -1] = params.w
    F_scan = recurrent_forward(params.W_B, params.W_C, W, P)
    assert np.isfinite(F_scan).all()
    np.testing.assert_allclose(F_scan, forward(params, P), rtol=1e-10, atol=1e-12)


def test_h0_input_adds_the_dropped_term():
    # h_0 = U (Section 2) adds prod_i (1 - sigma(w^T p_i)) * y^T W_C p_query to eq (3).
    d, l = 4, 5
    params, W, P, _ = random_problem(10, d=d, l=l, m=l + 1)
    extra = recurrent_forward(params.W_B, params.W_C, W, P, h0="input") - forward(params, P)
    a = np.einsum("d,bdl->bl", params.w, P)
    expected = np.prod(expit(-a), axis=1) * np.einsum("bl,ld,bd->b", P[:, -1, :], params.W_C, P[:, :, -1])
    np.testing.assert_allclose(extra, expected, rtol=1e-10, atol=1e-14)
    assert np.max(np.abs(expected)) > 1e-6


def test_scan_outputs_shape():
    params, W, P, _ = random_problem(11, d=3, l=2)
    o = scan_outputs(params.W_B, params.W_C, W, P)
    assert o.shape == (P.shape[0], P.shape[2], P.shape[1])


def test_gates_with_an_infinite_logit_stay_exact_at_short_l():
    # w^T p_j = +inf (an entry near 1e308) gives log(1 - sigma(a_j)) = -inf: every gate before j
    # is 0 and the gates from j on are unaffected (a running sum that met the -inf with a zero,
    # 0 * inf = NaN, would spoil every gate).
    rng = np.random.default_rng(3)
    d, l = 4, 6
    P = rng.normal(size=(1, d + 1, l + 1))
    P[0, -1, :-1], P[0, -1, -1] = rng.choice([-1.0, 1.0], size=l), 0.0
    w = np.zeros(d + 1)
    w[0] = 10.0
    finite = gating(w, P)[0]
    P[0, 0, 2] = 1e308                                   # a_3 = 1e309 -> inf
    with np.errstate(over="ignore"):
        G = gating(w, P)[0]
    assert not np.any(np.isnan(G))
    np.testing.assert_array_equal(G[:2], 0.0)            # behind the closed gate
    np.testing.assert_allclose(G[2], np.prod(expit(-10.0 * P[0, 0, 3:])), rtol=1e-14)   # sigma(inf) = 1
    np.testing.assert_allclose(G[3:], finite[3:], rtol=1e-14)

"""Numerical evidence for every entry of README "Notes on the paper's derivations".

Each test names the equation it is about.  Where the paper's text is wrong, the test shows the
literal text failing a numerical check (finite differences, the literal scan of eq (1), a
measured distribution) and the corrected version passing.  Where the paper is right (eq (153)),
the test is a known-answer test.  Keep each test under a second.
"""
from __future__ import annotations

import numpy as np
import pytest
from scipy.special import expit

from numpy_mamba.data import make_world, training_batch
from numpy_mamba.gradcheck import gradcheck, numerical_gradient
from numpy_mamba.gradients import gate_backward, gradients
from numpy_mamba.loss import hinge, hinge_active, hinge_loss, zero_one_error
from numpy_mamba.model import Params, forward, gating, init_params, output, scores
from numpy_mamba.scan import recurrent_forward, scan_outputs


def small_problem(seed=0, d=6, l=4, m=None, B=3, scale=1.0):
    """Random prompts (B, d+1, l+1) with +-1 labels and a random Params of hidden size m."""
    rng = np.random.default_rng(seed)
    m = d + 1 if m is None else m
    P = rng.standard_normal((B, d + 1, l + 1))
    P[:, -1, :l] = rng.choice([-1.0, 1.0], size=(B, l))
    P[:, -1, l] = 0.0
    params = Params(scale * rng.standard_normal((m, d + 1)), scale * rng.standard_normal((m, d + 1)),
                    rng.standard_normal(d + 1))
    return P, params


# ---- 1. Above eqs (93), (118), (135): "when F in (-1, 1)" is too narrow ------------------------
def test_eq93_118_135_gradient_is_nonzero_for_misclassified_prompt_with_F_below_minus_one():
    P, params = small_problem(seed=1, B=1)
    F = output("mamba", params, P)[0]
    z = np.array([1.0])
    scale = np.sqrt(2.5 / abs(F))                     # F scales with W_B W_C: make F = -2.5
    params = Params(-np.sign(F) * params.W_B * scale, params.W_C * scale, params.w)
    F = output("mamba", params, P)[0]
    assert F < -1, "setup: need a misclassified prompt (z = +1) with F < -1"
    assert hinge_active(np.array([F]), z)[0]
    g = gradients(params, P, z)
    report = gradcheck(lambda p: hinge_loss(p, P, z), params, g)
    assert report.passed, f"the analytic gradient on a prompt with |F| >= 1 disagrees with FD:\n{report}"
    # the paper's condition F in (-1, 1) would set the gradient to 0 here; FD says it is not 0
    fd = numerical_gradient(lambda p: hinge_loss(p, P, z), params)
    assert all(np.linalg.norm(a) > 1e-3 for a in fd), "FD gradient should be nonzero for 1 - zF > 0"


# ---- 2. Eq (5): 1[zF < 0] scores an output of exactly 0 as correct ------------------------------
def test_eq5_zero_output_is_a_tie_and_counts_as_error():
    P, params = small_problem(seed=2, B=4)
    zero_W_B = Params(np.zeros_like(params.W_B), params.W_C, params.w)
    F = forward(zero_W_B, P)
    assert np.all(F == 0.0)
    z = np.array([1.0, -1.0, 1.0, -1.0])
    paper_eq5 = float(np.mean(z * F < 0))             # the strict inequality of eq (5)
    assert paper_eq5 == 0.0, "eq (5) read literally calls a model that outputs 0 perfect"
    assert zero_one_error(F, z) == 1.0, "a tie (zF = 0) is no decision: it must count as an error"
    # gates that underflow give the same exact 0: w^T p_i = -800 for every column
    w = np.zeros_like(params.w)
    w[0] = -800.0
    P2 = P.copy()
    P2[:, 0, :] = 1.0
    assert np.all(forward(Params(params.W_B, params.W_C, w), P2) == 0.0)


# ---- 3. Section 2 h_0 = U vs eq (3) / Appendix E.1 (h_0 = 0) ---------------------------------------
def h0_extra_term(W_C, w, P):
    """prod_{i=1}^{l+1} (1 - sigma(w^T p_i)) * y^T W_C p_query, the term h_0 = U adds to F."""
    keep = np.prod(1.0 - expit(np.einsum("d,bdl->bl", w, P)), axis=1)        # (B,)
    y = P[:, -1, :]                                                          # (B, l+1)
    return keep * np.einsum("bl,ld,bd->b", y, W_C, P[:, :, -1])


@pytest.mark.parametrize("l", [1, 3, 8])
def test_section2_h0_equals_U_adds_a_term_that_eq3_drops(l):
    d = 5
    P, params = small_problem(seed=3 + l, d=d, l=l, m=l + 1, B=3)          # h_0 = U needs m = l+1
    W = np.random.default_rng(l).standard_normal((d + 1, d + 1))
    W[:, -1] = params.w
    F_eq3 = forward(params, P)
    F_zeros = recurrent_forward(params.W_B, params.W_C, W, P, h0="zeros")
    F_input = recurrent_forward(params.W_B, params.W_C, W, P, h0="input")
    np.testing.assert_allclose(F_zeros, F_eq3, rtol=1e-10, atol=1e-12)
    extra = h0_extra_term(params.W_C, params.w, P)
    np.testing.assert_allclose(F_input - F_zeros, extra, rtol=1e-9, atol=1e-12)
    assert np.max(np.abs(extra)) > 1e-6, "the h_0 = U term is not zero, so eq (3) assumes h_0 = 0"


def test_section2_h0_term_decays_like_2_to_minus_l_at_initialisation():
    """At Algorithm 1's initialisation the gates are near 1/2, so the h_0 = U term,
    measured as recurrent_forward(h0="input") - recurrent_forward(h0="zeros"), shrinks by ~1/2 per
    extra example: |extra| * 2^(l+1) stays O(1) while l grows."""
    world = make_world(d=6, M1=2, M2=2, V=1, rng=0)       # d = 6 so that m = l+1 >= d is possible
    scaled = []
    for l in (5, 7, 9, 11):
        params = init_params(world.d, m=l + 1, rng=np.random.default_rng(0))   # the same w^(0) for every l
        W = np.zeros((world.d + 1, world.d + 1))
        W[:, -1] = params.w                                 # F only reads the gate column w = w_{d+1}
        batch = training_batch(world, 200, l, p_a=0.0, rng=np.random.default_rng(100 + l))
        extra = (recurrent_forward(params.W_B, params.W_C, W, batch.P, h0="input")
                 - recurrent_forward(params.W_B, params.W_C, W, batch.P, h0="zeros"))
        np.testing.assert_allclose(extra, h0_extra_term(params.W_C, params.w, batch.P), rtol=1e-8, atol=1e-15)
        scaled.append(np.mean(np.abs(extra)) * 2.0 ** (l + 1))
    assert all(0.05 < v < 20.0 for v in scaled), f"mean |extra| * 2^(l+1) should stay O(1): {scaled}"
    assert max(scaled) / min(scaled) < 3.0, f"the decay should be ~2^-(l+1): {scaled}"


# ---- 4. m = l+1 (Section 2) vs "first d diagonal entries equal delta" (Algorithm 1) ----------------
def test_algorithm1_init_cannot_be_realised_with_m_equal_l_plus_1_when_l_plus_1_below_d():
    d, l = 30, 20                                      # the paper's own Section 4 settings
    with pytest.raises(ValueError, match="diagonal"):
        init_params(d, m=l + 1, rng=0)
    params = init_params(d, rng=0)                     # core default m = d + 1 works
    assert params.W_B.shape == (d + 1, d + 1)
    assert np.count_nonzero(np.diag(params.W_B)) == d


# ---- 5. Eq (93) sums to l, eq (118) to l+1: equal because y_{l+1} = 0 ---------------------------
def test_eq93_and_eq118_upper_limits_agree_because_query_label_is_zero():
    P, params = small_problem(seed=5, B=2, scale=0.3)
    G = gating(params.w, P)                                                 # (B, l+1)
    y = P[:, -1, :]
    assert np.all(y[:, -1] == 0.0)
    q = P[:, :, -1] @ params.W_C.T                                          # (B, m)
    upto_l = np.einsum("bl,bm,bdl->md", (G * y)[:, :-1], q, P[:, :, :-1])
    upto_l1 = np.einsum("bl,bm,bdl->md", G * y, q, P)
    np.testing.assert_array_equal(upto_l, upto_l1)


# ---- 6. Eq (88): the unrolled recurrence counts the j = i term twice -----------------------------
def closed_form_outputs(W_B, W_C, W, P, double_count: bool):
    """o_i of eq (89) for every i: sum_{j<=i} (G_{j,i}(W) (.) p_j) p_j^T W_B^T W_C p_i, with the
    extra (p_i (.) s_i) B_i W_C p_i of eq (88)'s last line added when ``double_count``."""
    B, d0, n = P.shape
    sig = expit(np.einsum("dr,bdl->blr", W, P))                            # s_j = sigma(W^T p_j): (B, l+1, d0)
    o = np.zeros((B, n, d0))
    for i in range(n):
        for j in range(i + 1):
            G = sig[:, j] * np.prod(1.0 - sig[:, j + 1:i + 1], axis=1)      # (B, d0)
            a = np.einsum("bd,md,me,be->b", P[:, :, j], W_B, W_C, P[:, :, i])
            o[:, i] += G * P[:, :, j] * a[:, None]
        if double_count:
            a = np.einsum("bd,md,me,be->b", P[:, :, i], W_B, W_C, P[:, :, i])
            o[:, i] += sig[:, i] * P[:, :, i] * a[:, None]
    return o


def test_eq88_single_count_matches_the_scan_and_double_count_does_not():
    d, l = 4, 5
    P, params = small_problem(seed=6, d=d, l=l, B=2, scale=0.7)
    W = np.random.default_rng(60).standard_normal((d + 1, d + 1))
    o_scan = scan_outputs(params.W_B, params.W_C, W, P)                     # (B, l+1, d+1)
    single = closed_form_outputs(params.W_B, params.W_C, W, P, double_count=False)
    double = closed_form_outputs(params.W_B, params.W_C, W, P, double_count=True)
    np.testing.assert_allclose(single, o_scan, rtol=1e-10, atol=1e-12)
    gap = np.abs(double - o_scan)
    assert np.all(gap[:, :l, -1].max(axis=0) > 1e-6), "double count must break e_{d+1}^T o_i, i <= l"
    # at i = l+1 the extra term is (p_q (.) s_q) * ..., whose e_{d+1} entry is y_{l+1} = 0: F unaffected
    np.testing.assert_allclose(double[:, l, -1], o_scan[:, l, -1], rtol=1e-10, atol=1e-12)
    assert gap[:, l, :-1].max() > 1e-6, "other coordinates of o_{l+1} still see the double count"


# ---- 7. Eqs (84), (85), (87): the gate uses w_j^T x_i, but w_j has d+1 entries: it must be p_i ----
def test_eq84_gate_input_is_p_i_with_its_label_not_x_i():
    d, l = 4, 3
    P, params = small_problem(seed=7, d=d, l=l, B=3, scale=0.6)
    w = params.w.copy()
    w[-1] = 2.0                                        # the label row's weight in the gate
    W = np.random.default_rng(70).standard_normal((d + 1, d + 1))
    W[:, -1] = w
    F_scan = recurrent_forward(params.W_B, params.W_C, W, P)
    F_p = forward(Params(params.W_B, params.W_C, w), P)                     # sigma(w^T p_i)
    x_only = w.copy()
    x_only[-1] = 0.0                                   # sigma(w_{1:d}^T x_i): label row dropped
    F_x = forward(Params(params.W_B, params.W_C, x_only), P)
    np.testing.assert_allclose(F_scan, F_p, rtol=1e-10, atol=1e-12)
    assert np.max(np.abs(F_scan - F_x)) > 1e-4, "with x_i in the gate the scan is not reproduced"


# ---- 8. Eq (92): index mix-up (j vs i) in G_{i,l+1} -----------------------------------------------
def test_eq92_corrected_gate_is_the_last_entry_of_eq90():
    d, l = 4, 6
    P, params = small_problem(seed=8, d=d, l=l, B=2)
    W = np.random.default_rng(80).standard_normal((d + 1, d + 1))
    W[:, -1] = params.w
    sig = expit(np.einsum("dr,bdl->blr", W, P))                            # (B, l+1, d+1)
    G90 = np.stack([sig[:, i] * np.prod(1.0 - sig[:, i + 1:], axis=1) for i in range(l + 1)], axis=1)
    s = expit(np.einsum("d,bdl->bl", params.w, P))
    G92 = np.stack([s[:, i] * np.prod(1.0 - s[:, i + 1:], axis=1) for i in range(l + 1)], axis=1)
    np.testing.assert_allclose(G90[:, :, -1], G92, rtol=1e-12)
    np.testing.assert_allclose(gating(params.w, P), G92, rtol=1e-10, atol=1e-300)
    np.testing.assert_allclose(G92[:, -1], s[:, -1], rtol=1e-12)           # i = l+1: sigma(w^T p_query)


# ---- 9. Eq (135), third line: 1[j < l+1] inside the product drops (1 - sigma(w^T p_query)) --------
def dw_eq135_line3(params, P, z):
    """d(mean hinge)/dw from the third line of eq (135), read literally."""
    W_B, W_C, w = params
    B, _, n = P.shape
    l = n - 1
    dw = np.zeros_like(w)
    F = output("mamba", params, P)
    s_all = scores(params, P)
    for b in range(B):
        if not hinge_active(F[b:b + 1], z[b:b + 1])[0]:
            continue
        p = P[b].T
        sig = expit(p @ w)
        y = P[b, -1]
        for i in range(l):
            term = np.zeros_like(w)
            for s in range(i + 1, l + 1):
                prod = np.prod([1.0 - sig[j] * (j < l) for j in range(i + 1, l + 1) if j != s])
                term += prod * sig[i] * (-(1.0 - sig[s]) * sig[s] * p[s])
            term += np.prod(1.0 - sig[i + 1:]) * (1.0 - sig[i]) * sig[i] * p[i]
            dw += -z[b] * y[i] * s_all[b, i] * term
    return dw / B


def test_eq135_literal_third_line_fails_finite_differences_last_line_passes():
    P, params = small_problem(seed=9, d=4, l=4, B=3, scale=0.4)
    params = Params(params.W_B, params.W_C, 0.5 * params.w)
    z = -np.sign(output("mamba", params, P))          # every prompt on the active side
    assert np.all(hinge_active(output("mamba", params, P), z))
    fd = numerical_gradient(lambda p: hinge_loss(p, P, z), params).w
    last_line = gradients(params, P, z).w
    literal = dw_eq135_line3(params, P, z)
    rel = lambda a: np.linalg.norm(a - fd) / (np.linalg.norm(a) + np.linalg.norm(fd))
    assert rel(last_line) < 1e-8, f"eq (135) last line should match FD; rel err {rel(last_line):.2e}"
    assert rel(literal) > 1e-3, f"eq (135) line 3 read literally should not match FD; {rel(literal):.2e}"


# ---- 10. Eq (94): |w^(0)T x_j| <~ 1/(d+1) is not what N(0, I/(d+1)) gives --------------------------
def test_eq94_initial_gate_logits_are_order_norm_x_over_sqrt_d_not_one_over_d():
    world = make_world(rng=0)                                               # Section 4: d = 30, beta = 3
    batch = training_batch(world, 200, 20, p_a=0.6, rng=np.random.default_rng(1))
    X = batch.P[:, :-1, :].transpose(0, 2, 1).reshape(-1, world.d)          # every x: (B (l+1), d)
    rng = np.random.default_rng(2)
    w0 = rng.normal(0.0, 1.0 / np.sqrt(world.d + 1), size=(500, world.d))  # 500 draws of w^(0)_{1:d}
    a = (w0 @ X[:400].T).ravel()
    xi = 1.0 / (world.d + 1)
    predicted_sd = np.sqrt(np.mean(np.sum(X[:400] ** 2, axis=1)) / (world.d + 1))
    assert abs(a.std() / predicted_sd - 1) < 0.05, "sd of w^T x should be ||x|| / sqrt(d+1)"
    assert a.std() > 10 * xi, f"measured sd {a.std():.3f} vs xi = {xi:.3f}"
    assert np.mean(np.abs(a) <= xi) < 0.1, "only a few percent of |w^T x| fall below xi"


# ---- 11. Eq (153): the stick-breaking identity is correct ------------------------------------------
@pytest.mark.parametrize("scale", [0.1, 1.0, 10.0])
def test_eq153_sum_of_context_gates_known_answer(scale):
    P, params = small_problem(seed=11, d=5, l=7, B=4)
    w = scale * params.w
    G = gating(w, P)
    s = expit(np.einsum("d,bdl->bl", w, P))
    rhs = 1.0 - s[:, -1] - np.prod(1.0 - s, axis=1)
    np.testing.assert_allclose(G[:, :-1].sum(axis=1), rhs, rtol=1e-10, atol=1e-12)
    # tiny known answer: l = 1, sigma = 1/2 everywhere -> G_1 = 1/4 = 1 - 1/2 - 1/4
    assert gating(np.zeros(2), np.array([[1.0, 2.0], [1.0, 0.0]]))[0] == 0.25


# ---- 12. Theorem 3: beta^-2 in eq (14) vs beta^-1 in its proof, eq (68) ---------------------------
def steps_to_loss(world, model, eta=0.01, delta=0.02, p_a=0.2, l=20, eps=0.1, T_max=400, seed=0):
    rng = np.random.default_rng([seed, 1])
    params = init_params(world.d, None, delta, rng)
    held = training_batch(world, 128, l, p_a=p_a, rng=np.random.default_rng([seed, 2]))
    for t in range(T_max + 1):
        if np.mean(hinge(output(model, params, held.P), held.z)) < eps:
            return t
        b = training_batch(world, 64, l, p_a=p_a, rng=rng)
        params = Params(*(p - eta * g for p, g in zip(params, gradients(params, b.P, b.z, model))))
    raise AssertionError(f"{model} did not reach loss {eps} in {T_max} steps")


def test_theorem3_iterations_scale_like_beta_minus_2_as_eq14_not_beta_minus_1_as_eq68():
    T = {beta: steps_to_loss(make_world(beta=beta, rng=0), "linear_transformer") for beta in (2.0, 4.0)}
    exponent = np.log(T[2.0] / T[4.0]) / np.log(2.0)
    assert exponent > 1.5, f"T_T ~ beta^-{exponent:.2f}; eq (68)'s beta^-1 would give ~1 ({T})"


# ---- 13. Lemma 3, eq (112): "forms a task" must read "does not form a task" ------------------------
def test_eq112_projection_vanishes_for_patterns_that_do_not_form_a_task():
    world = make_world(d=20, M1=6, M2=5, V=2, rng=0)
    params = init_params(world.d, rng=np.random.default_rng(0))
    batch = training_batch(world, 2000, 10, p_a=0.3, rng=np.random.default_rng(1))
    dW_C = gradients(params, batch.P, batch.z).W_C                          # (m, d+1)
    e = lambda v: np.append(v, 0.0)
    j = 2
    partner = e(world.mu[j + 1])                      # (mu_2, mu_3) is a training task
    stranger = e(world.mu[j + 3])                     # (mu_2, mu_5) is not
    assert -partner @ dW_C @ e(world.mu[j]) < -1e-3, "partner projection is negative, as in (113)"
    assert abs(stranger @ dW_C @ e(world.mu[j])) < 1e-12, "non-task projection is 0, as in (25)"


# ---- 14. Corollary 2's proof, eq (83): G_{h(j)} >= G_{h(j)} * ... must start from G_{h(1)} -------
def test_eq83_gate_of_jth_closest_clean_example_from_the_closest_one():
    rng = np.random.default_rng(14)
    l = 9
    P = rng.standard_normal((1, 4, l + 1))
    P[0, -1, -1] = 0.0
    w = rng.standard_normal(4)
    G = gating(w, P)[0]
    s = expit(w @ P[0])
    clean = [7, 5, 2]                                  # h(1), h(2), h(3): clean, nearest first
    for j, h_j in enumerate(clean[1:], start=2):
        h1 = clean[0]
        # exact: G_{h(j)} = G_{h(1)} (s_{h(j)} / s_{h(1)}) prod_{k=h(j)+1}^{h(1)} (1 - s_k)
        rhs = G[h1] * s[h_j] / s[h1] * np.prod(1.0 - s[h_j + 1:h1 + 1])
        np.testing.assert_allclose(G[h_j], rhs, rtol=1e-12)
    # as printed, G_{h(j)} >= G_{h(j)} * 2^-(j-1) * ... says nothing (any G >= 0 satisfies it); starting
    # from G_{h(1)} the bound is informative: with every clean 1 - sigma >= 1/2 (82) it gives 2^-(j-1)


# ---- 15. Eq (137): the Hoeffding (random-label) part comes from examples that CONTAIN v*_s ---------
def test_eq137_zero_mean_part_of_dw_is_the_outlier_examples():
    world = make_world(rng=0)
    params = init_params(world.d, rng=np.random.default_rng(0))
    norms = {}
    for B in (256, 4096):
        batch = training_batch(world, B, 20, p_a=0.6, rng=np.random.default_rng(B))
        P, z = batch.P, batch.z
        F = output("mamba", params, P)
        r = np.where(hinge_active(F, z), -z, 0.0) / B
        G = gating(params.w, P)
        dG = r[:, None] * P[:, -1, :] * scores(params, P)
        has_v = np.zeros_like(G, dtype=bool)
        has_v[:, :-1] = batch.outlier
        norms[B] = [np.linalg.norm(gate_backward(params.w, P, G, np.where(mask, dG, 0.0)))
                    for mask in (has_v, ~has_v)]
    shrink_outlier = norms[256][0] / norms[4096][0]
    shrink_clean = norms[256][1] / norms[4096][1]
    assert shrink_outlier > 2.0, f"outlier part should shrink ~ sqrt(16) = 4 with B; got {shrink_outlier:.2f}"
    assert shrink_clean < 1.6, f"clean part is the signal, it should not shrink; got {shrink_clean:.2f}"


# ---- 16. Eq (138): a factor 1/2 counted twice when re-indexing the sum -----------------------------
@pytest.mark.parametrize("l", [1, 5, 20])
def test_eq138_printed_sum_is_half_the_correctly_reindexed_one(l):
    i = np.arange(1, l + 1)
    line4 = np.sum((l - i + 1) / 2.0 ** (l + 2 - i) / 2.0)         # sum 1/2^{l+2-i} * (l-i+1)/2
    correct = np.sum(i / 2.0 ** (i + 2))                          # k = l+1-i
    printed = np.sum(i / 2.0 ** (i + 2)) / 2.0                    # i/2^{2+i} times (1-p_a)/2
    np.testing.assert_allclose(line4, correct, rtol=1e-14)
    assert abs(printed / line4 - 0.5) < 1e-12


# ---- 18. Lemma 3, eqs (25), (102), (120), (128): "= 0" for non-task pairs holds only at t = 0 ------
def test_eq25_non_task_projection_is_zero_only_before_training():
    world = make_world(d=20, M1=6, M2=5, V=2, rng=0)
    params0 = init_params(world.d, rng=np.random.default_rng(0))
    params, rng = params0, np.random.default_rng(1)
    e = lambda v: np.append(v, 0.0)
    proj = lambda W, j2: e(world.mu[j2]) @ (W - params0.W_C) @ e(world.mu[0])
    for t in range(20):
        batch = training_batch(world, 128, 10, p_a=0.3, rng=rng)
        params = Params(*(p - 0.1 * g for p, g in zip(params, gradients(params, batch.P, batch.z))))
        if t == 0:                                    # one step from W^(0): exactly 0, as (102) says
            assert abs(proj(params.W_C, 2)) < 1e-12 and abs(proj(params.W_C, 3)) < 1e-12
    partner, non_task = abs(proj(params.W_C, 1)), abs(proj(params.W_C, 2))   # (mu_0, mu_2): no task
    assert non_task > 0.05 * partner, (
        f"after 20 steps the non-task projection {non_task:.3g} should be a visible fraction of the "
        f"partner's {partner:.3g}: updates of W_B feed W_C through W_C p_query, so (25) '= 0' fails for t >= 1")

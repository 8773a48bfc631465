"""Eqs (93), (118), (135): literal vs vectorised, and both vs central finite differences."""
import numpy as np
import pytest

from numpy_mamba import Params, forward, gradcheck, gradients, gradients_literal, hinge_loss, init_params
from numpy_mamba.data import make_world, training_batch
from tests.helpers import random_problem

MODELS = ["mamba", "linear_transformer"]


def _problem(kind, seed=0):
    """Seeded problems, including awkward ones: l = 1, saturated gates, inactive hinge."""
    if kind == "paper_scale":                       # d = 30, l = 20, training prompts, random Psi
        world = make_world(rng=seed)
        b = training_batch(world, 4, 20, p_a=0.6, rng=seed + 1)
        rng = np.random.default_rng(seed + 2)
        params = Params(*(rng.normal(0, 0.15, (31, 31)) for _ in range(2)), rng.normal(0, 0.2, 31))
        return params, b.P, b.z
    params, _, P, z = random_problem(seed, d=4, l=1 if kind == "l1" else 5, B=6)
    if kind == "saturated":                         # some |w^T p_i| ~ 30, others moderate
        w = params.w / np.linalg.norm(params.w)
        P[:, :, ::2] += 30.0 * w[:, None] * np.sign(np.random.default_rng(seed).normal(size=(6, 1, 1)))
        P[:, -1, -1] = 0.0
        P[:, -1, :-1] = np.sign(P[:, -1, :-1]) + (P[:, -1, :-1] == 0)
        params = Params(params.W_B * 0.2, params.W_C * 0.2, w)
    if kind == "inactive":                          # most prompts have z F > 1: zero gradient there
        F = forward(params, P)
        z = np.sign(F)
        z[0] = -z[0]                                # keep one active prompt
        params = Params(params.W_B * 3, params.W_C * 3, params.w)
    return params, P, z


KINDS = ["generic", "l1", "saturated", "inactive", "paper_scale"]


def _away_from_kink(params, P, z, model):
    margin = np.abs(1.0 - z * forward(params, P, model))
    assert margin.min() > 1e-3, "problem sits on the hinge's kink; finite differences are invalid there"


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("kind", KINDS)
def test_literal_equals_vectorised(kind, model):
    # If this fails, the batched prefix-sum version no longer computes eqs (93), (118), (135).
    params, P, z = _problem(kind)
    fast, slow = gradients(params, P, z, model), gradients_literal(params, P, z, model)
    for name, a, b in zip(Params._fields, fast, slow):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12, err_msg=name)
    assert max(np.abs(g).max() for g in fast) > 1e-6      # not a comparison of zeros


@pytest.mark.parametrize("version", [gradients, gradients_literal], ids=["vectorised", "literal"])
@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("kind", KINDS)
def test_gradients_match_central_differences(kind, model, version):
    params, P, z = _problem(kind)
    _away_from_kink(params, P, z, model)
    analytic = version(params, P, z, model)
    report = gradcheck(lambda p: hinge_loss(p, P, z, model), params, analytic, tol=1e-7)
    assert report.passed, str(report)
    if model == "mamba":
        assert np.linalg.norm(analytic.w) > 0
    else:
        assert np.all(analytic.w == 0)              # G = 1 does not depend on w


def test_saturated_problem_really_saturates():
    params, P, _ = _problem("saturated")
    a = np.abs(np.einsum("d,bdl->bl", params.w, P))
    assert a.max() > 25 and a.min() < 5


def test_inactive_problem_really_has_inactive_prompts():
    params, P, z = _problem("inactive")
    zF = z * forward(params, P)
    assert np.sum(zF > 1) >= 3 and np.sum(zF < 1) >= 1


def test_inactive_prompts_contribute_nothing():
    params, P, z = _problem("inactive")
    zF = z * forward(params, P)
    active = zF < 1
    g_all = gradients(params, P, z)
    g_active = gradients(params, P[active], z[active])
    for a, b in zip(g_all, g_active):                # mean over B: scale by the batch fractions
        np.testing.assert_allclose(a * len(z), b * active.sum(), rtol=1e-12, atol=1e-14)


def test_misclassified_beyond_minus_one_still_has_gradient():
    # The paper's "F in (-1, 1)" would set this gradient to 0; the hinge is active (1 - zF > 0).
    params, P, z = _problem("generic")
    params = Params(params.W_B * 4, params.W_C * 4, params.w)
    F = forward(params, P)
    z = -np.sign(F)
    far = np.abs(F) > 1
    assert far.sum() >= 2, "the problem must contain prompts with |F| > 1"
    g = gradients(params, P[far], z[far])
    assert np.linalg.norm(g.W_B) > 0
    report = gradcheck(lambda p: hinge_loss(p, P[far], z[far]), params, g)
    assert report.passed, str(report)


def test_gradients_at_initialisation_match_finite_differences():
    world = make_world(d=8, M1=3, M2=2, V=2, rng=3)
    b = training_batch(world, 5, 6, p_a=0.4, rng=4)
    params = init_params(8, rng=5)
    g = gradients(params, b.P, b.z)
    report = gradcheck(lambda p: hinge_loss(p, b.P, b.z), params, g)
    assert report.passed, str(report)

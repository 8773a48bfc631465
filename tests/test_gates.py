"""The Appendix E.6 gates (numpy_mamba/gates/: families.py, attention.py, scan.py): two forms, gradients,
bad input, and a gate that is one entry of the registry."""
import json
from dataclasses import replace
from typing import NamedTuple

import numpy as np
import pytest
from scipy.special import expit, log_expit

import numpy_mamba
from numpy_mamba import Params, TrainConfig, gradcheck, gradients_literal, init_params, make_world, train
from numpy_mamba.gates import (GATES, GateFamily, GLAParams, GatedRetentionParams, Mamba2Params, RetNetParams,
                               gate_recurrent_forward, network)
from numpy_mamba.cli import main as cli_main
from numpy_mamba.gates import compare
from numpy_mamba.gates.scan import gla_scan_eq196
from numpy_mamba.gates import gate_values as gates_for

FAMILIES = ("mamba2", "retnet", "gated_retention", "gla")


def random_gate_params(model, rng, d=4, m=None, scale=0.5, gate_scale=0.5):
    """Random parameters of ``model``; ``gate_scale`` large saturates the input-dependent gates."""
    d0 = d + 1
    m = d0 if m is None else m
    W_B, W_C = rng.normal(0, scale, (m, d0)), rng.normal(0, scale, (m, d0))
    gate = {
        "mamba2": lambda: (rng.normal(0, gate_scale, d0), np.asarray(rng.normal(0, 0.5))),
        "retnet": lambda: (np.asarray(rng.uniform(0.3, 0.95)),),
        "gated_retention": lambda: (rng.normal(0, gate_scale, d0), np.asarray(rng.uniform(0.5, 2.0))),
        "gla": lambda: (rng.normal(0, gate_scale, (m, d0)), np.asarray(rng.uniform(0.5, 2.0))),
    }[model]()
    return GATES[model].params_type(W_B, W_C, *gate)


def random_prompts(rng, d=4, l=3, B=5):
    P = rng.normal(0, 1, (B, d + 1, l + 1))
    P[:, -1, :l] = rng.choice([-1.0, 1.0], size=(B, l))
    P[:, -1, l] = 0.0
    return P, rng.choice([-1.0, 1.0], size=B)


# ------------------------------------------------------------------ two forms, one truth
@pytest.mark.parametrize("model", FAMILIES)
@pytest.mark.parametrize("l, gate_scale", [(1, 0.5), (6, 8.0)])        # one example; several, saturated gates
def test_recurrent_update_equals_closed_form(model, l, gate_scale):
    """If this fails, linear attention times gate is not the paper's update equation for model."""
    rng = np.random.default_rng([1, l, int(gate_scale), FAMILIES.index(model)])
    params = random_gate_params(model, rng, gate_scale=gate_scale)
    P, _ = random_prompts(rng, l=l)
    F_closed = network(model).output(params, P)
    F_scan = gate_recurrent_forward(params, P, model)
    assert np.max(np.abs(F_closed)) > 1e-3, "degenerate problem: outputs are ~0"
    assert np.max(np.abs(F_closed - F_scan)) < 1e-12
    assert gate_recurrent_forward(params, P[0], model) == pytest.approx(float(F_closed[0]), abs=1e-12)


# ------------------------------------------------------------------ gradients vs central differences
def _problem(model, case):
    rng = np.random.default_rng([2, FAMILIES.index(model), ["generic", "l1", "saturated", "inactive"].index(case)])
    l = 1 if case == "l1" else 4
    params = random_gate_params(model, rng, gate_scale=6.0 if case == "saturated" else 0.5)
    P, z = random_prompts(rng, l=l, B=6)
    if case == "inactive":                      # half the prompts beyond the hinge (z F > 1)
        params = params._replace(W_C=3.0 * params.W_C)
        F = network(model).output(params, P)
        z = np.where(np.arange(len(F)) % 2 == 0, np.sign(F), -np.sign(F))
        active = 1 - z * F > 0
        assert active.any() and (~active).any(), "setup: need both sides of the hinge"
        assert np.min(np.abs(1 - z * F)) > 1e-3, "setup: too close to the kink for differences"
    return params, P, z


@pytest.mark.parametrize("model, case", [
    ("mamba2", "generic"), ("retnet", "generic"), ("gated_retention", "generic"), ("gla", "generic"),  # every parameter
    ("mamba2", "l1"),                       # l = 1: one context example
    ("gated_retention", "saturated"),       # |w^T p| ~ 6 sigma: gates near 0 and 1
    ("gla", "saturated"),                   # the per-key gate saturated
    ("retnet", "inactive"),                 # half the prompts on the flat side of the hinge
])
def test_analytic_gradients_match_central_differences(model, case):
    """If this fails, the hand-written gradient of some parameter of model is wrong (every
    parameter is checked in every case; the generic cases also check that no gate gradient vanishes)."""
    params, P, z = _problem(model, case)
    grad = network(model).value_and_gradients(params, P, z)[1]
    assert type(grad) is type(params)
    report = gradcheck(lambda q: network(model).value_and_gradients(q, P, z)[0], params, grad, tol=1e-7)
    print(model, case, report)
    assert report.passed, str(report)
    assert report.norm_analytic["W_B"] > 1e-6, "degenerate problem: zero gradient"
    if case == "generic":
        gate_fields = params._fields[2:]
        assert all(report.norm_analytic[f] > 1e-8 for f in gate_fields), "gate gradient vanished"


# ------------------------------------------------------------------ known answers by hand
def _tiny():
    """d = 1, l = 2: p_1 = (1, +1), p_2 = (2, -1), p_query = (1, 0); W_B = W_C = I."""
    P = np.array([[1.0, 2.0, 1.0], [1.0, -1.0, 0.0]])
    return P, np.eye(2)


def test_known_answers_on_a_tiny_prompt():
    """s_1 = 1, s_2 = 2, y = (+1, -1): every decay gate with gamma = 1/2 gives
    F = gamma^2 * 1 - gamma * 2 = -0.75; GLA with W = 0 gates each key by 1/2: F = (1 - 2)/2."""
    P, I = _tiny()
    zero_w = np.zeros(2)
    assert network("retnet").output(RetNetParams(I, I, 0.5), P) == pytest.approx(-0.75, abs=1e-15)
    # Mamba-2 with w = 0, a = 0: gamma = exp(-softplus(0)) = exp(-log 2) = 1/2
    assert network("mamba2").output(Mamba2Params(I, I, zero_w, 0.0), P) == pytest.approx(-0.75, abs=1e-15)
    # Gated Retention with w = 0, tau = 1: gamma = sigma(0) = 1/2; tau = 1/2 squares it: 1/4
    assert network("gated_retention").output(GatedRetentionParams(I, I, zero_w, 1.0), P) == pytest.approx(-0.75)
    assert network("gated_retention").output(GatedRetentionParams(I, I, zero_w, 0.5), P) == pytest.approx(
        0.25 ** 2 - 0.25 * 2, abs=1e-15)
    assert network("gla").output(GLAParams(I, I, np.zeros((2, 2)), 1.0), P) == pytest.approx(-0.5, abs=1e-15)


def test_mamba2_gate_at_the_query_is_one_unlike_mamba():
    """Eq (189): G_{t,t} = 1; Mamba's eq (3) has sigma(w^T p_query) there.  Also no input gate on
    example i: G_i for Mamba-2 does not change when p_i changes (only tokens after i count)."""
    rng = np.random.default_rng(3)
    params = random_gate_params("mamba2", rng)
    P, _ = random_prompts(rng, l=4, B=2)
    G = gates_for("mamba2", params, P)
    assert np.all(G[:, -1] == 1.0)
    G_mamba = gates_for("mamba", Params(params.W_B, params.W_C, params.w), P)
    assert not np.allclose(G_mamba[:, -1], 1.0)
    P2 = P.copy()
    P2[:, :-1, 1] += 5.0                                # change example 2's features only
    G2 = gates_for("mamba2", params, P2)
    assert np.allclose(G2[:, 1:], G[:, 1:], rtol=0, atol=0) and not np.allclose(G2[:, 0], G[:, 0])


def test_retnet_gate_does_not_depend_on_the_input():
    """Eq (192): G_{i,l+1} = gamma^{l+1-i} for every prompt; if this fails RetNet became selective."""
    rng = np.random.default_rng(4)
    params = random_gate_params("retnet", rng)
    P, _ = random_prompts(rng, l=5, B=3)
    G = gates_for("retnet", params, P)
    assert np.allclose(G, float(params.gamma) ** np.arange(5, -1, -1)[None, :], rtol=1e-14)


def test_gla_eq196_as_printed_is_not_eq198():
    """Paper note: the update (196) decays rows of h; summed up it is not the closed form (197)-(198)."""
    rng = np.random.default_rng(5)
    params = random_gate_params("gla", rng)
    P, _ = random_prompts(rng, l=4, B=1)
    assert abs(gla_scan_eq196(params, P[0]) - network("gla").output(params, P[0])) > 1e-3


def test_long_prompts_and_saturated_gates_stay_finite():
    """Gates are products of up to l factors; in log space l = 3000 with |w^T p| ~ 60 stays finite."""
    rng = np.random.default_rng(6)
    P, z = random_prompts(rng, l=3000, B=2)
    for model in FAMILIES:
        params = random_gate_params(model, rng, gate_scale=30.0)
        G = gates_for(model, params, P)
        assert np.all(np.isfinite(G)) and G.min() >= 0.0 and G.max() <= 1.0, model
        assert all(np.all(np.isfinite(g)) for g in network(model).value_and_gradients(params, P, z)[1]), model


# ------------------------------------------------------------------ plumbing: Network, init, training
def test_each_family_has_its_network_and_the_core_points_to_it():
    """If this fails a gate of GATES has no Network, or the core accepts (or names wrongly) a gate."""
    assert tuple(GATES) == FAMILIES
    assert [network(m).name for m in FAMILIES] == list(FAMILIES)
    with pytest.raises(ValueError, match=r"numpy_mamba.gates.network\(name\)"):
        numpy_mamba.network("gla")
    with pytest.raises(ValueError, match="Appendix E.6 gates"):
        network("mamba")


def test_init_uses_algorithm1_and_documented_gate_values():
    base = init_params(6, None, 0.2, np.random.default_rng(7))
    for model, field, value in [("mamba2", "a", 0.0), ("retnet", "gamma", 0.5),
                                ("gated_retention", "tau", 1.0), ("gla", "tau", 1.0)]:
        params = network(model).init(6, np.random.default_rng(7))
        assert type(params) is GATES[model].params_type
        assert np.array_equal(params.W_B, base.W_B) and np.array_equal(params.W_C, base.W_C)
        assert float(getattr(params, field)) == value
        if "w" in params._fields:                       # same draw as Mamba's w^(0)
            assert np.array_equal(params.w, base.w)
    assert network("gla").init(6, 7).W.shape == (7, 7)


@pytest.mark.parametrize("model", FAMILIES)
def test_sgd_trains_every_gate_and_keeps_its_container(model):
    """A few steps of Algorithm 1 on the Section 3.2 data lower the loss for each gate."""
    world = make_world(d=8, M1=4, M2=2, V=2, rng=0)
    params, history = train(world, TrainConfig(T=60, B=32, l_tr=6), network(model), rng=1, record_every=20)
    assert type(params) is GATES[model].params_type
    assert history["loss"][-1] < history["loss"][0]


def test_bad_inputs_say_what_was_expected():
    rng = np.random.default_rng(8)
    P, z = random_prompts(rng, l=2, B=2)
    mamba = init_params(4, rng=0)
    with pytest.raises(ValueError, match="Mamba2Params"):
        network("mamba2").output(mamba, P)
    with pytest.raises(ValueError, match="Params"):
        numpy_mamba.network("mamba").value_and_gradients(random_gate_params("mamba2", rng), P, z)
    with pytest.raises(ValueError, match="gamma .* > 0"):
        network("retnet").output(RetNetParams(mamba.W_B, mamba.W_C, 0.0), P)
    with pytest.raises(ValueError, match="tau .* > 0"):
        network("gated_retention").value_and_gradients(GatedRetentionParams(mamba.W_B, mamba.W_C, mamba.w, -1.0), P, z)
    with pytest.raises(ValueError, match=r"a of Mamba2Params must have shape \(\)"):
        network("mamba2").output(Mamba2Params(mamba.W_B, mamba.W_C, mamba.w, np.zeros(2)), P)
    with pytest.raises(ValueError, match=r"W of GLAParams must have shape \(5, 5\)"):
        network("gla").output(GLAParams(mamba.W_B, mamba.W_C, np.zeros((5, 4)), 1.0), P)
    with pytest.raises(ValueError, match="model must be one of"):
        network("mamba3")
    with pytest.raises(ValueError, match="model must be one of"):
        gradients_literal(random_gate_params("retnet", rng), P, z, model="retnet")
    with pytest.raises(ValueError, match="Appendix E.6 gates"):
        gate_recurrent_forward(mamba, P, "mamba")
    with pytest.raises(ValueError, match="GLAParams"):
        train(make_world(d=4, M1=2, M2=1, V=1, rng=0), TrainConfig(T=1, B=2, l_tr=2), network("gla"), rng=0,
              params=mamba)


@pytest.mark.parametrize("call", [
    lambda P: network("nonsense"),
    lambda P: gate_recurrent_forward(RetNetParams(np.eye(5), np.eye(5), 0.5), P, "nonsense"),
    lambda P: gates_for("nonsense", RetNetParams(np.eye(5), np.eye(5), 0.5), P),
], ids=["network", "scan", "gate_values"])
def test_an_unknown_gate_name_is_refused_with_the_known_ones(call):
    """If this fails, a misspelt gate silently runs another gate (once: Gated Retention's decay in the
    literal scan, the linear Transformer's G = 1 in gate_values)."""
    P, _ = random_prompts(np.random.default_rng(9), l=2, B=2)
    with pytest.raises(ValueError, match=r"Appendix E.6 gates \('mamba2', 'retnet', 'gated_retention', 'gla'\); "
                                         r"got 'nonsense'"):
        call(P)


# ------------------------------------------------------------------ a gate is one entry
class ToyParams(NamedTuple):
    """A toy decay gate, not of the paper: gamma_j = sigma(w^T p_j), Gated Retention with tau = 1 fixed."""

    W_B: np.ndarray
    W_C: np.ndarray
    w: np.ndarray


def toy_backward(params, P, log_gamma, d_log):
    sigma = expit(np.einsum("d,bdl->bl", params.w, P))
    return (np.einsum("bdl,bl->d", P, d_log * (1.0 - sigma)),)     # d log sigma(a) / da = 1 - sigma(a)


TOY = GateFamily("toy (sigma decay)", ToyParams, lambda params, P: log_expit(np.einsum("d,bdl->bl", params.w, P)),
                 toy_backward, lambda m, d0: {"w": (d0,)}, (), lambda W_B, W_C, w, rng: ToyParams(W_B, W_C, w))


def test_a_gate_registered_by_one_entry_is_a_model_and_trains_through_the_gates_command(monkeypatch, tmp_path):
    """If this fails, adding a gate takes more than its entry in GATES: its Network, its literal
    recurrence, its gradient or the gates command (training, testing, checks, figures, report)
    does not take a gate it was not written for."""
    monkeypatch.setitem(GATES, "toy", TOY)
    rng = np.random.default_rng(10)
    P, z = random_prompts(rng, l=4, B=6)
    params = ToyParams(rng.normal(0, 0.5, (5, 5)), rng.normal(0, 0.5, (5, 5)), rng.normal(0, 2.0, 5))
    net = network("toy")
    np.testing.assert_allclose(net.output(params, P), gate_recurrent_forward(params, P, "toy"), rtol=0, atol=1e-12)
    np.testing.assert_allclose(gates_for("toy", params, P), gates_for(                # gamma = sigma: tau = 1
        "gated_retention", GatedRetentionParams(params.W_B, params.W_C, params.w, 1.0), P), rtol=1e-14)
    report = gradcheck(lambda q: net.value_and_gradients(q, P, z)[0], params, net.value_and_gradients(params, P, z)[1])
    assert report.passed and report.norm_analytic["w"] > 1e-8, str(report)
    monkeypatch.setattr(compare, "QUICK", replace(compare.QUICK, T=20, alphas=(0.0, 0.7), n_test=40, n_eval=32))
    assert cli_main(["gates", "--quick", "--jobs", "1", "--quiet", "--out", str(tmp_path)]) == 0
    result = json.loads((tmp_path / "gates.json").read_text())
    assert list(result["models"]) == [*numpy_mamba.model.PAPER_MODELS, *FAMILIES, "toy"]
    toy = result["models"]["toy"]
    assert len(toy["eval_loss"][0]) == len(result["steps"]) and toy["eval_loss"][0][-1] < toy["eval_loss"][0][0]
    assert all(0 <= e <= 1 for errors in toy["error"].values() for seed in errors for e in seed)
    assert result["checks"]["toy"]["max_abs_recurrent_minus_closed"] < 1e-12
    assert "toy" in result["summary"] and (tmp_path / "gates_training.png").stat().st_size > 10_000

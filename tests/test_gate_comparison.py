"""``python -m numpy_mamba gates --quick``: runs end to end and writes honest, complete outputs."""
import json
from dataclasses import replace

import numpy as np
import pytest

from numpy_mamba.gates import compare as gate_comparison
from numpy_mamba.gates.compare import mean_and_halfwidth
from tests.helpers import broken_links

MODELS = ("mamba", "linear_transformer", "mamba2", "retnet", "gated_retention", "gla")


def gates_level(summary: dict, alphas: list, kappas: list) -> str:
    """The level of the gates' row on a summary as gates.json saves it."""
    return gate_comparison.claims({"gates": {"settings": {"alphas": alphas, "kappa_a_prime": kappas},
                                             "summary": summary}})[0]["level"]


def test_quick_run_writes_figures_json_and_report(gates_quick):
    """If this fails, the gates command broke, writes an incomplete/NaN result, or its quick mode
    is not the small run it is meant to be (the settings it saves are what it ran)."""
    tmp_path = gates_quick.out
    assert gates_quick.code == 0
    assert "SMOKE RUN" in gates_quick.stdout.splitlines()[-1], "a quick run must say so on stdout"
    for name in ("gates_error_vs_alpha.png", "gates_training.png"):
        assert (tmp_path / name).stat().st_size > 10_000, f"{name} missing or empty"
    result = json.loads((tmp_path / "gates.json").read_text())
    cfg = result["settings"]
    full = gate_comparison.FULL.to_dict()
    assert cfg == gate_comparison.QUICK.to_dict()
    assert {k: cfg[k] for k in ("d", "M1", "M2", "V", "beta", "delta", "kappa_a", "l_tr", "l_ts")} == {
        "d": 30, "M1": 6, "M2": 10, "V": 3, "beta": 3.0, "delta": 0.2, "kappa_a": 2.0, "l_tr": 20, "l_ts": 20}, (
        "the JSON must record Section 4's settings the run used")
    work = {k: c["T"] * c["B"] * len(c["seeds"]) for k, c in (("quick", cfg), ("full", full))}
    assert work["quick"] <= work["full"] / 100, work         # SGD prompts drawn, all seeds
    assert set(result["models"]) == set(MODELS)
    for model, r in result["models"].items():
        for key, errs in r["error"].items():
            errs = np.asarray(errs)
            assert errs.shape == (len(cfg["seeds"]), len(cfg["alphas"]))
            assert np.all((errs >= 0) & (errs <= 1)), (model, key)
    for model, c in result["checks"].items():
        assert c["max_abs_recurrent_minus_closed"] < 1e-12, model
        assert max(c["max_gradcheck_rel_err"].values()) < 1e-7, model
    report = (tmp_path / "REPORT.md").read_text()
    assert "<!-- BEGIN gates -->" in report and set(result["summary"]) == set(MODELS)
    assert not [link for link in broken_links(tmp_path / "REPORT.md") if not link.startswith("#")]
    assert "SMOKE RUN" in report.split("<!-- BEGIN gates -->")[1].splitlines()[1], "a quick run must say so"


def test_every_model_sees_the_same_training_prompts(monkeypatch):
    """If this fails, the models are not compared on the same minibatches (an unpaired comparison)."""
    from numpy_mamba import sgd
    seen = {}
    original = sgd.training_batch

    def spy(*args, **kwargs):
        batch = original(*args, **kwargs)
        seen.setdefault(current[0], []).append(batch.P.copy())
        return batch

    current = [None]
    monkeypatch.setattr(sgd, "training_batch", spy)
    cfg = replace(gate_comparison.QUICK, T=3, B=4, n_eval=4)
    for model in MODELS:                            # the units of one seed, one model at a time, spied
        current[0] = model
        gate_comparison.model_unit(cfg, 0, model)
    first = seen["mamba"]
    assert len(first) == 4
    for model in MODELS:
        assert all(np.array_equal(a, b) for a, b in zip(first, seen[model])), model


def test_error_bars_are_a_t_interval_or_a_wilson_interval_never_zero_wide_at_zero_errors():
    """t-interval over seeds; with one seed a Wilson binomial interval (never zero width at 0 errors)."""
    mean, half = mean_and_halfwidth([[0.1, 0.5], [0.3, 0.5]], n_test=100)
    assert np.allclose(mean, [0.2, 0.5]) and half[0] == pytest.approx(12.706 * 0.1414214 / np.sqrt(2), rel=1e-4)
    assert half[1] == 0.0
    mean, half = mean_and_halfwidth([[0.0]], n_test=100)
    assert mean[0] == 0.0 and 0.03 < half[0] < 0.05


def test_the_gates_prediction_reaches_each_level():
    """If this fails, the gates' prediction (input gates below the linear Transformer at alpha = 0.7, decay
    gates not) is judged wrongly: matched by intervals it holds, an input gate lower only in the mean
    holds in trend, an input gate above the linear Transformer fails."""
    def summary(errors, half=0.01):
        key = "kappa_a_prime=2/flip"
        return {m: {"error_mean": {key: [0.0, e]}, "error_halfwidth95": {key: [0.0, half]}} for m, e in errors.items()}

    base = {"linear_transformer": 0.86, "mamba2": 0.87, "retnet": 0.86, "gated_retention": 0.87}
    level = lambda s: gates_level(s, [0.0, 0.7], [2.0])  # noqa: E731
    assert level(summary({**base, "mamba": 0.5, "gla": 0.6})) == "full"
    assert level(summary({**base, "mamba": 0.5, "gla": 0.85}, half=0.05)) == "part"
    assert level(summary({**base, "mamba": 0.84, "gla": 0.85, "mamba2": 0.5, "retnet": 0.5,
                          "gated_retention": 0.5}, half=0.05)) == "trend"
    assert level(summary({**base, "mamba": 0.95, "gla": 0.95, "mamba2": 0.5, "retnet": 0.5, "gated_retention": 0.5})) \
        == "none"

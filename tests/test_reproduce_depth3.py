"""The three-layer part of ``reproduce`` (numpy_mamba/reproduce/depth3.py): per-layer scores and
gates against a literal loop over ``stack.forward_with_caches``, the one-layer identity, the
verdict rules on layers whose gates vanish, and the grid-edge flags of the delta/eta choice."""
import numpy as np
import pytest

from numpy_mamba.measure.gates import gate_profile
from numpy_mamba import Params
from numpy_mamba.data import make_world, testing_batch
from numpy_mamba.reproduce import depth3, mechanism
from numpy_mamba.reproduce.mechanism import fig4_claims
from numpy_mamba.reproduce.depth3 import grid_edges
from numpy_mamba.stack import LayerParams, forward_with_caches, init_stack


def _stack_and_batch(n_layers=3, d=8, l=7, n=40, seed=0):
    """A small world and a trained-looking (random, not diagonal) stack with gates away from 0 and 1."""
    world = make_world(d=d, M1=3, M2=2, V=2, rng=seed)
    batch = testing_batch(world, n, l, alpha=0.3, outliers=world.v_star, rng=seed + 1)
    rng = np.random.default_rng(seed + 2)
    D = d + 1
    layers = [LayerParams(rng.normal(0, 0.4, (D, D)), rng.normal(0, 0.4, (D, D)), rng.normal(0, 0.5, (D, D)))
              for _ in range(n_layers)]
    return world, batch, layers


@pytest.mark.parametrize("model", ["mamba", "linear_transformer"])
def test_layer_scores_are_the_stacks_own_scores_at_the_query_column(model):
    """If this fails, Figures 3 and 5 plot something other than layer k's s_{i,l+1} over its input
    H^(k-1) (wrong layer, wrong input, or the query row instead of the query column)."""
    _, batch, layers = _stack_and_batch()
    _, caches = forward_with_caches(layers, batch.P, model)              # literal reading form
    sums = depth3.layer_score_sums(layers, batch, model)
    for k, cache in enumerate(caches, start=1):
        s = np.array([[cache.S[b, i, -1] for i in range(batch.P.shape[2] - 1)] for b in range(batch.P.shape[0])])
        same = np.mean([sum(s[b, i] for i in range(s.shape[1]) if batch.same_pattern[b, i]) for b in range(len(s))])
        diff = np.mean([sum(s[b, i] for i in range(s.shape[1]) if not batch.same_pattern[b, i]) for b in range(len(s))])
        assert sums[f"L{k}_score_same"] == pytest.approx(same, rel=1e-12, abs=1e-12)
        assert sums[f"L{k}_score_diff"] == pytest.approx(diff, rel=1e-12, abs=1e-12)


def _layer_profiles(layers, batch) -> list:
    """What ``depth3.seed_unit`` measures in each layer: eq (3)'s gate profile of the layer's view."""
    return [gate_profile(params, batch._replace(P=H)) for params, H in depth3.layer_view(layers, batch.P, "mamba")]


def test_layer_gates_are_the_label_channels_gates_at_the_query_column():
    """If this fails, Figures 4 and 6 plot another channel's gate, another column's, or a layer's
    gates on the wrong input, instead of G_{d+1,i,l+1} of that layer."""
    _, batch, layers = _stack_and_batch()
    _, caches = forward_with_caches(layers, batch.P, "mamba")
    n, l = batch.outlier.shape
    for k, (cache, prof) in enumerate(zip(caches, _layer_profiles(layers, batch)), start=1):
        G = cache.G[:, -1, :-1, -1]                                        # (n, l): channel d+1, column l+1
        for i in range(l):
            for mask, key in ((batch.outlier[:, i], "outlier_mean"), (~batch.outlier[:, i], "clean_mean")):
                want = None if not mask.any() else float(np.mean(G[mask, i]))
                assert prof[key][i] == pytest.approx(want, rel=1e-10), (k, i, key)
        assert prof["outlier_gate_mean"] == pytest.approx(float(np.mean(G[batch.outlier])), rel=1e-10)


def test_layer_one_of_a_one_layer_stack_is_the_one_layer_measurement():
    """If this fails, the three-layer figures of layer 1 measure something else than the
    one-layer figures (a one-layer stack is eq (3) with w = W[:, -1])."""
    world, batch, _ = _stack_and_batch()
    layers = init_stack(world.d, 1, delta=0.2, rng=3)
    params = Params(layers[0].W_B, layers[0].W_C, layers[0].W[:, -1])
    group = np.arange(batch.P.shape[0]) % 4
    assert depth3.layer_score_sums(layers, batch, "mamba", group) == {
        f"L1_{k}": v for k, v in mechanism.score_sums(params, batch, group).items()}
    assert _layer_profiles(layers, batch) == [gate_profile(params, batch)]


def test_layer_inputs_are_the_residual_stream():
    """If this fails, layer k is measured on P or on O^(k-1) instead of H^(k-1) = H^(k-2) + O^(k-1)."""
    _, batch, layers = _stack_and_batch()
    views = depth3.layer_view(layers, batch.P, "mamba")
    _, caches = forward_with_caches(layers, batch.P, "mamba")
    np.testing.assert_array_equal(views[0][1], batch.P)
    for (params, H), cache, layer in zip(views, caches, layers):
        np.testing.assert_allclose(H, cache.H, rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(params.w, layer.W[:, -1])


def _gate_runs(outlier: float, clean: float, l: int = 20) -> dict:
    """A fig4-like result whose gates are ``outlier`` on outlier examples and ``clean`` on clean ones."""
    run = {"outlier_mean": [outlier] * l, "clean_mean": [clean] * l, "outlier_gate_mean": outlier,
           "outlier_gate_max": outlier, "clean_gate_mean": clean, "clean_rank_mean": [clean * 0.6 ** j for j in range(l)],
           "clean_rank_count": [500] * l, "outlier_count": [500] * l, "clean_count": [500] * l}
    return {"per_seed": [{"flip/2": run}, {"flip/2": run}], "paper": {"M1": 6}, "setting_keys": ["flip/2"],
            "main_setting": "flip/2"}


def test_gate_rules_fail_on_a_layer_whose_gates_all_vanished():
    """If this fails, a layer whose gates all underflowed to 0 (it passes nothing at all) is called
    'holds' for Corollary 2, or the rank fit crashes on log(0)."""
    rows = fig4_claims(_gate_runs(0.0, 0.0))
    assert rows[0]["verdict"] == rows[1]["verdict"] == "does not hold here"


def test_gate_rules_fail_when_outlier_gates_are_the_larger_ones_and_pass_on_the_paper_pattern():
    """If this fails, Corollary 2 (i) does not depend on outlier gates being small."""
    assert fig4_claims(_gate_runs(0.3, 0.1))[0]["verdict"] == "does not hold here"
    good = fig4_claims(_gate_runs(0.001, 0.1))
    assert good[0]["verdict"] == "holds" and good[1]["verdict"] == "holds"


def test_grid_edges_flag_edge_picks_and_say_where_the_grid_cannot_grow():
    """If this fails, a delta or eta chosen at the edge of its grid is reported without a flag."""
    sel = {"grid": {"delta": [0.05, 0.1, 0.2], "eta": [0.01, 0.03, 0.1]}, "chosen": {"delta": 0.2, "eta": 0.03}}
    edges = grid_edges(sel)
    assert len(edges) == 1 and edges[0].startswith("delta = 0.2 (largest") and "cannot go higher" in edges[0]
    assert grid_edges({"grid": {"delta": [0.05, 0.2], "eta": [0.01, 0.1]}, "chosen": {"delta": 0.05, "eta": 0.1}}) == [
        "delta = 0.05 (smallest of the grid)", "eta = 0.1 (largest of the grid)"]


def test_three_layer_settings_keep_the_one_layer_test_grid():
    """If this fails, the three-layer Table 1 and figures are measured at other test settings than the
    one-layer ones they are shown beside (alpha, kappa_a', K', p_a)."""
    from numpy_mamba.reproduce.common import FULL, QUICK
    for key in ("alphas", "kappa_a_primes", "K_primes", "main_kappa_a_prime", "main_K_prime", "p_a_mechanism",
                "alpha_fig3", "alpha_fig4", "alpha_table1", "K"):
        assert getattr(depth3.FULL, key) == getattr(FULL, key), key
        assert getattr(depth3.QUICK, key) == getattr(QUICK, key), f"quick run: {key}"
    assert depth3.QUICK.quick and not depth3.FULL.quick, "a quick three-layer run must be stamped as one"
    cfg = depth3.FULL.train_config(0.4, 0.1, 0.05)
    assert depth3.FULL.n_layers == 3 and cfg.delta == 0.05 and cfg.eta == 0.1 and cfg.p_a == 0.4

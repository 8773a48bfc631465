"""Section 4.2 with the paper's three-layer models (stack.py): Figures 3-4 for layer 1, Figures 5-6
(Appendix B) for layers 2 and 3, and Table 1, all at p_a = 0.4 from one training run per seed and model.

What a layer's figure measures (our reading of the paper; the stack is ours, see stack.py): layer
k's "prompt examples" are the columns h_i of its input H^(k-1) (H^(0) = P); its attention score is
s_{i,l+1} = h_i^T W_B^T W_C h_{l+1} with that layer's W_B, W_C, and its gate is G_{d+1,i,l+1}, the
gate of the label channel d+1 at the query column, the only one that moves F.  Both are exactly
eq (3)'s scores and gates of ``Params(W_B, W_C, W[:, -1])`` on H^(k-1) (``layer_view``), so the
one-layer measurements (``mechanism.score_sums``, ``measure.gates.gate_profile``) serve every layer;
tests/test_reproduce_depth3.py checks them against a literal loop over ``stack.forward_with_caches``.

Delta and eta are chosen per model by the rule of runs/step_size.py over delta x eta grids on
selection worlds (never the test settings; ties go to the paper's delta = 0.2, then the smaller
eta).  This part runs its own number of seeds and steps (``SETTINGS``).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from ..runs.jobs import Plan, Unit
from ..model import Params
from ..fused import network, stack_forward
from ..sgd import TrainConfig, train
from . import common, figures_depth3, report_depth3
from .experiment import Experiment
from .claims_mechanism import MECHANISM_RULES, depth3_claims, depth3_not_run
from .common import MODELS, PAPER, Settings, heldout_check
from ..runs.worlds import selection_world, world_for
from .results import GROUPS
from .common import keep_initial
from .mechanism import final_sums, gate_profiles, mechanism_settings, probe_batch, score_sums, summarise_table1, table1_counts
from .results import setting_key
from ..runs.step_size import selection_plan


@dataclass(frozen=True)
class Depth3Settings(Settings):
    """``Settings`` of the three-layer runs: the one-layer test grid (alphas, kappa_a', K', p_a) with
    fewer seeds and steps, plus the number of layers and the grid of delta (Algorithm 1: (0, 0.2])
    that the step-size rule searches together with eta."""

    n_layers: int = 3
    delta_grid: tuple = (0.05, 0.1, 0.2)

    def train_config(self, p_a: float, eta: float, delta: float = PAPER["delta"]) -> TrainConfig:
        return TrainConfig(T=self.T, B=self.B, eta=eta, l_tr=PAPER["l_tr"], p_a=p_a, K=self.K,
                           kappa_a=PAPER["kappa_a"], delta=delta)


# the one-layer test grid (Depth3Settings' defaults are FULL's) with fewer seeds and steps
SETTINGS = Depth3Settings(seeds=5, T=500, eta_grid=(0.003, 0.01, 0.03, 0.1, 0.3), select_seeds=1,
                          record_every=10, n_test=1000, n_probe=256, n_heldout=1024)
QUICK = replace(SETTINGS, seeds=1, T=12, eta_grid=(0.01, 0.1), delta_grid=(0.05, 0.2), record_every=4,
                n_test=120, n_probe=16, n_heldout=32, alphas=common.QUICK.alphas, quick=True)


def settings(one_layer: Settings) -> Depth3Settings:
    """QUICK for a quick run, else SETTINGS: this part keeps its own seeds (``--seeds`` is the one-layer part's)."""
    return QUICK if one_layer.quick else SETTINGS


# ---------------------------------------------------------------- per-layer measurement
def layer_view(layers, P, model: str = "mamba") -> list:
    """[(Params(W_B, W_C, W[:, -1]) of layer k, H^(k-1))] for k = 1..L: each layer as eq (3)'s model
    and its input, so that eq (3)'s scores p_i^T W_B^T W_C p_query and gates G_{i,l+1}(w) of that
    pair are layer k's s_{i,l+1} and label-channel gates G_{d+1,i,l+1}.  P (B, d+1, l+1); every
    H^(k-1) (B, d+1, l+1)."""
    _, caches = stack_forward(layers, P, model)
    return [(Params(layer.W_B, layer.W_C, layer.W[:, -1]), cache.H) for layer, cache in zip(layers, caches)]


def layer_score_sums(layers, batch, model: str, group=None) -> dict:
    """Corollary 1's sums (``mechanism.score_sums``) in every layer: {"L<k>_<key>": value}."""
    return {f"L{k}_{key}": value for k, (params, H) in enumerate(layer_view(layers, batch.P, model), start=1)
            for key, value in score_sums(params, batch._replace(P=H), group).items()}


def seed_unit(settings: Depth3Settings, seed: int, chosen: dict) -> dict:
    """Train both three-layer models on seed ``seed``'s world at p_a = 0.4 with the chosen
    {model: {"delta", "eta"}}; measure scores per layer during training (Figs 3, 5; main setting),
    at the end in every test setting (Corollary 1), gates per layer in every setting (Figs 4, 6) and
    Table 1, trained and at initialisation.  Same worlds and test prompts as the one-layer seed ``seed``."""
    world = world_for(seed)
    probe, probe_group = probe_batch(world, settings, seed)
    out = {"training": {}, "scores": {}}
    trained = {}
    for m, model in enumerate(MODELS):
        cfg = settings.train_config(settings.p_a_mechanism, chosen[model]["eta"], chosen[model]["delta"])
        net = network(model, settings.n_layers)
        callback, initial = keep_initial(lambda step, layers: layer_score_sums(layers, probe, model, probe_group))
        layers, history = train(world, cfg, net, rng=np.random.default_rng([seed, 10, m]),
                                record_every=settings.record_every, record=callback)
        trained[model], trained[f"{model}_untrained"] = (net, layers), (net, initial[0])
        last = max(1, len(history["loss"]) // 10)
        out["training"][model] = {
            "seed": seed, **chosen[model], "final_minibatch_loss": float(np.mean(history["loss"][-last:])),
            "final_minibatch_error": float(np.mean(history["error"][-last:])),
            **heldout_check(world, layers, net, cfg, settings.n_heldout, np.random.default_rng([seed, 10, m, 99]))}
        out["scores"][model] = {"step": history["step"], "loss": history["loss"],
                                **{k: v for k, v in history.items() if k.startswith("L")}}
    mamba = trained["mamba"][1]
    for k in range(1, settings.n_layers + 1):
        out["scores"]["mamba"][f"L{k}_final"] = final_sums(world, settings, seed,
                                                           lambda P, k=k: layer_view(mamba, P, "mamba")[k - 1])
    out["gates"] = [gate_profiles(world, settings, seed, lambda P, k=k: layer_view(mamba, P, "mamba")[k - 1])
                    for k in range(1, settings.n_layers + 1)]
    out["table1"] = table1_counts(world, trained, settings, seed)
    return out


def selection(settings: Depth3Settings) -> dict:
    """{("depth3", model): Plan} of the step-size rule over delta x eta for the three-layer models at p_a = 0.4."""
    grid = {"delta": settings.delta_grid, "eta": settings.eta_grid}
    return {("depth3", model): selection_plan(grid, range(settings.select_seeds), selection_world,
                                  settings.train_config(settings.p_a_mechanism, settings.eta_grid[0]),
                                  network(model, settings.n_layers),
                                  settings.n_heldout, (8, round(100 * settings.p_a_mechanism), m + 1, settings.n_layers),
                                  f"depth3 step size, {model}")
            for m, model in enumerate(MODELS)}


def plan(settings: Depth3Settings, selection: dict, names=("depth3",)) -> Plan:
    """The three-layer experiments as units (one per seed); assembles to {"depth3": JSON-ready result}:
    per layer k, "layers"[k-1] = {"scores": {model: [per seed]}, "gates": [per seed]}, and "table1"."""
    selection = {m: selection[("depth3", m)] for m in MODELS}
    chosen = {m: dict(selection[m]["chosen"]) for m in MODELS}
    units = [Unit(seed, f"three-layer seed {seed + 1}/{settings.seeds}", seed_unit, (settings, seed, chosen))
             for seed in range(settings.seeds)]

    def assemble(found: dict) -> dict:
        runs = [found[seed] for seed in range(settings.seeds)]
        layers = []
        for k in range(1, settings.n_layers + 1):
            scores = {m: [{key[len(f"L{k}_"):] if key.startswith(f"L{k}_") else key: value
                           for key, value in r["scores"][m].items() if key[0] != "L" or key.startswith(f"L{k}_")}
                          for r in runs] for m in MODELS}
            layers.append({"layer": k, "scores": scores, "gates": [r["gates"][k - 1] for r in runs]})
        return {"depth3": {"experiment": "depth3", "settings": settings.to_dict(), "paper": PAPER, "n_layers": settings.n_layers,
                "p_a": settings.p_a_mechanism, "eta": {m: chosen[m]["eta"] for m in MODELS},
                "delta": {m: chosen[m]["delta"] for m in MODELS}, "step_size": selection,
                "task_groups": list(GROUPS), "alpha_fig3": settings.alpha_fig3, "alpha_fig4": settings.alpha_fig4,
                "setting_keys": [key for _, _, key in mechanism_settings(settings)],
                "main_setting": setting_key(settings.mechanism_label_rule, settings.main_kappa_a_prime),
                "training": {m: [r["training"][m] for r in runs] for m in MODELS}, "layers": layers,
                "table1": summarise_table1([r["table1"] for r in runs], settings)}}

    return Plan(units, assemble)


def claims(results: dict) -> list:
    """Corollaries 1-2 and Table 1 at three layers, layer by layer (Figs 3-6); "not run" rows without depth3."""
    return depth3_claims(results["depth3"]) if "depth3" in results else depth3_not_run()


def draw(results: dict, out: Path) -> list:
    """fig3_L3.png, fig4_L3.png, fig5.png, fig6.png, table1_L3.png and table1_L3.md (``figures_depth3.py``)."""
    return figures_depth3.draw(results["depth3"], out)


def report(results: dict) -> str:
    """The three-layer runs: delta and eta chosen, training, Table 1 (``report_depth3.py``)."""
    return report_depth3.section(results["depth3"]) if "depth3" in results else ""


# its training and step sizes are in its own report part, so no runs_label
EXPERIMENT = Experiment(
    "depth3", ("depth3",),
    """\
depth3              Section 4.2 with three-layer models (stack.py): Figures 3-4 for layer 1,
                    Figures 5-6 (Appendix B) for layers 2-3, Table 1 -> depth3.json,
                    fig3_L3.png, fig4_L3.png, fig5.png, fig6.png, table1_L3.png/.md""",
    selection, plan, claims, draw, report, rules=MECHANISM_RULES, settings=settings)

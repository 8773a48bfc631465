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
eta).  This part runs its own number of seeds and steps (``FULL``; ``--seeds`` does not apply).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..fused import network, stack_forward
from ..measure.rules import PAPER_DELTA
from ..model import Params
from ..runs.claims import claim_row
from ..runs.report import Template
from ..runs.runner import Unit
from ..runs.step_size import selection_plan, table_rows
from ..runs.worlds import selection_world, world_for
from ..sgd import TrainConfig, train
from . import common, corollaries
from .common import GROUPS, MODELS, PAPER, SHORT, Settings, final_losses, heldout_check, keep_initial, md_table, \
    setting_key, spread, view
from .mechanism import final_sums, gate_profiles, mechanism_settings, probe_batch, score_sums, summarise_table1, \
    table1_counts

NAME, FILES = "depth3", ("depth3",)
OUTPUTS = """\
depth3              Section 4.2 with three-layer models (stack.py): Figures 3-4 for layer 1,
                    Figures 5-6 (Appendix B) for layers 2-3, Table 1 -> depth3.json,
                    fig3_L3.png, fig4_L3.png, fig5.png, fig6.png, table1_L3.png/.md"""
RULES = ("cor1", "growth", "gate-ratio", "decay", "table1-numbers", "table1-pattern")
TEXT = Template(__package__, "depth3.md")


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


# the one-layer test grid (Depth3Settings' defaults are the one-layer FULL's) with fewer seeds and steps
FULL = Depth3Settings(seeds=5, T=500, eta_grid=(0.003, 0.01, 0.03, 0.1, 0.3), select_seeds=1,
                      record_every=10, n_test=1000, n_probe=256, n_heldout=1024)
QUICK = replace(FULL, seeds=1, T=12, eta_grid=(0.01, 0.1), delta_grid=(0.05, 0.2), record_every=4,
                n_test=120, n_probe=16, n_heldout=32, alphas=common.QUICK.alphas, quick=True)


def settings(quick: bool, seeds=None) -> Depth3Settings:
    """QUICK or FULL: this part keeps its own seeds (``--seeds`` is the one-layer experiments')."""
    return QUICK if quick else FULL


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
    out, trained = {"training": {}, "scores": {}}, {}
    for m, model in enumerate(MODELS):
        cfg = settings.train_config(settings.p_a_mechanism, chosen[model]["eta"], chosen[model]["delta"])
        net = network(model, settings.n_layers)
        callback, initial = keep_initial(lambda step, layers: layer_score_sums(layers, probe, model, probe_group))
        layers, history = train(world, cfg, net, rng=np.random.default_rng([seed, 10, m]),
                                record_every=settings.record_every, record=callback)
        trained[model], trained[f"{model}_untrained"] = (net, layers), (net, initial[0])
        out["training"][model] = {"seed": seed, **chosen[model], **final_losses(history), **heldout_check(
            world, layers, net, cfg, settings.n_heldout, np.random.default_rng([seed, 10, m, 99]))}
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


def selection(settings: Depth3Settings, chosen: dict) -> dict:
    """{("depth3", model): Plan} of the step-size rule over delta x eta for the three-layer models at p_a = 0.4."""
    grid = {"delta": settings.delta_grid, "eta": settings.eta_grid}
    return {("depth3", model): selection_plan(grid, range(settings.select_seeds), selection_world,
                                              settings.train_config(settings.p_a_mechanism, settings.eta_grid[0]),
                                              network(model, settings.n_layers), settings.n_heldout,
                                              (8, round(100 * settings.p_a_mechanism), m + 1, settings.n_layers),
                                              f"depth3 step size, {model}")
            for m, model in enumerate(MODELS)}


def units(settings: Depth3Settings, chosen: dict) -> list:
    """One unit per seed, at the delta and eta the rule chose."""
    picked = {m: dict(chosen[("depth3", m)]["chosen"]) for m in MODELS}
    return [Unit(seed, f"three-layer seed {seed + 1}/{settings.seeds}", seed_unit, (settings, seed, picked))
            for seed in range(settings.seeds)]


def assemble(settings: Depth3Settings, chosen: dict, found: dict, run) -> dict:
    """depth3.json: per layer k, "layers"[k-1] = {"scores": {model: [per seed]}, "gates": [per seed]}, and "table1"."""
    selection = {m: chosen[("depth3", m)] for m in MODELS}
    picked = {m: dict(selection[m]["chosen"]) for m in MODELS}
    runs = [found[seed] for seed in range(settings.seeds)]
    layers = []
    for k in range(1, settings.n_layers + 1):
        scores = {m: [{key[len(f"L{k}_"):] if key.startswith(f"L{k}_") else key: value
                       for key, value in r["scores"][m].items() if key[0] != "L" or key.startswith(f"L{k}_")}
                      for r in runs] for m in MODELS}
        layers.append({"layer": k, "scores": scores, "gates": [r["gates"][k - 1] for r in runs]})
    return {"depth3": {"experiment": "depth3", "settings": settings.to_dict(), "paper": PAPER, "n_layers": settings.n_layers,
                       "p_a": settings.p_a_mechanism, "eta": {m: picked[m]["eta"] for m in MODELS},
                       "delta": {m: picked[m]["delta"] for m in MODELS}, "step_size": selection,
                       "task_groups": list(GROUPS), "alpha_fig3": settings.alpha_fig3, "alpha_fig4": settings.alpha_fig4,
                       "setting_keys": [key for _, _, key in mechanism_settings(settings)],
                       "main_setting": setting_key(settings.mechanism_label_rule, settings.main_kappa_a_prime),
                       "training": {m: [r["training"][m] for r in runs] for m in MODELS}, "layers": layers,
                       "table1": summarise_table1([r["table1"] for r in runs], settings), "seconds": run.seconds[NAME]}}


def figure(results: dict, out) -> list:
    """fig3_L3.png, fig4_L3.png, fig5.png, fig6.png, table1_L3.png and table1_L3.md."""
    from . import figures, table1                           # matplotlib only when drawing
    result = results["depth3"]
    note = figures.depth_note(result)
    md = out / "table1_L3.md"
    md.write_text(table1.markdown(view(result, "table1"), "three") + "\n")
    return [figures.fig3(view(result, "fig3", 1), out / "fig3_L3.png", "Figure 3 (three-layer models, layer 1)", note),
            figures.fig4(view(result, "fig4", 1), out / "fig4_L3.png", "Figure 4 (three-layer Mamba, layer 1)", note,
                         "d+1,"),
            figures.fig5(result, out / "fig5.png"), figures.fig6(result, out / "fig6.png"),
            table1.png(view(result, "table1"), out / "table1_L3.png", "three-layer models", note), md]


NOT_RUN = (("cor1_3", "Corollary 1 at 3 layers (Figs 3, 5)"), ("growth_3", "Figs 3, 5 at 3 layers: the gap grows"),
           ("gate_ratio_3", "Corollary 2 (i) at 3 layers (Figs 4, 6)"), ("decay_3", "Corollary 2 (ii) at 3 layers (Figs 4, 6)"),
           ("table1_numbers_3", "Table 1 (3 layers): numbers"), ("table1_pattern_3", "Table 1 (3 layers): pattern"))


def claims(results: dict) -> list:
    """The one-layer rules on the three-layer runs, every layer a case (Figs 3-4 on layer 1, Figs 5-6 on
    layers 2 and 3: the paper says they show "the same trend"), and Table 1.  Without depth3.json (e.g.
    after ``--only fig2``) the paper's three-layer claims are "not run" rows, never dropped silently."""
    if "depth3" not in results:
        return [claim_row(key, title, "three-layer models", "no three-layer result here (run `reproduce --only depth3`)",
                          {"level": "not run"}, "", []) for key, title in NOT_RUN]
    res = results["depth3"]
    L, M1 = res["n_layers"], res["paper"]["M1"]
    fig3 = [(k, view(res, "fig3", k)) for k in range(1, L + 1)]
    fig4 = [(k, view(res, "fig4", k)) for k in range(1, L + 1)]
    s3, s4 = [("fig3_L3", "fig3_L3.png"), ("fig5", "fig5.png")], [("fig4_L3", "fig4_L3.png"), ("fig6", "fig6.png")]
    return [corollaries.cor1_row(fig3, "cor1_3", f"Corollary 1 at {L} layers (Figs 3, 5): attention on the query's "
                                 "pattern", s3),
            corollaries.growth_row(fig3, "growth_3", f"Figs 3, 5 ({L} layers): the gap between the two sums grows in "
                                   "training", s3),
            corollaries.gate_ratio_row(fig4, "gate_ratio_3", f"Corollary 2 (i) at {L} layers (Figs 4, 6): outlier gates "
                                       "near zero", s4, M1),
            corollaries.decay_row(fig4, "decay_3", f"Corollary 2 (ii) at {L} layers (Figs 4, 6): clean gates decay "
                                  "exponentially", s4),
            *corollaries.table1_rows(view(res, "table1"), f"{L} layers", [("table1_L3.png", "table1_L3.png"),
                                                                          ("table", "table1_L3.md")])]


# ---------------------------------------------------------------- its part of the report
def grid_edges(selection: dict) -> list:
    """The fields whose chosen value is the smallest or largest of its grid: ["delta = 0.2 (largest)", ...]."""
    out = []
    for field, value in selection["chosen"].items():
        grid = selection["grid"][field]
        if len(grid) > 1 and value in (min(grid), max(grid)):
            where = "smallest" if value == min(grid) else "largest"
            bound = {"delta": (0.2, "cannot-delta"), "eta": (1.0, "cannot-eta")}.get(field)
            why = TEXT(bound[1]) if bound and where == "largest" and value >= bound[0] else ""
            out.append(TEXT("edge", field=field, value=value, where=where, why=why))
    return out


def tie_text(sel: dict) -> str:
    """' (tied with 5 other candidates at held-out loss 0.00e+00; the tie-break took ...)' or ''."""
    best = next(r["mean"] for r in sel["candidates"] if r["fields"] == sel["chosen"])
    if "tied" not in sel:                 # a record without "tied": its rule broke ties by grid order
        tied = sum(r["mean"] == best for r in sel["candidates"]) - 1
        return TEXT("tied-grid", others=tied, best=best) if tied else ""
    if len(sel["tied"]) < 2:
        return ""
    margins = {tuple(r["fields"].items()): r.get("mean_margin") for r in sel["candidates"]}
    tied = "; ".join(f"{', '.join(f'{k} = {v:g}' for k, v in f.items())}: margin "
                     + ("n/a" if margins.get(tuple(f.items())) is None else f"{margins[tuple(f.items())]:.2f}")
                     for f in sel["tied"])
    why = TEXT("by-delta" if "delta" in sel["chosen"] and sel["chosen"]["delta"] == PAPER_DELTA
               and any(f.get("delta") != PAPER_DELTA for f in sel["tied"]) else "by-eta")
    return TEXT("tied", others=len(sel["tied"]) - 1, best=best, tied=tied, why=why)


def delta_text(res: dict) -> str:
    """'; delta = 0.2, the paper's value, for both models', or for each model that departs from it
    the best held-out loss at delta = 0.2 against the chosen one, from the rule's record."""
    off = []
    for m in MODELS:
        if res["delta"][m] == PAPER_DELTA:
            continue
        sel = res["step_size"][m]
        chosen = next(r["mean"] for r in sel["candidates"] if r["fields"] == sel["chosen"])
        at_paper = [r["mean"] for r in sel["candidates"] if r["fields"].get("delta") == PAPER_DELTA and r["mean"] is not None]
        why = (TEXT("paper-delta-diverged") if not at_paper else
               TEXT("paper-delta-loss", best=min(at_paper), chosen=chosen,
                    tie=TEXT("paper-delta-tie") if min(at_paper) <= chosen else ""))
        off.append(f"{SHORT[m]} {res['delta'][m]:g} ({why})")
    return TEXT("paper-delta", delta=PAPER_DELTA) if not off else TEXT("other-delta", delta=PAPER_DELTA,
                                                                         off="; ".join(off))


def report(results: dict, run) -> str:
    """The three-layer runs: delta and eta chosen, run size, training, Table 1."""
    from . import table1
    res = results["depth3"]
    s = res["settings"]
    lines = [TEXT("head", models=table1.TEXT("models-three"), deltas=", ".join(f"{x:g}" for x in s["delta_grid"]),
                  etas=", ".join(f"{x:g}" for x in s["eta_grid"]), select_seeds=s["select_seeds"], T=s["T"],
                  n_heldout=s["n_heldout"], p_a=res["p_a"], paper=PAPER_DELTA, delta=delta_text(res),
                  chosen="; ".join(f"{SHORT[m]} delta {res['delta'][m]:g}, eta {res['eta'][m]:g}" for m in MODELS),
                  seeds=s["seeds"], B=s["B"], n_test=s["n_test"], n_probe=s["n_probe"]), ""]
    for model in MODELS:
        sel = res["step_size"][model]
        edges = grid_edges(sel)
        lines += [TEXT("chosen", model=SHORT[model], chosen=", ".join(f"{k} = {v:g}" for k, v in sel["chosen"].items()),
                       flag=(TEXT("edges", edges="; ".join(edges)) if edges else "") + tie_text(sel)), ""]
        lines += md_table(["candidate"] + [f"held-out loss, selection seed {k}" for k in sel["seeds"]] + ["mean", ""],
                          table_rows(sel)) + [""]
    lines += [TEXT("training"), "", TEXT("training-header")]
    for model in MODELS:
        f = lambda key: spread([r[key] for r in res["training"][model]])  # noqa: E731
        lines.append(f"| {SHORT[model]} | {res['delta'][model]:g} | {res['eta'][model]:g} | {f('final_minibatch_loss')} | "
                     f"{f('loss_train_tasks')} | {f('error_train_tasks')} | {f('error_all_tasks')} |")
    return "\n".join(lines + ["", table1.markdown(view(res, "table1"), "three", heading=True)])

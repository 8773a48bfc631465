"""Figures of the three-layer runs (``depth3.py``): Figures 3 and 4 for layer 1 (fig3_L3.png,
fig4_L3.png), the paper's Appendix B Figures 5 and 6 for layers 2 and 3 (fig5.png, fig6.png) and
Table 1 (table1_L3.png, table1_L3.md), drawn from the saved "depth3" JSON with the one-layer
figures' panels (``figures.py``), so every layer is drawn the same way."""
from __future__ import annotations

from pathlib import Path

from ..runs.output import subplots
from .results import view
from .figures import SCORE_LABEL, fig3, fig4, gate_position_panel, main_profiles, main_text, rank_panel, score_panels
from .figures_table1 import table1_png
from .plots import save, settings_line
from ..runs.output import footnote
from .tables import table1_markdown

NAMES = ("fig3_L3.png", "fig4_L3.png", "fig5.png", "fig6.png", "table1_L3.png", "table1_L3.md")
MODELS_TEXT = ("three-layer residual stacks of stack.py (our architecture; the paper does not write its "
               "three-layer model down")


def depth_note(result: dict) -> str:
    """The footnote of every three-layer figure: which models, and the delta and eta the rule chose."""
    chosen = ", ".join(f"{'Mamba' if m == 'mamba' else 'LT'} delta = {result['delta'][m]:g}, eta = {result['eta'][m]:g}"
                       for m in result["delta"])
    return (f"NOTE: {result['n_layers']}-layer models (stack.py: H^(k) = H^(k-1) + O^(k), F = H^(L)[d+1, l+1]; "
            f"our architecture); a layer's examples are the columns h_i of its input H^(k-1); delta and eta chosen "
            f"per model by the step-size rule: {chosen}")


def fig5(result: dict, path) -> Path:
    """Figure 5 (Appendix B): attention-score sums s_{i,l+1} of layers 2 and 3 on fixed test prompts
    during training, same-pattern vs different-pattern examples (by task group), one row per layer."""
    rows = range(2, result["n_layers"] + 1)
    fig, axes = subplots(len(rows), 2, figsize=(13, 5.2 * len(rows)), squeeze=False)
    for row, k in zip(axes, rows):
        score_panels(row, view(result, "fig3", k), title=f"layer {k}: {{model}}, $\\eta$ = {{eta:g}}")
        row[0].set_ylabel(f"layer {k}: {SCORE_LABEL}".replace("p_i", "h_i").replace("p_{query}", "h_{l+1}")
                          + "\n(mean over the prompts of each group)", fontsize=9)
    fig.legend(*axes[0][0].get_legend_handles_labels(), loc="lower center", ncol=3, fontsize=9,
               bbox_to_anchor=(0.5, 0.09 / len(rows)))
    fig.suptitle("Figure 5 (Appendix B): sums of attention scores in layers 2 and 3 of the three-layer models")
    s = result["settings"]
    return _finish(fig, path, result, "fig3", 0.2 / len(rows),
                   f"{s['n_probe']} fixed test prompts per seed (alpha = {result['alpha_fig3']}, "
                   f"{main_text(view(result, 'fig3', 2))}); lines: mean over prompts and seeds, bands: min-max over seeds.")


def fig6(result: dict, path) -> Path:
    """Figure 6 (Appendix B): the label-channel gates G_{d+1,i,l+1} of layers 2 and 3 of the Mamba
    stack on outlier and clean examples (alpha = 0.3), per position and per clean rank, one row per layer."""
    rows = range(2, result["n_layers"] + 1)
    fig, axes = subplots(len(rows), 2, figsize=(15, 5.4 * len(rows)), squeeze=False)
    for row, k in zip(axes, rows):
        runs = main_profiles(view(result, "fig4", k))
        gate_position_panel(row[0], runs, "d+1,")
        rank_panel(row[1], runs, "d+1,")
        for ax in row:
            ax.set_title(f"layer {k}: {ax.get_title()}", fontsize=10)
    fig.suptitle(f"Figure 6 (Appendix B): Mamba's gates in layers 2 and 3 at alpha = {result['alpha_fig4']}")
    s = result["settings"]
    return _finish(fig, path, result, "fig4", 0.1 / len(rows),
                   f"{s['n_test']} test prompts per seed, {main_text(view(result, 'fig4', 2))}; gate of the label "
                   "channel d+1 at the query column (the gate that moves F).")


def _finish(fig, path, result: dict, part: str, bottom: float, text: str) -> Path:
    """Footnote (settings and the three-layer note), layout above ``bottom``, save (smoke stamp if quick)."""
    footnote(fig, settings_line(view(result, part, 2), text), depth_note(result))
    fig.tight_layout(rect=(0, bottom, 1, 0.97))
    return save(fig, path, view(result, part, 2))


def draw(result: dict, out: Path) -> list:
    """Every three-layer figure and table1_L3.md into ``out``; returns their paths (NAMES)."""
    out = Path(out)
    note = depth_note(result)
    md = out / "table1_L3.md"
    md.write_text(table1_markdown(view(result, "table1"), MODELS_TEXT) + "\n")
    return [fig3(view(result, "fig3", 1), out / "fig3_L3.png", "Figure 3 (three-layer models, layer 1)", note),
            fig4(view(result, "fig4", 1), out / "fig4_L3.png", "Figure 4 (three-layer Mamba, layer 1)", note, "d+1,"),
            fig5(result, out / "fig5.png"), fig6(result, out / "fig6.png"),
            table1_png(view(result, "table1"), out / "table1_L3.png", "three-layer models", note), md]

"""The three-layer part of the "reproduce" section of REPORT.md (``depth3.json``): what the
step-size rule chose for delta and eta (grid edges flagged), the run size, whether training
converged, and Table 1 at three layers.  The verdict rows themselves are in the claims table
(``claims_mechanism.depth3_claims``)."""
from __future__ import annotations

import numpy as np

from .common import MODELS
from .results import view
from .figures_depth3 import MODELS_TEXT
from ..runs.step_size import table_rows
from .tables import SHORT, md_table, table1_markdown


def grid_edges(selection: dict) -> list:
    """The fields whose chosen value is the smallest or largest of its grid: ["delta = 0.2 (largest)", ...]."""
    out = []
    for field, value in selection["chosen"].items():
        grid = selection["grid"][field]
        if len(grid) > 1 and value in (min(grid), max(grid)):
            where = "smallest" if value == min(grid) else "largest"
            limit = {"delta": (0.2, "Algorithm 1's delta is in (0, 0.2]"), "eta": (1.0, "Theorems 1 and 3 need eta <= 1")}
            bound = limit.get(field)
            why = f"; {bound[1]}, so the grid cannot go higher" if bound and where == "largest" and value >= bound[0] else ""
            out.append(f"{field} = {value:g} ({where} of the grid{why})")
    return out


def chosen_text(res: dict) -> str:
    """'Mamba delta 0.2, eta 0.1; LT delta 0.05, eta 0.01' for the end-of-run summary."""
    return "; ".join(f"{SHORT[m]} delta {res['delta'][m]:g}, eta {res['eta'][m]:g}" for m in MODELS)


def section(res: dict) -> str:
    s = res["settings"]
    L = res["n_layers"]
    lines = [f"### Three-layer runs (Section 4.2 at the paper's depth: fig3_L3.png, fig4_L3.png, fig5.png, "
             "fig6.png, table1_L3.png)", "",
             f"- Models: {MODELS_TEXT}): H^(0) = P, H^(k) = H^(k-1) + O^(k) with every output column of the eq (1) "
             "scan of layer k, F = H^(L)[d+1, l+1]; the linear Transformer is the same stack with every gate 1. In "
             "layer k the \"examples\" are the columns h_i of H^(k-1); the score is s_{i,l+1} = h_i^T W_B^T W_C "
             "h_{l+1} and the gate is G_{d+1,i,l+1}, the label channel's gate at the query column (the one that "
             "moves F).",
             f"- delta and eta **chosen per model** by the same rule (numpy_mamba/reproduce/step_size.py) over "
             f"delta in {{{', '.join(f'{x:g}' for x in s['delta_grid'])}}} x eta in "
             f"{{{', '.join(f'{x:g}' for x in s['eta_grid'])}}}, {s['select_seeds']} selection seed(s) on their own "
             f"worlds, T = {s['T']}, {s['n_heldout']} held-out training prompts (p_a = {res['p_a']}); never on test "
             f"settings. Chosen: {chosen_text(res)}.",
             f"- Run size (ours, to keep the whole command under 15 minutes on two cores): {s['seeds']} seeds "
             f"(the one-layer part has more), T = {s['T']} steps, B = {s['B']}, {s['n_test']} test prompts per seed "
             f"and cell, {s['n_probe']} fixed probe prompts for the score curves. Same worlds (seed s) and test "
             "prompts as the one-layer runs of Figs 3-4 and Table 1.", ""]
    for model in MODELS:
        sel = res["step_size"][model]
        edges = grid_edges(sel)
        flag = (f" ({'; '.join(edges)}: an edge of the grid, so a value outside it might score better; the grid "
                "is not widened after seeing this)") if edges else ""
        best = next(r["mean"] for r in sel["candidates"] if r["fields"] == sel["chosen"])
        tied = sum(r["mean"] == best for r in sel["candidates"]) - 1
        if tied:
            flag += (f" (tied with {tied} other candidate(s) at held-out loss {best:.2e}; the rule takes the first "
                     "in grid order)")
        lines += [f"**Three-layer {SHORT[model]}: {', '.join(f'{k} = {v:g}' for k, v in sel['chosen'].items())} "
                  f"chosen{flag}**", ""]
        lines += md_table(["candidate"] + [f"held-out loss, selection seed {k}" for k in sel["seeds"]] + ["mean", ""],
                     table_rows(sel))
        lines.append("")
    lines += ["Training (three layers): final minibatch hinge loss and, on fresh prompts of Definition 1, held-out "
              "loss and 0-1 error; mean over seeds [min, max].", ""]
    rows = []
    for model in MODELS:
        runs = res["training"][model]

        def f(key):
            v = np.array([r[key] for r in runs])
            return f"{v.mean():.4f} [{v.min():.4f}, {v.max():.4f}]"
        rows.append([SHORT[model], f"{res['delta'][model]:g}", f"{res['eta'][model]:g}", f("final_minibatch_loss"),
                     f("loss_train_tasks"), f("error_train_tasks"), f("error_all_tasks")])
    lines += md_table(["model", "delta", "eta", "final minibatch loss", "held-out loss, T_tr", "held-out error, T_tr",
                  "held-out error, all T"], rows)
    lines += ["", f"**Table 1, {L} layers (table1_L3.md, table1_L3.png)**", "",
              table1_markdown(view(res, "table1"), MODELS_TEXT)]
    return "\n".join(lines)


"""The three-layer part of the "reproduce" section of REPORT.md (``depth3.json``): what the
step-size rule chose for delta and eta (grid edges flagged), the run size, whether training
converged, and Table 1 at three layers.  The verdict rows themselves are in the claims table
(``claims_mechanism.depth3_claims``)."""
from __future__ import annotations

import numpy as np

from .common import MODELS
from .results import view
from .figures_depth3 import MODELS_TEXT
from ..measure.rules import PAPER_DELTA
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


def tie_text(sel: dict) -> str:
    """' (tied with 5 other candidates at held-out loss 0.00e+00; the tie-break took ...)' or ''."""
    best = next(r["mean"] for r in sel["candidates"] if r["fields"] == sel["chosen"])
    if "tied" not in sel:                 # a record without "tied": its rule broke ties by grid order
        tied = sum(r["mean"] == best for r in sel["candidates"]) - 1
        return (f" (tied with {tied} other candidate(s) at held-out loss {best:.2e}; the rule of this result took "
                "the first in grid order)") if tied else ""
    if len(sel["tied"]) < 2:
        return ""
    margins = {tuple(r["fields"].items()): r.get("mean_margin") for r in sel["candidates"]}
    tied = "; ".join(f"{', '.join(f'{k} = {v:g}' for k, v in f.items())}: margin "
                     + ("n/a" if margins.get(tuple(f.items())) is None else f"{margins[tuple(f.items())]:.2f}")
                     for f in sel["tied"])
    why = ("delta = 0.2 first" if "delta" in sel["chosen"] and sel["chosen"]["delta"] == PAPER_DELTA
           and any(f.get("delta") != PAPER_DELTA for f in sel["tied"]) else "the smaller eta")
    return (f" (tied with {len(sel['tied']) - 1} other candidate(s) at held-out loss {best:.2e}, mean held-out margin "
            f"z F: {tied}; the tie-break decided by {why})")


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
        why = ("every eta diverged at delta = 0.2" if not at_paper else
               f"best held-out loss at delta = 0.2: {min(at_paper):.2e}, chosen: {chosen:.2e}"
               + ("; a tie that the grid order of this result's rule broke" if min(at_paper) <= chosen else ""))
        off.append(f"{SHORT[m]} {res['delta'][m]:g} ({why})")
    return (f"; delta = {PAPER_DELTA:g}, the paper's value, for both models" if not off else
            f"; delta differs from the paper's {PAPER_DELTA:g} for: {'; '.join(off)}")


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
             f"- delta and eta **chosen per model** by the same rule (numpy_mamba/runs/step_size.py) over "
             f"delta in {{{', '.join(f'{x:g}' for x in s['delta_grid'])}}} x eta in "
             f"{{{', '.join(f'{x:g}' for x in s['eta_grid'])}}}, {s['select_seeds']} selection seed(s) on their own "
             f"worlds, T = {s['T']}, {s['n_heldout']} held-out training prompts (p_a = {res['p_a']}); never on test "
             f"settings. Candidates that fit the held-out training prompts equally well (typically all at loss 0) are "
             f"told apart by the rule's tie-break: the paper's delta = {PAPER_DELTA:g} (Section 4: \"Let delta = "
             f"0.2\") first, then the smaller eta, then grid order (rule [step-size](#rule-step-size) says why). Chosen: "
             f"{chosen_text(res)}"
             f"{delta_text(res)}.",
             f"- Run size: {s['seeds']} seeds, T = {s['T']} steps, B = {s['B']}, {s['n_test']} test prompts per seed "
             f"and cell, {s['n_probe']} fixed probe prompts for the score curves. Same worlds (seed s) and test "
             "prompts as the one-layer runs of Figs 3-4 and Table 1. What the number of steps, the training tasks "
             "and the architecture do to the three-layer results is the question of the `ablation` command, not "
             "of this section.", ""]
    for model in MODELS:
        sel = res["step_size"][model]
        edges = grid_edges(sel)
        flag = (f" ({'; '.join(edges)}: an edge of the grid, so a value outside it might score better; the grid "
                "is not widened after seeing this)") if edges else ""
        flag += tie_text(sel)
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


"""The command's own part of the "reproduce" section of REPORT.md, around the experiments' parts: its
heading, three opening lines, every claim in detail, the settings the paper does not give, the
training table and the step-size tables of the one-layer runs; and the appendix's "Main setting".
Its sentences are templates/reproduce.md; an experiment's runs enter the shared tables when its
module names them (``RUNS``: short and long label)."""
from __future__ import annotations

import numpy as np

from ..data import SECTION4_TEST_OUTLIERS
from ..runs.claims import details, opening
from ..runs.output import SMOKE
from ..runs.report import Template
from ..runs.step_size import table_rows
from .common import MODELS, PAPER, SHORT, main_table1, md_table, spread, view
from .corollaries import PAPER_TABLE1

TEXT = Template(__package__, "reproduce.md")


def heading(quick: bool) -> str:
    """The section's heading (stamped for a smoke run)."""
    return TEXT("heading") + (f" -- {SMOKE}" if quick else "")


def training_runs(experiments, results: dict) -> list:
    """[(short label, long label, result)]: the first result present of each experiment that names
    its one-layer training runs (fig3, fig4 and table1 share one set of runs)."""
    runs = []
    for e in experiments:
        present = [results[f] for f in e.FILES if f in results]
        if getattr(e, "RUNS", None) and present:
            runs.append((*e.RUNS, present[0]))
    return runs


def section(experiments, results: dict, run, rows: list, heads: list) -> str:
    """The whole "reproduce" section from the results present ({JSON name: result})."""
    quick = sorted(name for name, r in results.items() if r.get("settings", {}).get("quick", False))
    mode = "full" if not quick else "QUICK" if len(quick) == len(results) else TEXT("mixed", quick=", ".join(quick))
    wall = TEXT("wall", seconds=run.wall) if run.wall else ""
    parts = [heading(run.quick), "", *opening(TEXT("first", mode=mode, files=", ".join(sorted(results)), wall=wall),
                                              rows, heads), ""]
    if quick:
        parts += [TEXT("smoke", smoke=SMOKE), ""]
    parts += [TEXT("details"), *details(rows)]
    runs = training_runs(experiments, results)
    one = runs[0][2] if runs else next((r for r in results.values() if "eta" in r), None)
    if one is not None:
        parts += ["", settings(one["settings"], one["eta"]["mamba"], runs)]
    parts += ["", TEXT("training"), "", TEXT("training-header"), *training_rows(runs)]
    if "fig2" in results:
        trained = results["fig2"]["training"]["mamba"]
        parts += ["", TEXT("gate", v_star=", ".join(f"{x:.2f}" for x in np.mean([r["w_dot_v_star"] for r in trained], 0)),
                           v_prime=", ".join(f"{x:.2f}" for x in np.mean([r["w_dot_v_prime"] for r in trained], 0)))]
    steps = step_size_tables(runs)
    if steps:
        parts += ["", TEXT("step-size"), *steps]
    for e in experiments:
        text = e.report(results, run) if any(f in results for f in e.FILES) else ""
        if text:
            parts += ["", text]
    return "\n".join(parts)


def settings(s: dict, eta_mamba: float, runs: list) -> str:
    """The settings the paper does not give, and why (from a one-layer result's settings)."""
    p_a = s["p_a_fig2"]
    T_M = PAPER["M1"] / (eta_mamba * (1 - p_a) * PAPER["beta"] ** 2)
    L_s = SECTION4_TEST_OUTLIERS.sum(1) / np.linalg.norm(SECTION4_TEST_OUTLIERS, axis=1)
    L = SECTION4_TEST_OUTLIERS.sum(1).min()                 # eq (11)'s L: the smallest coefficient sum of a v'
    join = lambda xs, f="g": ", ".join(f"{x:{f}}" for x in xs)  # noqa: E731
    chosen = "; ".join(f"{short} (p_a = {res['p_a']}): " + ", ".join(f"{SHORT[m]} {res['eta'][m]:g}" for m in MODELS)
                       for short, _, res in runs if "eta" in res) or "n/a"
    return TEXT("settings", **PAPER, p_a_fig2=p_a, p_a_mechanism=s["p_a_mechanism"], eta_grid=join(s["eta_grid"]),
                select_seeds=s["select_seeds"], T=s["T"], n_heldout=s["n_heldout"], chosen=chosen, B=s["B"],
                B_T=PAPER["M1"] / (1 - p_a) * np.log(100), T_M=T_M, eta_mamba=eta_mamba, T_ratio=s["T"] / T_M, K=s["K"],
                K_prime=s["main_K_prime"], K_primes=join(s["K_primes"]), kappa=s["main_kappa_a_prime"],
                kappas=join(s["kappa_a_primes"]), L_s=join(L_s, ".2f"), L=L, kappa_L=PAPER["kappa_a"] / L,
                kappa_max=max(s["kappa_a_primes"]), labels=s["mechanism_label_rule"], n_test=s["n_test"],
                seeds=s["seeds"], outliers=s["alpha_table1"] * PAPER["l_ts"],
                placed=round(s["alpha_table1"] * PAPER["l_ts"]))


def training_rows(runs: list) -> list:
    """One row per one-layer training setting and model: final minibatch loss, held-out losses and errors."""
    return [f"| {short} (p_a = {res['p_a']}) | {SHORT[m]} | {res['eta'][m]:g} | " + " | ".join(
        spread([r[key] for r in res["training"][m]]) for key in ("final_minibatch_loss", "loss_train_tasks",
                                                                  "loss_all_tasks", "error_train_tasks",
                                                                  "error_all_tasks")) + " |"
            for short, _, res in runs for m in MODELS]


def step_size_tables(runs: list) -> list:
    """Every candidate's held-out loss per selection seed, and which eta the rule chose, per one-layer
    training setting and model."""
    lines = []
    for _, label, res in runs:
        for model in MODELS if "step_size" in res else ():
            sel = res["step_size"][model]
            eta, grid = sel["chosen"]["eta"], sel["grid"]["eta"]
            edge = TEXT("top") if eta == max(grid) == 1.0 else TEXT("edge") if eta in (min(grid), max(grid)) else ""
            lines += ["", TEXT("chosen", label=label, p_a=res["p_a"], model=SHORT[model], eta=eta, edge=edge), ""]
            lines += md_table(["candidate"] + [f"held-out loss, selection seed {k}" for k in sel["seeds"]] + ["mean", ""],
                              table_rows(sel))
    return lines


def notes(results: dict) -> dict:
    """The appendix's "Main setting": the argument, with Table 1's vote counts when table1 is present."""
    vote = results.get("table1", {}).get("vote_baseline")
    fmt = lambda rule: " / ".join(f"{100 * vote[rule][p]:.1f}" for p in ("FQ", "R", "CQ"))  # noqa: E731
    counts = TEXT("vote-counts", n_test=results["table1"]["settings"]["n_test"], flip=fmt("flip"), target=fmt("target"),
                  random=fmt("random"), paper=" / ".join(f"{100 * PAPER_TABLE1['linear_transformer'][p]:.2f}"
                                                         for p in ("FQ", "R", "CQ"))) if vote else ""
    return {"Main setting": TEXT("main-setting") + "." + counts}


def bottom_line(results: dict) -> list:
    """The report's first line: do the two headline experiments reproduce under the paper's stated
    setting (Figure 2's row and three-layer Table 1's numbers, as judged), with their numbers and the
    runs they come from."""
    from . import depth3, fig2                              # the rows as their experiments judge them
    if "fig2" not in results or "depth3" not in results:
        return []
    fig2_row = fig2.claims(results)[0]
    table1_row = next(r for r in depth3.claims(results) if r["key"] == "table1_numbers_3")
    three = view(results["depth3"], "table1")
    rule, kappa = main_table1(three["settings"])
    miss = max(abs(100 * three["accuracy"][m][rule][str(kappa)][p]["all"]["rate"] - 100 * PAPER_TABLE1[m][p])
               for m in MODELS for p in ("FQ", "R", "CQ"))
    held = {"fig2": fig2_row["level"] == "full", "table1": table1_row["level"] == "full"}
    verdict = TEXT("neither" if not any(held.values()) else "both" if all(held.values()) else
                   "only-fig2" if held["fig2"] else "only-table1")
    return [TEXT("bottom-line", verdict=verdict, fig2=fig2_row["headline"][2].replace(", ", " / "),
                 miss=miss)]

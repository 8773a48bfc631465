"""``python -m numpy_mamba reproduce``: the quick pipeline end to end, plus the pieces that
compute its numbers (intervals, gate profiles, score sums, seeding, JSON writing)."""
import json
import math
import re
from dataclasses import replace

import numpy as np
import pytest
from scipy.stats import binomtest

from numpy_mamba import Params, attention_scores
from numpy_mamba import data
from numpy_mamba.data import Batch, make_world
from numpy_mamba.measure.gates import gate_profile
from numpy_mamba.measure.rates import rate_summary
from numpy_mamba.measure.rules import clopper_pearson
from numpy_mamba.reproduce import COMMAND, depth3, fig2, mechanism
from numpy_mamba.reproduce.common import QUICK
from numpy_mamba.runs.command import chosen_experiments, compute, main
from numpy_mamba.runs.experiment import Run
from tests.helpers import broken_links

PNGS = ["fig2.png", "fig2_kappa8.png", "fig2_sensitivity.png", "fig2_training.png", "fig3.png", "fig4.png",
        "table1.png", "fig3_L3.png", "fig4_L3.png", "fig5.png", "fig6.png", "table1_L3.png", "factorial.png"]
JSONS = ["fig2.json", "factorial.json", "fig3.json", "fig4.json", "table1.json", "depth3.json"]
# keys whose values (scalars or nested lists) are rates or gate values and must lie in [0, 1]
RATE_KEYS = {"rate", "ci95", "ci95_low", "ci95_high", "seed_ci95", "seed_ci95_low", "seed_ci95_high", "seed_mean",
             "seed_min", "seed_max", "error_train_tasks",
             "error_all_tasks", "final_minibatch_error", "outlier_mean", "clean_mean", "clean_rank_mean",
             "outlier_gate_max", "outlier_gate_mean", "clean_gate_mean", "query_gate_mean"}


@pytest.fixture
def quick_run(reproduce_quick):
    """The session's ``reproduce --quick`` run (conftest.py): (output folder, exit code, stdout)."""
    return reproduce_quick


def _rates(obj, key=None):
    """Every number stored under a RATE_KEYS key, anywhere in a JSON document."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _rates(v, k)
    elif isinstance(obj, list):
        for v in obj:
            yield from _rates(v, key)
    elif key in RATE_KEYS and obj is not None:
        yield key, obj


def test_quick_run_writes_every_output(quick_run):
    """If this fails, the quick pipeline failed or left out a figure, JSON, table or the report."""
    out, code, _ = quick_run
    assert code == 0, "the command reported failure"
    for name in PNGS:
        data = (out / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000, f"{name} missing or not a real PNG"
    for name in JSONS + ["table1.md", "table1_L3.md", "REPORT.md"]:
        assert (out / name).stat().st_size > 0, f"{name} missing or empty"


def test_json_rates_are_finite_and_in_unit_interval(quick_run):
    out = quick_run.out
    for name in JSONS:
        doc = json.loads((out / name).read_text())
        seeds = depth3.QUICK.seeds if name == "depth3.json" else QUICK.seeds
        assert doc["settings"]["quick"] is True and doc["settings"]["seeds"] == seeds
        values = list(_rates(doc))
        assert values, f"{name} holds no rates at all"
        for key, v in values:
            assert isinstance(v, (int, float)) and math.isfinite(v) and 0 <= v <= 1, f"{name}: {key} = {v}"


def test_json_counts_are_consistent(quick_run):
    out = quick_run.out
    fig2 = json.loads((out / "fig2.json").read_text())
    n = np.array(fig2["n_prompts"])                          # (S, rules, kappa', K', alpha, 2)
    assert np.all(n.sum(-1) == QUICK.n_test), "seen + unseen prompts must add up to n_test per point"
    for model in ("mamba", "linear_transformer"):
        wrong = np.array(fig2["wrong"][model])
        assert wrong.shape == n.shape and np.all((wrong >= 0) & (wrong <= n)), "more errors than prompts"
        rate = np.array(fig2["error"][model]["flip"]["all"]["rate"], dtype=float)
        expect = wrong[:, 0].sum(-1).sum(0) / n[:, 0].sum(-1).sum(0)
        np.testing.assert_allclose(rate, expect, err_msg="pooled rate is not errors / prompts")


def test_report_has_a_verdict_per_claim(quick_run):
    """If this fails, the reproduce section or its rows in the results table lose a claim (the
    three-layer ones, Figs 5-6, Table 1 at both depths), a row's verdict is outside the vocabulary,
    or a quick run's section does not say it is a smoke run."""
    text = (quick_run.out / "REPORT.md").read_text()
    assert "<!-- BEGIN reproduce -->" in text and "<!-- END reproduce -->" in text
    section = text.split("<!-- BEGIN reproduce -->")[1]
    rows = json.loads((quick_run.out / "claims_reproduce.json").read_text())["rows"]
    keys = {r["key"] for r in rows}
    assert {"fig2_small", "thm2_inside", "lt_rise", "remark5", "unseen", "cor1_1", "growth_1", "gate_ratio_1", "decay_1",
            "table1_numbers_1", "table1_pattern_1", "cor1_3", "growth_3", "gate_ratio_3", "decay_3", "table1_numbers_3",
            "table1_pattern_3", "factorial_reached", "breakeven"} == keys
    words = ("holds", "holds in part", "holds in trend", "does not hold here")
    judged = [r for r in rows if r["kind"] == "paper"]
    assert all(r["verdict"].removesuffix(" (borderline)") in words for r in judged), [r["verdict"] for r in judged]
    assert {r["key"] for r in rows if r["kind"] == "finding"} == {"factorial_reached", "breakeven"}, (
        "the factorial and the break-even are findings, outside the claim count")
    assert all(r["verdict"] == "finding" and not r["rule"] for r in rows if r["kind"] == "finding")
    for r in rows:
        assert f"#### {r['claim']}" in section, f"no detail for {r['key']}"
    assert "SMOKE RUN" in section.splitlines()[1], "a quick run must say so in the section header"


def test_report_opens_with_the_summary_then_the_results_table(quick_run):
    """If this fails, REPORT.md's first screen is not a summary of at most 15 lines (the bottom line,
    why Figure 2 misses, where its size is reached, the tally of the paper's claims, each linked to a
    heading of the report) and then the results table (one row per claim of the paper, no cell a
    reader sees as over 200 characters, each row linking its figure) and the findings' table, or the
    main-setting argument and the rules are not written once in the appendix below the results."""
    from numpy_mamba.runs.claims import MAX_CELL, anchor, visible
    text = (quick_run.out / "REPORT.md").read_text()
    head = text.split("<!-- END results -->")[0]
    lines = head.splitlines()
    assert lines[3] == "## Summary", "the summary is the first thing after the title"
    summary = head.split("## Summary")[1].split("## Results")[0]
    items = [line for line in summary.splitlines() if line.startswith("- ")]
    assert 3 <= len(items) <= 15 and items[0].startswith("- **Bottom line**") and items[-1].startswith("- **Claims judged**")
    anchors = {anchor(line) for line in text.splitlines() if line.startswith("#")}
    for target in re.findall(r"\]\((#[^)]+)\)", summary):
        assert target in anchors, f"the summary links {target}, a heading the report does not have"
    table = [line for line in head.split("## Findings")[0].splitlines() if line.startswith("| ") and not line.startswith("| claim")]
    rows = json.loads((quick_run.out / "claims_reproduce.json").read_text())["rows"]
    assert len(table) == sum(r["kind"] == "paper" for r in rows), "every reproduce claim has its row on the first screen"
    findings = [line for line in head.split("## Findings")[1].splitlines() if line.startswith("| ") and not line.startswith("| finding")]
    assert len(findings) == sum(r["kind"] == "finding" for r in rows) == 2
    for line in table:
        cells = [c.strip() for c in line.strip("|").split(" | ")]
        assert len(cells) == 6 and max(len(visible(c)) for c in cells) <= MAX_CELL == 200, line[:120]
        assert ".png)" in cells[5] or "#" in cells[5], "a row links its figure or section"
    appendix = text.split("<!-- BEGIN appendix -->")[1]
    assert text.rstrip().endswith("<!-- END appendix -->"), "the appendix closes the report"
    assert appendix.count("### Main setting") == 1 and appendix.count("### Rules") == 1 and "### Rules" not in head
    assert "kappa_a' = kappa_a = 2" in appendix and "targeted" in appendix and "rule-rise" in appendix
    assert {f"#rule-{r['rule']}" for r in rows if r["rule"]} <= set(re.findall(r"\]\((#rule-[\w-]+)\)", text))
    assert not [link for link in broken_links(quick_run.out / "REPORT.md") if link.startswith("#rule-")
                or not link.startswith("#")], "a row's rule or figure link leads nowhere"


def test_untrained_models_are_in_the_json_beside_the_trained_ones(quick_run):
    """If this fails, Figure 2 or Table 1 lost the untrained baseline (the models at Algorithm 1's
    initialisation on the same prompts), which shows what training adds and what it breaks."""
    fig2 = json.loads((quick_run.out / "fig2.json").read_text())
    u = fig2["untrained"]
    assert np.array(u["wrong"]["mamba"]).shape[:3] == np.array(fig2["wrong"]["mamba"]).shape[:3]
    assert np.array(u["wrong"]["mamba"]).shape[3] == 1 and u["K_prime"] == QUICK.main_K_prime
    assert not np.array_equal(u["wrong"]["mamba"], np.array(fig2["wrong"]["mamba"])[:, :, :, :1])
    for name in ("table1.json", "depth3.json"):
        doc = json.loads((quick_run.out / name).read_text())
        table1 = doc["table1"] if name == "depth3.json" else doc
        assert set(table1["untrained"]["accuracy"]) == {"mamba", "linear_transformer"}
    assert "untrained" in (quick_run.out / "table1.md").read_text()


def test_quick_stdout_is_stamped_and_counts_the_verdicts(quick_run):
    """If this fails, a quick run's terminal summary does not say it is a smoke run, leaves out its
    headline numbers, miscounts the claims, or its report states another wall time than the run
    recorded (the time printed last counts the whole command: at least that)."""
    lines = quick_run.stdout.splitlines()
    claims = json.loads((quick_run.out / "claims_reproduce.json").read_text())
    rows = claims["rows"]
    assert "SMOKE RUN" in lines[0] and "SMOKE RUN" in lines[-1], "a quick run's summary must say it is a smoke run"
    tally = next(k for k, line in enumerate(lines) if line.startswith(f"reproduce: {len(rows)} verdicts"))
    counts = [int(part.split()[0]) for part in lines[tally].split("): ", 1)[-1].split(", ")]
    assert sum(counts) == len(rows), f"the tally {lines[tally]!r} does not add up to the {len(rows)} claims"
    heads = [line for line in lines[:tally] if ": paper " in line]
    assert 3 <= len(heads) <= 5, "3-5 headline numbers, paper against ours, above the verdict counts"
    assert any(line.startswith("open:") and "REPORT.md" in line for line in lines)
    seconds = float(next(line for line in lines if line.startswith("time:")).split()[1])
    wall = claims["seconds"]["wall"]
    assert f"; {wall:.1f} s wall time" in (quick_run.out / "REPORT.md").read_text() and seconds >= wall


def test_report_names_its_figures_relative_to_its_own_folder(quick_run):
    """If this fails, a report written into --out points at figures/... (the committed folder)
    instead of the files next to it."""
    assert "figures/" not in (quick_run.out / "REPORT.md").read_text()


def test_eta_is_chosen_by_the_rule_and_used_for_training(quick_run):
    for name, p_a in (("fig2", QUICK.p_a_fig2), ("table1", QUICK.p_a_mechanism)):
        doc = json.loads((quick_run.out / f"{name}.json").read_text())
        for model in ("mamba", "linear_transformer"):
            sel = doc["step_size"][model]
            assert sel["grid"]["eta"] == list(QUICK.eta_grid) and len(sel["candidates"]) == len(QUICK.eta_grid)
            kept = [r for r in sel["candidates"] if r["mean"] is not None]
            assert sel["chosen"] == min(kept, key=lambda r: r["mean"])["fields"], "chosen is not the lowest held-out loss"
            assert doc["eta"][model] == sel["chosen"]["eta"]
            assert all(t["eta"] == sel["chosen"]["eta"] for t in doc["training"][model]), "trained with another eta"


def test_delta_and_eta_of_the_three_layer_runs_are_chosen_by_the_rule_and_used(quick_run):
    """If this fails, the three-layer models train with a delta or eta other than the rule's pick."""
    doc = json.loads((quick_run.out / "depth3.json").read_text())
    for model in ("mamba", "linear_transformer"):
        sel = doc["step_size"][model]
        assert sel["grid"] == {"delta": list(depth3.QUICK.delta_grid), "eta": list(depth3.QUICK.eta_grid)}
        kept = [r for r in sel["candidates"] if r["mean"] is not None]
        assert sel["chosen"] == min(kept, key=lambda r: r["mean"])["fields"]
        for t in doc["training"][model]:
            assert (t["delta"], t["eta"]) == (sel["chosen"]["delta"], sel["chosen"]["eta"]), "trained with another pick"
    assert len(doc["layers"]) == 3 and all(len(layer["gates"]) == depth3.QUICK.seeds for layer in doc["layers"])


def test_step_size_selection_uses_worlds_of_its_own():
    from numpy_mamba.runs.worlds import selection_world, world_for
    for k in range(3):
        assert all(not np.allclose(selection_world(k).mu, world_for(s).mu) for s in range(20))


def run_experiments(settings: dict, jobs: int = 1) -> dict:
    """{file: result} of the experiments of ``settings`` ({experiment: its settings}) run by the runner,
    no file written."""
    found, seconds, chosen = compute(tuple(settings), settings, jobs, "reproduce", progress=False)
    run = Run("reproduce", "", True, jobs, seconds)
    return {f: r for e, s in settings.items() for f, r in e.assemble(s, chosen, found[e.NAME], run).items()}


def test_same_seed_same_numbers_and_other_seed_other_world():
    """If this fails, a run's numbers depend on something other than its seeds."""
    tiny = replace(QUICK, seeds=1, T=20, record_every=5, n_test=40, n_probe=8, n_heldout=16, alphas=(0.5,),
                   kappa_a_primes=(2.0,), K_primes=(1.5,), eta_grid=(0.1,))
    a, b = (run_experiments({fig2: tiny, mechanism: tiny}) for _ in range(2))
    for model in ("mamba", "linear_transformer"):
        np.testing.assert_array_equal(a["fig2"]["wrong"][model], b["fig2"]["wrong"][model], err_msg="a seed must fix the run")
    np.testing.assert_array_equal(a["fig3"]["per_seed"]["mamba"][0]["score_same"],
                                  b["fig3"]["per_seed"]["mamba"][0]["score_same"])
    assert a["fig4"]["per_seed"] == b["fig4"]["per_seed"]
    from numpy_mamba.runs.worlds import world_for
    assert not np.allclose(world_for(0).mu, world_for(1).mu), "different seeds must give different worlds"


@pytest.mark.parametrize("k,n", [(0, 10), (3, 10), (10, 10), (1, 4000), (57, 300)])
def test_clopper_pearson_matches_scipy_binomtest(k, n):
    low, high = clopper_pearson(k, n)
    ci = binomtest(k, n).proportion_ci(0.95, method="exact")
    assert abs(low - ci.low) < 1e-10 and abs(high - ci.high) < 1e-10, "our interval is not Clopper-Pearson"


def test_rate_summary_pools_seeds_and_never_returns_nan():
    s = rate_summary([1, 3], [10, 10])
    assert s["rate"] == 0.2 and s["seed_min"] == 0.1 and s["seed_max"] == 0.3 and s["n"] == 20
    empty = rate_summary([0, 0], [0, 0])
    assert empty["rate"] is None and empty["ci95_low"] is None, "an empty cell must be None, not NaN"


def test_gate_profile_known_answer_with_w_zero():
    # w = 0: every sigma(w^T p) = 1/2, so G_{i,l+1} = (1/2)^(l+2-i) for i <= l (eq (3))
    l, d = 4, 3
    P = np.zeros((2, d + 1, l + 1))
    outlier = np.array([[False, True, False, True], [False, False, False, False]])
    batch = Batch(P, np.ones(2), np.zeros((2, 2), int), outlier, np.ones((2, l), bool))
    params = Params(np.eye(d + 1), np.eye(d + 1), np.zeros(d + 1))
    prof = gate_profile(params, batch)
    G = 0.5 ** (l + 2 - np.arange(1, l + 1))                 # positions 1..l
    assert prof["clean_mean"] == pytest.approx(G.tolist())
    assert prof["outlier_mean"][1] == pytest.approx(G[1]) and prof["outlier_mean"][0] is None
    # clean ranks from the query: prompt 0 has clean positions 3, 1; prompt 1 has 4, 3, 2, 1
    assert prof["clean_rank_mean"][:2] == pytest.approx([(G[2] + G[3]) / 2, (G[0] + G[2]) / 2])
    assert prof["clean_rank_count"] == [2, 2, 1, 1]


def test_score_sums_split_by_pattern():
    world = make_world(d=8, M1=3, M2=2, V=2, rng=0)
    batch = data.testing_batch(world, 5, 6, alpha=0.3, outliers=world.v_star, rng=1)
    rng = np.random.default_rng(2)
    params = Params(rng.normal(size=(9, 9)), rng.normal(size=(9, 9)), rng.normal(size=9))
    s = np.array([attention_scores(params, P)[:-1] for P in batch.P])
    sums = mechanism.score_sums(params, batch)
    assert sums["score_same"] == pytest.approx(np.mean(np.sum(s * batch.same_pattern, 1)))
    assert sums["score_diff"] == pytest.approx(np.mean(np.sum(s * ~batch.same_pattern, 1)))


def test_only_picks_experiments_by_their_files_and_bad_options_are_refused(tmp_path, capsys):
    """If this fails, --only names another experiment than the one that writes the file (fig3, fig4 and
    table1 are one experiment's), or a bad --only or --seeds is not a usage error."""
    assert chosen_experiments(COMMAND, ["fig3,fig2", "table1"]) == (fig2, mechanism)
    assert chosen_experiments(COMMAND, ["depth3"]) == (depth3,)
    with pytest.raises(ValueError, match="--only takes"):
        chosen_experiments(COMMAND, ["fig5"])
    for argv in (["--only", "fig9"], ["--seeds", "0"]):
        with pytest.raises(SystemExit) as info:
            main(COMMAND, [*argv, "--out", str(tmp_path)])
        assert info.value.code == 2
    assert "expected an integer >= 1" in capsys.readouterr().err

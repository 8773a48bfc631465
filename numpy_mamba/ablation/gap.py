"""``python -m numpy_mamba ablation``: why the trained models miss Table 1's prompts on one task group.

With targeted outlier labels the trained models are right on almost every test prompt but those of
tasks whose two patterns are two steps apart on the cycle of Condition 1's training tasks.  From a
baseline (the cycle T_tr, T_short SGD steps, the residual stack), at one and three layers, for Mamba
and the linear Transformer, one factor at a time:

    untrained      : Algorithm 1's initialisation (step 0 of the baseline runs)
    all_pairs      : train on every ordered pair of T (which satisfies Condition 1 too) instead of T_tr
    long           : T_long steps instead of T_short (the same run, continued)
    all_pairs_long : both (the all-pairs run, continued)
    heldout        : every ordered pair but the held-out ones (one_run.HELD_OUT), which stay unseen
    prenorm        : three layers only, H^(k) = H^(k-1) + O^(k)(RMSNorm(H^(k-1))) (stack.py, rmsnorm.py)

measuring accuracy per task group on Table 1's FQ, R, CQ and clean prompts, and every layer's
S(a, b) = (mu_b, 0)^T W_B^T W_C (mu_a, 0) by signed step on the cycle (terms.py).  Step size: every
run (model, arm, task set, number of steps) chooses its own by the rule of runs/step_size.py (its
tie-break fixed in measure.rules before any run), at delta = 0.2 (Section 4), on held-out prompts of
its own task set on a selection world after its own number of steps; the next delta of (0.2, 0.1,
0.05) only where every eta diverges at the one before.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from itertools import product

from ..data import SECTION4
from ..measure.rules import STEP_SIZE_RULE, ab_closes_case, ab_heldout_case, case, gap_closed, judge_cases
from ..model import PAPER_MODELS as MODELS
from ..runs.claims import anchor, claim_row, details, opening
from ..runs.output import SMOKE
from ..runs.report import Template
from ..runs.runner import Plan, Unit
from ..runs.step_size import selection_plan
from ..runs.worlds import selection_world
from ..sgd import TrainConfig
from .figure import figure
from .one_run import ARMS, RUNS, TASK_SETS, TESTS, HeldOutWorld, arm_network, run_length, run_unit
from .results import (DEPTHS, FACTOR_LABEL, GROUP_LABEL, MODEL_TEXT, assemble as ablation_json, cell, gap, layers,
                      mean_over, ratio)

NAME, FILES = "ablation", ("ablation",)
OUTPUTS = ("ablation            the distance-2 gap of Table 1's prompts, one factor at a time, and its mechanism by "
           "layer -> ablation.json, ablation.png")
RULES = ("step-size", "divergence", "ab-untrained", "ab-closes", "ab-heldout")
TEXT = Template(__package__, "ablation.md")
PAPER_TABLE1 = {"mamba": (99.84, 99.04, 73.28), "linear_transformer": (78.52, 78.28, 78.60)}    # Table 1, 3 layers
MECHANISM_PARTS = ("linear", "product", "via_middle", "via_ends", "via_other", "outside")


@dataclass(frozen=True)
class AblationSettings:
    """Run size and the choices the paper leaves open (the paper's: ``data.SECTION4``)."""

    seeds: int = 8
    T_short: int = 500
    T_long: int = 3000
    checkpoint_every: int = 500      # accuracy on the test prompts every this many steps
    record_every: int = 50           # mechanism terms every this many steps
    B: int = 64
    p_a: float = 0.4                 # Table 1's training setting (p_a_mechanism of reproduce)
    K: float = 0.5
    deltas: tuple = (0.2, 0.1, 0.05)
    eta_grid: tuple = (0.003, 0.01, 0.03, 0.1, 0.3, 1.0)
    select_seeds: int = 1
    n_heldout: int = 1024
    n_test: int = 2000
    kappa_a_prime: float = 2.0
    K_prime: float = 1.5
    target: int = 1
    quick: bool = False

    def __post_init__(self):
        if not (self.T_short % self.checkpoint_every == 0 == self.T_long % self.checkpoint_every
                and self.checkpoint_every % self.record_every == 0 and self.T_short < self.T_long):
            raise ValueError(f"need T_short < T_long, both multiples of checkpoint_every, itself a multiple of "
                             f"record_every; got T_short = {self.T_short}, T_long = {self.T_long}, checkpoint_every = "
                             f"{self.checkpoint_every}, record_every = {self.record_every}.")

    def to_dict(self) -> dict:
        return asdict(self)

    def config(self, model_eta: float, delta: float, T: int, tasks: str = "cycle") -> TrainConfig:
        """Algorithm 1's settings of one run: Section 4's l_tr and kappa_a, ours for the rest."""
        return TrainConfig(T=T, B=self.B, eta=model_eta, l_tr=SECTION4.l_tr, p_a=self.p_a, K=self.K,
                           kappa_a=SECTION4.kappa_a, delta=delta, tasks=tasks)


FULL = AblationSettings()
QUICK = AblationSettings(seeds=2, T_short=4, T_long=8, checkpoint_every=4, record_every=2, eta_grid=(0.01, 0.1),
                         n_heldout=32, n_test=60, quick=True)


# ---------------------------------------------------------------- the step-size rule, the runs
def heldout_selection_world(k: int):
    """Selection seed ``k``'s world (``runs.worlds.selection_world``) without the held-out pairs among its
    training tasks, for the held-out task set's step size."""
    world = selection_world(k)
    return HeldOutWorld(world.mu, world.nu, world.v_star, world.beta)


def delta_plan(settings: AblationSettings, model: str, run: tuple, delta: float) -> Plan:
    """The rule over ``eta_grid`` at one delta (``step_size.selection_plan``) for one run (arm, task set,
    length): the arm's Network trained on that task set for that many steps, scored on held-out prompts
    of it.  Its record, or {"chosen": None, ...} when every eta diverged."""
    arm, tasks, length = run
    n_layers, prenorm = ARMS[arm]
    stream = (8, round(100 * settings.p_a), MODELS.index(model) + 1, n_layers) + ((2,) if prenorm else ())
    if (tasks, length) != ("cycle", "short"):              # the baseline's stream as it was; each other run its own
        stream += (10 + TASK_SETS.index(tasks), 20 + ("short", "long").index(length))
    seeds = range(settings.select_seeds)
    config = settings.config(settings.eta_grid[0], delta, run_length(settings, length), "all" if tasks == "all" else "cycle")
    rule = selection_plan({"eta": settings.eta_grid}, seeds, heldout_selection_world if tasks == "heldout" else
                          selection_world, config, arm_network(model, arm), settings.n_heldout, stream,
                          f"step size {model} {arm} {tasks} {length} delta = {delta:g}")

    def assemble(found):
        try:
            record = rule.assemble(found)
        except ValueError:                               # every eta diverged at this delta
            record = {"rule": STEP_SIZE_RULE, "grid": {"eta": list(settings.eta_grid)}, "seeds": list(seeds),
                      "chosen": None, "candidates": [{"fields": {"eta": e}, "losses": [None] * len(seeds),
                                                      "diverged": True, "mean": None} for e in settings.eta_grid]}
        return {"delta": delta, **record}

    return Plan(rule.units, assemble)


def tried(settings: AblationSettings, chosen: dict, model: str, run: tuple) -> list:
    """The records of (model, run) so far: delta = 0.2 first, each next delta only after every eta diverged."""
    out = []
    for delta in settings.deltas:
        if ("ablation", model, *run, delta) not in chosen:
            break
        out.append(chosen["ablation", model, *run, delta])
        if out[-1]["chosen"] is not None:
            break
    return out


def selection(settings: AblationSettings, chosen: dict) -> dict:
    """delta = 0.2 for every model and run first; then the next delta where every eta diverged."""
    asked = {}
    for m, run in product(MODELS, RUNS):
        done = tried(settings, chosen, m, run)
        if len(done) < len(settings.deltas) and (not done or done[-1]["chosen"] is None):
            delta = settings.deltas[len(done)]
            asked["ablation", m, *run, delta] = delta_plan(settings, m, run, delta)
    return asked


def step_sizes(settings: AblationSettings, chosen: dict) -> dict:
    """{model: {arm: {"task set/length": {"delta", "eta", "tried": [record per delta]}}}}; ValueError
    where no delta trains."""
    records = {(m, run): tried(settings, chosen, m, run) for m in MODELS for run in RUNS}
    pending = [key for key, r in records.items() if r[-1]["chosen"] is None]
    if pending:
        raise ValueError(f"no eta of {settings.eta_grid} trains at any delta of {settings.deltas} for {pending}.")
    out = {}
    for (m, (arm, tasks, length)), r in records.items():
        out.setdefault(m, {}).setdefault(arm, {})[f"{tasks}/{length}"] = {
            "delta": r[-1]["delta"], "eta": r[-1]["chosen"]["eta"], "tried": r}
    return out


def units(settings: AblationSettings, chosen: dict) -> list:
    """Every (seed, model, arm, task set, length) run (``one_run.run_unit``, ``one_run.RUNS``), slowest
    first, each with its own step size."""
    steps = step_sizes(settings, chosen)
    keys = [(s, m, *run) for s in range(settings.seeds) for m in MODELS for run in RUNS]
    cost = {"mamba": 2.0, "linear_transformer": 1.0}        # relative cost of a three-layer step; orders units only
    keys.sort(key=lambda k: -(cost[k[1]] if ARMS[k[2]][0] > 1 else 0.05) * run_length(settings, k[4]))
    return [Unit(k, f"seed {k[0] + 1}/{settings.seeds} {k[1]} {k[2]} tasks={k[3]} {k[4]}", run_unit,
                 (settings, *k, {x: steps[k[1]][k[2]][f"{k[3]}/{k[4]}"][x] for x in ("delta", "eta")})) for k in keys]


def assemble(settings: AblationSettings, chosen: dict, found: dict, run) -> dict:
    """ablation.json (``results.assemble``) with the run's wall time and workers."""
    result = ablation_json(settings, step_sizes(settings, chosen), [found[k] for k in sorted(found)])
    return {"ablation": {**result, "seconds": run.wall, "jobs": run.jobs}}


# ---------------------------------------------------------------- the claims
def _change(result: dict, which: str, test: str, m: str, L: str, f: str):
    c = result["change_vs_baseline"].get(which, {}).get(test, {}).get(m, {}).get(L, {}).get(f, {}).get("distance_2")
    return None if c is None or c["mean"] is None else c


def factor_verdict(result: dict, f: str) -> dict | None:
    """ab-closes (ab-untrained for "untrained") judged per (model, depth, test), or None where no case was run."""
    cases, borderline = {}, []
    for m, L, test in product(MODELS, DEPTHS, TESTS):
        g, c = gap(result, test, m, L, f), _change(result, "all", test, m, L, f)
        if g is not None and c is not None:
            name = case(("", MODEL_TEXT[m]), ("layers", L), ("", test))
            cases[name], thin = ab_closes_case(*g, c)
            borderline += [name] * thin
    return judge_cases(cases, borderline) if cases else None


def heldout_verdict(result: dict) -> dict | None:
    """ab-heldout judged per (model, depth, test) on the held-out distance-2 prompts, or None where none was run."""
    cases, borderline = {}, []
    for m, L, test in product(MODELS, DEPTHS, TESTS):
        held, full = (cell(result, "heldout", test, m, L, f, "distance_2") for f in ("heldout", "all_pairs"))
        c = _change(result, "heldout", test, m, L, "heldout")
        if None not in (held, full, c) and None not in (held["mean"], full["mean"]):
            name = case(("", MODEL_TEXT[m]), ("layers", L), ("", test))
            cases[name], thin = ab_heldout_case(held["mean"], full["mean"], c)
            borderline += [name] * thin
    return judge_cases(cases, borderline) if cases else None


def _acc(result: dict, which: str, f: str, m: str = "mamba", L: str = "3", g: str = "distance_2") -> str:
    """A seed-mean accuracy (%) on FQ prompts, with the seeds behind it where runs diverged."""
    return pct(cell(result, which, "FQ", m, L, f, g), result["settings"]["seeds"])


def _d2_line(result: dict, which: str, factors: tuple) -> str:
    """'Mamba 1 layer: a / b; ...': distance-2 accuracy (%) of ``factors`` on FQ prompts."""
    return "; ".join(f"{MODEL_TEXT[m]} {layers(L)}: " + " / ".join(_acc(result, which, f, m, L) for f in factors)
                     for m in MODELS for L in DEPTHS)


FACTOR_CLAIMS = (("untrained", "ab-untrained", "training on Condition 1's cycle creates the distance-2 gap"),
                 ("all_pairs", "ab-closes", "training on all ordered pairs closes the gap"),
                 ("long", "ab-closes", "more steps (T_long) close the gap"),
                 ("all_pairs_long", "ab-closes", "all pairs and more steps together close the gap"),
                 ("prenorm", "ab-closes", "a pre-norm stack closes the gap"))


def claims(results: dict) -> list:
    """The rows: the cycle creates the gap; all pairs, more steps, both, pre-norm close it; held-out pairs."""
    if "ablation" not in results:
        return []
    result, rows = results["ablation"], []
    acc = lambda f, which="all": _acc(result, which, f)  # noqa: E731 (3-layer Mamba, FQ, distance 2)
    see = [("ablation.png", "ablation.png"), ("section", anchor(heading(False)))]
    for f, rule, title in FACTOR_CLAIMS:
        (a, b), (a_name, b_name) = (("untrained", "baseline"), ("untrained", "trained")) if f == "untrained" else \
            (("baseline", f), ("baseline", FACTOR_LABEL[f]))
        verdict = factor_verdict(result, f)
        if verdict is not None or f == "untrained":
            rows.append(claim_row(f"ab_{f}", f"Ours: {title}", "not in the paper", f"FQ, distance 2, 3-layer Mamba: "
                                  f"{a_name} {acc(a)}, {b_name} {acc(b)}", verdict or judge_cases({}), rule, see,
                                  f"Distance-2 accuracy (%) on FQ prompts, {FACTOR_LABEL[a]} / {FACTOR_LABEL[b]}: "
                                  + _d2_line(result, "all", (a, b)) + ".", kind="ours"))
    rows[0]["headline"] = ["3-layer Mamba, FQ distance-2 accuracy (%): untrained -> trained on the cycle", "n/a",
                           f"{acc('untrained')} -> {acc('baseline')}"]
    rows[1]["headline"] = ["3-layer Mamba, Table 1 FQ (%): cycle / all pairs / all pairs + more steps",
                           f"{PAPER_TABLE1['mamba'][0]:.2f}",
                           " / ".join(_acc(result, "all", f, g="all") for f in ("baseline", "all_pairs",
                                                                                "all_pairs_long"))]
    held = heldout_verdict(result)
    if held is not None:
        rows.append(claim_row("ab_heldout", "Ours: pairs kept out of all-pairs training are learned anyway",
                              "not in the paper", f"held-out distance-2 pairs, FQ, 3-layer Mamba: held-out arm "
                              f"{acc('heldout', 'heldout')}, all pairs {acc('all_pairs', 'heldout')}, baseline "
                              f"{acc('baseline', 'heldout')}", held, "ab-heldout", see,
                              "Accuracy (%) on FQ prompts of the held-out pairs two steps apart, baseline / all pairs "
                              "/ held-out arm / untrained: "
                              + _d2_line(result, "heldout", ("baseline", "all_pairs", "heldout", "untrained")) + ".",
                              ("3-layer Mamba, held-out distance-2 pairs, FQ (%): held-out arm vs all pairs", "n/a",
                               f"{acc('heldout', 'heldout')} vs {acc('all_pairs', 'heldout')}"), kind="ours"))
    return rows


def summary(results: dict) -> list:
    """The report's first-screen line on Table 1 at three layers (ablation.json): where its two columns
    come from (the paper's linear Transformer against ours trained on the cycle, its Mamba FQ against
    ours trained on all pairs, within TABLE1_CLOSE or not), and whether the untrained Mamba already
    orders FQ > R > CQ (its numbers are in the section's table)."""
    from ..measure.rules import TABLE1_CLOSE
    if "ablation" not in results:
        return []
    result, seeds = results["ablation"], results["ablation"]["settings"]["seeds"]
    cells = {(m, f): [cell(result, "all", t, m, "3", f, "all") for t in ("FQ", "R", "CQ")] for m in MODELS
             for f in ("untrained", "baseline", "all_pairs")}
    if any(c is None or c["mean"] is None for found in cells.values() for c in found):
        return []
    lt = [100 * c["mean"] for c in cells["linear_transformer", "baseline"]]
    lt_off = max(abs(x - p) for x, p in zip(lt, PAPER_TABLE1["linear_transformer"]))
    fq_off = abs(100 * cells["mamba", "all_pairs"][0]["mean"] - PAPER_TABLE1["mamba"][0])
    untrained = [c["mean"] for c in cells["mamba", "untrained"]]
    near = lambda off: TEXT("matches") if off <= 100 * TABLE1_CLOSE else TEXT("lies-off", points=off)  # noqa: E731
    return [TEXT("summary", link=anchor(TEXT("table1-heading")),
                 paper_lt=f"{min(PAPER_TABLE1['linear_transformer']):.2f}-{max(PAPER_TABLE1['linear_transformer']):.2f}",
                 lt_match=near(lt_off), lt_cycle=" / ".join(pct(c, seeds) for c in cells["linear_transformer", "baseline"]),
                 paper_fq=f"{PAPER_TABLE1['mamba'][0]:.2f}", fq_match=near(fq_off),
                 fq_all=pct(cells["mamba", "all_pairs"][0], seeds),
                 order=TEXT("ordered" if untrained[0] > untrained[1] > untrained[2] else "not-ordered"))]


# ---------------------------------------------------------------- the REPORT.md section
def heading(quick: bool) -> str:
    return TEXT("heading")                                  # a smoke run says so in the section's opening


def fewer(n, seeds: int) -> str:
    """' (5 of 8 seeds)' where runs diverged and are left out of a mean, else ''."""
    return "" if n is None or n == seeds else TEXT("fewer-seeds", n=n, seeds=seeds)


def seeds_behind(result: dict, m: str, L: str, f: str, test: str = "FQ") -> str:
    """``fewer`` for a factor's accuracy on all tasks."""
    return fewer((cell(result, "all", test, m, L, f, "all") or {}).get("n_seeds"), result["settings"]["seeds"])


def pct(c, seeds: int | None = None, spread: bool = False) -> str:
    """A seed mean in % ('87.8'; with ``spread`` '87.8 [84.9, 89.9]', its [min, max]), with ``fewer``
    seeds given ``seeds``; 'n/a' where not measured."""
    if c is None or c["mean"] is None:
        return "n/a"
    text = f"{100 * c['mean']:.1f}" + (f" [{100 * c['min']:.1f}, {100 * c['max']:.1f}]" if spread else "")
    return text + ("" if seeds is None else fewer(c["n_seeds"], seeds))


def change_verdict(c) -> str:
    """A paired change in points with its 95% t-interval and what the interval says."""
    if c is None or c["mean"] is None or c["t95"] is None:
        return TEXT("no-interval")
    lo, hi = 100 * (c["mean"] - c["t95"]), 100 * (c["mean"] + c["t95"])
    return TEXT("raises" if lo > 0 else "lowers" if hi < 0 else "unchanged", mean=100 * c["mean"], lo=lo, hi=hi)


def table(snippet: str, rows: list, **values) -> list:
    """A Markdown table: its header line (a template snippet), the line under it, its rows."""
    header = TEXT(snippet, **values)
    return [header, "|---" * (header.count("|") - 1) + "|", *rows]


def section(results: dict, run, rows: list, heads: list) -> str:
    """Heading, opening, smoke stamp, the question, the step sizes, the claims in detail, the numbers."""
    result = results["ablation"]
    s = result["settings"]
    first = TEXT("first", seeds=s["seeds"], factors=", ".join(FACTOR_LABEL[f] for f in result["factors"]),
                 seconds=result.get("seconds", "n/a"), jobs=result.get("jobs", "n/a"))
    lines = [heading(s["quick"]), "", *opening(first, rows, heads), ""]
    lines += [TEXT("smoke", smoke=SMOKE), ""] if s["quick"] else []
    lines += [TEXT("question", held=", ".join(f"({a}, {b})" for a, b in result["held_out"]), **s), ""]
    lines += step_size_lines(result) + ["", TEXT("claims-heading"), *details(rows)]
    return "\n".join(lines + ["", report(results, run)])


def step_size_lines(result: dict) -> list:
    """The step-size rule, the delta and eta it chose per model, arm and run, and the runs that diverged."""
    s, lines = result["settings"], []
    for m, arms in result["step"].items():
        for a, runs in arms.items():
            for run, v in runs.items():
                failed = [f"{r['delta']:g}" for r in v["tried"] if r["chosen"] is None]
                ties = v["tried"][-1].get("tied", [])
                tasks, length = run.split("/")
                lines.append(TEXT("step", model=MODEL_TEXT[m], arm=a.replace("_", " "), tasks=TEXT(f"tasks-{tasks}"),
                                  steps=s[f"T_{length}"], delta=v["delta"], eta=v["eta"],
                                  failed=TEXT("step-failed", deltas=", ".join(failed)) if failed else "",
                                  tied=TEXT("step-tied", n=len(ties), etas=", ".join(f"{t['eta']:g}" for t in ties))
                                  if len(ties) > 1 else ""))
    if result["diverged"]:
        lines += ["", TEXT("diverged", runs="; ".join(TEXT("diverged-run", **d) for d in result["diverged"]))]
    return [TEXT("step-size", T_short=s["T_short"], etas=", ".join(f"{e:g}" for e in s["eta_grid"]),
                 deltas=", ".join(f"{d:g}" for d in s["deltas"])), "", *lines]


def report(results: dict, run) -> str:
    """The numbers: Table 1 under both training sets, what they say, accuracy by task group (prompts of
    every task, then of the held-out pairs), the mechanism by layer."""
    result = results["ablation"]
    lines = table1(result) + ["", TEXT("findings"), "", *findings(result), "", TEXT("accuracy-heading")]
    lines += [line for test in TESTS for line in accuracy_table(result, test)] + ["", TEXT("heldout-heading")]
    lines += [line for test in TESTS for line in accuracy_table(result, test, "heldout")]
    return "\n".join(lines + ["", TEXT("mechanism-heading"), *mechanism_tables(result)])


def table1(result: dict) -> list:
    """Table 1's accuracy on all tasks (FQ / R / CQ, seed means) and on the distance-2 tasks (FQ) per
    model, depth and training set, the untrained model beside them, the paper's three-layer numbers on top."""
    s, t = result["settings"], result["tests"]["FQ"]
    rows = [TEXT("table1-paper", model=MODEL_TEXT[m], numbers=" | ".join(f"{x:.2f}" for x in PAPER_TABLE1[m]))
            for m in MODELS]
    for m in MODELS:
        for L in DEPTHS:
            for f in ("untrained", "baseline", "all_pairs", "all_pairs_long"):
                cells = [cell(result, "all", test, m, L, f, "all") for test in ("FQ", "R", "CQ")]
                if None not in cells:
                    cells.append(cell(result, "all", "FQ", m, L, f, "distance_2"))
                    rows.append(f"| {MODEL_TEXT[m]} | {L} | {FACTOR_LABEL[f]}{seeds_behind(result, m, L, f)} | "
                                + " | ".join(map(pct, cells)) + " |")
    return [TEXT("table1-heading"), "", TEXT("table1", **{**t, **s}), "", *table("table1-header", rows)]


def findings(result: dict, test: str = "FQ") -> list:
    """One bullet per (model, depth, factor) on ``test``'s prompts: distance 2 against the lowest other
    group (the gap), its paired change against the baseline, every layer's S(2) / S(0) and s(2) / s(0)."""
    out, classes = [], result["step_classes"]
    signed = lambda r: "n/a" if r is None else f"{r:+.2f}"  # noqa: E731
    for m in MODELS:
        for L in DEPTHS:
            for f in result["table"]["all"][test][m].get(L, {}):
                g, mech = gap(result, test, m, L, f), result["mechanism"][m][L][f]
                if g is None:
                    continue
                change = result["change_vs_baseline"]["all"][test][m][L][f]["distance_2"] if f != "baseline" else None
                out.append(TEXT("finding", model=MODEL_TEXT[m], layers=layers(L), factor=FACTOR_LABEL[f], d2=100 * g[0],
                                fewer=seeds_behind(result, m, L, f, test), lowest=100 * g[1],
                                gap=TEXT("no-gap" if gap_closed(*g) else "a-gap"),
                                change="" if f == "baseline" else f" {change_verdict(change)};", ratios="; ".join(
                                    TEXT("layer-ratios", k=k, S=signed(ratio(t["S"], classes)),
                                         s=signed(ratio(sc, classes)))
                                    for k, (t, sc) in enumerate(zip(mech["terms"], mech["scores"]), start=1))))
    return out


def accuracy_table(result: dict, test: str, which: str = "all") -> list:
    """Accuracy (%) per task group on one test and prompt set ("all" tasks or the "heldout" pairs), per
    model, depth and factor, with the paired change of distance-2 accuracy against the baseline."""
    t, found, rows = result["tests"][test], result["table"][which][test], []
    groups = [g for g in result["task_groups"] + ["all"] if any(g in f for m in found.values() for L in m.values()
                                                                 for f in L.values())]
    for m in MODELS:
        for L in DEPTHS:
            for f, cells in found[m].get(L, {}).items():
                c = result["change_vs_baseline"][which][test][m].get(L, {}).get(f, {}).get("distance_2")
                change = "" if f == "baseline" else "n/a" if c is None or c["mean"] is None else \
                    f"{100 * c['mean']:+.1f}" + ("" if c["t95"] is None else f" ± {100 * c['t95']:.1f}")
                rows.append(f"| {MODEL_TEXT[m]} | {L} | {FACTOR_LABEL[f]} | " + " | ".join(
                    pct(cells.get(g), result["settings"]["seeds"], spread=True) for g in groups) + f" | {change} |")
    prompts = TEXT("every-task") if which == "all" else TEXT("heldout-only", pairs=", ".join(
        f"({a}, {b})" for a, b in result["held_out"]))
    what = TEXT("with-outliers", **t) if t["alpha"] else TEXT("clean")
    return ["", TEXT("accuracy", test=test, what=what, prompts=prompts, **t), "",
            *table("accuracy-header", rows, groups=" | ".join(GROUP_LABEL[g] for g in groups))]


def mechanism_tables(result: dict) -> list:
    """Per model, depth, factor and layer (at the factor's checkpoint): S(a, b) by signed step with the
    parts of its distance-2 value, the attention scores on clean prompts by step, and how dW_B, dW_C
    move the pattern directions."""
    classes, terms, scores, moves = result["step_classes"], [], [], []
    fmt = lambda v: "n/a" if v is None else f"{v:.3g}"  # noqa: E731
    means = lambda cells: " | ".join(fmt(c["mean"]) for c in cells)  # noqa: E731
    for m in MODELS:
        for L, factors in result["mechanism"][m].items():
            for f, mech in factors.items():
                for k, (t, sc) in enumerate(zip(mech["terms"], mech["scores"]), start=1):
                    row = f"| {MODEL_TEXT[m]} | {L} | {FACTOR_LABEL[f]}{seeds_behind(result, m, L, f)} | {k} | "
                    terms.append(row + f"{means(t['S'])} | {fmt(ratio(t['S'], classes))} | "
                                 + " | ".join(fmt(mean_over(t[p], classes, 2)) for p in MECHANISM_PARTS) + " |")
                    scores.append(row + f"{means(sc)} | {fmt(ratio(sc, classes))} |")
                    moves.append(row + means(t["dW_B"] + t["dW_C"]) + " |")
    steps = lambda term, zero="0": " | ".join(TEXT("column", term=term, step=f"{c:+d}" if c else zero)  # noqa: E731
                                              for c in classes)
    return ["", TEXT("terms"), "", *table("terms-header", terms, steps=steps("S"),
                                          parts=" | ".join(p.replace("_", " ") for p in MECHANISM_PARTS)),
            "", TEXT("scores"), "", *table("scores-header", scores, steps=steps("s")),
            "", TEXT("moves"), "", *table("moves-header", moves,
                                          steps=f"{steps('dW_B', '+0')} | {steps('dW_C', '+0')}")]

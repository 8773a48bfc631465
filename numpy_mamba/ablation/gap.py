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
S(a, b) = (mu_b, 0)^T W_B^T W_C (mu_a, 0) by signed step on the cycle (terms.py).  Step size: the
rule of runs/step_size.py per model and arm at delta = 0.2 (Section 4), on held-out training prompts
of a selection world after T_short steps; the next delta of (0.2, 0.1, 0.05) only where every eta
diverges at the one before.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from itertools import product

from ..data import SECTION4
from ..measure.rules import STEP_SIZE_RULE, ab_closes_case, ab_heldout_case, case, judge_cases
from ..model import PAPER_MODELS as MODELS
from ..runs.claims import anchor, claim_row
from ..runs.runner import Plan, Unit
from ..runs.step_size import selection_plan
from ..runs.worlds import selection_world
from ..sgd import TrainConfig
from .one_run import ARMS, TESTS, arm_network, run_length, run_unit
from .figure import figure
from .report import PAPER_TABLE1, TEXT, heading, pct, report, section
from .results import DEPTHS, FACTOR_LABEL, MODEL_TEXT, assemble as ablation_json, cell, gap, layers

NAME, FILES = "ablation", ("ablation",)
OUTPUTS = ("ablation            the distance-2 gap of Table 1's prompts, one factor at a time, and its mechanism by "
           "layer -> ablation.json, ablation.png")
RULES = ("step-size", "divergence", "ab-untrained", "ab-closes", "ab-heldout")


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
def delta_plan(settings: AblationSettings, model: str, arm: str, delta: float) -> Plan:
    """The rule over ``eta_grid`` at one delta (``step_size.selection_plan`` with the arm's Network):
    its record, or {"chosen": None, ...} when every eta diverged."""
    n_layers, prenorm = ARMS[arm]
    stream = (8, round(100 * settings.p_a), MODELS.index(model) + 1, n_layers) + ((2,) if prenorm else ())
    seeds = range(settings.select_seeds)
    rule = selection_plan({"eta": settings.eta_grid}, seeds, selection_world,
                          settings.config(settings.eta_grid[0], delta, settings.T_short), arm_network(model, arm),
                          settings.n_heldout, stream, f"step size {model} {arm} delta = {delta:g}")

    def assemble(found):
        try:
            record = rule.assemble(found)
        except ValueError:                               # every eta diverged at this delta
            record = {"rule": STEP_SIZE_RULE, "grid": {"eta": list(settings.eta_grid)}, "seeds": list(seeds),
                      "chosen": None, "candidates": [{"fields": {"eta": e}, "losses": [None] * len(seeds),
                                                      "diverged": True, "mean": None} for e in settings.eta_grid]}
        return {"delta": delta, **record}

    return Plan(rule.units, assemble)


def tried(settings: AblationSettings, chosen: dict, model: str, arm: str) -> list:
    """The records of (model, arm) so far, one per delta tried, up to the first whose eta trains."""
    out = []
    for delta in settings.deltas:
        if ("ablation", model, arm, delta) not in chosen or (out and out[-1]["chosen"] is not None):
            break
        out.append(chosen["ablation", model, arm, delta])
    return out


def selection(settings: AblationSettings, chosen: dict) -> dict:
    """delta = 0.2 for every model and arm first; then the next delta where every eta diverged."""
    asked = {}
    for m, a in product(MODELS, ARMS):
        done = tried(settings, chosen, m, a)
        if len(done) < len(settings.deltas) and (not done or done[-1]["chosen"] is None):
            delta = settings.deltas[len(done)]
            asked["ablation", m, a, delta] = delta_plan(settings, m, a, delta)
    return asked


def step_sizes(settings: AblationSettings, chosen: dict) -> dict:
    """{model: {arm: {"delta", "eta", "tried": [record per delta]}}}; ValueError where no delta trains."""
    records = {(m, a): tried(settings, chosen, m, a) for m in MODELS for a in ARMS}
    pending = [key for key, r in records.items() if r[-1]["chosen"] is None]
    if pending:
        raise ValueError(f"no eta of {settings.eta_grid} trains at any delta of {settings.deltas} for {pending}.")
    return {m: {a: {"delta": records[m, a][-1]["delta"], "eta": records[m, a][-1]["chosen"]["eta"],
                    "tried": records[m, a]} for a in ARMS} for m in MODELS}


def units(settings: AblationSettings, chosen: dict) -> list:
    """Every (seed, model, arm, task set) run (``one_run.run_unit``), slowest first: the residual arms
    on every task set, the pre-norm arm on the cycle only."""
    steps = step_sizes(settings, chosen)
    keys = [(s, m, a, tasks) for s in range(settings.seeds) for m in MODELS for a in ARMS
            for tasks in (("cycle",) if ARMS[a][1] else ("cycle", "all", "heldout"))]
    cost = {"mamba": 2.0, "linear_transformer": 1.0}        # relative cost of a three-layer step; orders units only
    keys.sort(key=lambda k: -(cost[k[1]] if ARMS[k[2]][0] > 1 else 0.05) * run_length(settings, k[2], k[3]))
    return [Unit(k, f"seed {k[0] + 1}/{settings.seeds} {k[1]} {k[2]} tasks={k[3]}", run_unit,
                 (settings, *k, {"delta": steps[k[1]][k[2]]["delta"], "eta": steps[k[1]][k[2]]["eta"]})) for k in keys]


def assemble(settings: AblationSettings, chosen: dict, found: dict, run) -> dict:
    """ablation.json (``results.assemble``) with the run's wall time and workers."""
    result = ablation_json(settings, step_sizes(settings, chosen), [found[k] for k in sorted(found)])
    return {"ablation": {**result, "seconds": run.wall, "jobs": run.jobs}}


# ---------------------------------------------------------------- the claims
def _change(result: dict, which: str, test: str, m: str, L: str, f: str):
    c = result["change_vs_baseline"].get(which, {}).get(test, {}).get(m, {}).get(L, {}).get(f, {}).get("distance_2")
    return None if c is None or c["mean"] is None else c


def factor_cases(result: dict, f: str) -> dict:
    """ab-closes (ab-untrained for "untrained") per (model, depth, test): {case: level}."""
    cases = {}
    for m, L, test in product(MODELS, DEPTHS, TESTS):
        g, c = gap(result, test, m, L, f), _change(result, "all", test, m, L, f)
        if g is not None and c is not None:
            cases[case(("", MODEL_TEXT[m]), ("layers", L), ("", test))] = ab_closes_case(*g, c)
    return cases


def heldout_cases(result: dict) -> dict:
    """ab-heldout per (model, depth, test) on the held-out distance-2 prompts."""
    cases = {}
    for m, L, test in product(MODELS, DEPTHS, TESTS):
        held, full = (cell(result, "heldout", test, m, L, f, "distance_2") for f in ("heldout", "all_pairs"))
        c = _change(result, "heldout", test, m, L, "heldout")
        if None not in (held, full, c) and None not in (held["mean"], full["mean"]):
            cases[case(("", MODEL_TEXT[m]), ("layers", L), ("", test))] = ab_heldout_case(held["mean"], full["mean"], c)
    return cases


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
        cases = factor_cases(result, f)
        if cases or f == "untrained":
            rows.append(claim_row(f"ab_{f}", f"Ours: {title}", "not in the paper", f"FQ, distance 2, 3-layer Mamba: "
                                  f"{a_name} {acc(a)}, {b_name} {acc(b)}", judge_cases(cases), rule, see,
                                  f"Distance-2 accuracy (%) on FQ prompts, {FACTOR_LABEL[a]} / {FACTOR_LABEL[b]}: "
                                  + _d2_line(result, "all", (a, b)) + "."))
    rows[0]["headline"] = ["3-layer Mamba, FQ distance-2 accuracy (%): untrained -> trained on the cycle", "n/a",
                           f"{acc('untrained')} -> {acc('baseline')}"]
    rows[1]["headline"] = ["3-layer Mamba, Table 1 FQ (%): cycle / all pairs / all pairs + more steps", "99.84",
                           " / ".join(_acc(result, "all", f, g="all") for f in ("baseline", "all_pairs", "all_pairs_long"))]
    held = heldout_cases(result)
    if held:
        rows.append(claim_row("ab_heldout", "Ours: pairs kept out of all-pairs training are learned anyway",
                              "not in the paper", f"held-out distance-2 pairs, FQ, 3-layer Mamba: held-out arm "
                              f"{acc('heldout', 'heldout')}, all pairs {acc('all_pairs', 'heldout')}, baseline "
                              f"{acc('baseline', 'heldout')}", judge_cases(held), "ab-heldout", see,
                              "Accuracy (%) on FQ prompts of the held-out pairs two steps apart, baseline / all pairs "
                              "/ held-out arm / untrained: "
                              + _d2_line(result, "heldout", ("baseline", "all_pairs", "heldout", "untrained")) + ".",
                              ("3-layer Mamba, held-out distance-2 pairs, FQ (%): held-out arm vs all pairs", "n/a",
                               f"{acc('heldout', 'heldout')} vs {acc('all_pairs', 'heldout')}")))
    return rows


def summary(results: dict) -> list:
    """The report's first-screen line on Table 1: its numbers at three layers untrained and trained on
    each task set, against the paper's (``PAPER_TABLE1``), linked to the table."""
    if "ablation" not in results:
        return []
    result = results["ablation"]
    cells = {(m, f): [cell(result, "all", t, m, "3", f, "all") for t in ("FQ", "R", "CQ")] for m in MODELS
             for f in ("untrained", "baseline", "all_pairs")}
    if any(c is None for found in cells.values() for c in found):
        return []
    far = {f: max((abs(100 * c["mean"] - p) for m in MODELS for c, p in zip(cells[m, f], PAPER_TABLE1[m])
                   if c["mean"] is not None), default=None) for f in ("baseline", "all_pairs")}
    lt = lambda g: cell(result, "all", "FQ", "linear_transformer", "3", "baseline", g)  # noqa: E731
    rest = min(c["mean"] for c in map(lt, ("training", "reversed", "distance_3")) if c and c["mean"] is not None)
    return [TEXT("summary", link=anchor(TEXT("table1-heading")), p_a=result["settings"]["p_a"],
                 lt_d2=pct(lt("distance_2")), lt_rest=100 * rest,
                 far_cycle="n/a" if far["baseline"] is None else f"{far['baseline']:.1f}",
                 far_all="n/a" if far["all_pairs"] is None else f"{far['all_pairs']:.1f}",
                 **{f"{m}_{f}": " / ".join(map(pct, found)) for (m, f), found in cells.items()},
                 **{f"paper_{m}": " / ".join(f"{x:.2f}" for x in PAPER_TABLE1[m]) for m in MODELS})]

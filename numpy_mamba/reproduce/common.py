"""What the experiments of ``reproduce`` share: settings, training, the step-size rule, and reading
saved results.

The paper gives d, M1, M2, V, beta, delta, kappa_a, l_tr = l_ts and p_a; it does not give the
step size eta, batch B, steps T, K, K' or kappa_a'.  Ours are in ``Settings`` and justified in
figures/REPORT.md ("reproduce"); eta is chosen per model by the rule of ``runs/step_size.py``.
Seeds: training seed s trains and tests on ``runs.worlds.world_for(s)`` with streams
``default_rng([s, k, ...])``, each with its own k; step-size selection seed k on
``runs.worlds.selection_world(k)`` with streams ``default_rng([k, 8, ...])`` (k = 8 is used by no
experiment), so the rule never sees a test prompt.
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass, replace

import numpy as np

from ..data import LABEL_RULES, SECTION4, training_batch
from ..fused import network
from ..loss import hinge
from ..measure.attention import pattern_scores
from ..measure.rates import rate_summary
from ..measure.tasks import task_group_names
from ..model import PAPER_MODELS
from ..runs.step_size import selection_plan
from ..runs.worlds import selection_world
from ..sgd import TRAINING_TASKS, TrainConfig, train

MODELS = PAPER_MODELS
MODEL_LABEL = {"mamba": "Mamba (eq (3))", "linear_transformer": "linear Transformer (G = 1)"}
SHORT = {"mamba": "Mamba", "linear_transformer": "LT"}
PAPER = asdict(SECTION4)          # Section 4's settings, as the JSON records them
ONE_LAYER_NOTE = ("NOTE: one-layer models of eq (3), as analysed by the theory; the paper's Figures 3-4 "
                  "and Table 1 use three-layer models")


@dataclass(frozen=True)
class Settings:
    """Everything the reproduction chooses that the paper leaves open, plus run size.

    T, B, K : Algorithm 1 and Definition 1 (theory: K <= 1/2).
    eta_grid, select_seeds : the step sizes eta tried per model and the selection seeds of the
    rule in ``step_size.py`` (theory: eta <= 1).
    kappa_a_primes, K_primes : the test grid of Definition 2 (theory: kappa_a' >= kappa_a, K' > 1);
    main_kappa_a_prime, main_K_prime, mechanism_label_rule : the main setting (REPORT.md, "Main
    setting"): the headline numbers and figures; every verdict judges the whole grid.
    n_test : test prompts per seed and point; n_probe : fixed test prompts of Fig 3;
    n_heldout : fresh training-distribution prompts for the final-loss check.
    """

    seeds: int = 10
    T: int = 2000
    B: int = 64
    eta_grid: tuple = (0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0)
    select_seeds: int = 3
    K: float = 0.5
    record_every: int = 10
    n_test: int = 4000
    n_probe: int = 512
    n_heldout: int = 4096
    alphas: tuple = tuple(np.round(np.arange(0.0, 0.951, 0.05), 2).tolist())
    kappa_a_primes: tuple = (2.0, 4.0, 8.0)
    K_primes: tuple = (1.5, 3.0)
    main_kappa_a_prime: float = PAPER["kappa_a"]
    main_K_prime: float = 1.5
    mechanism_label_rule: str = "target"
    p_a_fig2: float = 0.6
    p_a_mechanism: float = 0.4
    alpha_fig3: float = 0.3
    alpha_fig4: float = 0.3
    alpha_table1: float = 0.5
    target: int = 1
    quick: bool = False

    def to_dict(self) -> dict:
        return asdict(self)

    def train_config(self, p_a: float, eta: float) -> TrainConfig:
        return TrainConfig(T=self.T, B=self.B, eta=eta, l_tr=PAPER["l_tr"], p_a=p_a,
                           K=self.K, kappa_a=PAPER["kappa_a"], delta=PAPER["delta"])


FULL = Settings()
QUICK = Settings(seeds=2, T=300, select_seeds=1, eta_grid=(0.01, 0.1, 0.5), record_every=25, n_test=200, n_probe=64,
                 n_heldout=256, alphas=(0.0, 0.3, 0.5, 0.7, 0.8, 0.9), quick=True)


def main_table1(settings) -> tuple:
    """The main setting (labelling, kappa_a') of Figures 3-6 and Table 1 (REPORT.md, "Main setting")."""
    return settings["mechanism_label_rule"], float(settings["main_kappa_a_prime"])


# ---------------------------------------------------------------- the step-size rule and training
def selection_key(settings: Settings, model: str, p_a: float, tasks: str = "cycle") -> tuple:
    """What the step-size rule of ``eta_selection`` depends on, as a key: the model, Algorithm 1's
    settings at p_a on the training tasks ``tasks`` ("cycle" or "all"), the eta grid, the selection
    seeds and held-out prompts.  Experiments that ask for the same key share one run of the rule."""
    config = replace(settings.train_config(p_a, settings.eta_grid[0]), tasks=tasks)
    return ("eta", model, config, tuple(settings.eta_grid), settings.select_seeds, settings.n_heldout)


def eta_selection(settings: Settings, p_a: float, label: str, tasks: str = "cycle") -> dict:
    """The rule of ``step_size.py`` for each model at training outlier fraction ``p_a`` on the
    training tasks ``tasks``, as plans of independent units: {``selection_key``: Plan} whose results
    are selection records with the chosen fields under "chosen" (here {"eta": ...})."""
    stream = (8, round(100 * p_a)) + (() if tasks == "cycle" else (TRAINING_TASKS.index(tasks),))
    return {selection_key(settings, model, p_a, tasks):
            selection_plan({"eta": settings.eta_grid}, range(settings.select_seeds), selection_world,
                           replace(settings.train_config(p_a, settings.eta_grid[0]), tasks=tasks), network(model),
                           settings.n_heldout, stream + (m + 1,), f"{label} step size, {model}")
            for m, model in enumerate(MODELS)}


def chosen_records(chosen: dict, settings: Settings, p_a: float, tasks: str = "cycle") -> dict:
    """{model: the step-size rule's record} out of every record the runner chose (``chosen``)."""
    return {model: chosen[selection_key(settings, model, p_a, tasks)] for model in MODELS}


def heldout_check(world, params, net, config: TrainConfig, n: int, rng) -> dict:
    """Hinge loss (eq (4)) and 0-1 error (eq (5)) of the Network ``net`` on ``n`` fresh prompts of
    Definition 1, from the training tasks T_tr and from all tasks T (Theorem 1's claim covers T)."""
    out = {}
    for name, tasks in (("train_tasks", world.training_tasks()), ("all_tasks", world.all_tasks())):
        b = training_batch(world, n, config.l_tr, p_a=config.p_a, K=config.K,
                           kappa_a=config.kappa_a, rng=rng, tasks=tasks)
        F = net.F(params, b.P)
        out[f"loss_{name}"] = float(np.mean(hinge(F, b.z)))
        out[f"error_{name}"] = float(np.mean(net.misclassified(params, b.P, b.z, F)))   # ties, NaN: errors
    return out


def keep_initial(record=None):
    """(record callback for ``sgd.train``, list): the callback stores Psi^(0), the parameters
    Algorithm 1 starts from (the untrained model), in the list and passes on ``record``'s values."""
    initial = []

    def wrapped(step, params):
        if step == 0:
            initial.append(params)
        return record(step, params) if record is not None else {}

    return wrapped, initial


def final_losses(history: dict) -> dict:
    """The minibatch hinge loss and error of the last 10% of a run's records."""
    last = max(1, len(history["loss"]) // 10)
    return {"final_minibatch_loss": float(np.mean(history["loss"][-last:])),
            "final_minibatch_error": float(np.mean(history["error"][-last:]))}


def train_logged(world, settings: Settings, config: TrainConfig, model: str, seed: int, stream: int, record=None):
    """Algorithm 1 on ``default_rng([seed, stream, model index])``; returns (params, history, summary
    dict); summary["initial_params"] holds Psi^(0) (not JSON: pop it)."""
    start = time.perf_counter()
    net = network(model)
    callback, initial = keep_initial(record)
    params, history = train(world, config, net, rng=np.random.default_rng([seed, stream, MODELS.index(model)]),
                            record_every=settings.record_every, record=callback)
    summary = {"seed": seed, "eta": config.eta, "train_seconds": time.perf_counter() - start, **final_losses(history)}
    summary["pattern_scores"] = pattern_scores(world, params)
    if model == "mamba":                 # the gate's view of the outliers (the LT has no gate)
        summary["w_dot_v_star"] = params.w[:-1] @ world.v_star.T          # (V,)
        summary["w_dot_v_prime"] = params.w[:-1] @ world.test_outliers().T  # (3,)
    summary.update(heldout_check(world, params, net, config, settings.n_heldout,
                                 np.random.default_rng([seed, stream, MODELS.index(model), 99])))
    summary["initial_params"] = initial[0]
    return params, history, summary


# ---------------------------------------------------------------- reading saved results
GROUPS = task_group_names(PAPER["M1"])          # training, reversed, distance_2, distance_3
SUBSETS = ("seen", "unseen", "all") + GROUPS[1:]  # seen = the training tasks; unseen = every other group
SUMMARY_KEYS = ("rate", "ci95_low", "ci95_high", "seed_ci95_low", "seed_ci95_high", "seed_mean", "seed_min", "seed_max")


def setting_key(label_rule: str, kappa_a_prime: float) -> str:
    """The key of one test setting of Figures 3-4 in the JSON: "target/2"."""
    return f"{label_rule}/{float(kappa_a_prime):g}"


def subset_counts(x) -> dict:
    """Counts (..., G) over task groups -> {subset: (...)} for every name in SUBSETS."""
    x = np.asarray(x)
    out = {"seen": x[..., 0], "unseen": x[..., 1:].sum(-1), "all": x.sum(-1)}
    out.update({name: x[..., g] for g, name in enumerate(GROUPS) if g >= 1})
    return out


def summarise(w, n) -> dict:
    """Pooled error per label rule and subset: for each key of SUMMARY_KEYS a nested list
    indexed [kappa_a'][K'][alpha] (``measure.rates.rate_summary``)."""
    sw, sn = subset_counts(w), subset_counts(n)
    summary = {(r, subset): rate_summary(sw[subset][:, r], sn[subset][:, r]) for r in range(len(LABEL_RULES))
               for subset in SUBSETS}                                               # (k, c, a) each
    return {rule: {subset: {key: summary[r, subset][key] for key in SUMMARY_KEYS} for subset in SUBSETS}
            for r, rule in enumerate(LABEL_RULES)}


def untrained_view(result: dict) -> dict:
    """A "fig2" result's models at initialisation seen as a "fig2" result (its K' grid: the main
    K' only), so ``curve`` and ``point`` read them like the trained models."""
    u = result["untrained"]
    settings = dict(result["settings"], K_primes=[u["K_prime"]])
    return {**result, "settings": settings, "error": u["error"], "wrong": u["wrong"], "n_prompts": u["n_prompts"]}


def curve(result: dict, model: str, rule: str, subset: str, kappa_a_prime: float, K_prime: float, key="rate"):
    """One error curve against alpha of a "fig2" result: (n_alpha,) floats (NaN if empty)."""
    s = result["settings"]
    k, c = s["kappa_a_primes"].index(kappa_a_prime), s["K_primes"].index(K_prime)
    return np.array([np.nan if v is None else v for v in result["error"][model][rule][subset][key][k][c]], dtype=float)


def point(result: dict, model: str, rule: str, subset: str, alpha: float, kappa_a_prime=None, K_prime=None):
    """Summary of one alpha (main kappa_a', K' unless given): {"rate", "ci95": [low, high] (pooled
    Clopper-Pearson), "seed_ci95": [low, high] (over seeds; None in results without it), ...}."""
    s = result["settings"]
    kappa_a_prime = s["main_kappa_a_prime"] if kappa_a_prime is None else kappa_a_prime
    K_prime = s["main_K_prime"] if K_prime is None else K_prime
    a = int(np.argmin(np.abs(np.asarray(s["alphas"]) - alpha)))
    k, c = s["kappa_a_primes"].index(kappa_a_prime), s["K_primes"].index(K_prime)
    table = result["error"][model][rule][subset]
    cell = {key: table[key][k][c][a] for key in SUMMARY_KEYS if key in table}
    cell["ci95"] = [cell.pop("ci95_low"), cell.pop("ci95_high")]
    cell["seed_ci95"] = [cell.pop("seed_ci95_low", None), cell.pop("seed_ci95_high", None)]
    return cell


def view(result: dict, part: str, layer: int = 1) -> dict:
    """A "depth3" result seen as the one-layer fig3 / fig4 / table1 result of layer ``layer``
    (the same keys), so the same figures and verdict rules apply to every layer."""
    common = {k: result[k] for k in ("settings", "paper", "p_a", "eta", "step_size", "task_groups", "training")}
    common.update(depth=result["n_layers"], layer=layer, delta=result["delta"])
    grid = {k: result[k] for k in ("setting_keys", "main_setting")}
    if part == "fig3":
        return {"experiment": "fig3", **common, **grid, "alpha": result["alpha_fig3"],
                "per_seed": result["layers"][layer - 1]["scores"]}
    if part == "fig4":
        return {"experiment": "fig4", **common, **grid, "alpha": result["alpha_fig4"],
                "per_seed": result["layers"][layer - 1]["gates"]}
    if part == "table1":
        return {"experiment": "table1", **common, **result["table1"]}
    raise ValueError(f"part must be fig3, fig4 or table1; got {part!r}.")


def rate_cell(e: dict) -> str:
    """'0.125 [0.119, 0.131]': a pooled rate with its 95% interval over seeds (the pooled
    Clopper-Pearson interval for a result saved without it); "n/a" for a cell without prompts."""
    if e["rate"] is None:
        return "n/a"
    low, high = e["seed_ci95"] if e.get("seed_ci95") and e["seed_ci95"][0] is not None else e["ci95"]
    return f"{e['rate']:.3f} [{low:.3f}, {high:.3f}]"


def md_table(header: list, rows: list) -> list:
    """The lines of a Markdown table."""
    return ["| " + " | ".join(header) + " |", "|---" * len(header) + "|"] + ["| " + " | ".join(r) + " |" for r in rows]


def spread(values) -> str:
    """'0.1234 [0.1000, 0.1500]': the mean over seeds [min, max]."""
    v = np.array(values)
    return f"{v.mean():.4f} [{v.min():.4f}, {v.max():.4f}]"

"""Every setting of ``python -m numpy_mamba theory``, as frozen dataclasses, one per experiment,
and ``FULL`` and ``QUICK`` (tiny grids for the tests: one seed, few points, larger step sizes).

Section 4's sizes come from ``data.SECTION4``; what the paper does not give is ours, stated here
and saved beside every result (``to_dict``).  The step size of the "alpha" and gates experiments is
chosen by the step-size rule when the command runs; the chosen one is a new settings value
(``dataclasses.replace``), never written into these.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

from ..data import SECTION4

# the world of the theory checks: Section 4's (its seed is TheorySettings.world_seed)
WORLD = {name: getattr(SECTION4, name) for name in ("d", "M1", "M2", "V", "beta")}
ETA_GRID = (0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0)
LABEL_WORD = {"flip": "flipped", "target": "targeted (+1)", "random": "random"}     # a label_rule in a sentence


class Recorded:
    """``to_dict``: the settings as their JSON records them: every field, "quick" only on a quick
    run, a chosen "eta" only once chosen."""

    def to_dict(self) -> dict:
        out = json.loads(json.dumps(asdict(self)))        # tuples as lists: the JSON's values
        if not out.get("quick"):
            out.pop("quick", None)
        if "eta" in out and out["eta"] is None:
            out.pop("eta")
        return out


@dataclass(frozen=True)
class Convergence(Recorded):
    """Theorems 1 and 3, iterations to converge: a small delta, so that the linear Transformer
    does not start below eps, and a small eta, so that the step counts have resolution (the
    paper gives neither); T_max per model; the training seeds."""

    eta: float = 0.01
    delta: float = 0.02
    eps: float = 0.1
    B: int = 64
    T_max: dict = field(default_factory=lambda: {"mamba": 8000, "linear_transformer": 1500})
    seeds: tuple = (0, 1, 2, 3, 4)


@dataclass(frozen=True)
class ConvergenceVsPa(Convergence):
    """Steps to converge against the training outlier fraction p_a (at Section 4's l_tr); the fit
    is repeated on p_a <= low_p_a_max, where no loss floor is near eps."""

    p_a_grid: tuple = (0.0, 0.2, 0.4, 0.6, 0.7, 0.8)
    l_tr: int = SECTION4.l_tr
    low_p_a_max: float = 0.4
    quick: bool = False


@dataclass(frozen=True)
class ConvergenceVsLtr(Convergence):
    """Steps to converge against the training context length l_tr (at p_a = 0.4)."""

    l_tr_grid: tuple = (5, 10, 20, 40, 80)
    p_a: float = 0.4
    quick: bool = False


@dataclass(frozen=True)
class Tolerance(Recorded):
    """Theorems 2 and 4, Remark 5 and Corollary 1: models trained at each p_a of ``p_a_train``
    (eta per model and p_a by the step-size rule over ``eta_grid`` on ``select_seeds`` with
    ``n_heldout`` held-out prompts; ``eta`` once chosen: {model: {str(p_a): eta}}), tested on
    ``B_test`` prompts per point; alpha* is the largest alpha before the error exceeds
    ``threshold``; Theorem 4 (d) at ``lt_p_a`` over ``lt_alphas`` and ``lt_l_ts_grid``; Corollary 1
    at p_a = ``cor1_p_a``, l_ts, alpha and the first kappa_a' (the main setting, REPORT.md).  Test
    prompts (Definition 2): K', outlier labels ``label_rule``, every kappa_a' of ``kappa_a_prime``."""

    T: int = 1500
    B: int = 64
    eta_grid: tuple = ETA_GRID
    select_seeds: tuple = (0, 1, 2)
    n_heldout: int = 2048
    delta: float = SECTION4.delta
    l_tr: int = SECTION4.l_tr
    seeds: tuple = (0, 1, 2, 3, 4)
    p_a_train: dict = field(default_factory=lambda: {"mamba": (0.3, 0.6), "linear_transformer": (0.6,)})
    kappa_a_prime: tuple = (2.0, 8.0)
    K_prime: float = 1.5
    label_rule: str = "flip"
    l_ts_grid: tuple = (10, 20, 40, 80)
    alphas: tuple = tuple(round(0.05 * k, 2) for k in range(20))
    threshold: float = 0.25
    B_test: int = 1000
    lt_p_a: float = 0.6
    lt_alphas: tuple = (0.2, 0.3, 0.35, 0.4, 0.425, 0.45, 0.475)
    lt_l_ts_grid: tuple = (5, 7, 10, 14, 20, 28, 40, 57, 80, 113, 160, 226, 320, 453, 640)
    cor1_p_a: float = 0.6
    l_ts: int = SECTION4.l_ts
    alpha: float = 0.3
    quick: bool = False
    eta: dict | None = None


@dataclass(frozen=True)
class GatesVsM1(Recorded):
    """Corollary 2 and Lemma 5 across M1: Mamba trained on worlds with M1 relevant patterns
    (Section 4's other sizes), eta per M1 by the step-size rule (``eta`` once chosen:
    {str(M1): eta}); test prompts (Definition 2) at kappa_a', K', ``label_rule`` (the main setting,
    REPORT.md); the clean gates' decay is fitted over the ``decay_J`` closest clean examples."""

    d: int = SECTION4.d
    M2: int = SECTION4.M2
    V: int = SECTION4.V
    beta: float = SECTION4.beta
    world_seed: int = 0
    M1_grid: tuple = (2, 3, 4, 6, 9, 12, 17)
    seeds: tuple = (0, 1, 2, 3)
    T: int = 1500
    B: int = 64
    delta: float = SECTION4.delta
    l_tr: int = SECTION4.l_tr
    p_a: float = 0.6
    eta_grid: tuple = ETA_GRID
    select_seeds: tuple = (0,)
    n_heldout: int = 2048
    B_test: int = 1000
    l_ts: int = SECTION4.l_ts
    alpha: float = 0.3
    kappa_a_prime: float = 2.0
    K_prime: float = 1.5
    label_rule: str = "flip"
    decay_J: int = 6
    quick: bool = False
    eta: dict | None = None


@dataclass(frozen=True)
class Trajectory(Recorded):
    """Lemmas 4-6 along one Mamba run, recorded every ``record_every`` steps on ``B_held`` fixed
    prompts; Lemma 6's sum at every context length of ``lemma6_l_grid``."""

    T: int = 2000
    B: int = 64
    eta: float = 0.02
    delta: float = SECTION4.delta
    l_tr: int = SECTION4.l_tr
    p_a: float = 0.6
    kappa_a: float = SECTION4.kappa_a
    seed: int = 0
    B_held: int = 256
    record_every: int = 10
    lemma6_l_grid: tuple = (10, 20, 40, 80)
    quick: bool = False


@dataclass(frozen=True)
class TheorySettings:
    """The theory checks' settings: the world's seed and one settings value per experiment."""

    world_seed: int = 0
    p_a: ConvergenceVsPa = ConvergenceVsPa()
    l_tr: ConvergenceVsLtr = ConvergenceVsLtr()
    alpha: Tolerance = Tolerance()
    M1: GatesVsM1 = GatesVsM1()
    trajectory: Trajectory = Trajectory()


FULL = TheorySettings()
_QUICK_T_MAX = {"mamba": 600, "linear_transformer": 200}
QUICK = TheorySettings(
    p_a=ConvergenceVsPa(eta=0.05, seeds=(0,), T_max=_QUICK_T_MAX, p_a_grid=(0.0, 0.4, 0.6), quick=True),
    l_tr=ConvergenceVsLtr(eta=0.05, seeds=(0,), T_max=_QUICK_T_MAX, l_tr_grid=(5, 10, 20), quick=True),
    alpha=Tolerance(T=150, seeds=(0,), kappa_a_prime=(2.0,), l_ts_grid=(10, 20), B_test=100, eta_grid=(0.05, 0.2),
                    select_seeds=(0,), n_heldout=128, alphas=(0.0, 0.3, 0.6, 0.9),
                    p_a_train={"mamba": (0.6,), "linear_transformer": (0.6,)}, lt_alphas=(0.2, 0.3, 0.4),
                    lt_l_ts_grid=(5, 20, 80), quick=True),
    M1=GatesVsM1(M1_grid=(2, 4), seeds=(0,), T=100, B_test=100, eta_grid=(0.05, 0.2), n_heldout=128, quick=True),
    trajectory=Trajectory(T=100, B_held=64, record_every=10, lemma6_l_grid=(10, 20), quick=True))

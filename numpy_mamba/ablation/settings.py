"""What the ablation varies and at what size: the arms (depth and architecture), the training task
sets, the factors, the test prompts, the mechanism terms it records, and ``AblationSettings`` (its
choices and run size; the paper's are ``SECTION4``), with the names its figure and report give them.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from ..data import SECTION4
from ..fused import network
from ..network import Network
from ..sgd import TrainConfig

STREAM = 11
ARMS = {"one_layer": (1, False), "three_layer": (3, False), "three_layer_prenorm": (3, True)}
# the training task sets: T_tr (Condition 1's cycle), every ordered pair of T, and every ordered pair
# but HELD_OUT, which stay unseen so that the all-pairs arm's generalisation can still be measured
TASK_SETS = ("cycle", "all", "heldout")
# one pair of patterns held out per pattern: (0, 2) and (3, 5) two steps apart, (1, 4) three steps
# apart on the cycle, each in both orders; every pattern keeps four of its five partners
HELD_OUT = ((0, 2), (2, 0), (3, 5), (5, 3), (1, 4), (4, 1))
FACTORS = ("untrained", "baseline", "all_pairs", "long", "all_pairs_long", "heldout", "prenorm")
TESTS = {"FQ": dict(alpha=0.5, placement="farthest"), "R": dict(alpha=0.5, placement="random"),
         "CQ": dict(alpha=0.5, placement="closest"), "clean": dict(alpha=0.0, placement="random")}
PROMPT_SETS = ("all", "heldout")            # test prompts from every task of T, and from HELD_OUT only
TERMS = ("S", "init", "linear", "product", "via_ends", "via_middle", "via_other", "outside", "dW_B", "dW_C")
TRACKED = ("S", "linear", "product", "via_middle")          # terms of layer 1 recorded along training

GROUP_LABEL = {"training": "training", "reversed": "reversed", "distance_2": "distance 2", "distance_3": "distance 3",
               "all": "all tasks"}
FACTOR_LABEL = {"untrained": "untrained", "baseline": "baseline", "all_pairs": "all pairs", "long": "more steps",
                "all_pairs_long": "all pairs + more steps", "heldout": "all pairs but held-out", "prenorm": "pre-norm"}
MODEL_TEXT = {"mamba": "Mamba", "linear_transformer": "linear Transformer"}


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


def arm_network(model: str, arm: str) -> Network:
    """The Network an arm trains: eq (3) at one layer, the residual or pre-norm stack at three."""
    n_layers, prenorm = ARMS[arm]
    return network(model, n_layers, prenorm)


def run_length(settings: AblationSettings, arm: str, tasks: str) -> int:
    """Steps of one run: T_long for the residual arms on the cycle and on all pairs (their checkpoints
    give the T_short factors too), T_short for the held-out task set and the pre-norm arm."""
    return settings.T_long if tasks in ("cycle", "all") and not ARMS[arm][1] else settings.T_short


def source(factor: str, n_layers: int, settings: AblationSettings):
    """Where a factor's numbers come from: (arm, task set, checkpoint step); None for pre-norm at one layer."""
    arm = "one_layer" if n_layers == 1 else "three_layer"
    return {"untrained": (arm, "cycle", 0), "baseline": (arm, "cycle", settings.T_short),
            "all_pairs": (arm, "all", settings.T_short), "long": (arm, "cycle", settings.T_long),
            "all_pairs_long": (arm, "all", settings.T_long), "heldout": (arm, "heldout", settings.T_short),
            "prenorm": None if n_layers == 1 else ("three_layer_prenorm", "cycle", settings.T_short)}[factor]

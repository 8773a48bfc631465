"""What the ablation varies and at what size: the arms (depth and architecture), the factors, the
test prompts, the mechanism terms it records, and ``AblationSettings`` (its choices and run size;
the paper's are ``SECTION4``), with the names its figure and report give them.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from ..data import SECTION4
from ..network import Network, network
from ..sgd import TrainConfig

STREAM = 11
ARMS = {"one_layer": (1, False), "three_layer": (3, False), "three_layer_prenorm": (3, True)}
FACTORS = ("baseline", "all_pairs", "long", "prenorm")
TESTS = {"FQ": dict(alpha=0.5, placement="farthest"), "clean": dict(alpha=0.0, placement="random")}
TERMS = ("S", "init", "linear", "product", "via_ends", "via_middle", "via_other", "outside", "dW_B", "dW_C")
TRACKED = ("S", "linear", "product", "via_middle")          # terms recorded along training

GROUP_LABEL = {"training": "training", "reversed": "reversed", "distance_2": "distance 2", "distance_3": "distance 3",
               "all": "all tasks"}
FACTOR_LABEL = {"baseline": "baseline", "all_pairs": "all pairs", "long": "more steps", "prenorm": "pre-norm"}
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


def source(factor: str, n_layers: int, settings: AblationSettings):
    """Where a factor's numbers come from: (arm, tasks, checkpoint step); None for prenorm at one layer."""
    arm = "one_layer" if n_layers == 1 else "three_layer"
    return {"baseline": (arm, "cycle", settings.T_short), "all_pairs": (arm, "all", settings.T_short),
            "long": (arm, "cycle", settings.T_long),
            "prenorm": None if n_layers == 1 else ("three_layer_prenorm", "cycle", settings.T_short)}[factor]

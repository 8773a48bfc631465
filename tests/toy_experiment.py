"""A new experiment as a contributor adds one: this module, and one line in a command's registry
(tests/test_reproduce_registry.py adds it to ``reproduce``).  It measures how often Algorithm 1's untrained
Mamba (eq (3) at its initialisation) is right on clean prompts of Definition 2, per seed, and
claims, as a rule that can fail, that it is right more often than chance.  Everything it needs is
in four files: numpy_mamba/runs/experiment.py (the shape), the registry
(numpy_mamba/reproduce/__init__.py), an experiment of that family and numpy_mamba/measure/rules.py
(``RULES``, the rule "vocabulary" it cites); what it imports besides the core comes from
numpy_mamba.runs.experiment."""
from dataclasses import asdict, dataclass

import numpy as np

from numpy_mamba import make_world, network, testing_batch
from numpy_mamba.runs.experiment import Template, Unit, claim_row, judge_cases, save_figure, subplots

NAME, FILES, RULES = "toy", ("toy",), ("vocabulary",)
OUTPUTS = "toy                 the untrained model against chance (a contributor's example) -> toy.json, toy.png"
TEXT = Template("tests", "toy.md")


@dataclass(frozen=True)
class ToySettings:
    seeds: int = 3
    n_test: int = 200

    def to_dict(self) -> dict:
        return asdict(self)


FULL, QUICK = ToySettings(), ToySettings(seeds=2, n_test=50)


def accuracy(settings: ToySettings, seed: int) -> float:
    """One unit: the untrained Mamba's accuracy on ``n_test`` clean prompts of seed ``seed``'s world."""
    world = make_world(rng=np.random.default_rng([seed, 0]))
    batch = testing_batch(world, settings.n_test, 20, alpha=0.0, rng=np.random.default_rng([seed, 77]))
    net = network("mamba")
    return float(1 - net.misclassified(net.init(world.d, np.random.default_rng([seed, 1])), batch.P, batch.z).mean())


def units(settings, chosen) -> list:
    return [Unit(seed, f"toy seed {seed}", accuracy, (settings, seed)) for seed in range(settings.seeds)]


def assemble(settings, chosen, found, run) -> dict:
    return {"toy": {"settings": settings.to_dict(), "accuracy": [found[s] for s in range(settings.seeds)],
                    "quick": run.quick}}


def figure(results, out) -> list:
    fig, ax = subplots()
    ax.bar(range(len(results["toy"]["accuracy"])), results["toy"]["accuracy"])
    return [save_figure(fig, out / "toy.png", results["toy"]["quick"])]


def claims(results) -> list:
    if "toy" not in results:
        return []
    acc = results["toy"]["accuracy"]
    verdict = judge_cases({f"seed {s}": "full" if a > 0.5 else "none" for s, a in enumerate(acc)})
    return [claim_row("toy", "Ours (toy): the untrained Mamba beats chance on clean prompts", "not in the paper",
                      f"accuracy {np.mean(acc):.3f} over {len(acc)} seeds", verdict, "vocabulary", [("toy.png", "toy.png")])]


def report(results, run) -> str:
    return TEXT("part", seeds=len(results["toy"]["accuracy"]), accuracy=np.mean(results["toy"]["accuracy"]))

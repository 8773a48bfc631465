"""``python -m numpy_mamba train``: a short run of Algorithm 1 at the Section 4 settings that
prints its hinge loss falling.  Trains one model: Mamba (eq (3)) unless --model says otherwise."""
from __future__ import annotations

import argparse
import sys

import numpy as np

from ..data import make_world
from ..fused import network
from ..sgd import DivergenceError, TrainConfig, train
from ..runs.args import help_text, nonnegative_int, positive_float, positive_int


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m numpy_mamba train", description=help_text(__doc__))
    parser.add_argument("--steps", type=nonnegative_int, default=500, help="SGD steps T (default 500)")
    parser.add_argument("--batch", type=positive_int, default=64, help="batch size B (default 64)")
    parser.add_argument("--eta", type=positive_float, default=0.1, help="step size eta (default 0.1)")
    parser.add_argument("--seed", type=nonnegative_int, default=0,
                        help="seed of the world (patterns, outliers) and of SGD (init, minibatches) (default 0)")
    parser.add_argument("--model", choices=["mamba", "linear_transformer"], default="mamba",
                        help="which model to train: Mamba of eq (3), or the linear Transformer of "
                             "Section 3.4 (every gate 1) (default mamba)")
    args = parser.parse_args(argv)
    world = make_world(rng=np.random.default_rng([args.seed, 0]))
    config = TrainConfig(T=args.steps, B=args.batch, eta=args.eta)
    every = max(1, args.steps // 10)
    try:
        _, history = train(world, config, network(args.model), rng=np.random.default_rng([args.seed, 1]),
                           record_every=every)
    except DivergenceError as exc:          # also CollapseError: a failed run is never a success
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 1
    print(f"{args.model}: d={world.d} M1={world.M1} M2={world.M2} V={world.V} "
          f"l_tr={config.l_tr} p_a={config.p_a} B={config.B} eta={config.eta}")
    print(f"{'step':>6} {'hinge loss':>11} {'0-1 error':>10}   (minibatch of {config.B} fresh prompts)")
    for step, loss, err in zip(history["step"], history["loss"], history["error"]):
        print(f"{step:>6} {loss:>11.4f} {err:>10.3f}")
    return 0

"""The seeded worlds of Section 3.2 (at Section 4's sizes) that the experiment commands train and
test on, shared so that ``reproduce`` and ``ablation`` see the same world for the same seed.

Training seed s uses the world ``default_rng([s, 0])``; every other stream of that seed is
``default_rng([s, k, ...])`` with a k of its own.  Step-size selection seed k uses the world
``default_rng([k, 8, 9])`` and streams ``default_rng([k, 8, ...])``: k = 8 is the stream of no
experiment, so the step-size rule never sees an experiment's world, minibatch or test prompt.
"""
from __future__ import annotations

import numpy as np

from ..data import World, make_world


def world_for(seed: int) -> World:
    """The Section 4 world of patterns of training seed ``seed`` (Section 3.2): mu (M1, d), nu
    (M2, d), v* (V, d) from stream [seed, 0]."""
    return make_world(rng=np.random.default_rng([seed, 0]))


def selection_world(k: int) -> World:
    """The world of step-size selection seed ``k``: a Section 4 world from stream [k, 8, 9], never
    one of the experiments' worlds."""
    return make_world(rng=np.random.default_rng([k, 8, 9]))

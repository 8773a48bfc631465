"""The stack hand-out (tutorials/exercises/stack.py): ``layer_backward(dO, cache) -> (dH,
LayerParams(dW_B, dW_C, dW))`` of one Mamba layer of the stack (Section 4.2, tutorial 08).

The four pieces of the answer are graded as four functions (dH, dW_B, dW_C, dW), each against
``layer.layer_backward`` and, independently, against central differences of
sum(dO * layer_forward(H, layer)[0]) along three random directions (``problems.directional``).
``layer_backward`` is called once per problem.  The problems are layers of random three-layer
stacks at each position (layer 1: H = P; layer 2: the query's label slot holds F; layer 3: dO in
one entry), l = 1 with B = 1, m != d+1 and saturated gates, and the paper-size problem within a
CPU budget.  The solution is the Mamba layer only, so every problem is "mamba".
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ...data import SECTION4, make_world, training_batch
from ...layer import LayerCache, LayerParams, layer_backward, layer_forward
from ..compare import compare_array, describe
from ..layer_mistakes import LAYER_MISTAKES, mistaken_parts
from ..problems import directional, random_prompts
from ..registry import Exercise, Function, Reference, register

PARTS = ("dH", "dW_B", "dW_C", "dW")
# A backward pass meets this with room (within 4e-16 on every problem of 25 seeds); differencing
# the layer is 4e-12 off at best for dH and 7e-12 for dW (tests/test_grader_shortcuts.py).
TOL_REFERENCE = 1e-13
# layer_backward on the paper-size problem within this many forward passes of the layer on it: a
# backward pass takes 5 to 11 of them as the grader counts its CPU time, Python loops included,
# and any per-coordinate method (finite differences, complex step, dual numbers) one per
# coordinate, of which dW alone has 961 and dH 41,664 (``python -m numpy_mamba grade --margins stack``).
BUDGET_UNITS = 80
EXPECTED = "not (dH, LayerParams(dW_B, dW_C, dW))"

# The forward pass of one layer, nothing that differentiates it (``kit.py``).
IMPORTS = ("numpy_mamba.stack:LayerParams", "numpy_mamba.stack:layer_forward", "numpy_mamba.layer:LayerParams",
           "numpy_mamba.layer:LayerCache", "numpy_mamba.layer:layer_forward", "numpy_mamba.layer:gates")


@dataclass(frozen=True)
class LayerProblem:
    """One grading problem: the upstream gradient dO (B, D, N) and the LayerCache of
    ``layer_forward(H, layer, "mamba")``."""

    name: str
    dO: np.ndarray
    cache: LayerCache


def _layer(rng, D, m=None, scale=0.6):
    m = D if m is None else m
    W_B, W_C, W = (rng.normal(0.0, scale / np.sqrt(D), shape) for shape in ((m, D), (m, D), (D, D)))
    return LayerParams(W_B, W_C, W)


def _in_stack(rng, position, B=3, d=4, l=5):
    """Layer ``position`` (1, 2 or 3) of a random three-layer stack on random prompts: its input
    H^(position-1) and dO = dL/dH^(position) for the loss L = sum_n z_n F_n (z = +-1)."""
    H = random_prompts(rng, B, d, l)
    layers = [_layer(rng, d + 1) for _ in range(3)]
    caches = []
    for layer in layers:
        O, cache = layer_forward(H, layer)
        caches.append(cache)
        H = H + O                                            # H^(k) = H^(k-1) + O^(k)
    dH = np.zeros_like(H)
    dH[:, -1, -1] = rng.choice([-1.0, 1.0], size=B)         # dL/dF
    for k in range(3, position, -1):
        dH = dH + layer_backward(dH, caches[k - 1])[0]       # residual + the layer's paths
    return dH, caches[position - 1]


def _plain(rng, B=3, d=4, l=5, m=None):
    """One layer on random prompts with a dense random dO."""
    H = random_prompts(rng, B, d, l)
    return rng.standard_normal(H.shape), layer_forward(H, _layer(rng, d + 1, m))[1]


def _saturated(rng, B=3, d=4, l=6):
    """Coordinate 0 of H carries +-1 flags on some columns and W[0, :] = 40, so those gate logits
    a_{j,i} are 30-50 in every channel; the other columns stay moderate."""
    H = random_prompts(rng, B, d, l)
    H[:, 0, :] = 0.0
    for n, flags in enumerate(({1: 1.0, 3: -1.0, 4: -1.2}, {0: -1.0, l - 1: -0.8, 2: 1.1}, {l - 1: 1.0, 0: -1.0})):
        for i, value in flags.items():
            H[n % B, 0, i] = value
    W_B, W_C, W = _layer(rng, d + 1)
    W = W.copy()
    W[0, :] = 40.0
    return rng.standard_normal(H.shape), layer_forward(H, LayerParams(W_B, W_C, W))[1]


PROBLEM_RECIPES = (
    ("layer 3 of 3 (dO in one entry)", lambda rng: _in_stack(rng, 3)),
    ("layer 2 of 3 (H label slot = F)", lambda rng: _in_stack(rng, 2)),
    ("layer 1 of 3 (H = P)", lambda rng: _in_stack(rng, 1)),
    ("l = 1, B = 1", lambda rng: _plain(rng, B=1, l=1)),
    ("m = 3 != d+1 = 5", lambda rng: _plain(rng, m=3)),
    ("saturated gates |a| 30-50", _saturated),
)
PROBLEM_NOTES = {
    "layer 3": "the top layer: dO is zero except at [d+1, l+1]; the query column's paths.",
    "layer 2": "H's query label slot is not 0 from layer 2 on: do not assume eq (2)'s zero.",
    "l = 1": "an off-by-one in the sums over i, k, t: with l = 1 there are two tokens.",
    "m = 3": "shapes: your code assumes m = d+1 (square W_B, W_C).",
    "saturated": "numerics with saturated gates (|a| ~ 40): expit(-a) for 1 - sigma(a); never divide "
                 "by a gate.",
}


def _part_loss(pb, k: int):
    """sum(dO * O) as a function of part ``k`` (H, W_B, W_C, W) of the layer's input."""
    def loss(x):
        H, layer = pb.cache.H, pb.cache.layer
        if k == 0:
            return float(np.sum(pb.dO * layer_forward(x, layer)[0]))
        return float(np.sum(pb.dO * layer_forward(H, layer._replace(**{layer._fields[k - 1]: x}))[0]))
    return loss


def forward(pb) -> None:
    """One forward pass of the layer on ``pb``: the stack's budget is counted in these."""
    layer_forward(pb.cache.H, pb.cache.layer)


@lru_cache(maxsize=8)
def make_problems(seed: int = 0) -> tuple:
    """The seeded layer problems of PROBLEM_RECIPES."""
    return tuple(LayerProblem(name, *recipe(np.random.default_rng([seed, 100 + k])))
                 for k, (name, recipe) in enumerate(PROBLEM_RECIPES))


@lru_cache(maxsize=8)
def paper_problem(seed: int = 0) -> LayerProblem:
    """Layer 2 of a three-layer stack at Section 4's size (D = d+1 = 31, B = 64 prompts of l = 20
    examples from the data model), graded within a CPU budget."""
    rng = np.random.default_rng([seed, 199])
    world = make_world(rng=rng)
    H = training_batch(world, 64, SECTION4.l_tr, p_a=0.5, rng=rng).P
    O, _ = layer_forward(H, _layer(rng, world.d + 1))
    dO, cache = rng.standard_normal(H.shape), layer_forward(H + O, _layer(rng, world.d + 1))[1]
    return LayerProblem(f"paper size: D = {world.d + 1}, B = 64, N = {SECTION4.l_tr + 1} (CPU budget)", dO, cache)


def _inputs(name, pb):
    return pb.dO, pb.cache


def _reference(name, pb) -> Reference:
    dH, grads = layer_backward(pb.dO, pb.cache)
    k = PARTS.index(name)
    return Reference(((dH,) + tuple(grads))[k],
                     directional(_part_loss(pb, k), ((pb.cache.H,) + tuple(pb.cache.layer))[k], [4, k]))


def part(name, answer):
    """The piece of ``(dH, LayerParams(dW_B, dW_C, dW))`` that part ``name`` grades, or (None, why)."""
    if not isinstance(answer, tuple) or len(answer) != 2:
        return None, f"{EXPECTED}: returned {describe(answer)}"
    if name == "dH":
        return answer[0], ""
    grads = answer[1]                           # a list of three (d+1, d+1) arrays arrives as one array
    if not (isinstance(grads, tuple) or isinstance(grads, np.ndarray) and grads.ndim == 3) or len(grads) != 3:
        return None, f"{EXPECTED}: the second item is {describe(grads)}"
    return grads[PARTS.index(name) - 1], ""


def _mistakes(name):
    k = PARTS.index(name)
    return [(key, hint, (lambda make: lambda pb: mistaken_parts(pb.dO, pb.cache, make)[k])(make))
            for key, hint, parts, make in LAYER_MISTAKES if name in parts]


def _shape_hint(name, S, R, pb) -> str:
    head = f"wrong shape {S.shape}, expected {R.shape}"
    if name == "dH" and S.shape == R.shape[:2] + (R.shape[2], R.shape[2]):
        return f"{head}: dH has H's shape (B, D, N); sum the gate-shaped terms over t."
    if name == "dH" and S.ndim == 2 and S.shape == R.shape[1:]:
        return f"{head}: dH keeps one slice per prompt (B, D, N); do not sum over the batch."
    if name != "dH" and S.ndim == R.ndim + 1 and S.shape[1:] == R.shape:
        return f"{head}: one gradient per prompt? Parameter gradients are summed over prompts (and tokens)."
    return ""


SIGNATURE = "layer_backward(dO, cache) -> (dH, LayerParams(dW_B, dW_C, dW))"
STACK = register(Exercise(
    name="stack",
    functions=(Function("dH", f"{SIGNATURE}: dH (B, D, N)", "dL/dH: value, key, query and gate paths", 4,
                        "layer_backward"),
               Function("dW_B", f"{SIGNATURE}: dW_B (m, D)", "dL/dW_B: keys k_i = W_B h_i", 2, "layer_backward"),
               Function("dW_C", f"{SIGNATURE}: dW_C (m, D)", "dL/dW_C: queries q_t = W_C h_t", 2,
                        "layer_backward"),
               Function("dW", f"{SIGNATURE}: dW (D, D)", "dL/dW: gates, a_{j,k} = w_j^T h_k", 2, "layer_backward")),
    imports=IMPORTS,
    allowed=("numpy, scipy and the forward pass: numpy_mamba.stack's LayerParams, layer_forward and "
             "numpy_mamba.layer's LayerParams, LayerCache, layer_forward, gates"),
    independent_check="vs finite diff.",
    problems=make_problems, inputs=_inputs, reference=_reference, compare=compare_array, part=part,
    mistakes=_mistakes, shape_hint=_shape_hint, problem_notes=PROBLEM_NOTES, tol_reference=TOL_REFERENCE,
    budget=paper_problem, forward=forward, budgeted=PARTS, budget_units=BUDGET_UNITS, budget_memory_mb=512,
    hidden=("saturated",), sources=("numpy_mamba.layer",)))

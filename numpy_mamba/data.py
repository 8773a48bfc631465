"""Data and tasks of Section 3.2: patterns, tasks, training prompts (Definition 1) and testing
prompts (Definition 2), laid out as eq (2).

A context input is x = mu_j + kappa nu_k (+ kappa_a v*_s with probability p_a), eq (6)/(7);
a prompt P = [[x_1 ... x_l x_query], [y_1 ... y_l 0]] has shape (d+1, l+1); a batch
(B, d+1, l+1).  A task (a, b) labels mu_a with +1 and mu_b with -1.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ._checks import as_generator, as_real_array, check_positive, check_positive_int, check_probability

@dataclass(frozen=True)
class Section4:
    """The settings the paper's Section 4 gives, written once: d = 30, M1 = 6, M2 = 10, V = 3,
    beta = 3, delta = 0.2, kappa_a = 2, l_tr = l_ts = 20.  What it does not give (eta, B, T, K,
    K', kappa_a') each experiment chooses and states beside its results."""

    d: int = 30
    M1: int = 6
    M2: int = 10
    V: int = 3
    beta: float = 3.0
    delta: float = 0.2
    kappa_a: float = 2.0
    l_tr: int = 20
    l_ts: int = 20


SECTION4 = Section4()
LABEL_RULES = ("flip", "target", "random")
PLACEMENTS = ("random", "farthest", "closest")
# Section 4: v'_1 = 0.7v*_1 + 0.6v*_2 - 0.4v*_3, v'_2 = 0.4v*_1 + 0.7v*_2 - 0.6v*_3,
# v'_3 = -0.7v*_1 + 0.5v*_2 + 0.5v*_3 (each row: coefficients lambda on v*_1..v*_3).
SECTION4_TEST_OUTLIERS = np.array([[0.7, 0.6, -0.4], [0.4, 0.7, -0.6], [-0.7, 0.5, 0.5]])


@dataclass(frozen=True)
class World:
    """Mutually orthogonal patterns in R^d (Section 3.2).

    mu : (M1, d) relevant patterns, ||mu_j|| = beta;  nu : (M2, d) irrelevant, ||nu_k|| = beta;
    v_star : (V, d) unit outlier patterns, orthogonal to every mu and nu.
    """

    mu: np.ndarray
    nu: np.ndarray
    v_star: np.ndarray
    beta: float

    @property
    def d(self) -> int:
        return self.mu.shape[1]

    @property
    def M1(self) -> int:
        return self.mu.shape[0]

    @property
    def M2(self) -> int:
        return self.nu.shape[0]

    @property
    def V(self) -> int:
        return self.v_star.shape[0]

    def training_tasks(self) -> np.ndarray:
        """T_tr of Condition 1: task i maps mu_i -> +1 and mu_{i+1} -> -1, cyclically; (M1, 2)."""
        a = np.arange(self.M1)
        return np.stack([a, (a + 1) % self.M1], axis=1)

    def all_tasks(self) -> np.ndarray:
        """The task set T: every ordered pair (a, b), a != b; (M1 (M1 - 1), 2)."""
        a, b = np.meshgrid(np.arange(self.M1), np.arange(self.M1), indexing="ij")
        keep = a != b
        return np.stack([a[keep], b[keep]], axis=1)

    def unseen_tasks(self) -> np.ndarray:
        """Tasks of T never used in training (T minus T_tr)."""
        tasks = self.all_tasks()
        return tasks[~self.is_training_task(tasks)]

    def is_training_task(self, tasks) -> np.ndarray:
        """Whether each (a, b) row of ``tasks`` is in T_tr; (n, 2) -> bool (n,)."""
        tasks = check_tasks(self, tasks, allow_empty=True)
        return (tasks[:, 1] == (tasks[:, 0] + 1) % self.M1)

    def test_outliers(self, coefficients=SECTION4_TEST_OUTLIERS) -> np.ndarray:
        """Test outliers v' = sum_s lambda_s v*_s normalised to unit norm (eq (11)); (n, d)."""
        lam = as_real_array(coefficients, "coefficients")
        if lam.ndim != 2 or lam.shape[1] != self.V:
            raise ValueError(f"coefficients must have shape (n, V) = (n, {self.V}); got {lam.shape}.")
        v = lam @ self.v_star
        norms = np.linalg.norm(v, axis=1, keepdims=True)
        if np.any(norms == 0):
            raise ValueError("a row of coefficients gives the zero vector; it cannot be normalised.")
        return v / norms


def make_world(d: int = SECTION4.d, M1: int = SECTION4.M1, M2: int = SECTION4.M2, V: int = SECTION4.V,
               beta: float = SECTION4.beta, rng=0) -> World:
    """Draw a random orthonormal basis of R^d and take M1 + M2 + V of its directions.

    Paper: Section 3.2 (M1 + M2 < d, all patterns orthogonal) and Section 4 defaults.
    """
    d, M1 = check_positive_int(d, "d"), check_positive_int(M1, "M1", 2)
    M2, V = check_positive_int(M2, "M2"), check_positive_int(V, "V")
    beta = check_positive(beta, "beta")
    if M1 + M2 + V > d:
        raise ValueError(f"M1 + M2 + V = {M1 + M2 + V} orthogonal patterns do not fit in R^d with d = {d}.")
    rng = as_generator(rng, "make_world")
    Q, _ = np.linalg.qr(rng.standard_normal((d, d)))      # columns: an orthonormal basis
    basis = Q.T                                            # (d, d), rows orthonormal
    return World(mu=beta * basis[:M1], nu=beta * basis[M1:M1 + M2],
                  v_star=basis[M1 + M2:M1 + M2 + V].copy(), beta=beta)


class Batch(NamedTuple):
    """A batch of prompts with what the experiments need to know about each one.

    P : (B, d+1, l+1) prompts (eq (2)); z : (B,) query labels; task : (B, 2) the (a, b) of each
    prompt's task; outlier : (B, l) whether context example i carries an additive outlier;
    same_pattern : (B, l) whether it shares the query's relevant pattern.
    """

    P: np.ndarray
    z: np.ndarray
    task: np.ndarray
    outlier: np.ndarray
    same_pattern: np.ndarray


def _assemble(world: World, rng, tasks, l, K, outlier, outlier_vectors, kappa_a, label_fn) -> Batch:
    """Shared construction of Definitions 1 and 2 given which examples carry outliers."""
    B = tasks.shape[0]
    # relevant pattern of each context example and of the query: a or b with equal probability
    pick_b = rng.random((B, l + 1)) < 0.5
    rel = np.where(pick_b, tasks[:, 1:2], tasks[:, 0:1])    # (B, l+1) pattern indices
    clean_y = np.where(pick_b, -1.0, 1.0)                    # task label of each pattern
    irr = rng.integers(world.M2, size=(B, l + 1))
    kappa = rng.uniform(-K, K, size=(B, l + 1))
    which = rng.integers(outlier_vectors.shape[0], size=(B, l))   # v_s, kept only where there is an outlier
    y = np.where(outlier, label_fn(clean_y[:, :l], (B, l)), clean_y[:, :l])
    P = np.empty((B, world.d + 1, l + 1))
    scale = kappa_a * outlier                                # (B, l): kappa_a where there is an outlier, else 0
    for start in range(0, B, CHUNK):                         # same numbers as one piece, in cache
        part = slice(start, start + CHUNK)
        _context_inputs(P[part, :-1], world, rel[part], irr[part], kappa[part], outlier_vectors, which[part],
                        scale[part])
    P[:, -1, :l] = y
    P[:, -1, l] = 0.0                                        # the query's label slot, eq (2)
    same = rel[:, :l] == rel[:, l:]
    return Batch(P, clean_y[:, l].copy(), tasks.copy(), outlier, same)


CHUNK = 64      # prompts built at a time: a 4000-prompt test batch takes half the time of one piece


def _context_inputs(out, world: World, rel, irr, kappa, outlier_vectors, which, scale) -> None:
    """Eqs (6), (7) for some prompts: out (b, d, l+1) = mu_j + kappa nu_k, plus scale v_s on the
    context examples, with (b, l+1) indices j = rel, k = irr and (b, l) indices s = which."""
    l = which.shape[1]
    X = np.take(world.mu, rel, axis=0)                       # mu_j: (b, l+1, d)
    noise = np.take(world.nu, irr, axis=0)
    noise *= kappa[..., None]
    X += noise                                               # + kappa nu_k
    added = np.take(outlier_vectors, which, axis=0)
    added *= scale[..., None]
    X[:, :l] += added                                        # + kappa_a v_s
    out[...] = X.transpose(0, 2, 1)


def check_world(world, who: str) -> World:
    """``world`` if it is a ``World`` (from ``make_world``), else a ValueError naming ``who``."""
    if not isinstance(world, World):
        raise ValueError(f"{who}: world must be a numpy_mamba.World (from make_world); got {type(world).__name__}.")
    return world


def check_tasks(world: World, tasks, *, allow_empty: bool = False) -> np.ndarray:
    """Tasks as an (n, 2) integer array of pairs (a, b) of distinct indices into mu (Section 3.2:
    task (a, b) labels mu_a with +1 and mu_b with -1, so a = b would ask for both labels)."""
    tasks = np.asarray(tasks)
    if tasks.ndim != 2 or tasks.shape[1] != 2 or (len(tasks) == 0 and not allow_empty):
        raise ValueError(f"tasks must be a non-empty (n, 2) array of (a, b) pattern pairs; got shape {tasks.shape}.")
    if tasks.dtype.kind not in "iu":
        raise ValueError(f"tasks must hold integer pattern indices; got dtype {tasks.dtype}.")
    for bad, rule in ((np.any((tasks < 0) | (tasks >= world.M1), axis=1), "indices in [0, M1)"),
                      (tasks[:, 0] == tasks[:, 1], "distinct indices, a != b, in [0, M1)")):
        if np.any(bad):
            a, b = tasks[np.argmax(bad)]
            raise ValueError(f"tasks must be pairs (a, b) of pattern {rule} = [0, {world.M1}) (task (a, b) "
                             f"labels mu_a +1 and mu_b -1); got the pair ({a}, {b}).")
    return tasks


def check_outliers(world: World, outliers, tol: float = 1e-8) -> np.ndarray:
    """Test outliers v' as an (n, d) array of unit vectors orthogonal to every mu_j and nu_k
    (Definition 2, eq (11)), each condition to within ``tol``."""
    v = as_real_array(outliers, "outliers")
    if v.ndim != 2 or v.shape[1] != world.d or len(v) == 0:
        raise ValueError(f"outliers must have shape (n, d) = (n, {world.d}) with n >= 1; got {v.shape}.")
    norms = np.linalg.norm(v, axis=1)
    bad = np.abs(norms - 1.0) > tol
    if np.any(bad):
        k = int(np.argmax(bad))
        raise ValueError(f"outliers must be unit vectors (|v'| = 1, eq (11)); row {k} has norm {norms[k]:.10g} "
                         f"(tolerance {tol:g}).")
    cos = v @ np.vstack([world.mu, world.nu]).T / world.beta        # (n, M1 + M2): v' . mu / |mu|
    worst = np.unravel_index(np.argmax(np.abs(cos)), cos.shape)
    if abs(cos[worst]) > tol:
        k, j = int(worst[0]), int(worst[1])
        pattern = f"mu_{j}" if j < world.M1 else f"nu_{j - world.M1}"
        raise ValueError(f"outliers must be orthogonal to every pattern mu_j and nu_k (Section 3.2); row {k} has "
                         f"cosine {cos[worst]:.3g} with {pattern} (tolerance {tol:g}).")
    return v


def _draw_tasks(world, rng, tasks, default, B):
    """B tasks drawn uniformly from ``tasks`` (checked), or from ``default`` (the world's own set) when None."""
    tasks = default if tasks is None else check_tasks(world, tasks)
    return tasks[rng.integers(len(tasks), size=B)]


def training_batch(world: World, B: int, l: int, *, p_a: float, K: float = 0.5,
                   kappa_a: float = SECTION4.kappa_a, rng=None, tasks=None) -> Batch:
    """B training prompts of Definition 1, each from a task drawn uniformly from ``tasks``
    (default T_tr of Condition 1).

    Context inputs follow eq (6): mu_j + kappa nu_k, kappa ~ U(-K, K), plus kappa_a v*_s (s
    uniform in [V]) with probability p_a; an example with an outlier gets a uniformly random
    label.  The query has no outlier.  Returns a ``Batch`` with P of shape (B, d+1, l+1).
    """
    check_world(world, "training_batch")
    rng = as_generator(rng, "training_batch")
    B, l = check_positive_int(B, "B"), check_positive_int(l, "l")
    p_a = check_probability(p_a, "p_a")
    K = check_positive(K, "K")
    kappa_a = check_positive(kappa_a, "kappa_a")
    tasks = _draw_tasks(world, rng, tasks, world.training_tasks(), B)
    outlier = rng.random((B, l)) < p_a

    def random_label(clean, shape):
        return np.where(rng.random(shape) < 0.5, 1.0, -1.0)

    return _assemble(world, rng, tasks, l, K, outlier, world.v_star, kappa_a, random_label)


def testing_batch(world: World, B: int, l: int, *, alpha: float, K_prime: float = 1.5,
                  kappa_a_prime: float = 2.0, outliers=None, label_rule: str = "flip",
                  target: int = 1, placement: str = "random", rng=None, tasks=None) -> Batch:
    """B testing prompts of Definition 2 from tasks drawn uniformly from ``tasks`` (default:
    all of T, seen and unseen).

    Context inputs follow eq (7) with kappa' ~ U(-K', K') and outliers kappa_a' v' drawn from
    ``outliers`` ((n, d) unit vectors; default the three of Section 4).  Outlier examples are
    labelled by ``label_rule``: "flip" (the opposite of the clean label), "target" (always
    ``target``, +1 or -1, as in Example 1) or "random".  ``placement``: "random" (each example
    independently with probability alpha, eq (7)), "farthest" or "closest" to the query
    (exactly round(alpha * l) outlier examples, halves rounded up; Table 1's FQ and CQ).
    """
    check_world(world, "testing_batch")
    rng = as_generator(rng, "testing_batch")
    B, l = check_positive_int(B, "B"), check_positive_int(l, "l")
    alpha = check_probability(alpha, "alpha")
    K_prime = check_positive(K_prime, "K_prime")
    kappa_a_prime = check_positive(kappa_a_prime, "kappa_a_prime")
    if label_rule not in LABEL_RULES:
        raise ValueError(f"label_rule must be one of {LABEL_RULES}; got {label_rule!r}.")
    if isinstance(target, (bool, np.bool_)) or target not in (1, -1):
        raise ValueError(f"target must be +1 or -1; got {target!r}.")
    if placement not in PLACEMENTS:
        raise ValueError(f"placement must be one of {PLACEMENTS}; got {placement!r}.")
    outliers = world.test_outliers() if outliers is None else check_outliers(world, outliers)
    tasks = _draw_tasks(world, rng, tasks, world.all_tasks(), B)
    if placement == "random":
        outlier = rng.random((B, l)) < alpha
    else:
        n_out = int(np.floor(alpha * l + 0.5))
        positions = np.arange(l)
        mask = positions < n_out if placement == "farthest" else positions >= l - n_out
        outlier = np.broadcast_to(mask, (B, l)).copy()

    def label(clean, shape):
        if label_rule == "flip":
            return -clean
        if label_rule == "target":
            return np.full(shape, float(target))
        return np.where(rng.random(shape) < 0.5, 1.0, -1.0)

    return _assemble(world, rng, tasks, l, K_prime, outlier, outliers, kappa_a_prime, label)


testing_batch.__test__ = False      # not a pytest test, even when imported into a test module

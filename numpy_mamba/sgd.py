"""Training with SGD, Algorithm 1 (Appendix B).

    Psi^(t+1) = Psi^(t) - eta * (1/B) sum_{n in B_t} grad ell(Psi^(t); P^n, z^n)      (19)

with a fresh minibatch of B training prompts (Definition 1) at every step and the
initialisation of Algorithm 1 (``model.init_params``).  What is trained is a ``Network``
(``network.py``): eq (3), the linear Transformer, a stack of Section 4.2 or an Appendix E.6
gate, all with the same loop.
"""
from __future__ import annotations

import copy
import sys
import time
from dataclasses import asdict, dataclass

import numpy as np

from ._checks import as_generator, check_positive, check_positive_int, check_probability
from .data import SECTION4, World, training_batch
from .loss import hinge
from .model import Params
from .network import Network, as_network, leaves, map_leaves

TRAINING_TASKS = ("cycle", "all")                    # TrainConfig.tasks: T_tr of Condition 1, or all of T


class DivergenceError(FloatingPointError):
    """Training diverged: an output or a parameter passed the divergence bound or is not finite
    (``divergence``, ``measure.rules.DIVERGENCE_RULE``).

    Keeps the last good state, so a run can be inspected or resumed with a smaller step:
    ``params`` is Psi^(step-1), the parameters of the last step that passed the checks (None when
    the starting parameters already fail), ``step`` the step that failed, ``eta`` the step size,
    ``history`` the history recorded so far (the dict ``train`` returns).  ``vars(e)`` lists them.
    """

    def __init__(self, message: str, *, params=None, step=None, eta=None, history=None):
        super().__init__(message)
        self.params, self.step, self.eta, self.history = params, step, eta, history

    def __reduce__(self):                   # keep the attributes through pickling
        return type(self), self.args, vars(self)


class CollapseError(DivergenceError):
    """Training collapsed: F = 0 exactly on every prompt of a minibatch and the gradient is exactly
    0 (every gate G_{i,l+1} underflowed to 0 after too large a step), so eq (19) leaves Psi where
    it is while the loss reads 1.  A healthy run never outputs an exact 0.  Same attributes as
    ``DivergenceError``, which it subclasses: ``except DivergenceError`` catches both."""


@dataclass(frozen=True)
class TrainConfig:
    """Hyper-parameters of Algorithm 1 and the training prompts (Definition 1).

    Defaults: the paper's Section 4 where it gives a value (l_tr = 20, p_a = 0.6, kappa_a = 2,
    delta = 0.2); eta, B, T and K are ours (the paper does not give them; see figures/REPORT.md).
    ``tasks``: the training tasks, "cycle" (T_tr of Condition 1) or "all" (every ordered pair of T,
    which satisfies Condition 1 too).  What is trained (depth, pre-norm) is the ``Network``.
    """

    T: int = 2000
    B: int = 64
    eta: float = 0.1
    l_tr: int = SECTION4.l_tr
    p_a: float = 0.6
    K: float = 0.5
    kappa_a: float = SECTION4.kappa_a
    delta: float = SECTION4.delta
    m: int | None = None
    tasks: str = "cycle"

    def __post_init__(self):
        check_positive_int(self.T, "T", 0)
        check_positive_int(self.B, "B")
        check_positive(self.eta, "eta")
        check_positive_int(self.l_tr, "l_tr")
        check_probability(self.p_a, "p_a")
        check_positive(self.K, "K")
        check_positive(self.kappa_a, "kappa_a")
        check_positive(self.delta, "delta")
        if self.m is not None:
            check_positive_int(self.m, "m")
        if self.tasks not in TRAINING_TASKS:
            raise ValueError(f"tasks must be one of {TRAINING_TASKS}; got {self.tasks!r}.")

    def to_dict(self) -> dict:
        return asdict(self)


class Progress:
    """Prints step, loss, elapsed and estimated time left to stderr at most every ``every`` s."""

    def __init__(self, total: int, label: str = "train", every: float = 2.0, stream=None):
        self.total, self.label, self.every = total, label, every
        self.stream = sys.stderr if stream is None else stream
        self.start = self.last = time.perf_counter()

    def update(self, step: int, loss: float, force: bool = False) -> None:
        now = time.perf_counter()
        if not force and now - self.last < self.every:
            return
        self.last = now
        elapsed = now - self.start
        left = elapsed / max(step, 1) * (self.total - step)
        print(f"[{self.label}] step {step}/{self.total}  loss {loss:.4f}  "
              f"elapsed {elapsed:.1f}s  left ~{left:.1f}s", file=self.stream, flush=True)


def train(world: World, config: TrainConfig = TrainConfig(), net: Network | str = "mamba", *, rng=None,
          params=None, record_every: int = 10, record=None,
          progress: bool | Progress = False) -> tuple[Params, dict]:
    """Run Algorithm 1 for ``config.T`` steps on the Network ``net``; return (Psi^(T), history).

    ``net``: a ``Network`` (``numpy_mamba.network(...)``, the reading forms, or
    ``numpy_mamba.fused.network(...)``, the same Network fused, which the commands train), or the
    name of one of the paper's two one-layer models (its reading Network).  ``rng`` (Generator or int seed) draws the initialisation (``net.init``)
    and every minibatch, so a seed fixes the run; ``params`` overrides the initialisation.
    Every ``record_every`` steps (and at step T) the history stores the minibatch ``loss`` and
    0-1 ``error`` at Psi^(t) before the update, ``step``, and whatever ``record(step, params) ->
    dict`` returns (e.g. projections of w).  Raises ``DivergenceError`` naming the step once an
    output or a parameter passes ``DIVERGENCE_BOUND`` or is not finite (``divergence``), and ``CollapseError`` if F = 0 exactly on every prompt of a
    minibatch and the gradient is exactly 0 (checked only when F is all 0, so a healthy run pays
    nothing); both carry the last good parameters and the history so far.
    """
    net = as_network(net)
    _check_train_inputs(world, config, record, progress)
    rng = as_generator(rng, "train")
    record_every = check_positive_int(record_every, "record_every")
    params = net.init(world.d, rng, config.m, config.delta) if params is None else net.check(params, world.d)
    bar = progress if isinstance(progress, Progress) else (Progress(config.T, net.name) if progress else None)
    run = _Run(net, config, params, record_every, record, bar)
    for t in range(config.T + 1):
        run.step(t, _minibatch(world, config, rng))
    return run.params, _history_arrays(run.history)


SHARED_FIELDS = ("T", "B", "l_tr", "p_a", "K", "kappa_a", "m", "tasks")    # what train_together's configs share


def train_together(world: World, configs, net: Network | str = "mamba", *, rng=None,
                   record_every: int = 10) -> list:
    """Algorithm 1 (eq (19)) for several step sizes at once: ``train(world, config, net, rng=<a copy
    of rng>)`` for every config of ``configs``, in step, each minibatch drawn once and fed to every
    run.  The configs may differ only in eta and delta (the fields outside ``SHARED_FIELDS``), so
    every run draws the same minibatches, and each gives the same numbers as its own ``train``
    call, bit for bit.  ``rng`` (Generator or seed) is copied, not advanced.

    Returns one entry per config: (Psi^(T), history) as ``train`` returns them, or the
    ``DivergenceError`` (or ``CollapseError``) that run raised; the other runs go on.
    """
    net, configs = as_network(net), list(configs)
    if not configs:
        raise ValueError("train_together needs at least one TrainConfig; got none.")
    for config in configs:
        _check_train_inputs(world, config, None, False)
        differ = [f for f in SHARED_FIELDS if getattr(config, f) != getattr(configs[0], f)]
        if differ:
            raise ValueError(f"train_together's configs may differ only in eta and delta; got different {differ}: "
                             f"{[getattr(config, f) for f in differ]} vs {[getattr(configs[0], f) for f in differ]}.")
    record_every = check_positive_int(record_every, "record_every")
    start = as_generator(rng, "train_together")
    runs, streams = [], []
    for config in configs:
        own = copy.deepcopy(start)                          # the generator train(..., rng=<copy>) would get
        runs.append(_Run(net, config, net.init(world.d, own, config.m, config.delta), record_every, None, None))
        streams.append(own.bit_generator.state)
    if any(state != streams[0] for state in streams):
        raise ValueError(f"the initialisation of {net.name} draws differently for these configs, so their minibatch "
                         "streams would differ; train them one by one with train().")
    stream = own                                            # equal to every run's own generator (checked)
    outcome, live = [None] * len(runs), list(range(len(runs)))
    for t in range(configs[0].T + 1):
        batch = _minibatch(world, configs[0], stream)
        for k in list(live):
            try:
                runs[k].step(t, batch)
            except DivergenceError as exc:                 # CollapseError included
                outcome[k] = exc
                live.remove(k)
    for k in live:
        outcome[k] = (runs[k].params, _history_arrays(runs[k].history))
    return outcome


def _minibatch(world: World, config: TrainConfig, rng):
    """The next minibatch of Definition 1 from ``rng``, on the training tasks the config names."""
    tasks = None if config.tasks == "cycle" else world.all_tasks()     # None: T_tr, training_batch's default
    return training_batch(world, config.B, config.l_tr, p_a=config.p_a, K=config.K,
                          kappa_a=config.kappa_a, rng=rng, tasks=tasks)


class _Run:
    """One run of Algorithm 1, fed one minibatch at a time (the body of ``train``'s loop)."""

    def __init__(self, net: Network, config: TrainConfig, params, record_every: int, record, bar):
        self.net, self.config, self.params = net, config, params
        self.record_every, self.record, self.bar = record_every, record, bar
        self.history: dict[str, list] = {"step": [], "loss": [], "error": []}
        self.good = None                     # Psi^(t-1), the last parameters that passed the checks

    def step(self, t: int, batch) -> None:
        """Step t: loss and checks at Psi^(t) on ``batch``, the history every record_every steps, then
        eq (19) (not at t = T).  Raises DivergenceError or CollapseError with the last good state."""
        net, config, params = self.net, self.config, self.params
        with np.errstate(over="ignore", invalid="ignore"):     # checked just below
            F, grad = net.F_and_gradients(params, batch.P, batch.z)    # one forward pass, then backward
            loss = float(np.mean(hinge(F, batch.z)))
        why = divergence(F, loss, params)
        if why:
            raise DivergenceError(f"training diverged at step {t}: {why}. {_remedy(self.history, config, t)}",
                                  **_kept(self.good, t, config.eta, self.history))
        if not np.any(F) and not any(np.any(g) for g in leaves(grad)):
            raise CollapseError(_collapse_message(net, params, batch.P, t, loss, config.eta),
                                **_kept(self.good, t, config.eta, self.history))
        if t % self.record_every == 0 or t == config.T:
            self._log(t, loss, float(np.mean(net.misclassified(params, batch.P, batch.z, F))))
        if self.bar is not None:
            self.bar.update(t, loss, force=(t == config.T))
        if t < config.T:
            self.good, self.params = params, sgd_update(params, grad, config.eta)

    def _log(self, t: int, loss: float, err: float) -> None:
        history = self.history
        history["step"].append(t)
        history["loss"].append(loss)
        history["error"].append(err)
        if self.record is not None:
            for key, value in self.record(t, self.params).items():
                history.setdefault(key, []).append(value)


DIVERGENCE_BOUND = 1e6                      # why this bound: measure.rules.DIVERGENCE_RULE


def divergence(F, loss: float, params) -> str:
    """Why Psi^(t) has diverged (``measure.rules.DIVERGENCE_RULE``), or "" if it has not: F (B,) the outputs on the
    minibatch, ``loss`` their mean hinge loss, ``params`` Psi^(t)."""
    with np.errstate(invalid="ignore"):                     # a NaN makes the largest NaN: not finite below
        largest = max(float(abs(a).max()) for a in leaves(params) if a.size)
        output = float(abs(F).max()) if F.size else 0.0
    if not (np.isfinite(loss) and np.isfinite(largest) and np.isfinite(output)):
        return f"loss = {loss}, parameters finite = {bool(np.isfinite(largest))}"
    if output > DIVERGENCE_BOUND or largest > DIVERGENCE_BOUND:
        return (f"an output reached |F| = {output:.3g} and a parameter {largest:.3g}, beyond the divergence bound "
                f"{DIVERGENCE_BOUND:g}")
    return ""


def _history_arrays(history: dict) -> dict:
    return {k: np.asarray(v) for k, v in history.items()}


LARGE_INITIAL_LOSS = 100.0      # a hinge loss this large at step 0: the initial output is far from |F| ~ 1


def _remedy(history: dict, config: TrainConfig, t: int) -> str:
    """What to try after a divergence at step ``t``: a smaller step size, or, when the run starts
    there or its loss at step 0 was already huge (a deep stack at Algorithm 1's delta: F grows like a
    power of delta), a smaller delta."""
    if t == 0:
        return (f"The starting parameters already do this: the output at initialisation is too large, so try a "
                f"smaller delta than {config.delta} (TrainConfig.delta, the scale of Algorithm 1's initialisation).")
    first = history["loss"][0] if history["loss"] else None
    if first is not None and first > LARGE_INITIAL_LOSS:
        return (f"The loss at step 0 was already {first:.3g}: the output at initialisation is large, so try a "
                f"smaller delta than {config.delta} (TrainConfig.delta, the scale of Algorithm 1's initialisation) "
                f"before a smaller step size than eta = {config.eta}.")
    return f"Try a smaller step size than eta = {config.eta}."


def _kept(good, t: int, eta: float, history: dict) -> dict:
    """What a failed run hands back in its DivergenceError: Psi^(t-1), t, eta, history so far."""
    return dict(params=good, step=t, eta=eta, history=_history_arrays(history))


def _check_train_inputs(world, config, record, progress) -> None:
    if not isinstance(world, World):
        raise ValueError(f"world must be a numpy_mamba.World (from make_world); got {type(world).__name__}.")
    if not isinstance(config, TrainConfig):
        raise ValueError(f"config must be a TrainConfig; got {type(config).__name__}.")
    if record is not None and not callable(record):
        raise ValueError(f"record must be None or a function (step, params) -> dict; got {type(record).__name__}.")
    if not isinstance(progress, (bool, np.bool_, Progress)):
        raise ValueError(f"progress must be True, False or a Progress; got {type(progress).__name__}.")


def _collapse_message(net: Network, params, P, t: int, loss: float, eta: float) -> str:
    """One line: what collapsed, why (the Network's own reason, e.g. gate underflow), and which setting."""
    why = "the model's output F is 0" if net.why_zero is None else net.why_zero(params, P)
    cause = ("the starting parameters already do this" if t == 0 else
             f"the update after step {t - 1} with step size eta = {eta:g} put the parameters there; "
             "try a smaller step size")
    return (f"training collapsed at step {t}: F = 0 exactly on all {P.shape[0]} prompts of the minibatch "
            f"(loss = {loss:g}, 0-1 error 1) and the gradient is exactly 0, so the update of eq (19) leaves "
            f"Psi unchanged. Cause: {why}; {cause}.")


def sgd_update(params, grad, eta: float):
    """Unchecked eq (19), Psi - eta * grad, array by array (and layer by layer for a stack)."""
    return map_leaves(lambda p, g: p - eta * g, params, grad)

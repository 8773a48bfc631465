"""numpy_mamba: a pure-NumPy reference implementation of "Can Mamba Learn In Context with
Outliers? A Theoretical Generalization Analysis" (arXiv 2510.00399).

The top of the package is the paper's one-layer model, one module per part:

    data       Section 3.2: patterns, tasks, training and testing prompts (eqs (2), (6), (7), (11))
    scan       eq (1): the selective state-space scan, token by token
    model      eq (3): linear attention times the sigmoid gate; Algorithm 1's initialisation
    loss       eqs (4), (5): hinge loss and 0-1 error
    gradients  eqs (93), (118), (135): analytic gradients, vectorised and literal
    gradcheck  central finite differences
    sgd        Algorithm 1: SGD
    network    what is trained, as one value: ``network(model, n_layers, prenorm)``

and Section 4.2's three-layer models (``stack``, ``layer``: a residual stack of eq (1) layers
with a hand-written backward pass).  ``fast`` holds the fused forms of eq (3) that training runs
and ``numerics`` their helpers; each is tested equal to its reading form.

Families built on it live in subpackages: ``reproduce`` (Section 4), ``ablation`` (the three-layer
models' distance-2 gap, one factor at a time), ``theory`` (numerical checks of the theorems),
``gates`` (Appendix E.6) and ``grader`` (the exercises' autograder).  They share ``measure`` (what
the experiments measure and how they judge it) and ``runs`` (how an experiment command runs and
writes its files); ``cli`` (the command line) sits on top.
"""
from .data import Batch, World, make_world, testing_batch, training_batch
from .gradcheck import GradcheckReport, gradcheck, numerical_gradient
from .gradients import gradients, gradients_literal
from .loss import hinge_loss, zero_one_error
from .model import Params, attention_scores, forward, forward_literal, gating, init_params
from .network import Network, network
from .scan import recurrent_forward
from .sgd import CollapseError, DivergenceError, TrainConfig, train

__all__ = [
    "Params", "init_params", "forward", "forward_literal", "hinge_loss", "gradients", "gating", "attention_scores",
    "recurrent_forward", "gradcheck", "gradients_literal", "numerical_gradient", "GradcheckReport",
    "zero_one_error", "World", "Batch", "make_world", "training_batch", "testing_batch",
    "TrainConfig", "train", "DivergenceError", "CollapseError", "Network", "network",
]
__version__ = "0.1.0"

"""numpy_mamba: a pure-NumPy reference implementation of "Can Mamba Learn In Context with
Outliers? A Theoretical Generalization Analysis" (arXiv 2510.00399).

The folder reads like the paper: ``data`` (Section 3.2), ``scan`` (eq (1)), ``model`` (eq (3)),
``loss`` (eqs (4), (5)), ``gradients`` (eqs (93), (118), (135)), ``gradcheck``, ``sgd``
(Algorithm 1); ``gates`` and ``gates_scan`` add the other gates of Appendix E.6.
"""
from .data import Batch, World, make_world, testing_batch, training_batch
from .gates import GATES, GatedRetentionParams, GLAParams, Mamba2Params, RetNetParams
from .gates_scan import gate_recurrent_forward
from .gradcheck import GradcheckReport, gradcheck, numerical_gradient
from .gradients import gradients, gradients_literal
from .loss import hinge_loss, zero_one_error
from .model import Params, attention_scores, forward, gating, init_for, init_params
from .scan import recurrent_forward
from .sgd import DivergenceError, TrainConfig, train

__all__ = [
    "Params", "init_params", "forward", "hinge_loss", "gradients", "gating", "attention_scores",
    "recurrent_forward", "gradcheck", "gradients_literal", "numerical_gradient", "GradcheckReport",
    "zero_one_error", "World", "Batch", "make_world", "training_batch", "testing_batch",
    "TrainConfig", "train", "DivergenceError",
    "GATES", "Mamba2Params", "RetNetParams", "GatedRetentionParams", "GLAParams", "init_for",
    "gate_recurrent_forward",
]
__version__ = "0.1.0"

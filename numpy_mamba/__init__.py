"""numpy_mamba: a pure-NumPy reference implementation of "Can Mamba Learn In Context with
Outliers? A Theoretical Generalization Analysis" (arXiv 2510.00399).

The top of the package is the paper's one-layer model, one module per part:

    data       Section 3.2: patterns, tasks, training and testing prompts (eqs (2), (6), (7), (11))
    scan       eq (1): the selective state-space scan, token by token
    model      eq (3): linear attention times the sigmoid gate; Algorithm 1's initialisation
    loss       eqs (4), (5): hinge loss and 0-1 error
    gradients  eqs (93), (118), (135): analytic gradients, batched and literal
    gradcheck  central finite differences
    sgd        Algorithm 1: SGD
    network    what is trained, as one value: ``network(model, n_layers, prenorm)``

and Section 4.2's three-layer models (``stack``, ``layer``: a residual stack of eq (1) layers
with a hand-written backward pass; ``rmsnorm`` for its pre-norm ablation).  Every function here
is a reading form: the literal one (``forward_literal``, ``gradients_literal``, ``scan``), one
prompt and one term at a time as the paper prints it, and the batched one (``forward``,
``gradients``, ``stack.forward``, ...), its input checked at the top, then the equation's terms
for a whole batch.  ``fused`` holds the same equations taken in fewer passes over memory, which
the commands train through ``fused.network``; no module of the core imports it.

Families built on it live in subpackages: ``reproduce`` (Section 4), ``ablation`` (the three-layer
models' distance-2 gap, one factor at a time), ``theory`` (numerical checks of the theorems),
``gates`` (Appendix E.6) and ``grader`` (the exercises' autograder).  They share ``measure`` (what
the experiments measure and how they judge it) and ``runs`` (how an experiment command runs and
writes its files); ``cli`` (the command line) sits on top.

Shapes (the paper's symbols; every array is float64):

    d        features of a pattern; D = d+1 rows of a prompt (the last row holds the labels)
    l        context examples of a prompt; N = l+1 columns (the last is the query p_query = p_{l+1})
    B        prompts in a batch
    m        hidden size: the rows of W_B and W_C (default d+1)
    L        layers of a stack

    P        (B, d+1, l+1)  prompts as eq (2); a single prompt (d+1, l+1); P[:, -1, :l] = y, P[:, -1, l] = 0
    z        (B,)           query labels in {-1, +1}
    W_B, W_C (m, d+1)       key and query matrices; w (d+1,) the gate of eq (3)
    W        (d+1, d+1)     a stack layer's gates, one column w_j per channel (W[:, -1] is eq (3)'s w)
    F        (B,)           the output of eq (3) (of a stack: H^(L)[d+1, l+1]); a float for one prompt
    s, G, a  (B, l+1)       scores p_i^T W_B^T W_C p_query, gates G_{i,l+1}(w), gate logits w^T p_i
    H, O     (B, d+1, l+1)  a stack layer's input and output, laid out as P
    S        (B, l+1, l+1)  a layer's scores s_{i,t};  G (B, d+1, l+1, l+1) its gates G_{j,i,t}

Inside ``fused`` a stack's hidden states are laid out tokens outermost, (l+1, B, d+1); what
comes in and out of it is laid out as above.
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

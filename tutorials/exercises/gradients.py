"""Exercise: the gradients of the mean hinge loss, eqs (93), (118), (135) of Appendix E.

Implement grad_W_C, grad_W_B and grad_w below (the cells before them give the model, the shapes
and what you may use), then grade your copy (from the repository's root; git ignores my_*.py there):

    cp tutorials/exercises/gradients.py my_gradients.py
    python -m numpy_mamba grade my_gradients.py

The notebook `python -m numpy_mamba notebooks` makes of this hand-out is graded as it is:
python -m numpy_mamba grade my_notebooks/exercises/gradients.ipynb (its last cell says so).
"""
import numpy as np
from scipy.special import expit  # noqa: F401  (sigma, overflow-safe)

from numpy_mamba import gating   # G_{i,l+1}(w) of eq (3): (d+1,), (B, d+1, l+1) -> (B, l+1)

# %% [markdown]
# Tutorial 3 (`tutorials/03_gradients_by_hand.py`) derives each one step by step.  The model is
# eq (3),
#
# $$F(\Psi; P) = \sum_{i=1}^{l+1} G_{i,l+1}(w)\, y_i\, s_i, \qquad s_i = p_i^\top W_B^\top W_C\, p_{query},$$
#
# and the loss of a batch is the **mean** hinge loss $\frac{1}{B} \sum_n \max\{0,\ 1 - z^n F(\Psi; P^n)\}$
# (eq (4), Algorithm 1).  Each function takes
#
# - `params`: `numpy_mamba.Params(W_B, W_C, w)` with $W_B, W_C$ of shape (m, d+1) and $w$ of shape (d+1,);
# - `P`: (B, d+1, l+1), a batch of prompts (eq (2)): `P[n, :, i]` is $p_i$, `P[n, :, -1]` is
#   $p_{query}$, `P[n, -1, :]` holds the labels $y_1 \dots y_l$ and a 0 in the query's slot;
# - `z`: (B,), the query labels in $\{-1, +1\}$;
#
# and returns the gradient of the mean loss with the shape of the parameter.  Derive each one on
# paper first (Appendix E.2-E.3 has the answers as eqs (93), (118), (135); mind the condition the
# paper states them under).
#
# The grader compares them with the package's analytic gradients (to $10^{-12}$) and with central
# finite differences, on public problems ($l = 1$, $m \ne d+1$, both sides of the hinge, the data
# model, and the paper's size, $d = 30$ and $B = 64$, within a CPU budget a few times what a
# derivation needs: a finite difference or complex step per entry of $W_B$ or $W_C$ does not fit), and on
# hidden ones the autograder adds (saturated gates, prompts within $10^{-11}$ of the hinge's
# kink); it names the mistake when it recognises one.  You may use numpy, scipy,
# `numpy_mamba.Params`, `numpy_mamba.gating` and, from `numpy_mamba.model`, `Params`, `gating`,
# `log_gating`, `gate_logits` and `scores`; the grader runs your file where nothing else of
# numpy_mamba can be imported: the point is your own derivation.

# %%
def forward_pieces(params, P):
    """What every gradient needs: G (B, l+1), y (B, l+1), s (B, l+1) and F (B,) of eq (3)."""
    W_B, W_C, w = params
    G = gating(w, P)                                       # (B, l+1)
    y = P[:, -1, :]                                        # labels, 0 in the query's slot
    key_side = (P[:, :, -1] @ W_C.T) @ W_B                 # (W_B^T W_C p_query)^T: (B, d+1)
    s = np.einsum("bdi,bd->bi", P, key_side)               # s_i = p_i^T W_B^T W_C p_query
    F = np.sum(G * y * s, axis=1)                          # (B,)
    return G, y, s, F


def grad_W_C(params, P, z):
    """d/dW_C of the mean hinge loss over the batch, shape (m, d+1).

    Derive it first: only s_i depends on W_C, and for vectors a, b, d(a^T W b)/dW = a b^T.
    Where is the hinge max{0, 1 - zF} flat?  Compare your result with eq (93) afterwards.
    """
    raise NotImplementedError("grad_W_C: your code here")


def grad_W_B(params, P, z):
    """d/dW_B of the mean hinge loss over the batch, shape (m, d+1).

    Same idea as grad_W_C, with W_B on the other side of s_i = p_i^T W_B^T W_C p_query.
    Compare with eq (118) afterwards.
    """
    raise NotImplementedError("grad_W_B: your code here")


def grad_w(params, P, z):
    """d/dw of the mean hinge loss over the batch, shape (d+1,).

    Only the gates depend on w.  G_{i,l+1}(w) = sigma(w^T p_i) prod_{j=i+1}^{l+1}(1 - sigma(w^T p_j))
    depends on w through sigma(w^T p_i) AND through every later factor, the query's included.
    Hint: differentiate log G_i, using d log sigma(a)/da = 1 - sigma(a) and
    d log(1 - sigma(a))/da = -sigma(a).  Compare with eq (135) afterwards.
    """
    raise NotImplementedError("grad_w: your code here")

# ---------------------------------------------------------------------------------------------
# Students: this file is yours to edit.  (Maintainers: tutorials/make_exercises.py generates it
# from its model answer; change that, then run it.)

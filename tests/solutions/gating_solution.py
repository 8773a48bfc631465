"""Exercise: the Mamba gates G_{i,l+1}(w) of eq (3).

Implement ``gates`` below (the cells before it give the equation and what you may use), then
grade your copy (from the repository's root; git ignores my_*.py there):

    cp tutorials/exercises/gating.py my_gating.py
    python -m numpy_mamba grade my_gating.py

The notebook `python -m numpy_mamba notebooks` makes of this hand-out is graded as it is:
python -m numpy_mamba grade my_notebooks/exercises/gating.ipynb (its last cell says so).
"""
import numpy as np
from scipy.special import expit, log_expit  # noqa: F401  (sigma and log sigma, overflow-safe)

# %% [markdown]
# Tutorial 1 (`tutorials/01_ssm_to_linear_attention.py`) shows where the gates come from: with
# $A = -I$ and the zero-order hold, the scan of eq (1) forgets by $\tilde A = 1 - \sigma(w^\top u)$
# and writes with $\tilde B = \sigma(w^\top u) B$ (Appendix E.1, eqs (84)-(92)).  Unrolling the
# scan gives
#
# $$G_{i,l+1}(w) = \sigma(w^\top p_i) \prod_{j=i+1}^{l+1} \bigl(1 - \sigma(w^\top p_j)\bigr)
#   \quad (i \le l), \qquad G_{l+1,l+1}(w) = \sigma(w^\top p_{query}).$$
#
# The grader compares your gates with the package's and, through $F$ of eq (3), with the
# literal eq (1) scan, on public problems (a plain batch, $l = 1$, $m \ne d+1$, ...) and hidden
# ones (saturated gates, $|w^\top p|$ up to 50) that the autograder adds.  Use numpy and scipy
# only: the grader runs your file where nothing of numpy_mamba can be imported.

# %%
def gates(w, P):
    """G_{i,l+1}(w) of eq (3) for every column i = 1..l+1 of every prompt.

    w : (d+1,) gate parameter; P : (B, d+1, l+1) a batch of prompts (eq (2)).
    Returns G : (B, l+1); G[n, i] is the gate of column i of prompt n (the last column is the
    query, G[n, -1] = sigma(w^T p_query)).

    Hints: a = w^T p_i for every column is ``np.einsum("d,bdl->bl", w, P)``.  With |a| ~ 40,
    1 - expit(a) rounds to 0; use expit(-a), or work with logs: log sigma(a) = log_expit(a),
    log(1 - sigma(a)) = log_expit(-a), and a product over j > i is a sum of logs over j > i.
    """
    # BEGIN SOLUTION
    a = np.einsum("d,bdl->bl", w, P)                       # a_i = w^T p_i: (B, l+1)
    log_keep = log_expit(-a)                               # log(1 - sigma(a_j)): (B, l+1)
    # sum_{j=i+1}^{l+1} log(1 - sigma(a_j)): a reversed cumulative sum, minus the j = i term
    later = np.cumsum(log_keep[:, ::-1], axis=1)[:, ::-1] - log_keep
    return np.exp(log_expit(a) + later)                    # (B, l+1); empty product for the query
    # END SOLUTION

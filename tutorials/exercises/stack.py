"""Exercise: backprop through one Mamba layer of the three-layer stack (Section 4.2).

Implement layer_backward below (the cells before it give the layer, the cache and the usual
mistakes), then grade your copy (from the repository's root; git ignores my_*.py there):

    cp tutorials/exercises/stack.py my_stack.py
    python -m numpy_mamba grade my_stack.py

The notebook `python -m numpy_mamba notebooks` makes of this hand-out is graded as it is:
python -m numpy_mamba grade my_notebooks/exercises/stack.ipynb (its last cell says so).
"""
import numpy as np
from scipy.special import expit  # noqa: F401  (sigma, overflow-safe)

from numpy_mamba.stack import LayerParams, layer_forward  # noqa: F401  (builds the cache)

# %% [markdown]
# Tutorial 8 (`tutorials/08_backprop_through_the_stack.py`) walks through the stack.  One layer
# runs the eq (1) scan over every column $h_1 \dots h_{l+1}$ of its input $H$ and returns every
# output $o_t$.  Unrolled (Appendix E.1, eqs (88)-(90)), channel $j$ of the output is
#
# $$o_{t,j} = \sum_{i \le t} G_{j,i,t}\, h_{i,j}\, s_{i,t}, \qquad s_{i,t} = h_i^\top W_B^\top W_C h_t,$$
# $$G_{j,i,t} = \sigma(a_{j,i}) \prod_{k=i+1}^{t} \bigl(1 - \sigma(a_{j,k})\bigr), \qquad a_{j,i} = w_j^\top h_i,$$
#
# with $w_j$ = `W[:, j]`.  The stack adds a residual, $H^{(k)} = H^{(k-1)} + O^{(k)}$, and reads
# $F = H^{(L)}_{d+1, l+1}$; that part is the package's (`numpy_mamba.stack.gradients`).  Your job
# is the layer itself: given `dO` $= \partial L / \partial O$, return $\partial L / \partial H$ and
# the gradients of $W_B$, $W_C$ and $W$.
#
# Conventions ($B$ prompts, $D = d+1$ channels, $N = l+1$ tokens):
#
# - `H`: (B, D, N), the layer's input; `H[n, :, i]` is $h_i$.  From layer 2 on, `H[n, -1, -1]` (the
#   query's label slot) is NOT 0: it holds the previous layers' $F$.
# - `dO`: (B, D, N), $\partial L / \partial O$ for every channel and every token (not only the query
#   column: layers below the last one feed every column of their output upward).
#
# Build the cache with the package's forward pass:
# `O, cache = layer_forward(H, LayerParams(W_B, W_C, W), "mamba")` (from `numpy_mamba.stack`).
# `cache` is a `numpy_mamba.layer.LayerCache` with fields `H` (B, D, N); `layer` =
# `LayerParams(W_B (m, D), W_C (m, D), W (D, D))`; `model` ("mamba"); `K` (B, m, N), the keys
# $k_i = W_B h_i$; `Q` (B, m, N), the queries $q_t = W_C h_t$; `S` (B, N, N), the scores
# $s_{i,t} = k_i^\top q_t$ (all $i, t$); `G` (B, D, N, N), the gates `G[n, j, i, t]`, exactly 0 for
# $i > t$; `a` (B, D, N), the gate logits $a_{j,i} = w_j^\top h_i$.
#
# Return `(dH, LayerParams(dW_B, dW_C, dW))` with the shapes of `H`, `W_B`, `W_C`, `W`.  The loss
# is whatever produced `dO` (the gradients are sums over prompts and tokens; no $1/B$ here: the
# mean of the hinge loss is already inside `dO`).
#
# Hints (the usual mistakes):
#
# 1. $H$ appears in FOUR places: as the value $h_{i,j}$, as the key $h_i$ and as the query $h_t$
#    of $s_{i,t}$, and inside every gate through $a_{j,k}$.  `dH` is the sum of all four paths.
# 2. The query side is easy to forget: $s_{i,t}$ depends on $h_t$ through $q_t = W_C h_t$, so the
#    query column (and every column $t$, as a query) gets gradient $W_C^\top\, \partial L/\partial q_t$.
# 3. $\partial \log G_{j,i,t} / \partial a_{j,k}$ is $1 - \sigma(a_{j,k})$ if $k = i$,
#    $-\sigma(a_{j,k})$ if $i < k \le t$, and 0 otherwise.  Work with
#    $\partial L / \partial \log G = G\, \partial L / \partial G$.
# 4. Shapes catch transposes: `dW_B` and `dW_C` are (m, D) sums of
#    $(\partial L/\partial k_i)\, h_i^\top$ and $(\partial L/\partial q_t)\, h_t^\top$; `dW[:, j]`
#    (column $j$) is the gradient of $w_j$, $\sum_k h_k\, \partial L / \partial a_{j,k}$.
# 5. Check with central differences in a script of your own:
#    `numpy_mamba.gradcheck(lambda h: np.sum(dO * layer_forward(h, layer)[0]), H, dH)` compares
#    `dH`; do the same for `W_B`, `W_C`, `W`.
#
# The grader grades `dH`, `dW_B`, `dW_C` and `dW` separately, each against the package (to
# $10^{-13}$) and against central finite differences, on layers 1, 2 and 3 of random three-layer
# stacks, $l = 1$, $m \ne d+1$ and the paper's size ($D = 31$, $B = 64$: within a CPU budget a
# few times what a backward pass needs), with saturated gates among the hidden problems the
# autograder adds.  It runs your file where only numpy, scipy and the forward pass can be
# imported (`numpy_mamba.stack`'s `LayerParams` and `layer_forward`; `numpy_mamba.layer`'s
# `LayerParams`, `LayerCache`, `layer_forward` and `gates`): no backward pass, no
# `numpy_mamba.gradcheck`.

# %%
def layer_backward(dO, cache):
    """dL/dH (B, D, N) and LayerParams(dW_B (m, D), dW_C (m, D), dW (D, D)) of one Mamba layer.

    dO : (B, D, N) = dL/dO; cache : the LayerCache of ``layer_forward(H, layer, "mamba")``.
    """
    raise NotImplementedError("layer_backward: your code here")

# ---------------------------------------------------------------------------------------------
# Students: this file is yours to edit.  (Maintainers: tutorials/make_exercises.py generates it
# from its model answer; change that, then run it.)

# %% [markdown]
# # Tutorial 8 — Backprop through the three-layer stack
#
# Paper: Li, Lu, Cui, Chen, Wang, *Can Mamba Learn In Context with Outliers? A Theoretical
# Generalization Analysis* (arXiv 2510.00399), Section 4.2, Appendix B (Figures 5, 6) and
# Appendix E.1 (eqs (88)-(90)).
#
# Section 4.2 trains **three-layer** Mamba and linear Transformers, but the paper does not write
# the multi-layer model down.  `numpy_mamba.stack` uses this one (our choice, see the README):
# every layer runs the eq (1) scan over all l+1 columns of its input, keeps **every** output
# $o_t$, and adds it to its input (a residual).  We run the stack forward one layer at a time,
# then backward by hand with `layer_backward`, check that one layer is exactly the paper's
# eq (3) model with the gradients (93), (118), (135), check every gradient by finite
# differences, and finally look at what layers 2 and 3 of a briefly trained 3-layer Mamba
# attend to (the question of Figures 5 and 6).
#
# Run: `python tutorials/08_backprop_through_the_stack.py` (the last part trains for 300 SGD
# steps; `NUMPY_MAMBA_QUICK=1`: 40), or step through the `# %%` cells in
# VS Code / Spyder / PyCharm.

# %%
import importlib.util
import os
import sys
from pathlib import Path

if importlib.util.find_spec("numpy_mamba") is None:    # a clone without `pip install .`
    here = Path(__file__).resolve().parent if "__file__" in globals() else Path.cwd()
    sys.path.insert(0, str(here.parent))

import matplotlib.pyplot as plt
import numpy as np

import numpy_mamba as nm
from numpy_mamba.site.tutorial import check, show_figure  # a checked number printed; a figure shown or saved
from numpy_mamba.loss import mean_hinge_slope
from numpy_mamba.scan import scan_outputs
from numpy_mamba.stack import (LayerParams, forward, forward_with_caches, gradients, hinge_loss,
                               layer_backward, layer_forward)

QUICK = os.environ.get("NUMPY_MAMBA_QUICK") == "1"     # fewer SGD steps in the last part
np.set_printoptions(precision=4, suppress=True)


# %% [markdown]
# ## The stack
#
# Layer $k$ has its own parameters $W_B^{(k)}, W_C^{(k)} \in \mathbb{R}^{m \times (d+1)}$ and
# $W^{(k)} = (w_1, \dots, w_{d+1}) \in \mathbb{R}^{(d+1) \times (d+1)}$: column $w_j$ is the gate
# parameter of channel $j$ in eq (1), $\Delta_{j,i} = \mathrm{softplus}(w_j^\top h_i)$.
#
# $$H^{(0)} = P, \qquad H^{(k)} = H^{(k-1)} + O^{(k)}, \qquad F = H^{(L)}_{d+1,\,l+1},$$
#
# where column $t$ of $O^{(k)}$ is the output $o_t$ of the eq (1) scan (h_0 = 0, A = -I, exact
# zero-order hold) run over the columns $h_1, \dots, h_{l+1}$ of $H^{(k-1)}$.  Unrolled as in
# Appendix E.1, channel $j$ of one layer is
#
# $$o_{t,j} = \sum_{i \le t} G_{j,i,t}\, h_{i,j}\, s_{i,t}, \qquad s_{i,t} = h_i^\top W_B^\top W_C h_t,$$
# $$G_{j,i,t} = \sigma(w_j^\top h_i) \prod_{k=i+1}^{t} \big(1 - \sigma(w_j^\top h_k)\big).$$
#
# For $L = 1$ and $t = l+1$, $j = d+1$ this is eq (3).  A tiny prompt, d = 3, l = 3, three layers:

# %%
print("## The stack")
rng = np.random.default_rng(0)
d, l, n_layers = 3, 3, 3
P = rng.normal(0, 1, (1, d + 1, l + 1))
P[0, -1, :l] = [1.0, -1.0, 1.0]                     # labels y_1..y_l
P[0, -1, l] = 0.0                                   # the query's label slot, eq (2)
z = np.array([1.0])
layers = [LayerParams(rng.normal(0, 0.4, (d + 1, d + 1)), rng.normal(0, 0.4, (d + 1, d + 1)),
                      rng.normal(0, 0.7, (d + 1, d + 1))) for _ in range(n_layers)]

H, caches = [P], []
for k, layer in enumerate(layers, 1):
    O, cache = layer_forward(H[-1], layer, "mamba")   # every output o_1..o_{l+1}: (1, d+1, l+1)
    H.append(H[-1] + O)                               # the residual
    caches.append(cache)
    print(f"layer {k}: label row of H^({k}) = {H[-1][0, -1]}   (last entry = F so far)")
F = H[-1][0, -1, -1]
print(f"F = H^(3)[d+1, l+1] = {F:.6f}")
check("|F - stack.forward|", abs(F - forward(layers, P[0])), "<= 1e-12", "the loop above is the package's stack")

# %% [markdown]
# From layer 2 on, the query's label slot of the input, $H^{(k-1)}_{d+1,\,l+1}$, is no longer
# 0: it holds F of the layers below.  So the hidden states are not prompts in the sense of
# eq (2), and `scan.scan_outputs` (which checks that slot) refuses them.  The scan is causal,
# though: appending one zero column changes none of $o_1, \dots, o_{l+1}$, and lets us check
# every layer against the literal eq (1) scan.

# %%
gaps = []
for k, layer in enumerate(layers, 1):
    padded = np.concatenate([H[k - 1], np.zeros((1, d + 1, 1))], axis=2)
    o = scan_outputs(layer.W_B, layer.W_C, layer.W, padded)[:, :-1, :].transpose(0, 2, 1)
    gaps.append(np.abs(o - (H[k] - H[k - 1])).max() / max(1.0, np.abs(o).max()))
    print(f"layer {k}: max |O^({k}) - eq (1) scan| / max(1, max |O^({k})|) = {gaps[-1]:.1e}")
check("largest gap between a layer's O and the literal eq (1) scan, relative", max(gaps), "<= 1e-12",
      "every layer is the eq (1) scan of its input")

# %% [markdown]
# ## Backward, one layer at a time
#
# The loss is the hinge of eq (4), $\ell = \max\{0, 1 - zF\}$.  At the top, only one entry of
# $H^{(L)}$ reaches the loss:
#
# $$\frac{\partial \ell}{\partial H^{(L)}} = \frac{\partial \ell}{\partial F}\; e_{d+1} e_{l+1}^\top .$$
#
# Through the residual $H^{(k)} = H^{(k-1)} + O^{(k)}$ the same gradient reaches both $O^{(k)}$
# and $H^{(k-1)}$:
#
# $$\frac{\partial \ell}{\partial O^{(k)}} = \frac{\partial \ell}{\partial H^{(k)}}, \qquad
# \frac{\partial \ell}{\partial H^{(k-1)}} = \frac{\partial \ell}{\partial H^{(k)}}
#   + \underbrace{\frac{\partial \ell}{\partial O^{(k)}} \frac{\partial O^{(k)}}{\partial H^{(k-1)}}}_{\texttt{layer\_backward}} .$$
#
# Inside a layer, $H$ enters $O$ in four places: as the value $h_{i,j}$, as the key $h_i$ and
# the query $h_t$ of $s_{i,t}$, and in every gate through $a_{j,k} = w_j^\top h_k$, with
#
# $$\frac{\partial \log G_{j,i,t}}{\partial a_{j,k}} = \big(1 - \sigma(a_{j,k})\big)\,\mathbb{1}[k = i]
#   - \sigma(a_{j,k})\,\mathbb{1}[i < k \le t].$$
#
# `layer_backward(dO, cache)` (numpy_mamba/layer.py) sums the four paths; the residual is the
# caller's.  Here is the whole backward pass, written out:

# %%
print("## Backward, one layer at a time")
dF = mean_hinge_slope(np.array([F]), z)              # d ell / dF: -z on the active side
dH = np.zeros_like(P)
dH[0, -1, -1] = dF[0]
grads, nonzero = [], {}
for k in range(n_layers, 0, -1):
    nonzero[k] = np.count_nonzero(dH)
    print(f"dl/dO^({k}) has {nonzero[k]} nonzero entries of {dH.size}")
    dH_layer, grad = layer_backward(dH, caches[k - 1])
    dH = dH + dH_layer                               # residual path + the layer's four paths
    grads.insert(0, grad)
check("nonzero entries of dl/dO^(3), and of dl/dO^(1)", (nonzero[3], nonzero[1]), f"== (1, {dH.size})",
      "only F reaches the loss; every entry below it reaches F")
package = gradients(layers, P, z)
gap = max(np.abs(a - b).max() for mine, theirs in zip(grads, package) for a, b in zip(mine, theirs))
check("max |by hand - stack.gradients| over the three layers", gap, "<= 1e-12",
      "the chain rule written out is the package's backward pass")

# %% [markdown]
# The top layer gets a gradient in one entry only; every layer below gets it in every entry,
# because the layers above read all columns of its output.  (`stack.gradients` is the form you
# just wrote, gate tensor and all; training runs a fused form of the same layer that avoids the
# (B, d+1, l+1, l+1) tensor, `numpy_mamba.fused.layer`, tested equal to ~1e-13.)
#
# ## One layer is the paper's model
#
# With $L = 1$, $F = o_{l+1,\,d+1}$: channel $d+1$ with gate parameter $w = w_{d+1} = W_{:,\,d+1}$,
# which is eq (3).  The gradients of $W_B$, $W_C$ and $w_{d+1}$ must be eqs (118), (93), (135).
# The other columns of $W$ get gradient exactly 0: channel $j$'s output depends on $W$ only
# through $w_j$, and only channel $d+1$ of $o_{l+1}$ reaches $F$.

# %%
print("## One layer is the paper's model")
one = layers[0]
params = nm.Params(one.W_B, one.W_C, one.W[:, -1])
F1, F3 = forward([one], P[0]), nm.forward(params, P[0])
(g,) = gradients([one], P, z)
core = nm.gradients(params, P, z)
check("|F of one layer - F of eq (3)|", abs(F1 - F3), "<= 1e-12", "one layer is the paper's model")
check("max |one layer's gradients - eqs (118), (93), (135)|",
      max(np.abs(a - b).max() for a, b in [(g.W_B, core.W_B), (g.W_C, core.W_C), (g.W[:, -1], core.w)]), "<= 1e-12",
      "W_B, W_C and the last column of W get the paper's gradients")
check("max |dW| off its last column", np.abs(g.W[:, :-1]).max(), "== 0.0",
      "only channel d+1 reaches F, and it depends on W through w_(d+1) alone")

# %% [markdown]
# ## Gradient check
#
# Central differences for every entry of every $W_B^{(k)}, W_C^{(k)}, W^{(k)}$ (`nm.gradcheck`
# takes a dict of arrays), on a batch with prompts on both sides of the hinge: we scale the
# last layer's $W_C$ (its output is linear in it) until one prompt has |F| > 2, and give that
# prompt the label of its own sign, so $zF > 1$ there and the hinge is flat.

# %%
print("## Gradient check")
Pb = rng.normal(0, 1, (4, d + 1, l + 1))
Pb[:, -1, :l] = rng.choice([-1.0, 1.0], size=(4, l))
Pb[:, -1, l] = 0.0
layers_b = list(layers)
while np.abs(forward(layers_b, Pb)).max() <= 2:
    layers_b[-1] = layers_b[-1]._replace(W_C=2 * layers_b[-1].W_C)
Fb = forward(layers_b, Pb)
zb = np.where(np.arange(4) == np.argmax(np.abs(Fb)), np.sign(Fb), -np.sign(Fb))
print("z F per prompt:", zb * Fb, "(> 1: flat side of the hinge)")
check("(prompts with zF > 1, prompts with zF < 1)", (int(np.sum(zb * Fb > 1)), int(np.sum(zb * Fb < 1))), "== (1, 3)",
      "both sides of the hinge are in the batch")


def as_dict(stack):
    return {f"{name}[{k}]": a for k, layer in enumerate(stack, 1) for name, a in zip(layer._fields, layer)}


def as_layers(flat):
    return [LayerParams(flat[f"W_B[{k}]"], flat[f"W_C[{k}]"], flat[f"W[{k}]"]) for k in range(1, n_layers + 1)]


report = nm.gradcheck(lambda flat: hinge_loss(as_layers(flat), Pb, zb), as_dict(layers_b),
                      as_dict(gradients(layers_b, Pb, zb)), tol=1e-7)
print(report)
check("largest relative error against finite differences", max(report.rel_err.values()), f"<= {report.tol:g}",
      "every gradient of every layer is right, on both sides of the hinge")

# %% [markdown]
# ## What layers 2 and 3 attend to (Figures 5 and 6)
#
# A three-layer Mamba trained briefly on the Section 4 data (d = 30, l = 20, p_a = 0.4 as in
# Section 4.2) as `nm.network("mamba", n_layers=3)`, then run on test prompts with alpha = 0.3
# (flipped outlier labels).  For each layer $k$ we read, from the query column:
#
# * the attention scores $s_{i,l+1} = h_i^\top W_B^\top W_C\, h_{query}$ of that layer's input,
#   summed over context examples with the query's relevant pattern and over the others
#   (Corollary 1, Figures 3 and 5);
# * the gates $G_{d+1,\,i,\,l+1}$ of the label channel on outlier and on clean examples
#   (Corollary 2, Figures 4 and 6).
#
# This is a short run of our architecture, not the paper's experiment: it shows how to read the
# layers, and what they do after a few hundred steps.

# %%
print("## What layers 2 and 3 attend to (Figures 5 and 6)")
world = nm.make_world(rng=0)
T = 40 if QUICK else 300
print(f"training the three-layer stack: {T} SGD steps ...", flush=True)
trained, history = nm.train(world, nm.TrainConfig(T=T, B=32, eta=0.05, p_a=0.4), nm.network("mamba", n_layers=3),
                            rng=1, record_every=max(T // 5, 1))
print("training loss:", np.round(history["loss"], 3), f"({T} SGD steps)")
check("last minibatch hinge loss / first", history["loss"][-1] / history["loss"][0], "< 0.2",
      f"{T} SGD steps of the stack fit the training prompts")
test = nm.testing_batch(world, 300, 20, alpha=0.3, rng=5)
F_test, layer_caches = forward_with_caches(trained, test.P)
check("test error at alpha = 0.3", nm.zero_one_error(F_test, test.z), "< 0.3", "well below chance after training")
rows = []
for k, c in enumerate(layer_caches, 1):
    s = c.S[:, :-1, -1]                               # s_{i,l+1}, context examples: (n, l)
    G = c.G[:, -1, :-1, -1]                           # G_{d+1,i,l+1}: (n, l)
    rows.append((np.mean(np.sum(s * test.same_pattern, axis=1)), np.mean(np.sum(s * ~test.same_pattern, axis=1)),
                 G[test.outlier].mean(), G[~test.outlier].mean()))
print("layer   sum s (same pattern)   sum s (other)   mean gate: outlier   clean")
for k, (same, other, g_out, g_clean) in enumerate(rows, 1):
    print(f"  {k}     {same:12.3g}        {other:12.3g}          {g_out:.4f}        {g_clean:.4f}")
check("smallest (same-pattern - other) score sum over the layers", min(same - other for same, other, _, _ in rows),
      "> 0", "every layer attends to the examples that share the query's pattern (Corollary 1)")
check("layer 3: mean gate of outlier examples / of clean ones", rows[2][2] / rows[2][3], "< 1",
      "layer 3 gives outlier examples smaller gates (Corollary 2)")

# %% [markdown]
# What to look for: in every layer the scores put far more weight on examples that share the
# query's pattern than on the others (Corollary 1's picture), and the scores grow from layer to
# layer because each layer's input already contains the outputs below it.  The gates on outlier
# examples are smaller than on clean ones, most clearly in layer 3; after a short run at
# Algorithm 1's initialisation all gates are still small (each $w_j$ starts random), so the
# contrast is weaker than in the paper's Figures 4 and 6.

# %%
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 3.6))
x = np.arange(1, 4)
rows = np.array(rows)
ax1.bar(x - 0.2, rows[:, 0], 0.4, color="#0072B2", label="same pattern as the query")
ax1.bar(x + 0.2, rows[:, 1], 0.4, color="0.6", label="other patterns")
ax1.set(xlabel="layer", ylabel=r"$\sum_i s_{i,l+1}$ (mean over prompts)", title="attention-score sums, cf. Figures 3, 5")
ax1.set_yscale("symlog")
ax1.legend(fontsize=8)
ax2.bar(x - 0.2, rows[:, 2], 0.4, color="#D55E00", label="with an outlier")
ax2.bar(x + 0.2, rows[:, 3], 0.4, color="#009E73", label="clean")
ax2.set(xlabel="layer", ylabel=r"mean $G_{d+1,i,l+1}$", title="label-channel gates at alpha = 0.3, cf. Figures 4, 6")
ax2.legend(fontsize=8)
for ax in (ax1, ax2):
    ax.set_xticks(x)
fig.tight_layout()
saved = show_figure(fig, "08_layers")
print("Done: tutorial 8, backprop through the three-layer stack, checked layer by layer, and what its layers "
      "attend to"
      + (f"; figure saved in {saved.parent}" if saved else ""))

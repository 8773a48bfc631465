# %% [markdown]
# # Tutorial 3 — Gradients by hand: eqs (93), (118), (135)
#
# Paper: eq (3), eq (4), and Appendix E.2 (eqs (93), (118)) and E.3 (eq (135)).  Read this
# next to the paper: every step names the equation it derives or checks.
#
# We derive the gradient of the hinge loss with respect to each trainable matrix of
# $\Psi = \{W_B, W_C, w\}$, implement it for one prompt, and check it against central finite
# differences (`numpy_mamba.gradcheck`: it moves each entry $\theta$ of a parameter by
# $\pm\varepsilon$ and compares $(\ell(\theta + \varepsilon) - \ell(\theta - \varepsilon)) / 2\varepsilon$
# with our formula).  The gate derivative, the one genuinely new piece, gets its own step.  We
# end with the batch mean of Algorithm 1 and the hinge's inactive side.
#
# Then do the exercise `tutorials/exercises/gradients.py` (tutorials/README.md, "Doing an exercise
# and checking it").
#
# Run: `python tutorials/03_gradients_by_hand.py` (small prompts: quick and full mode are the same).

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
from scipy.special import expit

import numpy_mamba as nm
from numpy_mamba.site.tutorial import check, show_figure  # a checked number printed; a figure shown or saved
from numpy_mamba.gradients import gate_backward

QUICK = os.environ.get("NUMPY_MAMBA_QUICK") == "1"     # same work either way here
np.set_printoptions(precision=4, suppress=True)

# %% [markdown]
# ## Setting: one prompt, the model of eq (3), the loss of eq (4)
#
# $$F(\Psi; P) = \sum_{i=1}^{l+1} G_{i,l+1}(w)\, y_i\, s_i, \qquad s_i = p_i^\top W_B^\top W_C\, p_{query} \tag{3}$$
#
# $$\ell(\Psi; P, z) = \max\{0,\ 1 - z F(\Psi; P)\} \tag{4}$$
#
# ($s_i$ is the linear-attention score of example $i$ and $G_{i,l+1}(w)$ its gate, tutorial 1;
# $z = \pm 1$ is the query's true label.)  A small random problem: $d = 4$, $l = 3$, state width
# $m = d+1 = 5$.  Random parameters (not the Algorithm 1 initialisation), so that no entry of
# a gradient is zero by accident.

# %%
print("## Setting: one prompt, the model of eq (3), the loss of eq (4)")
rng = np.random.default_rng(3)
d, l, m = 4, 3, 5
P = np.zeros((d + 1, l + 1))
P[:d] = rng.standard_normal((d, l + 1))
P[d, :l] = [1.0, -1.0, 1.0]                       # labels y_1..y_l; the query's slot stays 0 (eq (2))
params = nm.Params(W_B=rng.normal(0, 0.4, (m, d + 1)), W_C=rng.normal(0, 0.4, (m, d + 1)),
                   w=rng.normal(0, 0.5, d + 1))
W_B, W_C, w = params
z = 1.0
F = nm.forward(params, P)
print(f"F = {F:+.4f},  z = {z:+.0f}")
check("1 - zF", 1 - z * F, "> 0", "the hinge is active at this prompt, so its gradients are not 0")

# %% [markdown]
# ## Step 0 — the chain rule through the hinge
#
# $\frac{d}{dF} \max\{0, 1 - zF\} = -z$ where $1 - zF > 0$, and $0$ where $1 - zF < 0$ (we take 0
# at the kink).  So for every parameter,
#
# $$\frac{\partial \ell}{\partial \Psi} = \begin{cases} -z\, \dfrac{\partial F}{\partial \Psi}, & 1 - zF > 0 \\
# 0, & \text{otherwise.} \end{cases}$$
#
# The paper states (93), (118), (135) "when $F(\Psi; P^n) \in (-1, 1)$".  That is the region where
# the hinge is active for *both* labels, but it is active wherever $1 - zF > 0$: a misclassified
# prompt with $zF < -1$ has a nonzero gradient too.  Step 6 checks this; see also the README,
# "Notes on the paper's derivations".  (The paper writes a superscript $n$ on $P^n$, $z^n$,
# $G^n$ for prompt $n$; with one prompt we drop it.)
#
# First the slope itself, by central differences of $\max\{0, 1 - zF\}$ around our $F$.  Then two
# helpers for the steps below: they check the gradient of one parameter against central
# differences of the loss (`numpy_mamba.gradcheck` takes a dict of arrays).  Each prints a small
# table: the relative error $\|a - n\| / (\|a\| + \|n\|)$ between our analytic gradient $a$ and the
# numerical one $n$, the largest entry-wise difference, $\|a\|$, and ok / FAIL.  What you should
# see: relative errors around 1e-10, far below the tolerance 1e-7.

# %%
print("## Step 0 — the chain rule through the hinge")
h = 1e-6
slope = (max(0.0, 1 - z * (F + h)) - max(0.0, 1 - z * (F - h))) / (2 * h)
check("d ell / dF at our F, by central differences", slope, f"{-z:g} +- 1e-8",
      "on the hinge's active side the slope is -z, so dl/dPsi = -z dF/dPsi")


def loss_with(name, value, P=P, z=z):
    """ell(Psi; P, z) with one parameter replaced."""
    return nm.hinge_loss(params._replace(**{name: value}), P, z)


def check_gradient(name, analytic, equation, P=P, z=z):
    """Compare ``analytic`` with central differences of the loss in parameter ``name``; print the table."""
    report = nm.gradcheck(lambda p: loss_with(name, p[name], P, z), {name: getattr(params, name)},
                          {name: analytic}, tol=1e-7)
    print(report)
    check(f"relative error of dl/d{name} against finite differences", report.rel_err[name], f"<= {report.tol:g}",
          f"{equation} is the gradient")
    return report


# %% [markdown]
# ## Step 1 — $\partial\ell/\partial W_C$, eq (93)
#
# Only $s_i$ depends on $W_C$.  Write $s_i = a_i^\top W_C\, b$ with $a_i = W_B p_i \in \mathbb{R}^m$
# and $b = p_{query}$.  For any vectors, $\partial (a^\top W b) / \partial W = a b^\top$, so
#
# $$\frac{\partial F}{\partial W_C} = \sum_{i=1}^{l+1} G_{i,l+1}(w)\, y_i\, W_B p_i\, p_{query}^\top .$$
#
# The query's term ($i = l+1$) has $y_{l+1} = 0$, so the sum can stop at $l$, which is how the
# paper writes it:
#
# $$\frac{\partial \ell(\Psi; P, z)}{\partial W_C}
# = -z \sum_{i=1}^{l} G_{i,l+1}(w)\, y_i\, W_B p_i\, p_{query}^\top \tag{93}$$

# %%
print("## Step 1 — dl/d W_C, eq (93)")
G = nm.gating(w, P)                                # (l+1,)
y, p_query = P[d], P[:, l]


def dW_C_eq93(params, P, z):
    W_B, W_C, w = params
    G, y, p_query = nm.gating(w, P), P[-1], P[:, -1]
    l = P.shape[1] - 1
    return -z * sum(G[i] * y[i] * np.outer(W_B @ P[:, i], p_query) for i in range(l))


dW_C = dW_C_eq93(params, P, z)
check("shape of dl/dW_C", dW_C.shape, f"== {W_C.shape}", "a gradient has its parameter's shape, (m, d+1)")
check_gradient("W_C", dW_C, "eq (93)")

# %% [markdown]
# ## Step 2 — $\partial\ell/\partial W_B$, eq (118)
#
# Now write $s_i = c^\top W_B\, p_i$ with $c = W_C\, p_{query}$:
# $\partial (c^\top W_B p_i) / \partial W_B = c\, p_i^\top$, so
#
# $$\frac{\partial \ell(\Psi; P, z)}{\partial W_B}
# = -z \sum_{i=1}^{l+1} G_{i,l+1}(w)\, y_i\, W_C\, p_{query}\, p_i^\top \tag{118}$$
#
# The paper lets this sum run to $l+1$ and (93)'s to $l$; they are the same sum because
# $y_{l+1} = 0$.

# %%
print("## Step 2 — dl/d W_B, eq (118)")
def dW_B_eq118(params, P, z):
    W_B, W_C, w = params
    G, y, p_query = nm.gating(w, P), P[-1], P[:, -1]
    return -z * sum(G[i] * y[i] * np.outer(W_C @ p_query, P[:, i]) for i in range(P.shape[1]))


dW_B = dW_B_eq118(params, P, z)
check("shape of dl/dW_B", dW_B.shape, f"== {W_B.shape}", "(m, d+1), as W_B")
check_gradient("W_B", dW_B, "eq (118)")

# %% [markdown]
# ## Step 3 — the gate derivative (the heart of eq (135))
#
# For $i \le l$, with $a_j = w^\top p_j$ and $\sigma_j = \sigma(a_j)$,
#
# $$G_{i,l+1}(w) = \sigma_i \prod_{j=i+1}^{l+1} (1 - \sigma_j) \tag{3}$$
#
# Two facts: $\frac{d\sigma(a)}{da} = \sigma(a)(1 - \sigma(a))$,
# $\frac{d(1 - \sigma(a))}{da} = -\sigma(a)(1 - \sigma(a))$, and $\partial a_j / \partial w = p_j$.
# The product rule (the second to fourth lines of (135)) differentiates one factor at a time:
#
# $$\frac{\partial G_i}{\partial w} = \prod_{j>i} (1 - \sigma_j) \cdot \sigma_i (1 - \sigma_i)\, p_i
# + \sum_{s=i+1}^{l+1} \sigma_i \prod_{j>i,\, j \ne s} (1 - \sigma_j) \cdot \left(-\sigma_s (1 - \sigma_s)\right) p_s$$
#
# Each term is $G_i$ with one factor replaced by its derivative; dividing that factor back out:
#
# $$\frac{\partial G_i}{\partial w} = G_i \Big( (1 - \sigma_i)\, p_i - \sum_{s=i+1}^{l+1} \sigma_s\, p_s \Big)$$
#
# The same in one line with logs: $\log G_i = \log \sigma_i + \sum_{j>i} \log(1 - \sigma_j)$, and
# $\frac{d \log \sigma(a)}{da} = 1 - \sigma(a)$, $\frac{d \log(1 - \sigma(a))}{da} = -\sigma(a)$.
#
# The **suffix term** $-\sum_{s>i} \sigma_s p_s$ is the easy one to forget: $G_i$ depends on $w$
# through every later token too, including the query ($s = l+1$).  A reading note: the middle
# lines of (135) carry an indicator $\mathbb{1}[j < l+1]$ inside the products; the last line
# (which we use) keeps the query's factor $(1 - \sigma(w^\top p_{query}))$ in $G_i$, and the
# finite differences below agree with it.
#
# We check $\partial G_i / \partial w$ for every $i$ against central differences of
# `numpy_mamba.gating`.  The table has one row per token $i$ (row $l+1 = 4$ is the query); its
# columns: the largest difference between our formula and the finite differences (expect
# ~1e-11), the size $\|\partial G_i/\partial w\|$ of the derivative, and the error we would make
# if we dropped the suffix term (large, except on the query's row, whose suffix is empty).

# %%
print("## Step 3 — the gate derivative (the heart of eq (135))")
def dG_dw(w, P, i):
    """dG_{i,l+1}/dw, shape (d+1,); i is 0-based (i = l is the query)."""
    sigma = expit(w @ P)                                    # (l+1,)
    G = nm.gating(w, P)
    suffix = P[:, i + 1:] @ sigma[i + 1:]                   # sum_{s=i+1}^{l+1} sigma_s p_s
    return G[i] * ((1 - sigma[i]) * P[:, i] - suffix)


print(" i   max |ours - finite diff.|   ||dG_i/dw||   max error without the suffix term")
errors, without_suffix = [], []
for i in range(l + 1):
    numeric = nm.numerical_gradient(lambda v: nm.gating(v, P)[i], w)
    analytic = dG_dw(w, P, i)
    no_suffix = G[i] * (1 - expit(w @ P[:, i])) * P[:, i]
    errors.append(np.max(np.abs(analytic - numeric)))
    without_suffix.append(np.max(np.abs(no_suffix - numeric)))
    print(f" {i + 1}   {errors[-1]:24.2e}   {np.linalg.norm(analytic):11.4f}   {without_suffix[-1]:33.2e}")
check("largest |ours - finite differences| over the 4 gates", max(errors), "<= 1e-9",
      "dG_i/dw = G_i ((1 - sigma_i) p_i - sum_{s>i} sigma_s p_s)")
check("smallest error without the suffix term, context gates", min(without_suffix[:l]), "> 1e-4",
      "every context gate needs the suffix term")
check("error without the suffix term, the query's gate", without_suffix[l], "<= 1e-9",
      "the query's suffix is empty")

# %% [markdown]
# Only the query's own gate ($i = l+1$, empty suffix) survives without the suffix term; every
# context gate needs it.

# %% [markdown]
# ## Step 4 — $\partial\ell/\partial w$, eq (135)
#
# Only the gates depend on $w$, and only $i \le l$ matter ($y_{l+1} = 0$):
#
# $$\begin{aligned} \frac{\partial \ell}{\partial w}
# &= -z \sum_{i=1}^{l} y_i\, s_i\, \frac{\partial G_{i,l+1}(w)}{\partial w} \\
# &= z \sum_{i=1}^{l} y_i\, s_i\, G_{i,l+1}(w)
# \Big( \sum_{s=i+1}^{l+1} \sigma(w^\top p_s)\, p_s - (1 - \sigma(w^\top p_i))\, p_i \Big) \end{aligned} \tag{135}$$

# %%
print("## Step 4 — dl/d w, eq (135)")
def dw_eq135(params, P, z):
    W_B, W_C, w = params
    l = P.shape[1] - 1
    s = nm.attention_scores(params, P)                      # s_i: (l+1,)
    return -z * sum(P[-1, i] * s[i] * dG_dw(w, P, i) for i in range(l))


dw = dw_eq135(params, P, z)
print("dl/dw (eq (135)):", dw)
check_gradient("w", dw, "eq (135)")

# %% [markdown]
# ## Step 5 — a batch: the mean of Algorithm 1
#
# SGD (Algorithm 1) uses the mean over a minibatch $\mathcal{B}_t$ of $B$ prompts, eq (19):
#
# $$W^{(t+1)} = W^{(t)} - \eta \cdot \frac{1}{B} \sum_{n \in \mathcal{B}_t}
# \nabla_{W^{(t)}}\, \ell(\Psi^{(t)}; P^n, z^n) \tag{19}$$
#
# for each $W \in \Psi$.  We build it from the one-prompt formulas of steps 1, 2 and 4: loop over
# the prompts, skip those on the flat side of the hinge (step 0), add up, divide by $B$.  The
# package's `numpy_mamba.gradients` does all three at once, vectorised, and
# `gradients_literal` loops exactly as the equations read; all three must agree.

# %%
print("## Step 5 — a batch: the mean of Algorithm 1")
world = nm.make_world(d=d, M1=2, M2=1, V=1, beta=1.0, rng=np.random.default_rng(4))
batch = nm.training_batch(world, 8, l, p_a=0.5, rng=np.random.default_rng(5))
Pb, zb = batch.P, batch.z
B = len(zb)

sum_W_B, sum_W_C, sum_w = np.zeros_like(W_B), np.zeros_like(W_C), np.zeros_like(w)
for n in range(B):
    F_n = nm.forward(params, Pb[n])
    if 1 - zb[n] * F_n <= 0:               # flat side of the hinge: this prompt adds nothing
        continue
    sum_W_B += dW_B_eq118(params, Pb[n], zb[n])
    sum_W_C += dW_C_eq93(params, Pb[n], zb[n])
    sum_w += dw_eq135(params, Pb[n], zb[n])
ours = nm.Params(W_B=sum_W_B / B, W_C=sum_W_C / B, w=sum_w / B)

package = nm.gradients(params, Pb, zb)
literal = nm.gradients_literal(params, Pb, zb)
for name in ("W_B", "W_C", "w"):
    a, b, c = getattr(ours, name), getattr(package, name), getattr(literal, name)
    check(f"d{name}: max |ours - package, ours - literal| / max |ours|",
          max(np.max(np.abs(a - b)), np.max(np.abs(a - c))) / np.max(np.abs(a)), "<= 1e-12",
          "the loop over prompts, the vectorised and the literal gradient are one batch mean")
report = nm.gradcheck(lambda p: nm.hinge_loss(p, Pb, zb), params, package)
print(report)
check("largest relative error of the batch gradient against finite differences", max(report.rel_err.values()),
      f"<= {report.tol:g}", "the mean of eq (19) is the gradient of the mean loss")

# %% [markdown]
# The vectorised version has no loop over $i$.  With $c_i = \frac{\partial L}{\partial G_i} G_i$,
# eq (135)'s $\sum_i c_i \big((1 - \sigma_i) p_i - \sum_{s>i} \sigma_s p_s\big)$ becomes, after swapping
# the sums, $\sum_s p_s \big(c_s (1 - \sigma_s) - \sigma_s \sum_{i<s} c_i\big)
# = \sum_s p_s \big(c_s - \sigma_s \sum_{i \le s} c_i\big)$: one inclusive prefix sum over the tokens
# (`np.cumsum`) and one product with $P$
# (`numpy_mamba.gradients.gate_backward_terms`, which `gate_backward` calls).

# %%
s_b = np.einsum("bdl,bd->bl", Pb, (Pb[:, :, -1] @ W_C.T) @ W_B)      # s_i for every prompt
Gb = nm.gating(w, Pb)
Fb = np.sum(Gb * Pb[:, -1] * s_b, axis=1)
r = np.where(1 - zb * Fb > 0, -zb, 0.0) / B                         # d(mean loss)/dF^n
dw_prefix_sum = gate_backward(w, Pb, Gb, r[:, None] * Pb[:, -1] * s_b)
check("max |gate_backward - eq (135) batch mean| / max |dw|",
      np.max(np.abs(dw_prefix_sum - package.w)) / np.max(np.abs(package.w)), "<= 1e-12",
      "one prefix sum over the tokens gives eq (135) without a loop over i")

# %% [markdown]
# ## Step 6 — the hinge's inactive side
#
# Scale $W_B$ up by 6 ($F$ is linear in $W_B$, so $|F|$ grows sixfold; the count printed first
# says on how many prompts $|F| > 1$) and pick $z$ per prompt: $z = \mathrm{sign}(F)$ on prompts
# 1, 3, 5, 7 and $z = -\mathrm{sign}(F)$ on prompts 2, 4, 6, 8.  Where $zF > 1$ (right, with
# margin) the loss sits on the flat part of the hinge and every gradient is exactly 0; where
# $zF < -1$ (wrong, with $|F| > 1$) the hinge is active although $F$ is not in $(-1, 1)$.
#
# The table has one row per prompt $n$: its output $F$, the label $z$ we gave it, $1 - zF$,
# whether the hinge is active ($1 - zF > 0$), the size of the full gradient (all three
# parameters) from our formulas and from finite differences (they must agree), and whether $F$
# lies in the paper's range $(-1, 1)$.

# %%
print("## Step 6 — the hinge's inactive side")
big = params._replace(W_B=6 * W_B)
Fbig = nm.forward(big, Pb)
zs = np.where(np.arange(B) % 2 == 0, np.sign(Fbig), -np.sign(Fbig))   # 0-based even = prompts 1, 3, ...
check("prompts with |F| > 1 after scaling W_B by 6", int(np.sum(np.abs(Fbig) > 1)), ">= 2",
      "room for both sides of the hinge beyond (-1, 1)")
print("  n        F    z    1 - zF  active  ||grad|| (ours)  ||grad|| (finite diff.)  F in (-1, 1)?")
norms = np.zeros((B, 2))                          # ||grad||: ours, finite differences
for n in range(B):
    g = nm.gradients(big, Pb[n], zs[n])
    num = nm.numerical_gradient(lambda p: nm.hinge_loss(p, Pb[n], zs[n]), big)
    norms[n] = [np.sqrt(sum(np.sum(x**2) for x in t)) for t in (g, num)]
    print(f"  {n + 1}  {Fbig[n]:+7.3f}  {zs[n]:+.0f}  {1 - zs[n] * Fbig[n]:+8.3f}  {str(1 - zs[n] * Fbig[n] > 0):<6}"
          f"  {norms[n, 0]:15.4e}  {norms[n, 1]:23.4e}  {str(abs(Fbig[n]) < 1):>13}")
check("max |ours - finite differences| / max(1, ||grad||) over the prompts",
      np.max(np.abs(norms[:, 0] - norms[:, 1]) / np.maximum(1.0, norms[:, 0])), "<= 1e-6",
      "the formulas hold on both sides of the hinge")
wrong_with_margin, right_with_margin = zs * Fbig < -1, zs * Fbig > 1
check("prompts with zF < -1", int(np.sum(wrong_with_margin)), ">= 1",
      "misclassified with |F| > 1: F outside (-1, 1), hinge active")
check("smallest ||grad|| on those prompts", norms[wrong_with_margin, 0].min(), "> 0.1",
      "their gradient is not 0, whatever the paper's condition F in (-1, 1) suggests")
check("prompts with zF > 1", int(np.sum(right_with_margin)), ">= 1", "right with margin: the flat side of the hinge")
check("largest ||grad|| on those prompts", norms[right_with_margin, 0].max(), "== 0.0",
      "on the flat side every gradient is exactly 0")

# %% [markdown]
# The rows with $1 - zF > 2$ (that is $zF < -1$) have nonzero gradients, exactly as the finite
# differences say, even though $|F| > 1$; the rows with $1 - zF < 0$ have gradient exactly 0.
# The picture: the hinge as a function of $zF$, with our prompts on it.

# %%
fig, ax = plt.subplots(figsize=(6.5, 3.6))
t = np.linspace(-3, 3, 200)
ax.plot(t, np.maximum(0, 1 - t), color="#0072B2", label=r"$\ell = \max\{0, 1 - zF\}$")
ax.axvspan(-1, 1, color="#E69F00", alpha=0.15, label=r"the paper's condition $F \in (-1, 1)$")
ax.axvspan(1, 3, color="0.85", alpha=0.6, label="inactive side: gradient 0")
zF = zs * Fbig
ax.plot(np.clip(zF, -3, 3), np.maximum(0, 1 - np.clip(zF, -3, 3)), "o", color="#D55E00",
        label="prompts of step 6 (clipped to [-3, 3])")
ax.set(xlabel=r"$zF(\Psi; P)$", ylabel="hinge loss", title="where the gradient is nonzero: 1 - zF > 0")
ax.legend(fontsize=8)
fig.tight_layout()
saved = show_figure(fig, "03_hinge")

# %% [markdown]
# **Your turn.**  `tutorials/exercises/gradients.py` asks for `grad_W_C`, `grad_W_B`, `grad_w` of
# the mean loss over a batch; `tutorials/exercises/gating.py` asks for the gates.  Copy one, fill
# it in, and grade your copy (tutorials/README.md, "Doing an exercise and checking it"):
#
#     cp tutorials/exercises/gradients.py my_gradients.py
#     python -m numpy_mamba grade my_gradients.py

# %%
print("Your turn: copy tutorials/exercises/gradients.py (or gating.py) to my_gradients.py, fill it in, and grade it "
      "with python -m numpy_mamba grade my_gradients.py")
print("Done: tutorial 3, the gradients of eqs (93), (118), (135), each checked by finite differences"
      + (f"; figure saved in {saved.parent}" if saved else ""))

# %% [markdown]
# # Tutorial 1 — From a selective SSM to linear attention with a gate
#
# Paper: Li, Lu, Cui, Chen, Wang, *Can Mamba Learn In Context with Outliers? A Theoretical
# Generalization Analysis* (arXiv 2510.00399), Section 2 and Appendix E.1.
#
# Mamba is a *selective state-space model* (SSM): it reads a sequence one token at a time and
# carries a running summary, the hidden state $h_i$.  Each token partly *keeps* the old state and
# partly *writes* itself into it, and how much of each is decided by the token itself (that is
# what "selective" means).  We run the one-layer Mamba of **eq (1)** token by token on a tiny
# prompt, print the hidden states $h_i$, and watch its output collapse into the closed form of
# **eq (3)**: a *linear attention* (defined where it appears) times a sigmoid *gate*
# $G_{i,l+1}(w)$.  Then we see what the choice $A = -I$ and the softplus step size do
# (eqs (84)-(87)), and what happens with the initial state $h_0 = U$ that Section 2 writes.
#
# Run: `python tutorials/01_ssm_to_linear_attention.py` (one 4-token prompt: quick and full mode
# are the same), or step through the `# %%` cells in VS Code / Spyder / PyCharm.

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
from numpy_mamba.scan import scan_outputs

QUICK = os.environ.get("NUMPY_MAMBA_QUICK") == "1"     # same work either way here
np.set_printoptions(precision=4, suppress=True)

# %% [markdown]
# ## A tiny prompt, eq (2)
#
# *In-context learning*: the model is shown $l$ labelled examples $(x_i, y_i)$ with
# $x_i \in \mathbb{R}^d$ and $y_i \in \{+1, -1\}$, then a query $x_{query}$, and must predict the
# query's label $z$ from the examples alone, without any change to its weights.  The prompt stacks
# the examples and the query as columns, labels in the last row, and a 0 in the query's label
# slot (the blank the model fills in):
#
# $$P = \begin{pmatrix} x_1 & x_2 & \cdots & x_l & x_{query} \\ y_1 & y_2 & \cdots & y_l & 0
# \end{pmatrix} = (p_1, p_2, \cdots, p_{query}) \in \mathbb{R}^{(d+1)\times(l+1)} \tag{2}$$
#
# Here $d = 3$ and $l = 3$, so $P$ is $4 \times 4$.  Eq (1) reads a general input
# $U = (u_1, \cdots, u_m) \in \mathbb{R}^{d_0 \times m}$; the paper feeds it the prompt, $U = P$,
# so the tokens are the columns $u_i = p_i$ (with $p_{l+1} = p_{query}$), $d_0 = d+1$ and $m = l+1$.

# %%
print("## A tiny prompt, eq (2)")
P = np.array([[1.0, 0.0, 1.0, 1.0],      # x_1 x_2 x_3 x_query (d = 3 rows of features)
              [0.0, 1.0, 0.5, 0.0],
              [0.5, 0.0, 0.0, 0.2],
              [1.0, -1.0, 1.0, 0.0]])    # y_1 y_2 y_3 and the query's 0
d0, n_tokens = P.shape                   # d0 = d+1 = 4, l+1 = 4
d, l, m = d0 - 1, n_tokens - 1, n_tokens  # state width m = l+1, as the paper takes it
rng = np.random.default_rng(1)
W_B = rng.normal(0, 0.5, (m, d0))        # B_i = u_i^T W_B^T  (1 x m)
W_C = rng.normal(0, 0.5, (m, d0))        # C_i = W_C u_i      (m,)
W = rng.normal(0, 0.5, (d0, d0))         # Delta_{j,i} = softplus(w_j^T u_i); w = w_{d0} = W[:, -1]
w = W[:, -1]
print("P =\n", P)
check("P.shape", P.shape, "== (4, 4)", "d+1 = 4 rows (3 features, then the labels) and l+1 = 4 columns (3 examples, "
      "then the query)")
check("the query's label slot P[d, l]", P[-1, -1], "== 0.0", "the blank the model fills in")

# %% [markdown]
# ## Eq (1), token by token
#
# $$h_i = h_{i-1} \odot \tilde A_i + (u_i 1_m^\top) \odot \tilde B_i \in \mathbb{R}^{d_0 \times m},
# \qquad o_i = h_i C_i \in \mathbb{R}^{d_0} \tag{1}$$
#
# What each piece is:
#
# * $h_i$ is the state after token $i$: one row per input row ($d_0$ rows) and $m$ columns.  This
#   $m$ is the **state width**, the number of memory slots each row has.  (The paper uses the same
#   letter for the number of tokens, $u_1, \cdots, u_m$, and takes the two equal, $m = l+1$.)
# * $B_i = u_i^\top W_B^\top \in \mathbb{R}^{1 \times m}$ is what token $i$ writes and
#   $C_i = W_C u_i \in \mathbb{R}^m$ how it reads the state, with $W_B, W_C \in \mathbb{R}^{m \times d_0}$.
# * $\odot$ is the elementwise product, and $u_i 1_m^\top$ copies $u_i$ into every column, so row
#   $j$ of the state only ever receives the $j$-th entry $u_{j,i}$ of each token (times weights).
# * Row $j$ of $\tilde A_i$ is $\mathrm{diag}(\exp(\Delta_{j,i} A))^\top$ and row $j$ of $\tilde B_i$ is
#   $\tilde B_{j,i} = (\Delta_{j,i} B_i)(\exp(\Delta_{j,i} A) - I_m)(\Delta_{j,i} A)^{-1}$, with
#   $A = -I_m$ and the step size $\Delta_{j,i} = \mathrm{softplus}(w_j^\top u_i) = \log(1 + e^{w_j^\top u_i})$,
#   $W = (w_1, \cdots, w_{d_0})$.
#
# Where $\tilde A$ and $\tilde B$ come from: an SSM starts as a continuous-time system
# $h'(t) = A h(t) + B u(t)$.  The **zero-order hold** (ZOH) turns it into one discrete step of
# length $\Delta$ by holding the input $u$ constant during the step; solving the linear ODE over
# the step gives $\tilde A = \exp(\Delta A)$ and $\tilde B = (\Delta A)^{-1}(\exp(\Delta A) - I)\,\Delta B$,
# the two formulas above.  Mamba lets each token choose its own step $\Delta_{j,i}$: a long
# step forgets more of the old state and writes more of the token.  Because $A$ is diagonal,
# everything is elementwise.
#
# **Which number is the prediction?**  $o_{l+1}$ is the output at the last token, the query, so
# it has seen the whole prompt.  Its coordinate $d+1$ comes from row $d+1$ of the state, which
# only ever received entries of the label row $y_1, \cdots, y_l, 0$ (times factors that depend on
# the whole tokens).  So the model's output is that coordinate, the label row of the query's
# output:
#
# $$F(\Psi; P) = e_{d+1}^\top o_{l+1}, \qquad e_{d+1} = (0, \cdots, 0, 1)^\top,$$
#
# where $\Psi = \{W_B, W_C, w\}$ are the trainable parameters (row $d+1$ uses only the last
# column $w = w_{d_0}$ of $W$).  The model predicts the query's label in the very slot of $P$
# that holds 0, and the predicted label is $\mathrm{sign}(F)$.  We start from $h_0 = 0$ (see the
# last section for $h_0 = U$) and print, after each token $i$, the last row of $h_i$ and
# $e_{d+1}^\top o_i$.

# %%
print("## Eq (1), token by token")
h = np.zeros((d0, m))
outputs_by_hand = np.zeros(n_tokens)                    # e_(d+1)^T o_i for every token
for i in range(n_tokens):
    u = P[:, i]
    Delta = np.logaddexp(0.0, u @ W)                    # softplus(w_j^T u_i), j = 1..d0: (d0,)
    A_tilde = np.exp(-Delta)[:, None] * np.ones(m)      # exp(Delta A) with A = -I: (d0, m)
    B_i = u @ W_B.T                                     # (m,)
    B_tilde = Delta[:, None] * B_i * (np.exp(-Delta)[:, None] - 1) / (-Delta[:, None])  # ZOH
    h = h * A_tilde + np.outer(u, np.ones(m)) * B_tilde
    o = h @ (W_C @ u)                                   # o_i = h_i C_i: (d0,)
    outputs_by_hand[i] = o[-1]
    print(f"token {i + 1}: last row of h_{i + 1} = {h[-1]},  e_(d+1)^T o_{i + 1} = {o[-1]:+.6f}")
F_scan_by_hand = o[-1]
print("h_{l+1} =\n", h)
print(f"F = e_(d+1)^T o_(l+1) = {F_scan_by_hand:+.6f}  -> predicted label {np.sign(F_scan_by_hand):+.0f}")
check("h_{l+1}.shape", h.shape, "== (4, 4)", "one row per input row (d0 = 4), one column per memory slot (m = 4)")

# %% [markdown]
# The package's literal scan (`numpy_mamba.scan`) does the same loop for a batch; its last
# value is our $F$:

# %%
o_all = scan_outputs(W_B, W_C, W, P[None])[0]           # (l+1, d0)
print("e_(d+1)^T o_i, i = 1..l+1, from numpy_mamba.scan:", o_all[:, -1])
check("max |our loop - numpy_mamba.scan| over the four outputs", np.max(np.abs(o_all[:, -1] - outputs_by_hand)),
      "<= 1e-12", "the loop above is eq (1) as the package scans it")

# %% [markdown]
# ## What $A = -I$ and softplus do (Appendix E.1, eqs (84)-(87))
#
# With $a = w_j^\top u_i$ and $\Delta = \mathrm{softplus}(a) = \log(1 + e^a)$, so $e^{-\Delta} = 1/(1 + e^a)$:
#
# $$\tilde A = e^{-\Delta} = \frac{1}{1 + e^{a}} = 1 - \sigma(a) \tag{84}$$
#
# $$\tilde B = \Delta B \, (e^{-\Delta} - 1)(-\Delta)^{-1} = (1 - e^{-\Delta}) B = \sigma(a)\, B \tag{86}$$
#
# with $\sigma(a) = 1/(1 + e^{-a})$ the sigmoid.  So each row of the state *keeps* a fraction
# $1 - \sigma(a)$ of its old value and *writes* $u_i B_i$ with weight $\sigma(a)$: a sigmoid
# gate.  The last row ($j = d+1$, whose input is the label $y_i$) uses $w = w_{d+1}$.
#
# The table: each row is one value of $a$; the columns are $e^{-\mathrm{softplus}(a)}$ and
# $1 - \sigma(a)$ (what you should see: equal), and the zero-order-hold factor
# $\Delta (e^{-\Delta} - 1)/(-\Delta)$ and $\sigma(a)$ (equal too).

# %%
print("## What A = -I and softplus do (Appendix E.1, eqs (84)-(87))")
a = np.linspace(-6, 6, 13)
Delta = np.logaddexp(0.0, a)
print("    a   exp(-softplus(a))   1 - sigma(a)   ZOH factor   sigma(a)")
for a_k, D in zip(a, Delta):
    zoh = D * (np.exp(-D) - 1) / (-D)
    print(f"{a_k:+5.1f}   {np.exp(-D):17.6f}   {1 - expit(a_k):12.6f}   {zoh:10.6f}   {expit(a_k):8.6f}")
check("max |exp(-softplus(a)) - (1 - sigma(a))|", np.max(np.abs(np.exp(-Delta) - (1 - expit(a)))), "<= 1e-14",
      "eq (84): the keep factor of A = -I is 1 - sigma(a)")
check("max |ZOH factor - sigma(a)|", np.max(np.abs(Delta * (np.exp(-Delta) - 1) / (-Delta) - expit(a))), "<= 1e-14",
      "eq (86): the write weight is sigma(a)")

# %% [markdown]
# ## Unrolling gives eq (3)
#
# Unrolling the recurrence of the last row (eqs (88)-(92)): token $i$ writes $y_i B_i$ with
# weight $\sigma(w^\top p_i)$, and every later token $j$ multiplies it by $1 - \sigma(w^\top p_j)$.  So
#
# $$F(\Psi; P) = e_{d+1}^\top o_{l+1}
# = \sum_{i=1}^{l+1} G_{i,l+1}(w)\, y_i\, p_i^\top W_B^\top W_C\, p_{query} \tag{3}$$
#
# $$G_{i,l+1}(w) = \begin{cases}
# \sigma(w^\top p_i) \prod_{j=i+1}^{l+1} \left(1 - \sigma(w^\top p_j)\right), & i < l+1 \\
# \sigma(w^\top p_{query}), & i = l+1 \end{cases}$$
#
# with $\Psi = \{W_B, W_C, w\}$ the trainable parameters.  The query's own term vanishes because
# its label slot is 0.
#
# **Linear attention.**  In a Transformer, the query attends to example $i$ with the weight
# $\mathrm{softmax}_i(k_i^\top q)$ and outputs the weighted sum of the examples' values.  *Linear*
# attention drops the softmax: the weight is the raw score $k_i^\top q$.  In eq (3) the key is
# $k_i = W_B p_i$, the query vector $q = W_C p_{query}$ (so $W_B$ and $W_C$ play the key and query
# matrices), the value is the label $y_i$, and the score is
# $s_i = p_i^\top W_B^\top W_C p_{query}$.  Mamba multiplies each score by the gate $G_{i,l+1}(w)$;
# the *linear Transformer* of Section 3.4 is the same model with every gate set to 1.

# %%
print("## Unrolling gives eq (3)")
params = nm.Params(W_B, W_C, w)
G = nm.gating(w, P)
scores = nm.attention_scores(params, P)                  # s_i = p_i^T W_B^T W_C p_query
F_closed = nm.forward(params, P)
print("gates G_{i,l+1}(w):      ", G)
print("attention scores s_i:    ", scores)
print("labels y_i:              ", P[-1])
print(f"F from eq (3) = sum_i G_i y_i s_i = {F_closed:+.12f}")
print(f"F from the eq (1) scan            = {F_scan_by_hand:+.12f}")
check("|F of eq (3) - F of the eq (1) scan|", abs(F_closed - F_scan_by_hand), "<= 1e-12",
      "the closed form is the scan")
check("|F of eq (3) - forward_literal|", abs(F_closed - nm.forward_literal(params, P)), "<= 1e-12",
      "eq (3) term by term, as printed, gives the same F")
F_lt = nm.forward(params, P, model="linear_transformer")
print(f"linear Transformer, every G = 1:  F = sum_i y_i s_i = {F_lt:+.6f}")
check("|F of the linear Transformer - sum_i y_i s_i|", abs(F_lt - np.sum(P[-1] * scores)), "<= 1e-12",
      "the linear Transformer is eq (3) with every gate 1")

# %% [markdown]
# The gates telescope:
# $\sum_{i=1}^{l+1} G_{i,l+1} = 1 - \prod_{j=1}^{l+1}\left(1 - \sigma(w^\top p_j)\right)$.  What is
# missing from 1 is exactly the weight left on the initial state $h_0$, which is where the next
# question comes from.

# %%
keep_all = np.prod(1 - expit(w @ P))
print(f"sum of gates = {G.sum():.6f};  1 - prod(1 - sigma) = {1 - keep_all:.6f}")
check("|sum of gates - (1 - prod(1 - sigma))|", abs(G.sum() - (1 - keep_all)), "<= 1e-12",
      "the gates telescope: what is missing from 1 stays on h_0")

# %% [markdown]
# ## The $h_0$ question
#
# Section 2 writes "starting from $h_0 = U$".  With $h_0 = U = P$ (which needs $m = l+1$), the
# last row of $h_0$ is the label row $y^\top = (y_1, \cdots, y_l, 0)$; it decays by
# $\prod_{i=1}^{l+1}(1 - \sigma(w^\top p_i))$, and $F$ gains
#
# $$\prod_{i=1}^{l+1} \left(1 - \sigma(w^\top p_i)\right) \, y^\top W_C\, p_{query},$$
#
# a term the derivation in Appendix E.1 drops (the last step of eq (88)).  The package's eq (3)
# is the $h_0 = 0$ model; `recurrent_forward(..., h0="input")` gives the other one.  See the
# README, "Notes on the paper's derivations".

# %%
print("## The h_0 question")
F_h0_input = nm.recurrent_forward(W_B, W_C, W, P, h0="input")
extra = keep_all * (P[-1] @ W_C @ P[:, -1])
print(f"h_0 = U:   F = {F_h0_input:+.10f}")
print(f"eq (3) + prod(1 - sigma) y^T W_C p_query = {F_closed + extra:+.10f}   (extra term {extra:+.3e})")
check("|F of the scan from U - (eq (3) + the h_0 term)|", abs(F_h0_input - (F_closed + extra)), "<= 1e-12",
      "eq (3) is the scan from h_0 = 0; h_0 = U adds exactly the term eq (88) drops")

# %% [markdown]
# ## A picture of the gate
#
# Left: the keep factor $\tilde A = 1 - \sigma(a)$ and the write weight $\sigma(a)$.  Right: the
# gates of our tiny prompt; a token's gate shrinks with every later token that writes strongly,
# so the query's own gate (rightmost) is the largest here.

# %%
print("## A picture of the gate")
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.6))
a = np.linspace(-6, 6, 200)
ax1.plot(a, 1 - expit(a), color="#0072B2", label=r"keep: $\tilde A = e^{-\mathrm{softplus}(a)} = 1-\sigma(a)$")
ax1.plot(a, expit(a), color="#E69F00", ls="--", label=r"write: $\tilde B / B = \sigma(a)$")
ax1.set(xlabel=r"$a = w^\top p_i$", ylabel="factor", ylim=(0, 1.4),
        title="A = -I with the zero-order hold (eqs (84), (86))")
ax1.legend(fontsize=8, loc="upper center")
labels = [f"$p_{i + 1}$" for i in range(l)] + [r"$p_{query}$"]
ax2.bar(labels, G, color="#009E73")
ax2.set(ylabel=r"$G_{i,l+1}(w)$", title="gates of the tiny prompt (eq (3))", ylim=(0, 1))
fig.tight_layout()
check("the token with the largest gate", int(G.argmax()) + 1, "== 4", "the query's own gate (token l+1 = 4) is the "
      "largest here: no later token shrinks it")
saved = show_figure(fig, "01_gates")
print("Done: tutorial 1, the eq (1) scan equals linear attention times the gate, eq (3)"
      + (f"; figure saved in {saved.parent}" if saved else ""))

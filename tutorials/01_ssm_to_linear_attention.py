# %% [markdown]
# # Tutorial 1 — From a selective SSM to linear attention with a gate
#
# Paper: Li, Lu, Cui, Chen, Wang, *Can Mamba Learn In Context with Outliers? A Theoretical
# Generalization Analysis* (arXiv 2510.00399), Section 2 and Appendix E.1.
#
# We run the one-layer Mamba of **eq (1)** token by token on a tiny prompt, print the hidden
# states h_i, and watch them collapse into the closed form of **eq (3)**: a linear attention
# p_i^T W_B^T W_C p_query times a sigmoid gate G_{i,l+1}(w).  Then we see what the choice
# A = -I and the softplus step size do (eqs (84)-(87)), and what happens with the initial state
# h_0 = U that Section 2 writes.
#
# Run: `python tutorials/01_ssm_to_linear_attention.py` (a few seconds; quick and full mode are
# the same for this tutorial), or step through the `# %%` cells in VS Code / Spyder / PyCharm.

# %%
import importlib.util
import os
import sys
from pathlib import Path

if importlib.util.find_spec("numpy_mamba") is None:    # a clone without `pip install .`
    here = Path(__file__).resolve().parent if "__file__" in globals() else Path.cwd()
    sys.path.insert(0, str(here.parent))

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
from scipy.special import expit

import numpy_mamba as nm
from numpy_mamba.scan import scan_outputs

QUICK = os.environ.get("NUMPY_MAMBA_QUICK") == "1"     # same work either way here
FIGDIR = os.environ.get("NUMPY_MAMBA_FIGDIR")          # set it to save the figures as PNG
np.set_printoptions(precision=4, suppress=True)


def show(fig, name):
    """Show a figure (a no-op under the non-interactive Agg backend); save it if FIGDIR is set."""
    if FIGDIR:
        fig.savefig(os.path.join(FIGDIR, f"{name}.png"), dpi=120, bbox_inches="tight")
    if "agg" not in matplotlib.get_backend().lower():
        plt.show()
    plt.close(fig)


# %% [markdown]
# ## A tiny prompt, eq (2)
#
# A prompt stacks l context examples and the query as columns, with the labels in the last row
# and a 0 in the query's label slot:
#
#     P = [[x_1 x_2 ... x_l x_query],
#          [y_1 y_2 ... y_l    0   ]]  in R^{(d+1) x (l+1)}                       (2)
#
# Here d = 3 and l = 3, so P is 4 x 4.  The paper feeds P to eq (1) as U = P with
# d_0 = d+1 and m = l+1.

# %%
P = np.array([[1.0, 0.0, 1.0, 1.0],      # x_1 x_2 x_3 x_query (d = 3 rows of features)
              [0.0, 1.0, 0.5, 0.0],
              [0.5, 0.0, 0.0, 0.2],
              [1.0, -1.0, 1.0, 0.0]])    # y_1 y_2 y_3 and the query's 0
d0, n_tokens = P.shape                   # d0 = d+1 = 4, l+1 = 4
d, l, m = d0 - 1, n_tokens - 1, n_tokens  # the paper's m = l+1
rng = np.random.default_rng(1)
W_B = rng.normal(0, 0.5, (m, d0))        # B_i = u_i^T W_B^T  (1 x m)
W_C = rng.normal(0, 0.5, (m, d0))        # C_i = W_C u_i      (m,)
W = rng.normal(0, 0.5, (d0, d0))         # Delta_{j,i} = softplus(w_j^T u_i); w = w_{d0} = W[:, -1]
w = W[:, -1]
print("P =\n", P)

# %% [markdown]
# ## Eq (1), token by token
#
#     h_i = h_{i-1} (.) A~_i + (u_i 1_m^T) (.) B~_i   in R^{d0 x m},   o_i = h_i C_i         (1)
#
# with A = -I_m, Delta_{j,i} = softplus(w_j^T u_i), A~_{j,i} = diag(exp(Delta_{j,i} A)) and the
# zero-order hold B~_{j,i} = (Delta_{j,i} B_i)(exp(Delta_{j,i} A) - I)(Delta_{j,i} A)^{-1}.
# Because A is diagonal, everything is elementwise.  We start from h_0 = 0 (see the last
# section for h_0 = U).  The model's output is F = e_{d+1}^T o_{l+1}: the last coordinate.

# %%
h = np.zeros((d0, m))
for i in range(n_tokens):
    u = P[:, i]
    Delta = np.logaddexp(0.0, u @ W)                    # softplus(w_j^T u_i), j = 1..d0: (d0,)
    A_tilde = np.exp(-Delta)[:, None] * np.ones(m)      # exp(Delta A) with A = -I: (d0, m)
    B_i = u @ W_B.T                                     # (m,)
    B_tilde = Delta[:, None] * B_i * (np.exp(-Delta)[:, None] - 1) / (-Delta[:, None])  # ZOH
    h = h * A_tilde + np.outer(u, np.ones(m)) * B_tilde
    o = h @ (W_C @ u)                                   # o_i = h_i C_i: (d0,)
    print(f"token {i + 1}: last row of h_{i + 1} = {h[-1]},  o_{i + 1}[d+1] = {o[-1]:+.6f}")
F_scan_by_hand = o[-1]
print("h_{l+1} =\n", h)

# %% [markdown]
# The package's literal scan (`numpy_mamba.scan`) does the same loop for a batch:

# %%
o_all = scan_outputs(W_B, W_C, W, P[None])[0]           # (l+1, d0)
print("o_i[d+1] from numpy_mamba.scan:", o_all[:, -1])
assert np.isclose(o_all[-1, -1], F_scan_by_hand, rtol=1e-12)

# %% [markdown]
# ## What A = -I and softplus do (Appendix E.1, eqs (84)-(87))
#
# With a = w_j^T u_i and Delta = softplus(a) = log(1 + e^a):
#
#     A~ = exp(-Delta) = 1 / (1 + e^a) = 1 - sigma(a)                                      (84)
#     B~ = Delta B (e^{-Delta} - 1) / (-Delta) = (1 - e^{-Delta}) B = sigma(a) B            (86)
#
# So each row of the state *keeps* a fraction 1 - sigma(a) of its old value and *writes* u_i B_i
# with weight sigma(a): a sigmoid gate.  The last row (j = d+1, whose input is the label y_i)
# uses w = w_{d+1}.

# %%
a = np.linspace(-6, 6, 13)
Delta = np.logaddexp(0.0, a)
print(" a      exp(-softplus)  1-sigma(a)   ZOH factor   sigma(a)")
for a_k, D in zip(a, Delta):
    zoh = D * (np.exp(-D) - 1) / (-D)
    print(f"{a_k:+5.1f}   {np.exp(-D):.6f}      {1 - expit(a_k):.6f}     {zoh:.6f}     {expit(a_k):.6f}")
assert np.allclose(np.exp(-Delta), 1 - expit(a)) and np.allclose(Delta * (1 - np.exp(-Delta)) / Delta, expit(a))

# %% [markdown]
# ## Unrolling gives eq (3)
#
# Unrolling the recurrence of the last row (eqs (88)-(92)):  token i writes y_i B_i with weight
# sigma(w^T p_i), and every later token j multiplies it by 1 - sigma(w^T p_j).  So
#
#     F(Psi; P) = sum_{i=1}^{l+1} G_{i,l+1}(w) y_i p_i^T W_B^T W_C p_query              (3)
#     G_{i,l+1}(w) = sigma(w^T p_i) prod_{j=i+1}^{l+1} (1 - sigma(w^T p_j)),   G_{l+1,l+1} = sigma(w^T p_query)
#
# a linear attention (W_B the key, W_C the query matrix) times a gate.  The query's own term
# vanishes because its label slot is 0.

# %%
params = nm.Params(W_B, W_C, w)
G = nm.gating(w, P)
scores = nm.attention_scores(params, P)                  # p_i^T W_B^T W_C p_query
F_closed = nm.forward(params, P)
print("gates G_{i,l+1}(w):      ", G)
print("attention scores s_i:    ", scores)
print("labels y_i:              ", P[-1])
print(f"F from eq (3) = sum G y s = {F_closed:+.12f}")
print(f"F from the eq (1) scan    = {F_scan_by_hand:+.12f}")
assert abs(F_closed - F_scan_by_hand) < 1e-12
print("linear Transformer (all G = 1, Section 3.4):", nm.forward(params, P, model="linear_transformer"))

# %% [markdown]
# The gates telescope: sum_i G_{i,l+1} = 1 - prod_{j=1}^{l+1}(1 - sigma(w^T p_j)).  What is
# missing from 1 is exactly the weight left on the initial state h_0, which is where the next
# question comes from.

# %%
keep_all = np.prod(1 - expit(w @ P))
print(f"sum of gates = {G.sum():.6f};  1 - prod(1 - sigma) = {1 - keep_all:.6f}")

# %% [markdown]
# ## The h_0 question
#
# Section 2 writes "starting from h_0 = U".  With h_0 = U = P (which needs m = l+1), the last
# row of h_0 is the label row y^T, it decays by prod_{i=1}^{l+1}(1 - sigma(w^T p_i)), and F gains
#
#     prod_{i=1}^{l+1} (1 - sigma(w^T p_i)) * y^T W_C p_query,
#
# a term the derivation in Appendix E.1 drops (the last step of eq (88)).  The package's eq (3)
# is the h_0 = 0 model; `recurrent_forward(..., h0="input")` gives the other one.  See the
# README, "Notes on the paper's derivations".

# %%
F_h0_input = nm.recurrent_forward(W_B, W_C, W, P, h0="input")
extra = keep_all * (P[-1] @ W_C @ P[:, -1])
print(f"h_0 = U:   F = {F_h0_input:+.10f}")
print(f"eq (3) + prod(1 - sigma) y^T W_C p_query = {F_closed + extra:+.10f}   (extra term {extra:+.3e})")
assert abs(F_h0_input - (F_closed + extra)) < 1e-12

# %% [markdown]
# ## A picture of the gate
#
# Left: the keep factor A~ = 1 - sigma(a) and the write weight sigma(a).  Right: the gates of
# our tiny prompt; a token's gate shrinks with every later token that "writes" strongly.

# %%
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
show(fig, "01_gates")
print("tutorial 1 done")

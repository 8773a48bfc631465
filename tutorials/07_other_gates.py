# %% [markdown]
# # Tutorial 7 — Other gates of Appendix E.6 (Mamba-2 in detail)
#
# Paper: Appendix E.6, eqs (187)-(189) (Mamba-2), (196)-(198) (GLA); compare eq (3).
#
# Appendix E.6 of the paper says its analysis carries over to any model whose block is
# *linear attention times a gate* (tutorial 1). Mamba-2 (eqs (187)-(189)) updates a state
#
# $$h_i = \gamma(w, a; i)\, h_{i-1} + v_i k_i^\top, \qquad
# \gamma(w, a; i) = e^{-\mathrm{softplus}(w^\top p_i)\, e^{a}} \tag{187}$$
#
# with a scalar decay $\gamma$ per token, trained through $w \in \mathbb{R}^{d+1}$ and one number
# $a$ ($v_i$ and $k_i$ are the value and key of token $i$), and unrolling the recurrence gives
# $F = \sum_i G_{i,l+1}\, y_i\, p_i^\top W_B^\top W_C\, p_{query}$ with
#
# $$G_{i,t}(w, a) = \begin{cases} \prod_{j=i+1}^{t} \gamma(w, a; j), & i < t \\ 1, & i = t. \end{cases} \tag{189}$$
#
# Compare Mamba's eq (3): $G_{i,l+1} = \sigma(w^\top p_i) \prod_{j>i} (1 - \sigma(w^\top p_j))$. Mamba-2
# has no factor that looks at $p_i$ itself. This tutorial checks the two forms agree, checks the
# hand-written gradient, and then asks what that missing factor costs when prompts contain
# outliers.
#
# Run: `python tutorials/07_other_gates.py` (the last part trains three models for 1500 SGD steps
# each; `NUMPY_MAMBA_QUICK=1`: 60), or step through the `# %%` cells in an editor.

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
from numpy_mamba import Params, TrainConfig, gradcheck, make_world, testing_batch, train, zero_one_error
from numpy_mamba.gates import Mamba2Params, gate_recurrent_forward, gate_values, network
from numpy_mamba.site.tutorial import check, show_figure  # a checked number printed; a figure shown or saved

QUICK = os.environ.get("NUMPY_MAMBA_QUICK") == "1"
rng = np.random.default_rng(0)

# %% [markdown]
# ## 1. The gate by hand, on a prompt with $d = 1$ and $l = 2$
# Columns $p_1 = (1, +1)$, $p_2 = (2, -1)$, $p_{query} = (1, 0)$ (last row: labels, 0 for the
# query).  With $w = 0$ and $a = 0$ every $\gamma_j = \exp(-\mathrm{softplus}(0)) = \exp(-\log 2) = 1/2$,
# so eq (189) gives $G = (\gamma_2 \gamma_3,\ \gamma_3,\ 1) = (1/4, 1/2, 1)$.  With $W_B = W_C = I$
# the scores are $s_i = p_i^\top p_{query} = (1, 2)$, so
# $F = \tfrac14 \cdot (+1) \cdot 1 + \tfrac12 \cdot (-1) \cdot 2 = -0.75$.  What you should see: the
# package's numbers equal these, from the closed form and from the recurrence (187).

# %%
print("## 1. The gate by hand, on a prompt with d = 1 and l = 2")
P = np.array([[1.0, 2.0, 1.0],
              [1.0, -1.0, 0.0]])
I = np.eye(2)
params = Mamba2Params(W_B=I, W_C=I, w=np.zeros(2), a=0.0)
G = gate_values("mamba2", params, P[None])[0]
print("G from gates.py:", G)
check("max |G - (1/4, 1/2, 1)|", np.max(np.abs(G - [0.25, 0.5, 1.0])), "<= 1e-15", "eq (189) with every gamma = 1/2")
# scores s_i = p_i^T p_query = (1, 2); F = 1/4 * (+1) * 1 + 1/2 * (-1) * 2 = -0.75
mamba2 = network("mamba2")                          # the model as one value: init, output, value_and_gradients
check("F, closed form", mamba2.output(params, P), "-0.75 +- 1e-15", "1/4 * (+1) * 1 + 1/2 * (-1) * 2")
check("F, recurrence (187)", gate_recurrent_forward(params, P, "mamba2"), "-0.75 +- 1e-15",
      "the state update of eq (187) gives the same F")

# %% [markdown]
# ## 2. Two forms, one truth, on random prompts
# `gate_recurrent_forward` loops over tokens exactly as eq (187) is written;
# `network("mamba2").output` is linear attention times the gate of eq (189), computed in log
# space (a sum of $\log \gamma_j$ instead of a product, so that long products do not underflow).

# %%
print("## 2. Two forms, one truth, on random prompts")
d, l, B = 4, 6, 5
params = Mamba2Params(rng.normal(0, .5, (5, 5)), rng.normal(0, .5, (5, 5)), rng.normal(0, 1, 5), 0.3)
P = rng.normal(0, 1, (B, d + 1, l + 1))
P[:, -1, :l] = rng.choice([-1.0, 1.0], size=(B, l))
P[:, -1, l] = 0.0
z = rng.choice([-1.0, 1.0], size=B)
diff = np.max(np.abs(mamba2.output(params, P) - gate_recurrent_forward(params, P, "mamba2")))
check("max |closed - recurrent| over 5 prompts", diff, "<= 1e-12", "eq (189) in log space is the recurrence (187)")

# %% [markdown]
# ## 3. The gradient, by hand, checked by central differences
# With $c_i = \frac{\partial L}{\partial G_i} G_i$, $\frac{\partial L}{\partial \log \gamma_j} = \sum_{i<j} c_i$ (a
# prefix sum), and $\frac{\partial \log \gamma_j}{\partial w} = -\sigma(w^\top p_j)\, e^a p_j$,
# $\frac{\partial \log \gamma_j}{\partial a} = \log \gamma_j$.  The printed table is the same as in
# tutorial 3 (relative error per parameter, tolerance 1e-7).

# %%
print("## 3. The gradient, by hand, checked by central differences")
loss, grads = mamba2.value_and_gradients(params, P, z)   # mean hinge loss (eq (4)) and its gradients
report = gradcheck(lambda q: mamba2.value_and_gradients(q, P, z)[0], params, grads)
print(report)
check("largest relative error against finite differences", max(report.rel_err.values()), f"<= {report.tol:g}",
      "the hand-written gradients of W_B, W_C, w and a are right")

# %% [markdown]
# ## 4. What the missing input gate means
# Change the *content* of example 2 only (we raise $w^\top p_2$ by 3). Mamba's gate on example 2
# changes (its factor $\sigma(w^\top p_2)$); Mamba-2's does not, because $G_2$ only multiplies the
# $\gamma_j$ of tokens $3, \cdots, l+1$.  A gate that cannot look at example $i$ cannot switch
# example $i$ off when it carries an outlier.

# %%
print("## 4. What the missing input gate means")
P2 = P.copy()
w_x = params.w[:-1]                                 # the part of w that reads the features
P2[:, :-1, 1] += 3.0 * w_x / (w_x @ w_x)            # raises w^T p_2 by 3
mamba = Params(params.W_B, params.W_C, params.w)
for name, p in [("mamba", mamba), ("mamba2", params)]:
    change = np.abs(gate_values(name, p, P2)[:, 1] - gate_values(name, p, P)[:, 1]).max()
    if name == "mamba":
        check("Mamba: largest change of G_2 after editing p_2", change, "> 0.01",
              "its factor sigma(w^T p_2) looks at example 2")
    else:
        check("Mamba-2: largest change of G_2 after editing p_2", change, "== 0.0",
              "its G_2 multiplies only the gammas of later tokens")

# %% [markdown]
# ## 5. Train and test (Section 4 data, flipped labels on outliers, $\alpha = 0.7$)
# Same training prompts and seed for Mamba, Mamba-2 and GLA (gated linear attention, eq (198):
# $F = \sum_i y_i\, (W_K p_i \odot \sigma(W p_i)^{1/\tau})^\top W_Q\, p_{query}$, whose gate
# $\sigma(W p_i)^{1/\tau}$ does look at $p_i$).  Test prompts: $\alpha = 0.7$, flipped labels,
# $\kappa_a' = 8$ (tutorial 5).  What you should see in full mode: Mamba and GLA well below the
# error of Mamba-2, which behaves like the linear Transformer of tutorial 5.  The figure shows
# the three test errors side by side.  The full comparison, with five seeds and error bars, is
# `python -m numpy_mamba gates` (figures/REPORT.md).

# %%
print("## 5. Train and test (Section 4 data, flipped labels on outliers, alpha = 0.7)")
world = make_world(rng=0)
config = TrainConfig(T=60 if QUICK else 1500)
test = testing_batch(world, 200 if QUICK else 2000, 20, alpha=0.7, kappa_a_prime=8.0, label_rule="flip", rng=3)
MODELS = ("mamba", "mamba2", "gla")
print(f"training {', '.join(MODELS)}: {config.T} SGD steps each, then {len(test.z)} test prompts ...", flush=True)
error = {}
for model in MODELS:
    net = nm.network(model) if model == "mamba" else network(model)     # the paper's model, or a gate's
    params0 = net.init(world.d, np.random.default_rng([0, 1]))           # Algorithm 1, plus the gate's own fields
    trained, _ = train(world, config, net, rng=np.random.default_rng([0, 2]), params=params0)
    error[model] = zero_one_error(net.output(trained, test.P), test.z)
    print(f"{model:7s} test error at alpha = 0.7: {error[model]:.3f}")
check("Mamba-2's error - Mamba's", error["mamba2"] - error["mamba"], "> 0",
      "a gate that sees example i can shut it; Mamba-2's cannot")
if QUICK:
    print("(quick mode: 60 steps are too few for GLA; the full run shows it below Mamba-2 too)")
else:
    check("Mamba-2's error - GLA's", error["mamba2"] - error["gla"], "> 0", "GLA's gate sees its example too")

# %%
fig, ax = plt.subplots(figsize=(5.5, 3.4))
ax.bar(["Mamba\n(input gate)", "Mamba-2\n(no input gate)", "GLA\n(input gate)"], [error[m] for m in MODELS],
       color=["#0072B2", "#E69F00", "#009E73"])
ax.axhline(0.5, color="0.6", lw=0.8, ls=":")
ax.set(ylabel="test error (eq (5))", ylim=(0, 1),
       title=f"alpha = 0.7, flipped labels, kappa_a' = 8; T = {config.T}" + (" (quick mode)" if QUICK else ""))
fig.tight_layout()
saved = show_figure(fig, "07_errors")
print("Done: tutorial 7, Mamba-2's gate (eq (189)) by hand, and what a gate blind to its own example costs"
      + (f"; figure saved in {saved.parent}" if saved else ""))

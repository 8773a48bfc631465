# %% [markdown]
# # Tutorial 4 — Training with SGD: what $W_B^\top W_C$ and $w$ learn
#
# Paper: Algorithm 1 (eq (19)), Lemma 3 (eqs (23)-(30)), Lemma 4 (eqs (33)-(36)), Lemma 5
# (eqs (37), (38)), Corollary 1 (eq (16)).
#
# We train the one-layer Mamba with SGD (eq (19), tutorial 3) on training prompts
# (Definition 1, tutorial 2) and record, along the way, the quantities the lemmas talk about:
# * the gate parameter $w$ projected on the outlier directions $v^*_s$, the relevant patterns
#   $\mu_j$ and the irrelevant ones $\nu_k$ (Lemma 4), and the gate's logit $w^\top p_i$ (the
#   write weight of example $i$ is $\sigma(w^\top p_i)$, tutorial 1) on clean and on outlier
#   examples (Lemmas 4-5): the gate learns to shut outlier examples;
# * the attention matrix $W_B^\top W_C$ between patterns (Lemma 3): it learns which examples
#   share the query's relevant pattern;
# * the attention scores summed over same-pattern and other examples of test prompts
#   (Corollary 1).
#
# Run: `python tutorials/04_training_dynamics.py`.  Full mode: T = 2000 SGD steps.
# NUMPY_MAMBA_QUICK=1: T = 300 steps, enough to see every trend.

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

QUICK = os.environ.get("NUMPY_MAMBA_QUICK") == "1"
T = 300 if QUICK else 2000
RECORD_EVERY = 5 if QUICK else 10
np.set_printoptions(precision=3, suppress=True)

# %% [markdown]
# ## The setting (Section 4) and what we record
#
# $d = 30$, $M_1 = 6$, $M_2 = 10$, $V = 3$, $\beta = 3$, $l_{tr} = 20$, $p_a = 0.6$, $\kappa_a = 2$,
# $\delta = 0.2$ (the initial diagonal of $W_B$ and $W_C$).  The paper does not give the step size
# $\eta$, the batch size $B$ or the noise range $K$; we use $\eta = 0.1$, $B = 64$, $K = 0.5$
# (`TrainConfig`).  Patterns live in the first $d$ coordinates of a column $p_i$; the last
# coordinate is the label, so "$w$ on $\mu_j$" means $(\mu_j^\top, 0)\, w$, as the lemmas write it.
# We write $M = W_B^\top W_C$, so that the score of eq (3) is $s_i = p_i^\top M\, p_{query}$.

# %%
print("## The setting (Section 4) and what we record")
world = nm.make_world(d=30, M1=6, M2=10, V=3, beta=3.0, rng=np.random.default_rng([0, 0]))
config = nm.TrainConfig(T=T, B=64, eta=0.1, l_tr=20, p_a=0.6, K=0.5, kappa_a=2.0, delta=0.2)
d, beta, M1 = world.d, world.beta, world.M1
probe = nm.training_batch(world, 256, config.l_tr, p_a=config.p_a, rng=np.random.default_rng([0, 2]))
test = nm.testing_batch(world, 256, 20, alpha=0.3, rng=np.random.default_rng([0, 3]))
partner = [(j, (j + 1) % M1) for j in range(M1)]                       # the pairs of T_tr
other = [(j, k) for j in range(M1) for k in range(M1)
         if j != k and (j, k) not in partner and (k, j) not in partner]  # never a training task


def record(step, params):
    """What Lemmas 3-5 and Corollary 1 talk about, at Psi^(t)."""
    W_B, W_C, w = params
    M = (W_B.T @ W_C)[:d, :d]                                          # attention between patterns
    a = np.einsum("d,bdl->bl", w, probe.P)[:, :-1]                     # w^T p_i, context columns
    G = nm.gating(w, probe.P)[:, :-1]
    s = nm.attention_scores(params, test.P)[:, :-1]                    # p_i^T W_B^T W_C p_query
    mu, nu = world.mu, world.nu
    return {
        "w_vstar": np.mean(world.v_star @ w[:d]),                      # (33)
        "w_mu": np.mean(mu @ w[:d]),                                   # (34)
        "w_nu": np.mean(np.abs(nu @ w[:d])),
        "a_clean": a[~probe.outlier].mean(), "a_outlier": a[probe.outlier].mean(),   # (35)-(38)
        "G_clean": G[~probe.outlier].mean(), "G_outlier": G[probe.outlier].mean(),
        "M_same": np.mean([mu[j] @ M @ mu[j] for j in range(M1)]) / beta**2,          # (23)
        "M_partner": np.mean([mu[j] @ M @ mu[k] for j, k in partner]) / beta**2,      # (26)
        "M_other": np.mean([mu[j] @ M @ mu[k] for j, k in other]) / beta**2,          # (25)
        "M_nu": np.mean(np.abs(nu @ M @ nu.T)) / beta**2,                             # (29), (30)
        "s_same": np.mean(np.sum(s * test.same_pattern, axis=1)),                     # (16)
        "s_other": np.mean(np.sum(s * ~test.same_pattern, axis=1)),
    }


print(f"training Mamba: {T} SGD steps (Algorithm 1), recording every {RECORD_EVERY} ...", flush=True)
params, history = nm.train(world, config, "mamba", rng=np.random.default_rng([0, 1]),
                           record_every=RECORD_EVERY, record=record)
step = history["step"]
check("minibatch hinge loss at step 0", history["loss"][0], "> 0.5",
      "at initialisation F is small, so each prompt's hinge 1 - zF is near 1")
check("mean minibatch hinge loss over the last 10 records", np.mean(history["loss"][-10:]), "< 0.05",
      f"{T} SGD steps fit the training prompts")

# %% [markdown]
# ## $w$: the gate learns to shut outlier examples (Lemmas 4 and 5)
#
# Lemma 4 (early training; we keep the leading terms):
#
# $${v^*_s}^\top w^{(t)} \lesssim -\frac{\eta \beta^2 t \kappa_a (1 - p_a)}{V} - \cdots \tag{33}$$
#
# $$(\mu_j^\top, 0)\, w^{(t)} = \Theta\Big(-\frac{\eta (1 - p_a) \beta^2 t}{M_1} - \cdots\Big) \tag{34}$$
#
# $${w^{(t)}}^\top p_r \lesssim -\eta t \beta^2 \kappa_a (1 - p_a) < {w^{(t)}}^\top p_s < 0 \tag{36}$$
#
# for an example $p_r$ with an outlier and a clean one $p_s$.  Lemma 5 (after
# $t \gtrsim \eta^{-1}(1 - p_a)^{-1}\beta^{-2} M_1$ steps): ${w^{(t)}}^\top p_i \lesssim -\log M_1$ on
# outlier examples (37) and ${w^{(t)}}^\top p_i \gtrsim -\Theta(1)$ on clean ones (38).  A negative
# $w^\top p$ means a small write weight $\sigma(w^\top p)$: the example barely enters the state,
# and it barely erases what came before.
#
# The table: one row per moment of training (SGD step $t$).  Columns: the mean of
# ${v^*_s}^\top w$ over $s$ (33); the mean of $(\mu_j^\top, 0)\, w$ over $j$ (34); the mean of
# $|(\nu_k^\top, 0)\, w|$ over $k$; the mean gate logit $w^\top p_i$ over clean and over outlier
# context examples of 256 training prompts ((35)-(38)); and the mean gate $G_{i,l+1}(w)$ over the
# same examples.  What you should see: at step 0 the projections are random ($w^{(0)}$ is drawn
# from $\mathcal{N}(0, I_{d+1}/(d+1))$, about $\beta/\sqrt{d+1} \approx 0.5$ along each pattern) and
# clean and outlier examples have alike gates; then ${v^*}^\top w$ and $\mu^\top w$ turn
# negative, $w^\top p$ falls lower on outlier examples than on clean ones, and the outlier gates
# end several times smaller than the clean ones.

# %%
print("## w: the gate learns to shut outlier examples (Lemmas 4 and 5)")
idx = [0, len(step) // 10, len(step) // 3, len(step) - 1]
print(" step   v*^T w   mu^T w   |nu^T w|   w^T p clean   w^T p outlier   gate clean   gate outlier")
for k in idx:
    print(f"{step[k]:5d}  {history['w_vstar'][k]:+7.3f}  {history['w_mu'][k]:+7.3f}  {history['w_nu'][k]:8.3f}"
          f"   {history['a_clean'][k]:+10.3f}   {history['a_outlier'][k]:+12.3f}   {history['G_clean'][k]:10.4f}"
          f"   {history['G_outlier'][k]:11.4f}")
final = {k: history[k][-1] for k in history}
check("v*^T w at the end", final["w_vstar"], "< 0", "(33): w turns against the outlier directions")
check("(mu^T, 0) w at the end", final["w_mu"], "< 0", "(34): and against the relevant patterns")
check("mean w^T p on outlier examples at the end", final["a_outlier"], f"< {-np.log(M1):.4g}",
      "(37): below -log M1, so sigma(w^T p) is small")
check("mean w^T p on clean examples at the end", final["a_clean"], f"between {-np.log(M1):.4g} and 0",
      "(38): above -log M1, below 0; with (37) the ordering of (36)")
check("mean gate on clean examples / on outlier examples", final["G_clean"] / final["G_outlier"], "> 2",
      "the gate learns to shut outlier examples")

# %% [markdown]
# What to read from it: the signs and the ordering of (35)-(38) are there.  $w$ turns against
# the outlier directions *and* against the relevant patterns; every example holds one $\mu_j$,
# but only outlier examples add $\kappa_a v^*_s$ on top, so they end with the most negative
# $w^\top p$ and the smallest gates.  Clean examples stay above $-\log M_1$, outlier examples fall
# below it (Lemma 5).  $\nu$, which carries no label information, stays near its random start.
# The rates of (33)-(34) hold up to unspecified constants: read literally, their ratio
# (${v^*_s}^\top w$ falling $\kappa_a M_1 / V = 4$ times faster than $(\mu_j^\top, 0)\, w$) is not
# what we measure here (both fall together, and $(\mu_j^\top, 0)\, w$ ends lower).

# %% [markdown]
# ## $W_B^\top W_C$: attention that matches the query's pattern (Lemma 3, Corollary 1)
#
# Lemma 3 tracks the gradient steps of $W_B$ and $W_C$ along the patterns: along
# $(\mu_j, \mu_j)$ they grow like $\eta t (1 - p_a) \beta / M_1$ (23); along a training-task
# partner $(\mu_j, \mu_{j''})$ (the two patterns of one training task) they go negative (26);
# along a pair that never forms a training task they are 0 (25); irrelevant and outlier
# directions stay small (24), (27)-(30).  So $p_i^\top W_B^\top W_C\, p_{query}$ is large when
# $p_i$ shares the query's relevant pattern.  Corollary 1: on test prompts (columns
# $\tilde p_i$),
#
# $$\sum_{i \in \mathcal{N}_1} \tilde p_i^\top {W_B^{(T)}}^\top W_C^{(T)} \tilde p_{query} \ge \Theta(1), \qquad
# \sum_{i \in [l_{ts}] \setminus \mathcal{N}_1} \tilde p_i^\top {W_B^{(T)}}^\top W_C^{(T)} \tilde p_{query}
# \le \Theta\big((1 - p_a)^{-1} \epsilon\big) \tag{16}$$
#
# with $\mathcal{N}_1$ the examples that share the query's relevant pattern.
#
# The table: one row per SGD step $t$.  Columns, each an entry of $M = W_B^\top W_C$ divided by
# $\beta^2$: $\mu_j^\top M \mu_j$ (same pattern, mean over $j$), $\mu_j^\top M \mu_{j+1}$ (training-task
# partners), $\mu_j^\top M \mu_k$ for the pairs that never form a training task ("other pair"), and
# $|\nu_k^\top M \nu_{k'}|$ (irrelevant patterns).  What you should see: the first column grows,
# the second goes negative, the last two stay small.

# %%
print("## W_B^T W_C: attention that matches the query's pattern (Lemma 3, Corollary 1)")
print(" step   mu_j M mu_j   partner   other pair   |nu M nu|   (M = W_B^T W_C, divided by beta^2)")
for k in idx:
    print(f"{step[k]:5d}   {history['M_same'][k]:+11.3f}   {history['M_partner'][k]:+7.3f}"
          f"   {history['M_other'][k]:+10.4f}   {history['M_nu'][k]:9.4f}")
check("mu_j M mu_j, end / start", final["M_same"] / history["M_same"][0], "> 5", "(23): same-pattern entries grow")
check("mu_j M mu_(j+1) at the end", final["M_partner"], "< 0", "(26): task-partner entries go negative")
check("other pair at step 0", abs(history["M_other"][0]), "<= 1e-12", "(25): no training prompt links them yet")
check("other pair / same pattern, at the end", final["M_other"] / final["M_same"], "between 0.05 and 0.5",
      "not 0 as (25) says: chains of partner links feed them, far below the diagonal")
check("|nu M nu| at the end", final["M_nu"], "< 0.05", "(29), (30): irrelevant patterns stay small")
check("Corollary 1: sum of scores over same-pattern examples", final["s_same"], "> 1",
      "examples that share the query's pattern dominate the prediction")
check("Corollary 1: sum of scores over the other examples", final["s_other"], "< 0",
      "not small but negative: the task partner, pushed below 0 by (26)")

# %% [markdown]
# Reading the numbers:
# * same-pattern entries grow and task-partner entries go negative, as (23) and (26) say;
# * the "other pair" entries (two patterns that never form a training task) start at exactly
#   0 and stay near 0 in the first steps, as (25) says: no training prompt links them.  They do
#   **not** stay 0: once $W_B$ and $W_C$ have grown entries along task partners (26), chains of
#   two partner links ($\mu_j \to \mu_{j+1} \to \mu_{j+2}$) feed them, and we measure about $+0.1$
#   after training, against about $+0.7$ on the diagonal.  The paper's (25) claims 0 for every
#   $t$; this is what we measure;
# * the sum of scores over the other examples in Corollary 1 is not small but *negative*: it is
#   dominated by the task partner, which (26) pushes below 0.  Either way, the examples that
#   share the query's pattern dominate the prediction.
#
# The figure shows the same quantities at every recorded step: the loss, the projections of
# $w$, the gate logits with $-\log M_1$, the entries of $M$, the summed scores of Corollary 1,
# and the gates (log scale).

# %%
fig, axes = plt.subplots(2, 3, figsize=(14, 7.5))
ax = axes[0, 0]
ax.plot(step, history["loss"], color="#0072B2", label="hinge loss (minibatch)")
ax.plot(step, history["error"], color="#E69F00", ls="--", label="0-1 error (minibatch)")
ax.set(xlabel="SGD step t", ylabel="loss / error", title="Algorithm 1 on training prompts")
ax.legend(fontsize=8)
ax = axes[0, 1]
ax.plot(step, history["w_vstar"], color="#D55E00", label=r"$v_s^{*\top} w$ (mean over s)")
ax.plot(step, history["w_mu"], color="#0072B2", label=r"$(\mu_j^\top, 0)\, w$ (mean over j)")
ax.plot(step, history["w_nu"], color="#009E73", ls=":", label=r"$|(\nu_k^\top, 0)\, w|$ (mean over k)")
ax.axhline(0, color="0.6", lw=0.8)
ax.set(xlabel="SGD step t", ylabel="projection of w", title="w along the patterns (Lemma 4)")
ax.legend(fontsize=8)
ax = axes[0, 2]
ax.plot(step, history["a_clean"], color="#0072B2", label="clean examples")
ax.plot(step, history["a_outlier"], color="#D55E00", ls="--", label="examples with an outlier")
ax.axhline(-np.log(M1), color="0.4", ls=":", label=r"$-\log M_1$")
ax.set(xlabel="SGD step t", ylabel=r"mean $w^\top p_i$", title="gate logits (Lemmas 4-5, (35)-(38))")
ax.legend(fontsize=8)
ax = axes[1, 0]
ax.plot(step, history["M_same"], color="#0072B2", label=r"$\mu_j^\top M \mu_j$ (same pattern)")
ax.plot(step, history["M_partner"], color="#D55E00", ls="--", label=r"$\mu_j^\top M \mu_{j+1}$ (task partner)")
ax.plot(step, history["M_other"], color="#009E73", ls=":", label="other pattern pairs")
ax.plot(step, history["M_nu"], color="0.4", ls="-.", label=r"$|\nu_k^\top M \nu_{k'}|$")
low, high = min(history["M_partner"]), max(history["M_same"])
ax.set_ylim(low - 0.05 * (high - low), high + 0.35 * (high - low))    # room above the curves for the legend
ax.set(xlabel="SGD step t", ylabel=r"entry $/\beta^2$", title=r"$M = W_B^\top W_C$ (Lemma 3)")
ax.legend(fontsize=8, loc="upper left", ncol=2)
ax = axes[1, 1]
ax.plot(step, history["s_same"], color="#0072B2", label="same relevant pattern as the query")
ax.plot(step, history["s_other"], color="#D55E00", ls="--", label="other examples")
ax.set(xlabel="SGD step t", ylabel=r"$\sum_i p_i^\top W_B^\top W_C p_{query}$",
       title="attention concentration (Corollary 1)")
ax.legend(fontsize=8)
ax = axes[1, 2]
ax.semilogy(step, history["G_clean"], color="#0072B2", label="clean examples")
ax.semilogy(step, history["G_outlier"], color="#D55E00", ls="--", label="examples with an outlier")
ax.set(xlabel="SGD step t", ylabel=r"mean gate $G_{i,l+1}(w)$", title="gates on training prompts")
ax.legend(fontsize=8)
fig.suptitle(f"one-layer Mamba, SGD (eta = {config.eta}, B = {config.B}, p_a = {config.p_a}), T = {T}")
fig.tight_layout()
saved = show_figure(fig, "04_dynamics")
print("Done: tutorial 4, what SGD teaches the gate w and the attention W_B^T W_C (Lemmas 3-5, Corollary 1)"
      + (f"; figure saved in {saved.parent}" if saved else ""))

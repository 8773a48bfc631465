# %% [markdown]
# # Tutorial 2 — The data model: patterns, tasks, prompts and outliers
#
# Paper: Section 3.2 (eqs (6), (7), Definitions 1 and 2, Condition 1), eq (11) and Section 4.
#
# Everything the model sees is built from a few orthogonal directions in $\mathbb{R}^d$:
# *relevant patterns* $\mu_j$ (they decide the label), *irrelevant patterns* $\nu_k$ (noise that
# does not affect the label), and *outlier patterns* $v^*_s$ (added to some examples, whose labels
# they can corrupt).  We build the Section 4 world, list the tasks, draw training and testing
# prompts, check their statistics against the definitions, and look at one prompt as an image.
# The prompt $P$ of eq (2) is introduced in tutorial 1.
#
# Run: `python tutorials/02_data_model.py`.  Full mode draws 20,000 prompts for the statistics;
# NUMPY_MAMBA_QUICK=1 draws 2,000 (the tests use it).

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
N_STATS = 2000 if QUICK else 20000                      # prompts used for the statistics


def within(p: float, n: int) -> str:
    """'p +- 5 standard errors' of a fraction measured on n draws: an expectation a seeded draw meets."""
    return f"{p:g} +- {5 * np.sqrt(p * (1 - p) / n):.2g}"

np.set_printoptions(precision=3, suppress=True)

# %% [markdown]
# ## Patterns (Section 3.2)
#
# $M_1$ relevant patterns $\mu_j$ and $M_2$ irrelevant patterns $\nu_k$, all orthogonal, with
# $\|\mu_j\| = \|\nu_k\| = \beta$; $V$ outlier patterns $v^*_s$ orthogonal to all of them (unit
# norm).  Section 4: $d = 30$, $M_1 = 6$, $M_2 = 10$, $V = 3$, $\beta = 3$.  What you should see:
# norms $\beta = 3$ for $\mu$ and $\nu$ (the first two of each are printed), 1 for $v^*$, and inner
# products between different patterns at rounding level (~1e-15).

# %%
print("## Patterns (Section 3.2)")
world = nm.make_world(d=30, M1=6, M2=10, V=3, beta=3.0, rng=np.random.default_rng([0, 0]))
patterns = np.vstack([world.mu, world.nu, world.v_star])          # (M1 + M2 + V, d)
gram = patterns @ patterns.T
print(f"d = {world.d}, M1 = {world.M1}, M2 = {world.M2}, V = {world.V}, beta = {world.beta}")
print("norms of mu_1, mu_2:", np.linalg.norm(world.mu, axis=1)[:2], "  of nu_1, nu_2:",
      np.linalg.norm(world.nu, axis=1)[:2], "  of v*_1..v*_3:", np.linalg.norm(world.v_star, axis=1))
check("max |norm of mu_j or nu_k - beta|",
      np.max(np.abs(np.linalg.norm(np.vstack([world.mu, world.nu]), axis=1) - world.beta)), "<= 1e-12",
      "every relevant and irrelevant pattern has norm beta = 3")
check("max |norm of v*_s - 1|", np.max(np.abs(np.linalg.norm(world.v_star, axis=1) - 1)), "<= 1e-12",
      "the outlier patterns are unit vectors")
check("largest |<pattern, other pattern>|", np.max(np.abs(gram - np.diag(np.diag(gram)))), "<= 1e-12",
      "all 19 patterns are orthogonal")

# %% [markdown]
# ## Tasks: $\mathcal{T}$, the training tasks $\mathcal{T}_{tr}$ (Condition 1) and the unseen ones
#
# A task $(a, b)$ labels inputs containing $\mu_a$ with $+1$ and inputs containing $\mu_b$ with
# $-1$.  $\mathcal{T}$ holds every ordered pair, $M_1 (M_1 - 1) = 30$ tasks.  Condition 1 asks the
# training tasks to cover every pattern and label equally; the paper's construction (Appendix):
# task $i$ maps $\mu_i \to +1$ and $\mu_{i+1} \to -1$, and task $M_1$ maps $\mu_{M_1} \to +1$ and
# $\mu_1 \to -1$.  The other 24 tasks are never seen in training, and the test error of eq (5)
# (the fraction of test prompts whose label the model gets wrong; tutorial 5) averages over all
# of $\mathcal{T}$.  (The code numbers patterns from 0; we print them from 1,
# as the paper does.)

# %%
print("## Tasks: T, the training tasks T_tr (Condition 1) and the unseen ones")
T_tr, T_all, T_unseen = world.training_tasks(), world.all_tasks(), world.unseen_tasks()
print("T_tr, as (a, b) = (mu_a -> +1, mu_b -> -1):", [(int(a) + 1, int(b) + 1) for a, b in T_tr])
check("(|T|, |T_tr|, unseen)", (len(T_all), len(T_tr), len(T_unseen)), "== (30, 6, 24)",
      "M1 (M1 - 1) = 30 ordered pairs, 6 of them trained on")
counts = [int(np.sum(T_tr[:, column] == j)) for j in range(world.M1) for column in (0, 1)]
check("(fewest, most) training tasks mapping one mu_j to +1, or to -1", (min(counts), max(counts)), "== (1, 1)",
      "Condition 1: every pattern and label is covered equally")

# %% [markdown]
# ## Training prompts (Definition 1, eq (6))
#
# Each context input is
#
# $$x = \begin{cases} \mu_j + \kappa \nu_k + \kappa_a v^*_s, & \text{with probability } p_a \\
# \mu_j + \kappa \nu_k, & \text{with probability } 1 - p_a \end{cases} \tag{6}$$
#
# with $\mu_j$ one of the task's two patterns $\mu_a, \mu_b$ (equally likely), $\nu_k$ any
# irrelevant pattern, $\kappa \sim U(-K, K)$ with $K \le 1/2$, and $s$ uniform in $[V]$.  An
# example with an outlier gets a *random* label; a clean one gets its task label ($+1$ for
# $\mu_a$, $-1$ for $\mu_b$); the query has no outlier, and its task label is $z$.  Section 4:
# $p_a = 0.6$, $\kappa_a = 2$, $l_{tr} = 20$ examples per prompt.
#
# We draw training prompts and read each example's ingredients back from its input $x$ (by
# projecting on the patterns), then compare with the definition.  What you should see: a
# fraction $\approx p_a$ of examples with an outlier, all of size $\kappa_a = 2$; clean examples
# always labelled by their task, outlier examples agreeing with it half of the time.

# %%
print("## Training prompts (Definition 1, eq (6))")
train = nm.training_batch(world, N_STATS, 20, p_a=0.6, K=0.5, kappa_a=2.0, rng=np.random.default_rng([0, 1]))
X = train.P[:, :-1, :-1]                                          # context inputs: (B, d, l)
y = train.P[:, -1, :-1]                                           # context labels: (B, l)
x_query = train.P[:, :-1, -1]                                     # (B, d)
a_index = train.task[:, 0]                                        # the task's +1 pattern: (B,)
# the relevant pattern of each example, read back from its input: the mu_j it contains
coeff_mu = np.einsum("jd,bdl->bjl", world.mu, X) / world.beta**2  # (B, M1, l): 1 on its mu_j
task_label = np.where(coeff_mu.argmax(axis=1) == a_index[:, None], 1.0, -1.0)   # +1 for mu_a
kappa_a_read = np.linalg.norm(np.einsum("sd,bdl->bsl", world.v_star, X), axis=1)  # outlier size
query_label = np.where((world.mu @ x_query.T).argmax(axis=0) == a_index, 1.0, -1.0)
query_outlier = np.abs(x_query @ world.v_star.T).max()
n_examples = train.outlier.size
check("fraction of examples with an outlier", train.outlier.mean(), within(0.6, n_examples),
      f"p_a = 0.6, measured on {n_examples} examples")
check("max |outlier magnitude read back from x - 2|", np.max(np.abs(kappa_a_read[train.outlier] - 2.0)), "<= 1e-9",
      "every outlier is kappa_a v*_s with kappa_a = 2")
check("fraction of clean examples labelled by their task", np.mean(y[~train.outlier] == task_label[~train.outlier]),
      "== 1.0", "a clean example always carries its task label")
n_outliers = int(train.outlier.sum())
check("fraction of outlier examples whose label agrees with the task",
      np.mean(y[train.outlier] == task_label[train.outlier]), within(0.5, n_outliers),
      "an outlier example's label is random")
check("largest |<v*_s, x_query>|", query_outlier, "<= 1e-12", "the query never has an outlier")
check("fraction of prompts whose z is the query's task label", np.mean(train.z == query_label), "== 1.0",
      "z is the query's task label")
check("fraction of prompts from a training task", np.mean(world.is_training_task(train.task)), "== 1.0",
      "training prompts come from T_tr only")

# %% [markdown]
# ## Testing prompts (Definition 2, eq (7)) and the unseen outliers (eq (11))
#
# $$x = \begin{cases} \mu_j + \kappa' \nu_k + \kappa_a' v', & \text{with probability } \alpha \\
# \mu_j + \kappa' \nu_k, & \text{with probability } 1 - \alpha \end{cases} \tag{7}$$
#
# with $\kappa' \sim U(-K', K')$, $K' > 1$ (more irrelevant noise than in training), and an
# outlier $v'$ (the paper writes ${v^*_s}'$) from
#
# $$\mathcal{V}' = \Big\{ v \;\Big|\; v = \sum_{i=1}^{V} \lambda_i v^*_i,\ \sum_{i=1}^{V} \lambda_i \ge L > 0,\
# \|v\| = 1 \Big\} \tag{11}$$
#
# New directions, never seen in training, built from the training outliers.  Section 4 uses three
# such $v'$ with coefficients $(0.7, 0.6, -0.4)$, $(0.4, 0.7, -0.6)$, $(-0.7, 0.5, 0.5)$ and
# $L = 0.3$; we divide each by its norm so that $\|v'\| = 1$.  Tasks come from all of
# $\mathcal{T}$, seen and unseen.  The label of an outlier example can be any function of $x$:
# we implement "flip" (the opposite of the clean label), "target" (always $+1$, as in Example 1's
# data poisoning) and "random".
#
# The matrix printed first: one row per $v'$, its coefficients $\lambda_1, \lambda_2, \lambda_3$ on
# $v^*_1, v^*_2, v^*_3$.  Then one line per labelling rule; what you should see: outlier fraction
# $\approx \alpha = 0.5$; under "flip" no outlier label agrees with the task, under "target"
# every outlier label is $+1$, under "random" about half agree.

# %%
print("## Testing prompts (Definition 2, eq (7)) and the unseen outliers (eq (11))")
v_test = world.test_outliers()
lam = v_test @ world.v_star.T                                     # coefficients on v*_1..v*_3
print("test outliers v' (rows) in the v* basis (columns lambda_1, lambda_2, lambda_3):\n", lam)
print("sum of lambda per v':", lam.sum(axis=1))
check("smallest sum of lambda", lam.sum(axis=1).min(), ">= 0.3", "every v' lies in V' of eq (11), with L = 0.3")
check("max |norm of v' - 1|", np.max(np.abs(np.linalg.norm(v_test, axis=1) - 1)), "<= 1e-12", "||v'|| = 1, eq (11)")
for rule in ("flip", "target", "random"):
    test = nm.testing_batch(world, N_STATS, 20, alpha=0.5, K_prime=1.5, kappa_a_prime=2.0,
                            label_rule=rule, rng=np.random.default_rng([0, 2]))
    Xt, yt = test.P[:, :-1, :-1], test.P[:, -1, :-1]
    relt = np.einsum("jd,bdl->bjl", world.mu, Xt).argmax(axis=1)
    task_t = np.where(relt == test.task[:, :1], 1.0, -1.0)
    agree = np.mean(yt[test.outlier] == task_t[test.outlier])
    plus = np.mean(yt[test.outlier] == 1)
    print(f"label_rule={rule:<7} outlier fraction {test.outlier.mean():.3f};"
          f" outlier labels agreeing with the task {agree:.3f}; equal to +1: {plus:.3f}")
    check(f"{rule}: fraction of examples with an outlier", test.outlier.mean(), within(0.5, test.outlier.size),
          "alpha = 0.5")
    n_outliers = int(test.outlier.sum())
    if rule == "flip":
        check("flip: fraction of outlier labels agreeing with the task", agree, "== 0.0", "every label is flipped")
    elif rule == "target":
        check("target: fraction of outlier labels equal to +1", plus, "== 1.0", "the poisoned label is always +1")
    else:
        check("random: fraction of outlier labels agreeing with the task", agree, within(0.5, n_outliers),
              "a fair coin")
check("fraction of test prompts from an unseen task", np.mean(~world.is_training_task(test.task)),
      within(0.8, len(test.z)), "tasks drawn from all 30, of which 24 are unseen")

# %% [markdown]
# ## Where the outliers sit: placements (Table 1)
#
# Eq (7) draws each example's outlier independently ("random").  Section 4.2 also puts all
# outlier examples farthest from the query (FQ) or closest to it (CQ); with $\alpha = 0.5$ and
# $l = 20$ that is exactly 10 outlier examples.  Each line below is one prompt's 20 examples,
# left to right, the query just after the last one.  Tutorial 6 shows why Mamba cares and the
# linear Transformer does not.

# %%
print("## Where the outliers sit: placements (Table 1)")
for placement in ("random", "farthest", "closest"):
    b = nm.testing_batch(world, 3, 20, alpha=0.5, placement=placement, rng=np.random.default_rng([0, 3]))
    print(f"{placement:<9}", "".join("X" if o else "." for o in b.outlier[0]),
          " (X = outlier, . = clean; the query is to the right)")
    positions = np.flatnonzero(b.outlier[0]) + 1                  # 1 = farthest from the query
    if placement == "farthest":
        check("FQ: outlier positions (first, last)", (int(positions[0]), int(positions[-1])), "== (1, 10)",
              "the 10 outliers fill the examples farthest from the query")
    elif placement == "closest":
        check("CQ: outlier positions (first, last)", (int(positions[0]), int(positions[-1])), "== (11, 20)",
              "the 10 outliers fill the examples next to the query")

# %% [markdown]
# ## One prompt as an image
#
# Left: the raw prompt $P$ ($d+1$ rows, $l+1$ columns).  It is hard to read because the patterns
# are random directions.  Right: the same prompt in pattern coordinates,
# $\langle x_i, \mu_j \rangle / \|\mu_j\|^2$ (and the same for $\nu_k$ and $v^*_s$), plus the label
# row.  What you should see on the right: every column holds one $\mu_j$ (value 1, one of the
# task's two), one $\nu_k$ (value $\kappa$, small), and, in the boxed outlier columns, a $v^*_s$
# (value $\kappa_a = 2$); the labels of the boxed columns are random.

# %%
print("## One prompt as an image")
n = 0
P0 = train.P[n]
coords = np.vstack([world.mu / world.beta**2, world.nu / world.beta**2, world.v_star]) @ P0[:-1]
coords = np.vstack([coords, P0[-1:]])                             # (M1 + M2 + V + 1, l+1)
l0 = P0.shape[1] - 1
columns = [str(i + 1) for i in range(l0)] + ["q"]                 # examples 1..l, then the query
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 5), gridspec_kw={"width_ratios": [1, 1]})
vmax = np.abs(P0).max()
im1 = ax1.imshow(P0, cmap="PuOr", vmin=-vmax, vmax=vmax, aspect="auto")
ax1.set(title="raw prompt P (eq (2))", xlabel="column i (q = query)", ylabel="row (last = label y_i)")
fig.colorbar(im1, ax=ax1, shrink=0.8)
vmax = np.abs(coords).max()
im2 = ax2.imshow(coords, cmap="PuOr", vmin=-vmax, vmax=vmax, aspect="auto")
names = [f"mu{j + 1}" for j in range(world.M1)] + [f"nu{k + 1}" for k in range(world.M2)] + \
        [f"v*{s + 1}" for s in range(world.V)] + ["label"]
ax2.set_yticks(range(len(names)), names, fontsize=7)
for i in np.flatnonzero(train.outlier[n]):
    ax2.add_patch(plt.Rectangle((i - 0.5, -0.5), 1, len(names), fill=False, ec="black", lw=1.2))
ax2.set(title=f"the same prompt in pattern coordinates (task mu{train.task[n, 0] + 1} -> +1, "
              f"mu{train.task[n, 1] + 1} -> -1; outliers boxed)", xlabel="column i (q = query)")
ax2.title.set_fontsize(9)
fig.colorbar(im2, ax=ax2, shrink=0.8)
for ax in (ax1, ax2):
    ax.set_xticks(range(l0 + 1), columns, fontsize=7)
fig.tight_layout()
print(f"prompt {n + 1}: z = {train.z[n]:+.0f}, examples with an outlier: "
      f"{(np.flatnonzero(train.outlier[n]) + 1).tolist()}")
check("pattern coordinates: shape", coords.shape, "== (20, 21)",
      "M1 + M2 + V = 19 pattern rows and the label row, for l = 20 examples and the query")
check("max |largest mu coordinate of a column - 1|", np.max(np.abs(coords[:world.M1].max(axis=0) - 1)), "<= 1e-12",
      "every column holds one relevant pattern mu_j, with coefficient 1")
check("max |v* coordinate of a boxed column - 2|",
      np.max(np.abs(np.abs(coords[world.M1 + world.M2:-1, :-1][:, train.outlier[n]]).max(axis=0) - 2)), "<= 1e-9",
      "the boxed columns carry an outlier of size kappa_a = 2")
saved = show_figure(fig, "02_prompt")
print("Done: tutorial 2, patterns, tasks, and training and testing prompts with outliers (Section 3.2)"
      + (f"; figure saved in {saved.parent}" if saved else ""))

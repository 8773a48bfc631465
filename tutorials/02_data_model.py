# %% [markdown]
# # Tutorial 2 — The data model: patterns, tasks, prompts and outliers
#
# Paper: Section 3.2 (eqs (6), (7), Definitions 1 and 2, Condition 1), eq (11) and Section 4.
#
# Everything the model sees is built from a few orthogonal directions in R^d: relevant patterns
# mu_j (they decide the label), irrelevant patterns nu_k (noise), and outlier patterns v*_s.
# We build the Section 4 world, list the tasks, draw training and testing prompts, check their
# statistics against the definitions, and look at one prompt as an image.
#
# Run: `python tutorials/02_data_model.py` (a few seconds).  NUMPY_MAMBA_QUICK=1 uses fewer
# prompts for the statistics (the tests use it); full mode uses 20,000 and still takes seconds.

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

import numpy_mamba as nm

QUICK = os.environ.get("NUMPY_MAMBA_QUICK") == "1"
FIGDIR = os.environ.get("NUMPY_MAMBA_FIGDIR")          # set it to save the figures as PNG
N_STATS = 2000 if QUICK else 20000                      # prompts used for the statistics
np.set_printoptions(precision=3, suppress=True)


def show(fig, name):
    """Show a figure (a no-op under the non-interactive Agg backend); save it if FIGDIR is set."""
    if FIGDIR:
        fig.savefig(os.path.join(FIGDIR, f"{name}.png"), dpi=120, bbox_inches="tight")
    if "agg" not in matplotlib.get_backend().lower():
        plt.show()
    plt.close(fig)


# %% [markdown]
# ## Patterns (Section 3.2)
#
# M1 relevant patterns mu_j and M2 irrelevant patterns nu_k, all orthogonal, with
# ||mu_j|| = ||nu_k|| = beta; V outlier patterns v*_s orthogonal to all of them (unit norm).
# Section 4: d = 30, M1 = 6, M2 = 10, V = 3, beta = 3.

# %%
world = nm.make_world(d=30, M1=6, M2=10, V=3, beta=3.0, rng=np.random.default_rng([0, 0]))
patterns = np.vstack([world.mu, world.nu, world.v_star])          # (M1 + M2 + V, d)
gram = patterns @ patterns.T
print(f"d = {world.d}, M1 = {world.M1}, M2 = {world.M2}, V = {world.V}, beta = {world.beta}")
print("norms of mu, nu, v*:", np.linalg.norm(world.mu, axis=1)[:2], np.linalg.norm(world.nu, axis=1)[:2],
      np.linalg.norm(world.v_star, axis=1))
print(f"largest off-diagonal |<pattern, pattern'>| = {np.max(np.abs(gram - np.diag(np.diag(gram)))):.1e}")

# %% [markdown]
# ## Tasks: T, the training tasks T_tr (Condition 1) and the unseen ones
#
# A task (a, b) labels inputs containing mu_a with +1 and mu_b with -1.  T holds every ordered
# pair, M1 (M1 - 1) = 30 tasks.  Condition 1 asks the training tasks to cover every pattern and
# label equally; the paper's construction: task i maps mu_i -> +1 and mu_{i+1} -> -1, cyclically.
# The other 24 tasks are never seen in training, and the test error (5) averages over all of T.

# %%
T_tr, T_all, T_unseen = world.training_tasks(), world.all_tasks(), world.unseen_tasks()
print("T_tr (a, b):", [(int(a), int(b)) for a, b in T_tr])
print(f"|T| = {len(T_all)}, |T_tr| = {len(T_tr)}, unseen = {len(T_unseen)}")
for j in range(world.M1):          # Condition 1: |T_tr| / M1 tasks map mu_j to +1, and to -1
    plus, minus = np.sum(T_tr[:, 0] == j), np.sum(T_tr[:, 1] == j)
    assert plus == minus == len(T_tr) // world.M1
print("Condition 1 holds: each mu_j is mapped to +1 by exactly one training task and to -1 by one.")

# %% [markdown]
# ## Training prompts (Definition 1, eq (6))
#
#     x = mu_j + kappa nu_k + kappa_a v*_s   with probability p_a,
#     x = mu_j + kappa nu_k                  with probability 1 - p_a,             (6)
#
# kappa ~ U(-K, K), K <= 1/2, s uniform in [V].  An example with an outlier gets a *random*
# label; a clean one gets its task label; the query has no outlier.  Section 4: p_a = 0.6,
# kappa_a = 2, l_tr = 20.

# %%
train = nm.training_batch(world, N_STATS, 20, p_a=0.6, K=0.5, kappa_a=2.0, rng=np.random.default_rng([0, 1]))
X = train.P[:, :-1, :-1]                                          # context inputs: (B, d, l)
y = train.P[:, -1, :-1]                                           # context labels: (B, l)
# the relevant pattern of each example, read back from its input: the mu_j it contains
coeff_mu = np.einsum("jd,bdl->bjl", world.mu, X) / world.beta**2  # (B, M1, l): 1 on its mu_j
rel = coeff_mu.argmax(axis=1)
task_label = np.where(rel == train.task[:, :1], 1.0, -1.0)
kappa_a_read = np.linalg.norm(np.einsum("sd,bdl->bsl", world.v_star, X), axis=1)  # outlier size
print(f"fraction of examples with an outlier: {train.outlier.mean():.3f}   (p_a = 0.6)")
print(f"outlier magnitude read back from x: {np.unique(np.round(kappa_a_read[train.outlier], 6))}   (kappa_a = 2)")
print(f"clean examples labelled by their task: {np.mean(y[~train.outlier] == task_label[~train.outlier]):.3f}")
print(f"outlier examples whose label agrees with the task: {np.mean(y[train.outlier] == task_label[train.outlier]):.3f}"
      "   (random labels: ~0.5)")
print(f"the query never has an outlier: |<v*, x_query>| max = "
      f"{np.abs(np.einsum('sd,bd->bs', world.v_star, train.P[:, :-1, -1])).max():.1e}")
print(f"z is the query's task label: {np.all(train.z == np.where(np.einsum('jd,bd->bj', world.mu, train.P[:, :-1, -1]).argmax(1) == train.task[:, 0], 1, -1))}")
print(f"training tasks only: {np.all(world.is_training_task(train.task))}")

# %% [markdown]
# ## Testing prompts (Definition 2, eq (7)) and the unseen outliers (eq (11))
#
#     x = mu_j + kappa' nu_k + kappa_a' v'   with probability alpha,
#     x = mu_j + kappa' nu_k                 with probability 1 - alpha,           (7)
#
# kappa' ~ U(-K', K') with K' > 1 (bigger noise than in training), v' from
#
#     V' = { v = sum_s lambda_s v*_s : sum_s lambda_s >= L > 0, ||v|| = 1 }         (11)
#
# Section 4 uses three such v' (L = 0.3).  Tasks come from all of T, seen and unseen.  The
# label of an outlier example can be any function of x: we implement "flip" (the opposite of
# the clean label), "target" (always +1, as in Example 1's data poisoning) and "random".

# %%
v_test = world.test_outliers()
lam = v_test @ world.v_star.T                                     # coefficients on v*_1..v*_3
print("test outliers v' in the v* basis (rows, unit norm):\n", lam)
print("sum of lambda per v':", lam.sum(axis=1), " >= L = 0.3:", np.all(lam.sum(axis=1) >= 0.3 - 1e-12))
for rule in ("flip", "target", "random"):
    test = nm.testing_batch(world, N_STATS, 20, alpha=0.5, K_prime=1.5, kappa_a_prime=2.0,
                            label_rule=rule, rng=np.random.default_rng([0, 2]))
    Xt, yt = test.P[:, :-1, :-1], test.P[:, -1, :-1]
    relt = np.einsum("jd,bdl->bjl", world.mu, Xt).argmax(axis=1)
    task_t = np.where(relt == test.task[:, :1], 1.0, -1.0)
    agree = np.mean(yt[test.outlier] == task_t[test.outlier])
    plus = np.mean(yt[test.outlier] == 1)
    print(f"label_rule={rule:<7} outlier fraction {test.outlier.mean():.3f} (alpha = 0.5);"
          f" outlier labels agreeing with the task {agree:.3f}; equal to +1: {plus:.3f}")
print(f"unseen tasks among test prompts: {np.mean(~world.is_training_task(test.task)):.3f}"
      f"   (24 of 30 tasks: 0.8)")

# %% [markdown]
# ## Where the outliers sit: placements (Table 1)
#
# Eq (7) draws each example's outlier independently ("random").  Section 4.2 also puts all
# outlier examples farthest from the query (FQ) or closest to it (CQ); with alpha = 0.5 and
# l = 20 that is exactly 10 outlier examples.  Tutorial 6 shows why Mamba cares and the linear
# Transformer does not.

# %%
for placement in ("random", "farthest", "closest"):
    b = nm.testing_batch(world, 3, 20, alpha=0.5, placement=placement, rng=np.random.default_rng([0, 3]))
    print(f"{placement:<9}", "".join("X" if o else "." for o in b.outlier[0]), " (X = outlier; the query is to the right)")

# %% [markdown]
# ## One prompt as an image
#
# Left: the raw prompt P (d+1 rows, l+1 columns).  It is hard to read because the patterns are
# random directions.  Right: the same prompt in pattern coordinates, <p_i, pattern> / ||pattern||^2
# for mu, nu and v*, and the label row: every column holds one mu_j (1), one nu_k (kappa), maybe
# an outlier (kappa_a), and the labels of outlier columns are random.

# %%
n = 0
P0 = train.P[n]
coords = np.vstack([world.mu / world.beta**2, world.nu / world.beta**2, world.v_star]) @ P0[:-1]
coords = np.vstack([coords, P0[-1:]])                             # (M1 + M2 + V + 1, l+1)
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 5), gridspec_kw={"width_ratios": [1, 1]})
vmax = np.abs(P0).max()
im1 = ax1.imshow(P0, cmap="PuOr", vmin=-vmax, vmax=vmax, aspect="auto")
ax1.set(title="raw prompt P (eq (2))", xlabel="column i (last = query)", ylabel="row (last = label y_i)")
fig.colorbar(im1, ax=ax1, shrink=0.8)
vmax = np.abs(coords).max()
im2 = ax2.imshow(coords, cmap="PuOr", vmin=-vmax, vmax=vmax, aspect="auto")
names = [f"mu{j + 1}" for j in range(world.M1)] + [f"nu{k + 1}" for k in range(world.M2)] + \
        [f"v*{s + 1}" for s in range(world.V)] + ["label"]
ax2.set_yticks(range(len(names)), names, fontsize=7)
for i in np.flatnonzero(train.outlier[n]):
    ax2.add_patch(plt.Rectangle((i - 0.5, -0.5), 1, len(names), fill=False, ec="black", lw=1.2))
ax2.set(title=f"the same prompt in pattern coordinates (task mu{train.task[n, 0] + 1} -> +1, "
              f"mu{train.task[n, 1] + 1} -> -1; outliers boxed)", xlabel="column i (last = query)")
ax2.title.set_fontsize(9)
fig.colorbar(im2, ax=ax2, shrink=0.8)
fig.tight_layout()
show(fig, "02_prompt")
print(f"prompt {n}: z = {train.z[n]:+.0f}, outlier columns {np.flatnonzero(train.outlier[n]).tolist()}")
print("tutorial 2 done")

"""Section 3.2: patterns, tasks, and the prompts of Definitions 1 and 2 laid out as eq (2)."""
import numpy as np
import pytest

from numpy_mamba import make_world, testing_batch, training_batch


@pytest.fixture(scope="module")
def world():
    return make_world(rng=0)


def test_patterns_are_orthogonal_with_norm_beta_or_one(world):
    allp = np.vstack([world.mu, world.nu, world.v_star])
    gram = allp @ allp.T
    norms = np.r_[np.full(world.M1, 3.0), np.full(world.M2, 3.0), np.ones(world.V)]
    np.testing.assert_allclose(gram, np.diag(norms ** 2), atol=1e-12)


def test_tasks_satisfy_condition_1(world):
    tr = world.training_tasks()
    assert len(world.all_tasks()) == world.M1 * (world.M1 - 1)
    assert len(world.unseen_tasks()) == len(world.all_tasks()) - world.M1
    for j in range(world.M1):                       # each mu_j maps to +1 and to -1 equally often
        assert np.sum(tr[:, 0] == j) == np.sum(tr[:, 1] == j) == len(tr) // world.M1
    assert world.is_training_task(tr).all() and not world.is_training_task(world.unseen_tasks()).any()


def test_training_prompts_follow_eq2_layout_and_definition_1_labels(world):
    b = training_batch(world, 2000, 20, p_a=0.6, K=0.5, kappa_a=2.0, rng=1)
    assert b.P.shape == (2000, 31, 21) and np.all(b.P[:, -1, -1] == 0)
    X = b.P[:, :-1, :]                              # (B, d, l+1)
    rel = np.einsum("jd,bdl->bjl", world.mu, X) / 9.0       # mu_j coefficient of each token
    assert np.allclose(np.sort(rel, axis=1)[:, -1], 1.0) and np.allclose(np.sort(rel, axis=1)[:, :-1], 0.0)
    out = np.einsum("sd,bdl->bsl", world.v_star, X)[:, :, :-1]
    np.testing.assert_allclose(np.abs(out).sum(axis=1), 2.0 * b.outlier, atol=1e-12)
    assert np.all(np.abs(np.einsum("sd,bd->bs", world.v_star, X[:, :, -1])) < 1e-12)   # clean query
    assert abs(b.outlier.mean() - 0.6) < 0.01
    kappa = np.einsum("kd,bdl->bkl", world.nu, X).sum(axis=1) / 9.0
    assert np.abs(kappa).max() <= 0.5
    # clean examples carry the task's label; outlier examples a random one
    a, bb = b.task[:, :1], b.task[:, 1:]
    j = rel[:, :, :-1].argmax(axis=1)
    clean_y = np.where(j == a, 1.0, np.where(j == bb, -1.0, np.nan))
    assert not np.isnan(clean_y).any()
    y = b.P[:, -1, :-1]
    assert np.all(y[~b.outlier] == clean_y[~b.outlier])
    assert abs(np.mean(y[b.outlier] == clean_y[b.outlier]) - 0.5) < 0.02
    assert np.all(b.z == np.where(rel[:, :, -1].argmax(axis=1) == a[:, 0], 1.0, -1.0))
    assert np.all(b.same_pattern == (j == rel[:, :, -1:].argmax(axis=1)))
    assert world.is_training_task(b.task).all()


@pytest.mark.parametrize("rule,expect", [("flip", -1.0), ("target", None), ("random", None)])
def test_testing_prompts_follow_definition_2_label_rules(world, rule, expect):
    b = testing_batch(world, 1000, 20, alpha=0.5, label_rule=rule, target=-1, kappa_a_prime=4.0, rng=2)
    X = b.P[:, :-1, :]
    rel = np.einsum("jd,bdl->bjl", world.mu, X).argmax(axis=1)
    clean_y = np.where(rel[:, :-1] == b.task[:, :1], 1.0, -1.0)
    y = b.P[:, -1, :-1]
    assert np.all(y[~b.outlier] == clean_y[~b.outlier])
    if rule == "flip":
        assert np.all(y[b.outlier] == -clean_y[b.outlier])
    elif rule == "target":
        assert np.all(y[b.outlier] == -1.0)
    else:
        assert abs(np.mean(y[b.outlier] == 1.0) - 0.5) < 0.03
    out = X[:, :, :-1] - np.einsum("kd,bkl->bdl", world.nu, np.einsum("kd,bdl->bkl", world.nu, X[:, :, :-1]) / 9.0)
    out -= np.einsum("jd,bjl->bdl", world.mu, np.einsum("jd,bdl->bjl", world.mu, X[:, :, :-1]) / 9.0)
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 4.0 * b.outlier, atol=1e-10)  # kappa_a' v', |v'| = 1
    assert set(map(tuple, b.task)) <= set(map(tuple, world.all_tasks()))
    assert not world.is_training_task(b.task).all()          # unseen tasks are drawn too


@pytest.mark.parametrize("placement", ["farthest", "closest"])
def test_outliers_take_exactly_alpha_l_slots_farthest_from_or_closest_to_the_query(world, placement):
    b = testing_batch(world, 50, 20, alpha=0.3, placement=placement, rng=3)
    assert np.all(b.outlier.sum(axis=1) == 6)
    positions = np.flatnonzero(b.outlier[0])
    expected = np.arange(6) if placement == "farthest" else np.arange(14, 20)
    np.testing.assert_array_equal(positions, expected)


def test_test_outliers_are_unit_combinations_with_L_03(world):
    v = world.test_outliers()
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0)
    lam = v @ world.v_star.T
    assert lam.sum(axis=1).min() >= 0.3                     # eq (11) with L = 0.3


def test_same_seed_gives_the_same_prompts(world):
    a = training_batch(world, 8, 5, p_a=0.6, rng=np.random.default_rng(7))
    b = training_batch(world, 8, 5, p_a=0.6, rng=np.random.default_rng(7))
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("B", [1, 63, 64, 65, 150])
def test_prompts_built_in_pieces_equal_prompts_built_in_one_piece(world, B, monkeypatch):
    import numpy_mamba.data as data
    pieces = (testing_batch(world, B, 20, alpha=0.4, label_rule="random", rng=5),
              training_batch(world, B, 7, p_a=0.6, rng=6))
    monkeypatch.setattr(data, "CHUNK", 10_000)
    whole = (testing_batch(world, B, 20, alpha=0.4, label_rule="random", rng=5),
             training_batch(world, B, 7, p_a=0.6, rng=6))
    for a, b in zip(pieces, whole):
        for x, y in zip(a, b):
            assert np.array_equal(x, y)

"""The benchmark's peers compute what we compute, and the unchecked step is the checked one.

``bench`` divides PyTorch's time by ours; the ratio means something only if both compute the
same thing.  So in float64 the PyTorch peers of numpy_mamba/cli/bench_torch.py must give our F
and every gradient to ~1e-10 (one layer, eq (3); the three-layer stack in both of its PyTorch
forms, Mamba and the linear Transformer).  These tests are skipped when PyTorch is missing (it
is never a dependency).  ``value_and_gradients`` (the unchecked step ``sgd.train`` and ``bench``
run) must equal the public, checked ``gradients``.  No timing is asserted anywhere.
"""
import numpy as np
import pytest

from numpy_mamba import gradients, make_world, training_batch
from numpy_mamba import stack
from numpy_mamba.gradients import value_and_gradients
from numpy_mamba.model import forward, init_params
from numpy_mamba.sgd import sgd_update

MODELS = ["mamba", "linear_transformer"]


def paper_scale_stack(model, B=8, seed=0):
    """Three layers at d = 30, l = 20 (the bench's setting), W_B, W_C, W moved off Algorithm 1's
    diagonal start so no gradient entry is 0 by symmetry; half the prompts on the active hinge side."""
    world = make_world(rng=seed)
    batch = training_batch(world, B, 20, p_a=0.6, rng=seed + 1)
    rng = np.random.default_rng(seed + 2)
    scale = 0.1 if model == "mamba" else 0.02           # the gateless stack grows like the cube
    layers = [stack.LayerParams(*(a + rng.normal(0, scale, a.shape) for a in layer))
              for layer in stack.init_stack(30, 3, rng=seed + 3)]
    F = stack.forward(layers, batch.P, model)
    while np.median(np.abs(F)) < 2:                     # the last layer's O is linear in its W_C
        layers[-1] = layers[-1]._replace(W_C=2 * layers[-1].W_C)
        F = stack.forward(layers, batch.P, model)
    z = np.where(np.arange(B) % 2 == 0, -np.sign(F), np.sign(F))         # misclassified / beyond margin
    return layers, batch.P, z, F


def torch_stack(torch, layers, form, model):
    from numpy_mamba.cli import bench_torch as bt
    leaves = bt.leaves(torch, [a for layer in layers for a in layer])

    def output(p, P):
        return bt.stack_output(torch, [p[i:i + 3] for i in range(0, len(p), 3)], P, model, form)
    return leaves, output


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("form", ["stack_layer", "stack_layer_factored"])
def test_torch_stack_computes_our_F_and_gradients(model, form):
    # If this fails, bench's three-layer ratio compares against a different model (residual,
    # every scan column, the gates or the causal mask differ) or our backward is wrong.
    torch = pytest.importorskip("torch")
    from numpy_mamba.cli import bench_torch as bt
    layers, P, z, F = paper_scale_stack(model)
    assert np.sum(1 - z * F > 0) >= 3 and np.sum(1 - z * F <= 0) >= 3        # both hinge sides
    leaves, output = torch_stack(torch, layers, getattr(bt, form), model)
    Pt, zt = torch.from_numpy(P), torch.from_numpy(z)
    np.testing.assert_allclose(output(leaves, Pt).detach().numpy(), F, rtol=1e-10, atol=0)
    theirs = bt.sgd_step(torch, output, leaves, Pt, zt, 0.5)
    ours = [g for layer in stack.gradients(layers, P, z, model) for g in layer]
    for k, (a, b) in enumerate(zip(ours, theirs)):
        scale = np.abs(a).max()
        assert scale > 0 or (model == "linear_transformer" and k % 3 == 2)     # dW = 0 without gates
        np.testing.assert_allclose(b.numpy(), a, rtol=0, atol=1e-10 * max(scale, 1e-300), err_msg=f"array {k}")
    # the update of eq (19) happened in place: leaf = old - eta * grad
    old = [a for layer in layers for a in layer]
    for k, (leaf, a, g) in enumerate(zip(leaves, old, theirs)):
        np.testing.assert_allclose(leaf.detach().numpy(), a - 0.5 * g.numpy(), rtol=1e-13, atol=1e-13)


def test_torch_eq3_computes_our_F_and_gradients():
    # If this fails, bench's one-layer ratio compares against a different eq (3) model.
    torch = pytest.importorskip("torch")
    from numpy_mamba.cli import bench_torch as bt
    world = make_world(rng=0)
    batch = training_batch(world, 16, 20, p_a=0.6, rng=1)
    params = init_params(world.d, rng=2)
    params = params._replace(W_B=params.W_B + np.random.default_rng(3).normal(0, 0.1, params.W_B.shape))
    F = forward(params, batch.P)
    z = np.where(np.arange(16) % 2 == 0, -np.sign(F), np.sign(F))
    leaves = bt.leaves(torch, params)
    theirs = bt.sgd_step(torch, lambda p, P: bt.eq3_output(torch, *p, P), leaves,
                         torch.from_numpy(batch.P), torch.from_numpy(z), 0.0)
    for name, a, b in zip(params._fields, gradients(params, batch.P, z), theirs):
        assert np.abs(a).max() > 0
        np.testing.assert_allclose(b.numpy(), a, rtol=0, atol=1e-10 * np.abs(a).max(), err_msg=name)


@pytest.mark.parametrize("model", MODELS)
def test_unchecked_step_equals_public_gradients(model):
    # If this fails, sgd.train (which runs value_and_gradients) no longer follows gradients().
    world = make_world(rng=0)
    batch = training_batch(world, 8, 20, p_a=0.6, rng=1)
    params = init_params(world.d, rng=2)
    F, grad = value_and_gradients(model, params, batch.P, batch.z)
    np.testing.assert_array_equal(F, forward(params, batch.P, model))
    for a, b in zip(grad, gradients(params, batch.P, batch.z, model)):
        np.testing.assert_array_equal(a, b)
    layers, P, z, F_stack = paper_scale_stack(model)
    F, grads = stack.value_and_gradients(model, layers, P, z)
    np.testing.assert_array_equal(F, F_stack)
    for ours, public in zip(grads, stack.gradients(layers, P, z, model)):
        for a, b in zip(ours, public):
            np.testing.assert_array_equal(a, b)
    stepped = sgd_update(layers, grads, 0.25)
    np.testing.assert_array_equal(stepped[1].W, layers[1].W - 0.25 * grads[1].W)


def test_bench_prints_one_layer_and_three_layer_rows(capsys):
    # If this fails, bench lost its three-layer rows or the PyTorch columns (or its note that
    # PyTorch is not there).  Tiny sizes, one round: no timing is asserted.
    from numpy_mamba.cli import bench
    assert bench.main(["--cases", "20x4", "--stack-cases", "3x2", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    rows = [line.split() for line in lines if line.split()[:1] in (["mamba"], ["linear_transformer"])]
    assert [r[:3] for r in rows] == [["mamba", "3", "2"], ["linear_transformer", "3", "2"]]
    try:
        import torch  # noqa: F401
    except ImportError:
        assert "PyTorch not timed" in out and all(len(r) == 4 for r in rows)
        return
    for r in rows:
        assert len(r) == 9 and float(r[8]) < 1e-10                      # max relative gradient difference
        np.testing.assert_allclose(float(r[5]), float(r[4]) / float(r[3]), rtol=0.05)   # torch / numpy


def test_bench_without_torch_says_so(capsys):
    from numpy_mamba.cli import bench
    assert bench.main(["--cases", "5x2", "--stack-cases", "3x2", "--repeat", "1", "--no-torch"]) == 0
    out = capsys.readouterr().out
    assert "PyTorch not timed" in out and "torch/numpy" not in out
    assert any(line.split()[:3] == ["mamba", "3", "2"] for line in out.splitlines())


def test_interleaved_medians_times_each_callable_after_a_call_of_its_own(monkeypatch):
    # A fake clock: each callable costs 5 units right after the other one and 1 unit right
    # after itself (as a NumPy step costs more right after PyTorch's).  The bench must time a
    # step after a step of its own, as training runs it: 1 unit each.  Before the untimed call
    # per block, the first call of every block paid 5 and the medians were 3.
    from numpy_mamba.cli import bench
    clock, last = [0.0], [None]

    class FakeTime:
        @staticmethod
        def perf_counter():
            return clock[0]

    def step(name):
        clock[0] += 1.0 if last[0] == name else 5.0
        last[0] = name

    monkeypatch.setattr(bench, "time", FakeTime)
    medians = bench.interleaved_medians({"numpy": lambda: step("numpy"), "torch": lambda: step("torch")},
                                        repeat=5, budget=1e9, block=10.0)
    assert medians == {"numpy": 1.0, "torch": 1.0}

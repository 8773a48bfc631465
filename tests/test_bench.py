"""``bench`` times only what computes our numbers, and the unchecked step is the checked one.

``bench`` divides a peer's time by ours; the ratio means something only if both compute the
same thing, so bench compares each peer's F and every gradient with ours and prints "differs"
instead of a ratio when they are apart by more than ``bench.TOLERANCE``.  The peers here are
fakes in plain NumPy (our own numbers, or our numbers with one entry moved), so this logic runs
wherever the tests run; the PyTorch peers go through the same code when PyTorch is installed.
``Network.F_and_gradients`` (the unchecked step ``sgd.train`` and ``bench`` run) must equal the
public, checked ``gradients``.  No timing is asserted anywhere.
"""
import argparse

import numpy as np
import pytest

from numpy_mamba import gradients, make_world, training_batch
from numpy_mamba import stack
from numpy_mamba.cli import bench
from numpy_mamba.network import network
from numpy_mamba.model import forward, init_params
from numpy_mamba.sgd import sgd_update

MODELS = ["mamba", "linear_transformer"]
SMALL = ["--cases", "20x4", "--stack-cases", "3x2", "--repeat", "1"]


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


# ------------------------------------------------------------------ fake peers in plain NumPy
def eq3_fake(moved=None, by=0.0):
    """A one-layer peer that returns our F and gradients, with entry 0 of array ``moved``
    (0: F, 1..3: dW_B, dW_C, dw) moved by ``by`` times that array's largest |entry|."""
    def make(params, P, z, eta):
        def result():
            arrays = [forward(params, P)] + [g.copy() for g in gradients(params, P, z)]
            if moved is not None:
                arrays[moved].flat[0] += by * np.abs(arrays[moved]).max()
            return arrays[0], arrays[1:]
        return (lambda: network("mamba").F_and_gradients(params, P, z)), result
    return make


def stack_fake(moved=None, by=0.0, models=MODELS):
    """A three-layer peer (for ``models`` only) returning our stack's F and gradients, one entry moved."""
    def make(model, layers, P, z, eta):
        if model not in models:
            return None

        def result():
            arrays = [stack.forward(layers, P, model)] + [g.copy() for layer in stack.gradients(layers, P, z, model)
                                                          for g in layer]
            if moved is not None:
                arrays[moved].flat[0] += by * np.abs(arrays[moved]).max()
            return arrays[0], arrays[1:]
        return (lambda: stack.value_and_gradients(model, layers, P, z)), result
    return make


def fixed_times(monkeypatch):
    """bench's timing replaced: each callable runs once and is scored 2 ms (our step) or 3 ms
    (everything else), so a printed ratio can be checked exactly."""
    def medians(fns, repeat):
        for fn in fns.values():
            fn()
        return {name: 0.002 if name == "numpy" else 0.003 for name in fns}
    monkeypatch.setattr(bench, "interleaved_medians", medians)


def run_tables(capsys, one, three):
    """bench's two tables with peers ``one`` and ``three``: for each, (header cells, rows as
    lists of cells, the lines printed after the rows)."""
    args = argparse.Namespace(cases=[(20, 4), (5, 3)], stack_cases=[(3, 2)], repeat=1)
    world = make_world(rng=0)
    bench.one_layer_rows(args, world, one)
    print("--- end of table")
    bench.stack_rows(args, world, three)
    out = capsys.readouterr().out
    tables = []
    for text in out.split("--- end of table\n"):
        lines = text.splitlines()
        rows = [line.split() for line in lines[1:] if line.split()[:1] and
                (line.split()[0].isdigit() or line.split()[0] in MODELS)]
        tables.append((lines[0].split(), rows, lines[1 + len(rows):]))
    return tables


@pytest.mark.parametrize("by", [0.0, 0.5 * bench.TOLERANCE])
def test_a_peer_that_computes_our_numbers_gets_its_ratio(by, monkeypatch, capsys):
    # If this fails, bench refuses (or miscomputes) the ratio of a peer whose F and gradients
    # are ours within the stated tolerance, or shows a ratio for a model the peer does not cover.
    fixed_times(monkeypatch)
    (header, rows, after), (sheader, srows, safter) = run_tables(
        capsys, {"fake": eq3_fake(3, by)}, {"fake": stack_fake(1, by, models=["mamba"])})
    assert header[-6:] == sheader[-6:] == ["fake", "ms", "fake/numpy", "max", "rel", "diff"]
    assert [r[:2] for r in rows] == [["20", "4"], ["5", "3"]]
    for r in rows + srows[:1]:
        assert r[-3:-1] == ["3.000", "1.50"], r                     # 3 ms, 3 ms / 2 ms
        assert float(r[-1]) <= bench.TOLERANCE and (float(r[-1]) > 0) == (by > 0), r
    assert srows[1][:3] == ["linear_transformer", "3", "2"] and srows[1][-3:-1] == ["-", "-"], srows
    assert "differs" not in " ".join(after + safter)


@pytest.mark.parametrize("moved", [0, 1, 2, 3])
def test_a_peer_off_by_more_than_the_tolerance_gets_no_ratio(moved, monkeypatch, capsys):
    # If this fails, bench prints a speed ratio against a peer whose F (moved = 0) or one of whose
    # gradients (1, 2, 3: dW_B, dW_C, dw; in the stack W_B, W_C of layers 1-3) is not ours.
    fixed_times(monkeypatch)
    by = 100 * bench.TOLERANCE
    stack_moved = [0, 1, 5, 8][moved]                  # F, W_B of layer 1, W_C of 2 and of 3 (never 0)
    (_, rows, after), (_, srows, safter) = run_tables(capsys, {"fake": eq3_fake(moved, by)},
                                                      {"fake": stack_fake(stack_moved, by)})
    assert len(rows) == 2 and len(srows) == 2
    for r in rows + srows:
        assert r[-3:-1] == ["3.000", "differs"], r
        assert float(r[-1]) == pytest.approx(by, rel=1e-3), r
    for where in ("l = 20, B = 4", "l = 5, B = 3"):
        assert (f"fake at {where}: F or a gradient differs from ours by 1.0e-08 relative (tolerance 1e-10); "
                "its time is not compared") in after, after
    assert [line.split(":")[0] for line in safter if "differs" in line] == \
        ["fake at mamba, l = 3, B = 2", "fake at linear_transformer, l = 3, B = 2"], safter


def test_a_peer_that_returns_nan_gets_no_ratio(monkeypatch, capsys):
    # If this fails, a NaN gradient from a peer slips past the comparison (NaN > tol is False).
    fixed_times(monkeypatch)
    (_, rows, after), _ = run_tables(capsys, {"fake": eq3_fake(2, np.nan)}, {})
    assert all(r[-2:] == ["differs", "nan"] for r in rows), rows
    assert len([line for line in after if "differs from ours by nan" in line]) == 2


def test_peer_difference_is_relative_per_array_and_refuses_what_cannot_be_compared():
    # If this fails, bench's check scales a difference by the wrong array, lets a NaN, a missing
    # array or another shape pass, or calls two exactly equal zero gradients different.
    ours = [np.array([1.0, -4.0]), np.array([[0.0, 0.0]]), np.array([1e-3, 0.0])]
    assert bench.peer_difference(ours, [a.copy() for a in ours]) == 0.0
    theirs = [ours[0] + [0.0, 4e-9], ours[1], ours[2] + [0.0, 2e-12]]
    assert bench.peer_difference(ours, theirs) == pytest.approx(2e-9)    # 2e-12 / 1e-3 beats 4e-9 / 4
    assert bench.peer_difference(ours, [ours[0], ours[1] + 1e-200, ours[2]]) > 1       # ours is 0 there
    assert np.isnan(bench.peer_difference(ours, [ours[0] * np.nan, ours[1], ours[2]]))
    assert bench.peer_difference(ours, ours[:2]) == np.inf
    assert bench.peer_difference(ours, [ours[0], ours[1].T, ours[2]]) == np.inf


def test_bench_without_torch_prints_both_tables_and_says_so(capsys):
    # If this fails, bench lost its one-layer or three-layer rows, or its note that PyTorch was
    # not timed.  Tiny sizes, one round: no timing is asserted.
    assert bench.main(SMALL + ["--no-torch"]) == 0
    out = capsys.readouterr().out
    assert "PyTorch not timed" in out and "/numpy" not in out and "differs" not in out
    rows = [line.split() for line in out.splitlines() if line.split()[:1] in (["mamba"], ["linear_transformer"])]
    assert [r[:3] for r in rows] == [["mamba", "3", "2"], ["linear_transformer", "3", "2"]]
    assert all(len(r) == 4 for r in rows)
    assert any(line.split()[:2] == ["20", "4"] for line in out.splitlines())


def test_pytorch_peers_are_wired_as_bench_expects():
    # If this fails, bench would time (and check) other PyTorch peers than bench_torch's, or ask
    # for the gate-tensor form of the gateless model.  Building a peer's description needs no
    # PyTorch; only running it does.
    from numpy_mamba.cli import bench_torch
    torch = object()
    one, three = bench.torch_peers(torch)
    assert list(one) == ["torch"] and list(three) == ["torch", "torch G"]
    assert one["torch"].func is bench_torch.eq3_peer and one["torch"].args == (torch,)
    assert three["torch"].args == (torch, bench_torch.stack_layer_factored)
    assert three["torch G"].args == (torch, bench_torch.stack_layer)
    assert three["torch G"]("linear_transformer", [], None, None, 0.0) is None


@pytest.mark.parametrize("model", MODELS)
def test_unchecked_step_equals_public_gradients(model):
    # If this fails, sgd.train (which runs Network.F_and_gradients) no longer follows gradients().
    world = make_world(rng=0)
    batch = training_batch(world, 8, 20, p_a=0.6, rng=1)
    params = init_params(world.d, rng=2)
    F, grad = network(model).F_and_gradients(params, batch.P, batch.z)
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


def test_interleaved_medians_times_each_callable_after_a_call_of_its_own(monkeypatch):
    # A fake clock: each callable costs 5 units right after the other one and 1 unit right
    # after itself (as a NumPy step costs more right after PyTorch's).  The bench must time a
    # step after a step of its own, as training runs it: 1 unit each.  Without the untimed call
    # that opens each block, the first call of every block would pay 5 and the medians be 3.
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


def test_bench_names_the_machine_it_ran_on():
    # Ratios between implementations differ between machines; a table without its machine
    # cannot be compared with another one.
    from numpy_mamba.cli import bench
    text = bench.machine()
    assert "logical cores" in text and "Python" in text


def test_one_layer_row_units(monkeypatch, capsys):
    # If this fails, a column of the one-layer table is off by a unit (ms, prompts/s, us per
    # prompt-token): with every step scored 2 ms and the pass 3 ms, a row of l = 20, B = 4 reads
    # 2.000 ms, 2000 prompts/s, 25.000 us per prompt-token, 3.0000 ms, 0.7 passes.
    fixed_times(monkeypatch)
    (header, rows, _), _ = run_tables(capsys, {}, {})
    assert header[:8] == ["l", "B", "numpy", "ms", "prompts/s", "us/(B*l)", "pass", "ms"]
    assert rows[0][:8] == ["20", "4", "2.000", "2000", "25.000", "3.0000", "0.7", "3.000"], rows[0]

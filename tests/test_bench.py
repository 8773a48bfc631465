"""What ``bench`` promises: a peer's ratio only where its numbers are ours, and every column in its unit.

``bench`` divides a peer's time by ours; the ratio means something only if both compute the same
thing, so bench compares each peer's F and every gradient with ours and prints "differs" instead
of a ratio when they are apart by more than ``peers.TOLERANCE`` (benchmarks/peers.py).  The peers here are fakes in
plain NumPy (our own numbers, or our numbers with one entry moved), so this logic runs wherever
the tests run; the PyTorch and JAX peers go through the same code (benchmarks/peers.py) when they are
installed.  No
timing is asserted anywhere: the clock is replaced where a unit is checked.
"""
import argparse

import numpy as np
import pytest

from numpy_mamba import gradients, make_world, stack
from numpy_mamba.cli import bench

bench_peers = bench.bench_peers()        # benchmarks/peers.py of this clone
import jax_peers as bench_jax  # noqa: E402  (benchmarks/, put on sys.path by bench_peers)
import torch_peers as bench_torch  # noqa: E402
from numpy_mamba.model import forward

MODELS = ["mamba", "linear_transformer"]


def eq3_fake(moved=None, by=0.0):
    """A one-layer peer that returns our F and gradients, with entry 0 of array ``moved``
    (0: F, 1..3: dW_B, dW_C, dw) moved by ``by`` times that array's largest |entry|."""
    def make(params, P, z, eta):
        def result():
            arrays = [forward(params, P)] + [g.copy() for g in gradients(params, P, z)]
            if moved is not None:
                arrays[moved].flat[0] += by * np.abs(arrays[moved]).max()
            return arrays[0], arrays[1:]
        return (lambda: None), result
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
        return (lambda: None), result
    return make


def fixed_times(monkeypatch, times):
    """bench's clock replaced: each callable runs once and is scored ``times[name]`` seconds (3 ms
    for a peer), and a step's peak memory is half of its P, so every printed unit can be checked."""
    def medians(fns, repeat):
        for fn in fns.values():
            fn()
        return {name: times.get(name, 0.003) for name in fns}
    monkeypatch.setattr(bench, "interleaved_medians", medians)
    monkeypatch.setattr(bench, "peak_memory", lambda fn: (fn(), 0.5 * 8 * 4 * 9 * 21)[1])   # half of P (4, 9, 21)


def run_tables(capsys, one, three):
    """bench's two tables with peers ``one`` and ``three``, d = 8: for each, (header cells, rows as
    lists of cells, the lines printed after the rows)."""
    args = argparse.Namespace(cases=[(20, 4), (5, 3)], stack_cases=[(3, 2)], repeat=1)
    world = make_world(d=8, M1=3, M2=2, V=2, rng=0)
    bench.one_layer_rows(args, world, one)
    print("--- end of table")
    bench.stack_rows(args, world, three)
    tables = []
    for text in capsys.readouterr().out.split("--- end of table\n"):
        lines = text.splitlines()
        rows = [line.split() for line in lines[1:] if line.split()[:1] and
                (line.split()[0].isdigit() or line.split()[0] in MODELS)]
        tables.append((lines[0].split(), rows, lines[1 + len(rows):]))
    return tables


@pytest.mark.parametrize("moved, by", [(0, 0.0), (1, 0.5 * bench_peers.TOLERANCE), (2, 100 * bench_peers.TOLERANCE),
                                      (3, np.nan), (0, 100 * bench_peers.TOLERANCE)])
def test_a_peer_gets_its_ratio_only_if_its_numbers_are_ours(moved, by, monkeypatch, capsys):
    # If this fails, bench prints a speed ratio against a peer whose F (moved = 0) or one of whose
    # gradients (1, 2, 3: dW_B, dW_C, dw; in the stack W_B, W_C of layers 1-3) is not ours within
    # the tolerance (or is NaN), refuses one that is, or does not say which peer differed by how much.
    fixed_times(monkeypatch, {"numpy": 0.002})
    stack_moved = [0, 1, 5, 8][moved]                  # F, W_B of layer 1, W_C of 2 and of 3 (never 0)
    (_, rows, after), (_, srows, safter) = run_tables(capsys, {"fake": eq3_fake(moved, by)},
                                                      {"fake": stack_fake(stack_moved, by, models=["mamba"])})
    agrees = by <= bench_peers.TOLERANCE
    for r in rows + srows[:1]:
        assert r[-2] == ("1.50" if agrees else "differs"), r       # 3 ms / 2 ms
        assert (np.isnan(float(r[-1])) if np.isnan(by) else float(r[-1]) == pytest.approx(by, rel=1e-3, abs=1e-15)), r
    assert srows[1][-3:-1] == ["-", "-"], srows                   # no such peer for the gateless stack
    refused = [line for line in after + safter if "differs from ours" in line]
    assert len(refused) == (0 if agrees else 3), refused
    if by == 100 * bench_peers.TOLERANCE:
        assert ("fake at l = 5, B = 3: F or a gradient differs from ours by 1.0e-08 relative (tolerance 1e-10); "
                "its time is not compared") in after


def test_peer_difference_is_relative_per_array_and_refuses_what_cannot_be_compared():
    # If this fails, bench's check scales a difference by the wrong array, lets a NaN, a missing
    # array or another shape pass, or calls two exactly equal zero gradients different.
    ours = [np.array([1.0, -4.0]), np.array([[0.0, 0.0]]), np.array([1e-3, 0.0])]
    assert bench_peers.peer_difference(ours, [a.copy() for a in ours]) == 0.0
    theirs = [ours[0] + [0.0, 4e-9], ours[1], ours[2] + [0.0, 2e-12]]
    assert bench_peers.peer_difference(ours, theirs) == pytest.approx(2e-9)    # 2e-12 / 1e-3 beats 4e-9 / 4
    assert bench_peers.peer_difference(ours, [ours[0], ours[1] + 1e-200, ours[2]]) > 1       # ours is 0 there
    assert np.isnan(bench_peers.peer_difference(ours, [ours[0] * np.nan, ours[1], ours[2]]))
    assert bench_peers.peer_difference(ours, ours[:2]) == np.inf
    assert bench_peers.peer_difference(ours, [ours[0], ours[1].T, ours[2]]) == np.inf


def test_every_column_of_a_row_is_in_its_unit(monkeypatch, capsys):
    # If this fails, a column is off by a unit: with the step scored 2 ms, the public reading call 2.2 ms,
    # the pass 0.5 ms, a peer 3 ms and the peak half of P, a row of l = 20, B = 4 reads 2.000 ms,
    # 4.0 passes, 1.10, 0.50, 0.5000 ms, then the peer's 3.000 ms, 6.0 passes and 1.50; at
    # l = 1000, B = 64, d = 30, P is 64 x 31 x 1001 float64, so GB/s is its bytes over 2 ms (0.5 ms).
    fixed_times(monkeypatch, {"numpy": 0.002, "reading": 0.0022, "pass": 0.0005})
    (header, rows, _), (sheader, srows, _) = run_tables(capsys, {"fake": eq3_fake()}, {"fake": stack_fake()})
    assert header == ["l", "B", "numpy", "ms", "passes", "GB/s", "reading", "peak/P", "pass", "ms", "pass", "GB/s",
                      "fake", "ms", "passes", "fake/numpy", "max", "rel", "diff"]
    assert rows[0] == ["20", "4", "2.000", "4.0", "0.0", "1.10", "0.50", "0.5000", "0.0", "3.000", "6.0", "1.50",
                       "0.0e+00"], rows[0]
    assert sheader[:6] == ["model", "l", "B", "numpy", "ms", "reading"]
    assert srows[0][:6] == ["mamba", "3", "2", "2.00", "1.10", "3.000"]
    big = argparse.Namespace(cases=[(1000, 64)], stack_cases=[], repeat=1)
    bench.one_layer_rows(big, make_world(rng=0), {})
    row = capsys.readouterr().out.splitlines()[1].split()
    assert row[4] == f"{64 * 31 * 1001 * 8 / 1e9 / 0.002:.1f}" and row[8] == f"{64 * 31 * 1001 * 8 / 1e9 / 0.0005:.1f}"


def test_bench_runs_without_peers_and_names_the_machine(capsys):
    # If this fails, bench lost a table, its machine line, its note on what was not timed, or its
    # refusal of a malformed --cases as a usage error.  Tiny sizes, one round: no timing is asserted.
    assert bench.main(["--cases", "20x4", "--stack-cases", "3x2", "--repeat", "1", "--no-torch", "--no-jax"]) == 0
    out = capsys.readouterr().out
    assert "logical cores" in out and "PyTorch and JAX not timed" in out and "/numpy" not in out
    rows = [line.split() for line in out.splitlines() if line.split()[:1] in (["mamba"], ["linear_transformer"])]
    assert [r[:3] for r in rows] == [["mamba", "3", "2"], ["linear_transformer", "3", "2"]]
    assert any(line.split()[:2] == ["20", "4"] for line in out.splitlines())
    with pytest.raises(SystemExit) as info:
        bench.main(["--cases=20x0", "--no-torch", "--no-jax"])
    assert info.value.code == 2 and "LxB" in capsys.readouterr().err


def test_the_peers_are_wired_as_bench_expects(monkeypatch):
    # If this fails, bench would time (and check) other peers than bench_torch's and bench_jax's,
    # build the gate-tensor form of the gateless model or one too large to run, or leave a library
    # on more than one thread.  Building a peer's description needs neither library.
    class Torch:
        __version__ = "fake"
        threads = None

        def set_num_threads(self, n):
            Torch.threads = n

    class Jax:
        __version__ = "fake"
        config = type("Config", (), {"update": lambda self, key, value: setattr(Jax, "x64", (key, value))})()

    monkeypatch.setattr(bench_peers, "_optional", {"torch": Torch(), "jax": Jax()}.get)
    monkeypatch.delenv("XLA_FLAGS", raising=False)
    one, three, versions = bench_peers.load_peers(no_torch=False, no_jax=False)
    assert list(one) == ["torch", "jax"] and list(three) == ["torch", "torch G", "jax"]
    assert one["torch"].func is bench_torch.eq3_peer and one["jax"].func is bench_jax.eq3_peer
    assert three["torch"].args[1] is bench_torch.stack_layer_factored and three["jax"].func is bench_jax.stack_peer
    assert Torch.threads == 1 and Jax.x64 == ("jax_enable_x64", True) and "intra_op_parallelism_threads=1" in versions
    assert bench.one_thread() in ("OpenBLAS, 1 thread", "BLAS threads as found: set OPENBLAS_NUM_THREADS=1 for one")
    P = np.zeros((64, 31, 21))
    assert three["torch G"]("linear_transformer", [], P, None, 0.0) is None
    assert three["torch G"]("mamba", [], np.zeros((1024, 31, 21)), None, 0.0) is None   # 112 MB of gates
    assert bench_peers.load_peers(no_torch=True, no_jax=True)[:2] == ({}, {})


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


def test_bench_outside_a_clone_times_numpy_alone_and_says_where_the_peers_are(monkeypatch, tmp_path, capsys):
    """If this fails, an installed package without a clone beside it (no benchmarks/) breaks bench, or
    bench does not say why no peer was timed: the peers live outside the package."""
    monkeypatch.setattr(bench, "BENCHMARKS", tmp_path)
    fixed_times(monkeypatch, {"numpy": 0.002, "reading": 0.003, "pass": 0.001})
    assert bench.main(["--repeat", "1", "--cases", "3x4", "--stack-cases", "3x4"]) == 0
    out = capsys.readouterr().out
    assert "their peers are in benchmarks/ of a clone" in out and "torch" not in out.split("\n")[1]

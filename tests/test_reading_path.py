"""What a reader steps into: the names ``numpy_mamba`` exports run the reading forms.

``sys.settrace`` records every function the call enters; the test keeps those defined in the
package's files.  If a test here fails, a public call of the core runs fused or tiled code
(``numpy_mamba/fused/``), wanders through more than four of the package's files, or reaches the
equation's terms only several calls deep.
"""
import sys
from pathlib import Path

import numpy as np
import pytest

import numpy_mamba
from numpy_mamba import stack
from tests.helpers import random_problem, stack_problem

PACKAGE = Path(numpy_mamba.__file__).resolve().parent
READING = {"_checks.py", "model.py", "loss.py", "gradients.py", "network.py", "layer.py", "stack.py", "rmsnorm.py"}


def trace(call):
    """[(file relative to the package, function name, depth)] of every package function ``call()``
    enters, in order; depth 1 is the function called."""
    entered, depth = [], [0]

    def tracer(frame, event, arg):
        if event == "call":
            path = Path(frame.f_code.co_filename).resolve()
            if PACKAGE in path.parents:
                depth[0] += 1
                entered.append((str(path.relative_to(PACKAGE)), frame.f_code.co_name, depth[0]))
                return local
        return None

    def local(frame, event, arg):
        if event == "return":
            depth[0] -= 1
        return local

    sys.settrace(tracer)
    try:
        call()
    finally:
        sys.settrace(None)
    return entered


params, _, P, z = random_problem(0, d=4, l=5, B=6)
layers, P3, z3 = stack_problem("generic", "mamba", 3, seed=1)
CALLS = {          # the call, where its equations are written, how many package files it may visit
    "forward": (lambda: numpy_mamba.forward(params, P), "forward_terms", 4),
    "gradients": (lambda: numpy_mamba.gradients(params, P, z), "F_and_gradients", 4),
    "hinge_loss": (lambda: numpy_mamba.hinge_loss(params, P, z), "forward_terms", 4),
    "linear_transformer": (lambda: numpy_mamba.gradients(params, P, z, "linear_transformer"), "F_and_gradients", 4),
    "stack.forward": (lambda: stack.forward(layers, P3), "stack_forward", 4),
    "stack.gradients": (lambda: stack.gradients(layers, P3, z3), "stack_backward", 4),
    "network": (lambda: numpy_mamba.network("mamba").value_and_gradients(params, P, z), "F_and_gradients", 5),
}


@pytest.mark.parametrize("name", CALLS)
def test_a_public_call_visits_only_reading_modules(name):
    call, equation, most = CALLS[name]
    entered = trace(call)
    files = {f for f, _, _ in entered}
    assert files <= READING, f"{name} runs code outside the reading modules: {sorted(files - READING)}"
    assert len(files) <= most, f"{name} visits {len(files)} package files: {sorted(files)}"
    depth = min(d for _, function, d in entered if function == equation)
    assert depth <= 2, f"{name} reaches {equation} only {depth} calls deep: {entered}"


def test_the_trace_sees_the_fused_code_when_it_runs():
    # If this fails, the test above cannot fail: the tracer misses calls into numpy_mamba/fused.
    from numpy_mamba.fused import network
    files = {f for f, _, _ in trace(lambda: network("mamba").value_and_gradients(params, P, z))}
    assert "fused/eq3.py" in files


def test_the_reading_forms_give_the_literal_forms_numbers():
    # The call traced above computes eq (3) and its gradients: the literal forms agree to 1e-12.
    np.testing.assert_allclose(numpy_mamba.forward(params, P), [numpy_mamba.forward_literal(params, p) for p in P],
                               rtol=1e-12, atol=1e-12)
    for a, b in zip(numpy_mamba.gradients(params, P, z), numpy_mamba.gradients_literal(params, P, z)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-13)


def test_no_name_numpy_mamba_exports_runs_fused_code():
    # If this fails, a name of numpy_mamba.__all__ (train on a model's name included) reaches the
    # fused forms: a student stepping into it would land in cache tiling, not in the paper.
    world = numpy_mamba.make_world(d=6, M1=3, M2=2, V=1, rng=0)
    calls = [lambda: numpy_mamba.train(world, numpy_mamba.TrainConfig(T=2, B=4, l_tr=3), "mamba", rng=0),
             lambda: numpy_mamba.gating(params.w, P), lambda: numpy_mamba.attention_scores(params, P),
             lambda: numpy_mamba.zero_one_error(numpy_mamba.forward(params, P), z),
             lambda: numpy_mamba.network("mamba", 2).value_and_gradients(layers[:2], P3, z3)]
    for call in calls:
        files = {f for f, _, _ in trace(call)}
        assert not any(f.startswith("fused") for f in files), sorted(files)

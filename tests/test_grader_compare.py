"""The grader's parent side, without child processes: comparison, hints, known mistakes, problems,
the exercise registry and the child -> parent protocol.

A failure here means the grader can crash on, pass, or mislabel some answer a student returns
(or a message a child sends); the sandbox itself is tested in test_grader_sandbox.py.
"""
import io
import json
import struct

import numpy as np
import pytest

from numpy_mamba import gating, gradients
from numpy_mamba.grader.compare import grade_function
from numpy_mamba.grader.exercises.stack import PARTS
from numpy_mamba.grader.layer_mistakes import LAYER_MISTAKES, mistaken_parts, paths
from numpy_mamba.grader.exercises.gating import gate_mistakes
from numpy_mamba.grader.mistakes import mistakes_for
from numpy_mamba.grader.problems import KINK_MARGIN, ON_KINK
from numpy_mamba.grader.sandbox import Call, Items, Other
from numpy_mamba.grader.sandbox.protocol import ChildRun, Malformed, Reader, decode, encode
from numpy_mamba.grader.registry import Exercise, Function, all_exercises, identify, prepare, register
from numpy_mamba.gradcheck import numerical_gradient
from numpy_mamba.layer import LayerParams, gates, layer_backward
from numpy_mamba.model import output, scores
from scipy.special import expit

FIELDS = {"grad_W_C": "W_C", "grad_W_B": "W_B", "grad_w": "w"}


@pytest.fixture(scope="module")
def prepared():
    return {name: prepare(e, 0) for name, e in all_exercises().items()}


def _whole(prep, name, answers):
    """What the student's function returned when ``name`` is one part of its answer: the stack's
    ``(dH, LayerParams(dW_B, dW_C, dW))`` with ``answers`` in part ``name`` and the other parts right."""
    if prep.exercise.name != "stack":
        return answers
    k = PARTS.index(name)
    whole = []
    for j, answer in enumerate(answers):
        parts = [prep.references[p][j].value for p in PARTS]
        parts[k] = answer
        whole.append((parts[0], LayerParams(*parts[1:])))
    return whole


def _graded(prep, name, calls):
    """grade_function on every problem, ``calls`` one per problem (None: not run)."""
    points = next(f.points for f in prep.exercise.functions if f.name == name)
    return grade_function(prep, name, dict(enumerate(calls)), range(len(calls)), points)


def _grade(prep, name, answers):
    return _graded(prep, name, [Call(returned=True, answer=a) for a in _whole(prep, name, answers)])


def _refs(prep, name):
    return [r.value for r in prep.references[name]]


def test_reference_answers_pass_and_score_full_points(prepared):
    """The package's own answers, as arrays from a child, must pass (else nothing could)."""
    for prep in prepared.values():
        for f in prep.exercise.functions:
            result = _grade(prep, f.name, _refs(prep, f.name))
            assert result.status == "pass" and result.points == f.points, (f.name, result.hint)


def _per_prompt(pb, field):
    return np.stack([getattr(gradients(pb.params, pb.P[n:n + 1], pb.z[n:n + 1]), field)
                     for n in range(pb.P.shape[0])])


def planted(pb, drop="", own=lambda c, sigma: c * (1 - sigma)):
    """A student's vectorised gradients, written here from eqs (93), (118), (135) as
    tests/student_files/_common.py writes them, with a term planted: the label (drop="y") or the
    gate (drop="G") left out of the sums, or eq (135)'s own term c_i (1 - sigma_i) written as ``own``."""
    W_B, W_C, w = pb.params
    G, y, s = gating(w, pb.P), pb.P[:, -1, :], scores(pb.params, pb.P)
    r = np.where(1 - pb.z * np.sum(G * y * s, axis=1) > 0, -pb.z, 0.0) / pb.P.shape[0]
    y_sum, G_sum = (np.abs(y) if drop == "y" else y), (np.ones_like(G) if drop == "G" else G)
    k = np.einsum("bdi,bi->bd", pb.P, r[:, None] * G_sum * y_sum)                 # sum_i dL/ds_i p_i
    c = r[:, None] * y_sum * s * G_sum                                             # dL/dG_i G_i
    sigma = expit(np.einsum("d,bdl->bl", w, pb.P))
    dw = np.einsum("bdl,bl->d", pb.P, own(c, sigma) - sigma * (np.cumsum(c, axis=1) - c))
    return {"W_B": (pb.P[:, :, -1] @ W_C.T).T @ k, "W_C": W_B @ (k.T @ pb.P[:, :, -1]), "w": dw}


# (what the student did, answer from (problem, reference), words of the hint).  On the old
# grader every one of these raised AttributeError: 'Params' object has no attribute 'shape'.
HONEST = [
    ("forgot y", lambda pb, R, f: planted(pb, drop="y")[f], "label y_i is missing"),
    ("forgot G", lambda pb, R, f: planted(pb, drop="G")[f], "gate G_i is missing"),
    ("doubled", lambda pb, R, f: 2 * R, "constant factor 2"),
    ("per prompt", lambda pb, R, f: _per_prompt(pb, f), "average them (axis 0)"),
    ("all zeros", lambda pb, R, f: np.zeros_like(R), "all zeros"),
    ("None", lambda pb, R, f: None, "returned None"),
    ("float32", lambda pb, R, f: R.astype(np.float32), "float32, not float64"),
    ("flattened", lambda pb, R, f: R.reshape(-1, 1), "wrong shape"),
    ("whole Params", lambda pb, R, f: Items.of(list(gradients(pb.params, pb.P, pb.z)), "Params",
                                                ("W_B", "W_C", "w")), "return only the gradient"),
    ("complex", lambda pb, R, f: R + 0j, "complex dtype"),
    ("integers", lambda pb, R, f: R.astype(np.int64), "int64, not float64"),
    ("a string", lambda pb, R, f: Other("a builtins.str"), "returned a builtins.str"),
    ("NaN", lambda pb, R, f: R * np.nan, "NaN or inf on problem"),
]


@pytest.mark.parametrize("what, make, words", HONEST, ids=[h[0] for h in HONEST])
@pytest.mark.parametrize("name", list(FIELDS))
def test_honest_gradient_mistakes_fail_with_their_hint(prepared, name, what, make, words):
    prep = prepared["gradients"]
    answers = [make(pb, R, FIELDS[name]) for pb, R in zip(prep.problems, _refs(prep, name))]
    result = _grade(prep, name, answers)
    assert result.status == "FAIL" and result.points == 0, f"{what}: passed"
    assert words in result.hint, f"{name}, {what}: hint {result.hint!r}"


def test_generic_hints_work_for_the_gates_too(prepared):
    prep = prepared["gating"]
    refs = _refs(prep, "gates")
    assert "wrong sign" in _grade(prep, "gates", [-R for R in refs]).hint
    assert "constant factor 0.5" in _grade(prep, "gates", [R / 2 for R in refs]).hint
    assert "transposed" in _grade(prep, "gates", [R.T for R in refs]).hint
    assert "dropped the query column" in _grade(prep, "gates", [R[:, :-1] for R in refs]).hint


def _perturb(rng, R):
    """A random wrong answer near R: scaled, shifted, permuted, reshaped, noised or retyped."""
    kind = rng.integers(8)
    if kind == 0:
        return R * rng.choice([-1, 1]) * rng.uniform(1.001, 3.0) ** rng.choice([-1, 1])
    if kind == 1:
        return R + rng.choice([-1, 1]) * rng.uniform(1e-6, 1.0) * (np.abs(R).max() + 1e-3)
    if kind == 2:
        return np.roll(R.ravel(), int(rng.integers(1, R.size))).reshape(R.shape) if R.size > 1 else R + 1.0
    if kind == 3:
        return R.reshape(R.shape[::-1]) if R.ndim == 2 and R.shape[0] != R.shape[1] else R[None]
    if kind == 4:
        return R + rng.standard_normal(R.shape) * (np.abs(R).max() + 1e-3) * 10.0 ** rng.uniform(-6, 0)
    if kind == 5:
        return R.astype(rng.choice([np.float32, np.float16, np.int32, np.complex128, np.bool_]))
    if kind == 6:
        return np.full_like(R, rng.choice([np.inf, -np.inf, np.nan, 1e308]))
    return np.zeros((0,) + R.shape[1:])


def test_random_perturbations_never_raise_and_never_pass(prepared):
    """300 wrong answers (one problem or all perturbed): the comparison and the hints must
    neither raise nor pass any of them."""
    rng = np.random.default_rng(0)
    names = [(prep, f.name) for prep in prepared.values() for f in prep.exercise.functions]
    for trial in range(300):
        prep, name = names[trial % len(names)]
        answers = _refs(prep, name)
        hit = range(len(answers)) if trial % 2 else [int(rng.integers(len(answers)))]
        for k in hit:
            answers[k] = _perturb(rng, answers[k])
        result = _grade(prep, name, answers)
        assert result.status == "FAIL" and result.points == 0, (trial, name)
        assert isinstance(result.hint, str) and result.hint, (trial, name)


def test_calls_that_did_not_return_fail_with_their_error(prepared):
    prep = prepared["gradients"]
    n = len(prep.problems)
    stopped = [Call(error="did not finish within the time limit", note="time limit")] + [None] * (n - 1)
    result = _graded(prep, "grad_w", stopped)
    assert result.status == "FAIL" and "time limit" in result.hint
    assert [r.note for r in result.rows] == ["time limit"] + ["not run"] * (n - 1)
    stub = _graded(prep, "grad_w", [Call(error="NotImplementedError: x", stub=True)] + [None] * (n - 1))
    assert stub.status == "not attempted" and "still a stub" in stub.hint


# (mistake, how it is planted, the functions it changes); own_dsigma: the gate's own term of
# eq (135) written as sigma_i (1 - sigma_i) instead of 1 - sigma_i
PLANTED = [("no_label", {"drop": "y"}, FIELDS), ("no_gate", {"drop": "G"}, FIELDS),
           ("no_own_term", {"own": lambda c, sigma: 0 * c}, ["grad_w"]),
           ("own_sigma", {"own": lambda c, sigma: c * sigma}, ["grad_w"]),
           ("own_dsigma", {"own": lambda c, sigma: c * sigma * (1 - sigma)}, ["grad_w"])]


@pytest.mark.parametrize("key, how, names", PLANTED, ids=[p[0] for p in PLANTED])
def test_a_derived_mistake_is_the_code_with_that_mistake_planted(prepared, key, how, names):
    """The mistakes are the reference with one term changed (grader/mistakes.py); each equals a
    student's code written here with that term planted, on every problem, and gets its hint."""
    prep = prepared["gradients"]
    for name in names:
        field = FIELDS[name]
        derived = dict((k, f) for k, _, f in mistakes_for(field))[key]
        answers = [planted(pb, **how)[field] for pb in prep.problems]
        for pb, answer in zip(prep.problems, answers):
            np.testing.assert_allclose(derived(pb, gradients(pb.params, pb.P, pb.z)), answer, rtol=1e-10, atol=1e-14,
                                       err_msg=f"{key} {name} {pb.name}")
        hint = next(h for k, h, _ in mistakes_for(field) if k == key)
        small = [k for k in range(len(prep.problems)) if k != prep.budget]
        calls = {k: Call(returned=True, answer=answers[k]) for k in small}
        assert grade_function(prep, name, calls, small, 1.0).hint == hint, (key, name)


def test_every_known_mistake_differs_from_the_truth_somewhere(prepared):
    """Else a correct answer could be reported as that mistake, or the mistake would pass."""
    problems = prepared["gradients"].problems

    def differs(V, R):
        return V.shape != R.shape or np.linalg.norm(V - R) > 1e-3 * np.linalg.norm(R)

    for name in ("W_B", "W_C", "w"):
        for key, _, mistaken in mistakes_for(name):
            refs = [gradients(pb.params, pb.P, pb.z) for pb in problems]
            assert any(differs(mistaken(pb, r), getattr(r, name)) for pb, r in zip(problems, refs)), (name, key)
    for key, _, mistaken in gate_mistakes():
        refs = [gating(pb.params.w, pb.P) for pb in problems]
        assert any(differs(mistaken(pb, r), r) for pb, r in zip(problems, refs)), ("gates", key)


def test_each_known_mistake_gets_its_own_hint(prepared):
    """An answer that IS a known mistake must be reported with that mistake's hint, not another's."""
    for prep in prepared.values():
        small = [k for k in range(len(prep.problems)) if k != prep.budget]
        for f in prep.exercise.functions:
            per_problem = [prep.mistaken(f.name, k) for k in small]
            for j, (key, hint, _) in enumerate(per_problem[0]):
                answers = [m[j][2] for m in per_problem]
                whole = _whole(prep, f.name, answers)
                calls = [Call(returned=True, answer=a) for a in whole]
                result = grade_function(prep, f.name, dict(zip(small, calls)), small, f.points)
                assert result.hint == hint, (f.name, key)


def test_problems_cover_the_awkward_cases(prepared):
    """l = 1, m != d+1, saturated gates, both sides of the hinge; every prompt of the random
    problems at least KINK_MARGIN from the kink, and the kink problem's within ON_KINK of it, on
    both sides."""
    problems = prepared["gradients"].problems
    assert any(pb.P.shape[2] == 2 for pb in problems), "no problem with l = 1"
    assert any(pb.params.W_B.shape[0] != pb.P.shape[1] for pb in problems), "no problem with m != d+1"
    logits = [np.abs(np.einsum("d,bdl->bl", pb.params.w, pb.P)) for pb in problems]
    assert any(np.any((a >= 30) & (a <= 50)) for a in logits), "no saturated gate"
    kink = [pb for pb in problems if pb.name.startswith("hinge's kink")]
    zF = np.concatenate([pb.z * output("mamba", pb.params, pb.P) for pb in problems if pb not in kink])
    assert np.any(zF > 1) and np.any(zF < -1) and np.any(np.abs(zF) < 1)
    assert np.all(np.abs(1 - zF) > KINK_MARGIN)
    (pb,) = kink
    margin = 1 - pb.z * output("mamba", pb.params, pb.P)
    assert np.all(np.abs(np.abs(margin) - ON_KINK) < 1e-3 * ON_KINK) and np.any(margin > 0) and np.any(margin < 0)


def test_registry_identifies_files_and_refuses_clashing_declarations():
    assert [e.name for e in identify({"grad_w", "helper"})] == ["gradients"]
    assert [e.name for e in identify({"gates", "grad_w"})] == ["gating", "gradients"]
    assert [e.name for e in identify(set(), "gradients_solution")] == ["gradients"]
    assert [e.name for e in identify({"gates", "grad_w"}, "gradients")] == ["gradients"]   # a helper 'gates'
    assert [e.name for e in identify({"layer_backward", "dH"})] == ["stack"]   # by the function it calls
    assert [e.name for e in identify(set(), "stack_solution")] == ["stack"]
    assert identify({"something_else"}, "homework") == []
    gates = all_exercises()["gating"]
    with pytest.raises(ValueError, match="already belong"):
        register(Exercise("other", gates.functions, (), "", "", *[None] * 4))
    with pytest.raises(ValueError, match="already belong"):           # a part's entry is taken too
        register(Exercise("other", (Function("dX", "", "", 1, "layer_backward"),), (), "", "", *[None] * 4))
    with pytest.raises(ValueError, match="module:name"):
        register(Exercise("other", (Function("f", "", "", 1),), ("numpy_mamba.gradients",), "", "", *[None] * 4))


def _frames(*messages):
    out = b""
    for m in messages:
        payload = m if isinstance(m, bytes) else json.dumps(m).encode()
        out += (b"A" if isinstance(m, bytes) else b"J") + struct.pack(">I", len(payload)) + payload
    return out


def _npy(a, allow_pickle=False):
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, a, allow_pickle=allow_pickle)
    return buffer.getvalue()


def test_protocol_round_trip_and_strict_parsing():
    """What a child sends is only ever read as numbers; anything else stops the child."""
    arrays = []
    tree = encode((np.eye(2), None, [1.0, 2.0], {"a": 1}), arrays)     # a tuple stays a tuple
    value = decode(json.loads(json.dumps(tree)), arrays)
    assert isinstance(value, Items) and np.array_equal(value[0], np.eye(2)) and value[1] is None
    assert np.array_equal(value[2], [1.0, 2.0]) and value[3] == "a builtins.dict"
    head = [{"event": "ready"}, {"event": "imported", "defined": {"f": "function"}},
            {"event": "start", "function": "f", "problem": 0}]
    run = ChildRun()
    Reader(run).feed(_frames(*head, {"event": "result", "function": "f", "problem": 0, "answer": {"array": 0},
                                     "arrays": 1}, _npy(np.ones(3))))
    assert run.calls[("f", 0)].returned and np.array_equal(run.calls[("f", 0)].answer, np.ones(3))
    bad = [[{"event": "result", "function": "f", "problem": 0, "answer": {"array": 0}, "arrays": 1},
            _npy(np.array([object()]), allow_pickle=True)],                # a pickled object array
           [{"event": "result", "function": "f", "problem": 0, "answer": {"eval": "1"}, "arrays": 0}],
           [{"event": "score", "points": 10}],
           [b"not a frame at all"]]
    for tail in bad:
        with pytest.raises(Malformed):
            Reader(ChildRun()).feed(_frames(*head, *tail))
    with pytest.raises(Malformed, match="more than"):
        Reader(ChildRun()).feed(b"J" + struct.pack(">I", 2**31) + b"x" * (65 * 2**20))


# ---- the stack exercise: layer_backward(dO, cache) -> (dH, LayerParams(dW_B, dW_C, dW)) --------

def _layer_parts(pb):
    dH, grads = layer_backward(pb.dO, pb.cache)
    return (dH,) + tuple(grads)


def test_the_four_paths_of_dH_are_each_the_difference_quotient_of_their_role(prepared):
    """The stack's mistakes drop paths of dH (grader/layer_mistakes.py): each path equals central
    differences of sum(dO * O) with H moved in that role only (the values, the keys, the queries,
    the gate logits), and the four add up to layer_backward's dH."""
    pb = prepared["stack"].problems[0]
    H, layer = pb.cache.H, pb.cache.layer

    def output_with(value=H, key=H, query=H, gate=H):
        S = np.swapaxes(layer.W_B @ key, 1, 2) @ (layer.W_C @ query)
        return (value[:, :, None, :] @ (gates(layer.W.T @ gate) * S[:, None]))[:, :, 0, :]
    found = paths(pb.dO, pb.cache)
    for role in ("value", "key", "query", "gate"):
        numerical = numerical_gradient(lambda X: float(np.sum(pb.dO * output_with(**{role: X}))), H)
        np.testing.assert_allclose(found[role], numerical, rtol=1e-6, atol=1e-8, err_msg=role)
    np.testing.assert_allclose(sum(found.values()), layer_backward(pb.dO, pb.cache)[0], rtol=1e-12, atol=1e-13)


def _differs(V, R):
    return V.shape != R.shape or np.linalg.norm(V - R) > 1e-3 * np.linalg.norm(R)


def test_each_layer_mistake_changes_exactly_its_parts_and_no_two_coincide(prepared):
    """A mistake that left a declared part right would never be named; two mistakes with the
    same answers on every part would need one merged hint (none do)."""
    problems = prepared["stack"].problems
    refs = [_layer_parts(pb) for pb in problems]
    answers = {key: [mistaken_parts(pb.dO, pb.cache, make) for pb in problems] for key, _, _, make in LAYER_MISTAKES}
    for key, _, parts, _ in LAYER_MISTAKES:
        changed = {p for k, p in enumerate(PARTS) if any(_differs(a[k], r[k]) for a, r in zip(answers[key], refs))}
        assert changed == set(parts), (key, changed)
    keys = list(answers)
    for i, a in enumerate(keys):
        for b in keys[i + 1:]:
            assert any(_differs(x[k], y[k]) for x, y in zip(answers[a], answers[b]) for k in range(4)), (a, b)


@pytest.mark.parametrize("key, hint, parts, make", LAYER_MISTAKES, ids=[m[0] for m in LAYER_MISTAKES])
def test_a_whole_wrong_layer_backward_gets_its_hint_on_every_part_it_breaks(prepared, key, hint, parts, make):
    """Each known mistake of the stack exercise as a whole wrong implementation, graded part by part: the parts it
    breaks FAIL with its hint, the others pass."""
    prep = prepared["stack"]
    whole = [mistaken_parts(pb.dO, pb.cache, make) for pb in prep.problems]
    calls = [Call(returned=True, answer=(w[0], LayerParams(*w[1:]))) for w in whole]
    for name in PARTS:
        result = _graded(prep, name, calls)
        if name in parts:
            assert result.status == "FAIL" and result.hint == hint, (key, name, result.hint)
        else:
            assert result.status == "pass", (key, name, result.hint)


@pytest.mark.parametrize("answer, words, dH_ok", [
    (lambda dH, grads: dH, "not (dH, LayerParams(dW_B, dW_C, dW)): returned an array of shape", False),
    (lambda dH, grads: Items.of([dH, *grads]), "returned a tuple of 4 items", False),
    (lambda dH, grads: Items.of([dH, Items.of(list(grads[:2]))]), "the second item is a tuple of 2 items", True),
    (lambda dH, grads: Items.of([dH, Other("a builtins.dict")]), "the second item is a builtins.dict", True),
    (lambda dH, grads: None, "returned None", False),
])
def test_a_layer_backward_answer_of_the_wrong_structure_fails_with_a_hint(prepared, answer, words, dH_ok):
    """Every part that cannot be found in the answer FAILs with what was returned instead (dH,
    the first item, is graded on its own)."""
    prep = prepared["stack"]
    calls = [Call(returned=True, answer=answer(*layer_backward(pb.dO, pb.cache))) for pb in prep.problems]
    for name in PARTS:
        result = _graded(prep, name, calls)
        if name == "dH" and dH_ok:
            assert result.status == "pass", result.hint
        else:
            assert result.status == "FAIL" and words in result.hint, (name, result.hint)


def test_a_tuple_or_list_is_as_good_as_layer_params(prepared):
    """As the child sends them: a list of arrays, or of three square arrays (then one array)."""
    prep = prepared["stack"]
    wraps = (lambda dH, g: Items.of([dH, Items.of(list(g), "list")], "list"),
             lambda dH, g: Items.of([dH, Items.of(list(g), "LayerParams", g._fields)]),
             lambda dH, g: Items.of([dH, np.stack(g)]) if g.W_B.shape == g.W.shape else Items.of([dH, Items.of(g)]))
    for wrap in wraps:
        calls = [Call(returned=True, answer=wrap(*layer_backward(pb.dO, pb.cache))) for pb in prep.problems]
        assert all(_graded(prep, name, calls).status == "pass" for name in PARTS)


def test_stack_problems_cover_every_layer_position_and_the_awkward_cases(prepared):
    """Layer 1 (H = P, label slot 0), layer 2 (label slot = F != 0), the top layer (dO in one
    entry), l = 1, m != d+1 and saturated gate logits."""
    problems = {pb.name: pb for pb in prepared["stack"].problems}
    top, middle, bottom = (problems[n] for n in problems if n.startswith("layer"))
    assert np.count_nonzero(top.dO) == top.dO.shape[0] and np.all(top.dO[:, -1, -1] != 0)
    assert np.all(bottom.cache.H[:, -1, -1] == 0) and np.all(middle.cache.H[:, -1, -1] != 0)
    assert np.count_nonzero(bottom.dO) == bottom.dO.size
    assert any(pb.cache.H.shape[2] == 2 for pb in problems.values()), "no problem with l = 1"
    assert any(pb.cache.layer.W_B.shape[0] != pb.cache.H.shape[1] for pb in problems.values())
    assert any(np.any((np.abs(pb.cache.a) >= 30) & (np.abs(pb.cache.a) <= 50)) for pb in problems.values())
    assert all(pb.cache.model == "mamba" for pb in problems.values())


def test_the_largest_error_is_over_the_problems_that_ran(prepared):
    # If this fails, a function 0.7 times the truth reports "max rel. error inf" because the budget
    # problem, not run after a failure, counted as an infinite error: a student reads inf, not 0.3.
    prep = prepared["gradients"]
    answers = [0.7 * R for R in _refs(prep, "grad_w")]
    calls = [Call(returned=True, answer=a) for a in answers[:-1]] + [None]
    result = _graded(prep, "grad_w", calls)
    assert result.status == "FAIL" and result.rows[-1].note == "not run"
    assert 0.1 < result.max_rel < 0.5, result.max_rel
    nothing = _graded(prep, "grad_w", [None] * len(answers))
    assert np.isnan(nothing.max_rel)

"""One file never stops the class: a notebook or a result frame of any shape gives that file one
row, never a crash or an exit status that blames the grader.  The notebook reader and the frame
reader are fuzzed with seeded mutations of well-formed input (each mutation either reads or is
refused with the reader's own error, and the refused frames' calls still grade); then a class of
malformed notebooks and a child that forges a result for problem 99 is graded at once, with its CSV.

A failure here means one student's file (a notebook saved by another tool, a hand-edited one, a
child writing to its result channel) can end a class run with a traceback or exit status 3.
"""
import csv
import json
import shutil
import struct
from pathlib import Path

import numpy as np
import pytest

from numpy_mamba.grader.children import Calls, take
from numpy_mamba.grader.compare import grade_function
from numpy_mamba.grader.grade import Session
from numpy_mamba.grader.notebook import NotebookError, python_source
from numpy_mamba.grader.registry import all_exercises
from numpy_mamba.grader.run import main
from numpy_mamba.grader.sandbox import Limits
from numpy_mamba.grader.sandbox.protocol import ChildRun, Malformed, Reader

ROOT = Path(__file__).resolve().parent.parent
STUDENTS = ROOT / "tests" / "student_files"
SOLUTIONS = ROOT / "tests" / "solutions"
MUTATIONS = 400


def _notebook(*sources) -> dict:
    return {"cells": [{"cell_type": "markdown", "metadata": {}, "source": ["# answers\n"]}]
            + [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
                "source": text.splitlines(keepends=True)} for text in sources],
            "metadata": {"kernelspec": {"name": "python3"}}, "nbformat": 4, "nbformat_minor": 5}


def _random_json(rng, depth=0):
    """A random JSON value: null, a boolean, a number, a string, or (not too deep) a list or an object."""
    kind = int(rng.integers(0, 7 if depth < 3 else 5))
    if kind == 5:
        return [_random_json(rng, depth + 1) for _ in range(rng.integers(0, 3))]
    if kind == 6:
        return {str(rng.integers(0, 9)): _random_json(rng, depth + 1) for _ in range(rng.integers(0, 3))}
    return [None, True, int(rng.integers(-2**40, 2**40)), float(rng.normal()), "x" * int(rng.integers(0, 5))][kind]


def _paths(tree, path=()):
    yield path
    if isinstance(tree, dict):
        for k, v in tree.items():
            yield from _paths(v, path + (k,))
    elif isinstance(tree, list):
        for k, v in enumerate(tree):
            yield from _paths(v, path + (k,))


def _mutated_notebook(rng, base: dict) -> bytes:
    """One seeded mutation: a node of the JSON replaced by a value of another type, or bytes
    flipped, cut or nested."""
    tree = json.loads(json.dumps(base))
    choice = rng.integers(0, 4)
    if choice <= 1:
        paths = list(_paths(tree))[1:]
        path = paths[rng.integers(0, len(paths))]
        node = tree
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = _random_json(rng)
        return json.dumps(tree).encode()
    data = bytearray(json.dumps(tree).encode())
    if choice == 2:
        for _ in range(rng.integers(1, 4)):
            data[rng.integers(0, len(data))] = rng.integers(0, 256)
        return bytes(data)
    depth = int(rng.integers(1, 100_000))
    return b'{"cells": ' + b"[" * depth + b"]" * depth + b"}"


def test_the_notebook_reader_reads_or_refuses_every_mutation_with_its_own_error():
    """Each mutation returns Python text or raises NotebookError naming what it found; the
    numbers are printed (``pytest -s``)."""
    rng = np.random.default_rng(2024)
    base = _notebook((SOLUTIONS / "gradients_solution.py").read_text(), "x = 1\n")
    counts = {"read": 0, "refused": 0}
    for _ in range(MUTATIONS):
        data = _mutated_notebook(rng, base)
        try:
            assert isinstance(python_source(data), str)
            counts["read"] += 1
        except NotebookError as exc:
            assert str(exc), data[:200]
            counts["refused"] += 1
    print(f"\nnotebook mutations: {counts}")
    assert counts["read"] and counts["refused"]


@pytest.mark.parametrize("cells, words", [
    ([{"cell_type": "code", "source": ["import numpy\n", 5]}], "cell 1: its source is a list holding a number"),
    ([{"cell_type": "code", "source": 3.5}], "cell 1: its source is a number"),
    ([{"cell_type": "code", "source": None}], "cell 1: its source is null"),
    ([{"cell_type": "code", "source": {"a": 1}}], "cell 1: its source is an object"),
])
def test_a_cell_whose_source_is_not_text_is_refused_naming_the_cell(cells, words):
    with pytest.raises(NotebookError, match=words):
        python_source(json.dumps({"cells": cells}).encode())


def _frame(message: dict) -> bytes:
    payload = json.dumps(message).encode()
    return b"J" + struct.pack(">I", len(payload)) + payload


def _array_frame(a) -> bytes:
    import io
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, np.asarray(a), allow_pickle=False)
    return b"A" + struct.pack(">I", len(buffer.getvalue())) + buffer.getvalue()


def _exchange(rng, functions, n_problems, shape) -> list:
    """The frames of a well-formed child: ready, imported, then per function and problem a start
    and a result (an array) or a raise, then done."""
    frames = [_frame({"event": "ready"}), _frame({"event": "imported", "defined": {f: "function" for f in functions}})]
    for f in functions:
        for k in range(n_problems):
            frames.append(_frame({"event": "start", "function": f, "problem": k}))
            if rng.random() < 0.2:
                frames.append(_frame({"event": "raised", "function": f, "problem": k, "error": "ValueError: x",
                                      "stub": False}))
            else:
                frames.append(_frame({"event": "result", "function": f, "problem": k, "answer": {"array": 0},
                                      "arrays": 1}))
                frames.append(_array_frame(rng.standard_normal(shape)))
    return frames + [_frame({"event": "done"})]


def _mutated_frames(rng, frames: list, functions) -> bytes:
    frames = list(frames)
    choice = rng.integers(0, 5)
    k = int(rng.integers(0, len(frames)))
    if choice == 0:                                       # a message's field replaced
        message = json.loads(frames[k][5:]) if frames[k][:1] == b"J" else {"event": "result"}
        key = ["event", "function", "problem", "answer", "arrays", "defined", "error"][rng.integers(0, 7)]
        message[key] = ([99, -1, 2**70, True, 1.0, "grad_w", "nope", functions[0]] + [_random_json(rng)])[
            rng.integers(0, 9)]
        frames[k] = _frame(message)
    elif choice == 1:                                     # a frame repeated or dropped
        frames.insert(k, frames[k]) if rng.random() < 0.5 else frames.pop(k)
    elif choice == 2:                                     # a forged start and result for another problem
        frames.insert(k, _frame({"event": "start", "function": functions[-1], "problem": int(rng.integers(0, 200))}))
    data = bytearray(b"".join(frames))
    if choice == 3:
        for _ in range(rng.integers(1, 6)):
            data[rng.integers(0, len(data))] = rng.integers(0, 256)
    if choice == 4:
        data = data[:rng.integers(0, len(data))]
    return bytes(data)


def test_the_frame_reader_reads_or_refuses_every_mutation_and_what_it_read_always_grades():
    """Seeded mutations of a child's frames (fields replaced by any JSON, frames repeated,
    dropped, forged for a problem never given, bytes flipped, the stream cut): the reader raises
    Malformed or reads; what it read, forged calls included, becomes Calls and Results without
    an exception."""
    session = Session(0)
    prepared = session.prepared(all_exercises()["gradients"])
    functions, indices = ["grad_W_C", "grad_W_B", "grad_w"], [0, 1, 2]
    limits = Limits(1.0, 256, 10.0)
    rng = np.random.default_rng(7)
    counts = {"read": 0, "refused": 0}
    for _ in range(MUTATIONS):
        run = ChildRun()
        try:
            Reader(run).feed(_mutated_frames(rng, _exchange(rng, functions, len(indices), (6, 6)), functions))
            counts["read"] += 1
        except Malformed as exc:
            run.ended = f"malformed message from the child ({exc})"
            counts["refused"] += 1
        if not run.ready:
            continue
        out = Calls()
        take(run, list(functions), indices, limits, out)
        for f in functions:
            result = grade_function(prepared, f, {k: out.calls.get((f, k)) for k in indices}, indices, 1.0)
            assert result.status in ("pass", "FAIL", "not attempted")
            assert all((name, k) in {(n, j) for n in functions for j in indices} for name, k in out.calls)
    print(f"\nframe mutations: {counts}")
    assert counts["read"] and counts["refused"]


def test_a_class_of_malformed_notebooks_and_a_forged_frame_is_graded_row_by_row(tmp_path, capsys):
    """Alice passes; a notebook whose cell source holds a number, one nested 100,000 deep, one
    that is not JSON, and a child forging a result for problem 99 each get their row, saying
    why; the CSV is written and the exit status is 1 (a submission failed), not 3."""
    folder = tmp_path / "class"
    for name in ("alice", "nina", "nora", "noel", "mallory"):
        (folder / name).mkdir(parents=True)
    shutil.copy(SOLUTIONS / "gradients_solution.py", folder / "alice" / "gradients.py")
    (folder / "nina" / "gradients.ipynb").write_text(json.dumps({"cells": [{"cell_type": "code", "source": [1, 2]}]}))
    (folder / "nora" / "gradients.ipynb").write_text('{"cells": ' + "[" * 100_000 + "]" * 100_000 + "}")
    (folder / "noel" / "gradients.ipynb").write_text("{not json")
    shutil.copy(STUDENTS / "hostile_forged_problem.py", folder / "mallory" / "gradients.py")
    shutil.copy(STUDENTS / "_pipes.py", folder / "mallory" / "_pipes.py")
    grades = tmp_path / "grades.csv"
    assert main([str(folder), "--csv", str(grades), "--secret", str(tmp_path / "class.seed")]) == 1
    rows = {Path(r["submission"]).parent.name: r for r in csv.DictReader(grades.open())}
    assert sorted(rows) == ["alice", "mallory", "nina", "noel", "nora"]
    assert rows["alice"]["points"] == "10" and all(r["max_points"] == "10" for r in rows.values()), rows
    assert "its source is a list holding a number" in rows["nina"]["error"]
    assert "nested too deeply" in rows["nora"]["error"] and "not a Jupyter notebook" in rows["noel"]["error"]
    assert rows["mallory"]["points"] == "0" and "not asked" in rows["mallory"]["grad_W_C_hint"], rows["mallory"]
    assert not any(r["status"] == "grader error" for r in rows.values())

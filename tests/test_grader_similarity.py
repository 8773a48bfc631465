"""The similarity flag (``grader/similarity.py``): the package's reference pasted into a hand-out
is flagged, and so are two copies of one file however renamed and reformatted; no honest file we
have is, against the reference or each other, also where every file keeps the hand-out's code.

A failure here means an instructor is told nothing of a pasted reference or a copied classmate,
or is sent after honest students.  ``pytest -s`` prints the shares.
"""
import importlib
import inspect
import re
from pathlib import Path

import pytest

from numpy_mamba.grader import similarity
from numpy_mamba.grader.grade import Graded, Submission
from numpy_mamba.grader.registry import all_exercises

ROOT = Path(__file__).resolve().parent.parent
STUDENTS = ROOT / "tests" / "student_files"
SOLUTIONS = ROOT / "tests" / "solutions"
HAND_OUT = (ROOT / "tutorials" / "exercises" / "gradients.py").read_text()
HONEST = {"gradients": [SOLUTIONS / "gradients_solution.py", STUDENTS / "_common.py", STUDENTS / "correct_naive.py",
                        STUDENTS / "correct_from_the_paper.py", STUDENTS / "flat" / "_alice_core.py",
                        STUDENTS / "class_a" / "helpers.py"],
          "stack": [SOLUTIONS / "stack_solution.py", STUDENTS / "_stack_common.py"],
          "gating": [SOLUTIONS / "gating_solution.py", STUDENTS / "_gates_common.py"]}


def _submission(name: str, exercise: str, source: str) -> Submission:
    return Submission(Path(name), graded=[Graded(all_exercises()[exercise])], source=source.encode())


def _renamed(source: str) -> str:
    """The same code with every name it binds renamed and its lines re-indented and commented."""
    names = {"dW_B": "gB", "dW_C": "gC", "dw": "gw", "params": "theta", "P": "prompts", "G": "gates", "y": "labels",
             "s": "score", "F": "out", "W_B": "B_mat", "W_C": "C_mat", "w": "gate_w"}
    for old, new in names.items():
        source = re.sub(rf"\b{old}\b", new, source)
    return "\n".join(line + ("  # mine" if line.strip() else "") for line in source.splitlines())


@pytest.mark.parametrize("exercise", sorted(HONEST))
def test_no_honest_file_is_flagged(exercise):
    """Against the package's reference, and with each other (four or more: the hand-out's code,
    found in most of them, is left out)."""
    subs = [_submission(p.name, exercise, p.read_text()) for p in HONEST[exercise]]
    subs += [_submission(f"hand_out_{k}.py", exercise, HAND_OUT) for k in range(3)] if exercise == "gradients" else []
    reference = similarity.reference_windows(all_exercises()[exercise].sources)
    for sub in subs:
        mine = similarity.windows(sub.source.decode())
        print(f"{sub.path.name:<28} share of the reference {len(mine & reference) / max(1, len(mine)):.3f}")
    flagged = similarity.flags(subs)
    assert not {p: note for p, note in flagged.items() if not p.name.startswith("hand_out")}, flagged


def test_a_pasted_reference_and_a_renamed_copy_are_flagged():
    """The hand-out with the package's gradients module pasted in (the hand-out's wheel carries
    it); a classmate's file renamed and reformatted; each flagged, the honest file next to them not."""
    module = importlib.import_module("numpy_mamba.gradients")
    paste = HAND_OUT + "\n" + inspect.getsource(module).replace("from __future__ import annotations", "")
    mine = (SOLUTIONS / "gradients_solution.py").read_text()
    subs = [_submission("paster.py", "gradients", paste), _submission("alice.py", "gradients", mine),
            _submission("bob.py", "gradients", _renamed(mine)),
            _submission("carol.py", "gradients", (STUDENTS / "correct_from_the_paper.py").read_text())]
    flagged = similarity.flags(subs)
    print(flagged)
    assert "the package's numpy_mamba.gradients" in flagged[Path("paster.py")]
    assert "bob.py 1.00" in flagged[Path("alice.py")] and "alice.py 1.00" in flagged[Path("bob.py")]
    assert Path("carol.py") not in flagged
    share = float(flagged[Path("paster.py")].split()[-1])
    assert share >= similarity.REFERENCE_FLAG


def test_code_that_does_not_parse_is_never_flagged():
    assert similarity.windows("def f(:\n") == frozenset()
    assert similarity.flags([_submission("a.py", "gradients", "def f(:\n")] * 2) == {}

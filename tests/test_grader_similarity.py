"""The similarity flag (``grader/similarity.py``): the package's reference pasted into a submission
is flagged however it is disguised (dead code padded in, numpy rebound, every name renamed,
comments and docstrings rewritten, a ``coding: unicode_escape`` header, all of them at once), and
so are two copies of one file; no honest file we have is, against the reference or against each
other.  The assertion messages print the shares.

A failure here means an instructor is told nothing of a pasted reference or a copied classmate,
or is sent after honest students.
"""
import ast
import importlib
import inspect
import re
import sys
from pathlib import Path

import pytest

from numpy_mamba.grader import similarity
from numpy_mamba.grader.grade import Graded, Submission
from numpy_mamba.grader.registry import all_exercises

ROOT = Path(__file__).resolve().parent.parent
STUDENTS = ROOT / "tests" / "student_files"
SOLUTIONS = ROOT / "tests" / "solutions"
HAND_OUT = (ROOT / "tutorials" / "exercises" / "gradients.py").read_text()
# written independently of each other: no pair of them may be flagged
INDEPENDENT = {"gradients": [SOLUTIONS / "gradients_solution.py", STUDENTS / "_common.py", STUDENTS / "correct_naive.py",
                             STUDENTS / "correct_from_the_paper.py", STUDENTS / "flat" / "_alice_core.py",
                             STUDENTS / "class_a" / "helpers.py"],
               "stack": [SOLUTIONS / "stack_solution.py", STUDENTS / "_stack_common.py"],
               "gating": [SOLUTIONS / "gating_solution.py", STUDENTS / "_gates_common.py"]}
HONEST = sorted(p for pattern in ("correct_*.py", "broken_*.py", "_*common.py", "*/*.py")
                for p in STUDENTS.glob(pattern)) + sorted(SOLUTIONS.glob("*.py"))
ENTRIES = ("grad_W_C", "grad_W_B", "grad_w")


def _submission(name: str, exercise: str, source, helpers=None) -> Submission:
    files = {name: source, **(helpers or {})}
    return Submission(Path(name), graded=[Graded(all_exercises()[exercise])],
                      sources={n: text if isinstance(text, bytes) else text.encode() for n, text in files.items()})


def _share(source, exercise: str = "gradients", helpers=None) -> float:
    """The share of the reference, as the flag reads it (in its child)."""
    ex = all_exercises()[exercise]
    mine, _, why = similarity.read(_submission("mine.py", exercise, source, helpers).sources, ex.entries)
    reference = similarity.reference_fingerprints(ex.sources, ex.imports)
    assert not why, why
    return len(mine & reference) / max(1, len(mine))


def pasted() -> str:
    """The reference module pasted whole, its relative imports dropped, the three functions
    calling its ``gradients`` (eqs (93), (118), (135))."""
    text = inspect.getsource(importlib.import_module("numpy_mamba.gradients"))
    text = re.sub(r"^from (\.|__future__).*$", "", text, flags=re.MULTILINE)
    return text + "".join(f"\n\ndef {name}(params, P, z):\n    return gradients(params, P, z).{name[5:]}\n" for name in ENTRIES)


def _padded(source: str) -> str:
    """Dead code after every statement of every function (a store nothing reads, a branch under
    a constant false test), code after every return, and twenty functions nothing calls."""
    tree = ast.parse(source)
    for k, node in enumerate(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)):
        body = []
        for j, statement in enumerate(node.body):
            body.append(statement)
            body += ast.parse(f"unused_{k}_{j} = [{j}, {k} + 1, {j} * 2]\nif False:\n    unused_{k}_{j} = sum(range({j}))\n"
                              if not isinstance(statement, ast.Return) else f"print('never', {k}, {j})\n").body
        node.body = body
    junk = "".join(f"\n\ndef helper_{k}(a, b):\n    c = a * {k} + b\n    return [c, c ** 2, a - b]\n" for k in range(20))
    return ast.unparse(tree) + junk


def _rebound(source: str) -> str:
    return "import numpy\nxp = numpy\n" + re.sub(r"\bnp\.", "xp.", source.replace("import numpy as np\n", ""))


def _renamed(source: str) -> str:
    """Every name the file binds renamed (functions, parameters, variables)."""
    names = set(re.findall(r"^\s*def (\w+)", source, re.MULTILINE)) - set(ENTRIES)
    names |= {"params", "P", "z", "G", "y", "s", "F", "h", "k", "K", "c", "weight", "sigma", "dL_ds", "dW_B",
              "dW_C", "dw", "B", "l", "p", "p_query", "model", "grads", "W_B", "W_C", "w"}
    for k, old in enumerate(sorted(names)):
        source = re.sub(rf"(?<![.\w]){re.escape(old)}\b", f"renamed_{k}", source)
    return source


def _recommented(source: str) -> str:
    """Docstrings and comments replaced by others."""
    source = re.sub(r'"""(.|\n)*?"""', '"""My own derivation, worked out on paper."""', source)
    return re.sub(r"#.*$", "# see my notes", source, flags=re.MULTILINE)


def _unicode_escape(source: str) -> bytes:
    """A ``coding: unicode_escape`` header, and every letter e of the code written \\x65."""
    return ("# -*- coding: unicode_escape -*-\n" + source.replace("\\", "\\\\").replace("e", "\\x65")).encode()


DISGUISES = {"dead-code padding": _padded, "rebound numpy": _rebound, "renamed identifiers": _renamed,
             "comments and docstrings": _recommented, "coding header": _unicode_escape,
             "all at once": lambda s: _unicode_escape(_recommented(_renamed(_rebound(_padded(s)))))}


@pytest.mark.parametrize("disguise", DISGUISES)
def test_a_pasted_reference_is_flagged_in_every_disguise(disguise):
    """Each disguise parses as Python (its code is the same program) and keeps its share of the
    reference above the flag."""
    source = DISGUISES[disguise](pasted())
    compile(source, "disguised.py", "exec")
    share = _share(source)
    flagged = similarity.flags([_submission("paster.py", "gradients", source)])
    assert share >= similarity.REFERENCE_FLAG and flagged, f"{disguise}: share {share:.2f}, plain {_share(pasted()):.2f}"


def test_no_honest_file_is_flagged_against_its_reference():
    """Every correct and broken file of tests/student_files, its helpers and the solutions: the
    largest share of the reference is printed."""
    shares = {}
    for path in HONEST:
        exercise = next((e for e in ("stack", "gating") if e in path.name or "gates" in path.name and e == "gating"),
                        "gradients")
        shares[path.relative_to(ROOT).as_posix()] = _share(path.read_bytes(), exercise)
    worst = max(shares, key=shares.get)
    assert shares[worst] < similarity.REFERENCE_FLAG, shares
    assert len(shares) > 30, f"{len(shares)} honest files; the largest share {shares[worst]:.2f} ({worst})"


@pytest.mark.parametrize("exercise", sorted(INDEPENDENT))
def test_no_two_honest_files_are_flagged_also_where_every_file_keeps_the_hand_out(exercise):
    """Against the reference and with each other (four or more: the hand-out's own code, found
    in most of them, is left out)."""
    subs = [_submission(p.name, exercise, p.read_text()) for p in INDEPENDENT[exercise]]
    subs += [_submission(f"hand_out_{k}.py", exercise, HAND_OUT) for k in range(3)] if exercise == "gradients" else []
    flagged = similarity.flags(subs)
    assert not {p: note for p, note in flagged.items() if not p.name.startswith("hand_out")}, flagged


def test_a_renamed_and_padded_copy_of_a_classmate_is_flagged():
    """A classmate's file renamed, recommented and padded with dead code; the honest file next to
    them is not flagged."""
    mine = (SOLUTIONS / "gradients_solution.py").read_text()
    subs = [_submission("alice.py", "gradients", mine),
            _submission("bob.py", "gradients", _recommented(_renamed(_padded(mine)))),
            _submission("carol.py", "gradients", (STUDENTS / "correct_from_the_paper.py").read_text())]
    flagged = similarity.flags(subs)
    assert "bob.py 1.00" in flagged.get(Path("alice.py"), "") and "alice.py 1.00" in flagged.get(Path("bob.py"), ""), \
        flagged
    assert Path("carol.py") not in flagged


def test_code_that_does_not_parse_is_never_flagged():
    assert similarity.read({"a.py": b"def f(:\n"}, ()) == (frozenset(), [], "")
    assert similarity.flags([_submission("a.py", "gradients", "def f(:\n")] * 2) == {}


def _with_what_it_calls(entry: str, wrappers: str) -> str:
    """The package's ``entry`` pasted with every function and class it calls (as the hand-out kit
    copies them), and the exercise's functions written as ``wrappers``."""
    from numpy_mamba.grader.kit import build
    return build([entry]).source + wrappers


PASTED_CLOSURES = {
    "gradients": _with_what_it_calls("numpy_mamba.gradients:gradients", "".join(
        f"\n\ndef {name}(params, P, z):\n    return gradients(params, P, z).{name[5:]}\n" for name in ENTRIES)),
    "gating": _with_what_it_calls("numpy_mamba.model:gating", "\n\ndef gates(w, P):\n    return gating(w, P)\n"),
    "stack": _with_what_it_calls("numpy_mamba.layer:layer_backward", ""),
}


@pytest.mark.parametrize("exercise", sorted(PASTED_CLOSURES))
def test_a_reference_pasted_with_what_it_calls_is_flagged(exercise):
    """The answer's code pasted with the package functions it calls from other modules (the
    gates' checks, the model's forward terms, the loss's slope): the reference is everything the
    answer reaches, not one module."""
    source = PASTED_CLOSURES[exercise]
    flagged = similarity.flags([_submission("paster.py", exercise, source)])
    assert "the package's reference" in flagged.get(Path("paster.py"), ""), f"share {_share(source, exercise):.2f}"


def test_a_reference_or_a_classmate_pasted_into_a_helper_is_flagged():
    """The graded file one line long (``from _mine import *``), the code in its helper: the flag
    reads every file the submission ran, against the reference and against the classmates."""
    stub = "from _mine import *\n"
    pasted_in_helper = _submission("paster.py", "gradients", stub, {"_mine.py": PASTED_CLOSURES["gradients"]})
    alice = _submission("alice.py", "gradients", (SOLUTIONS / "gradients_solution.py").read_text())
    bob = _submission("bob.py", "gradients", stub, {"_mine.py": (SOLUTIONS / "gradients_solution.py").read_text()})
    flagged = similarity.flags([pasted_in_helper, alice, bob])
    assert "the package's reference" in flagged.get(Path("paster.py"), ""), flagged
    assert "alice.py 1.00" in flagged.get(Path("bob.py"), "") and "bob.py 1.00" in flagged.get(Path("alice.py"), ""), \
        flagged


class _Commuted(ast.NodeTransformer):
    """The operands of every + and * swapped; every @ written np.matmul."""

    def visit_BinOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.MatMult):
            matmul = ast.Attribute(ast.Name("np", ast.Load()), "matmul", ast.Load())
            return ast.Call(matmul, [node.left, node.right], [])
        if isinstance(node.op, (ast.Add, ast.Mult)):
            node.left, node.right = node.right, node.left
        return node


def test_a_commuted_paste_is_flagged():
    """The stack's layer_backward pasted, every + and * commuted and @ written np.matmul (and, in a
    second copy, np.dot): the same normal form, the same share of the reference."""
    from numpy_mamba import layer
    source = "import numpy as np\n\n" + inspect.getsource(layer.layer_backward)
    commuted = ast.unparse(_Commuted().visit(ast.parse(source)))
    dotted = commuted.replace("np.matmul(", "np.dot(")
    assert commuted != source and "np.matmul(" in commuted
    shares = [round(_share(text, "stack"), 2) for text in (source, commuted, dotted)]
    assert shares[1] == shares[2] == shares[0] >= similarity.REFERENCE_FLAG, shares


def _calls(text: str) -> int:
    """The Python and C function calls the reader makes on ``text`` (a graded file)."""
    from numpy_mamba.grader import fingerprint
    count = [0]

    def profile(frame, event, arg):
        count[0] += event in ("call", "c_call")
    sys.setprofile(profile)
    try:
        fingerprint.fingerprints({"gradients.py": text}, ENTRIES)
    finally:
        sys.setprofile(None)
    return count[0]


def test_the_reader_does_work_linear_in_the_files_size():
    """A dead chain of aliases (``a2 = a1`` before ``a1 = a0``, ..., ``a0 = np``), a long attribute
    chain and a long sum of products inside an np.add call, then the same twice as long: twice
    the work, not four times (counted in function calls, not timed)."""
    def chain(n):
        return ("import numpy as np\n" + "".join(f"a{k + 1} = a{k}\n" for k in reversed(range(n))) + "a0 = np\n"
                + f"def grad_w(params, P, z):\n    return np.add(P{'.T' * n}, "
                + " + ".join(f"z * {k}" for k in range(n)) + ")\n" + (SOLUTIONS / "gradients_solution.py").read_text())
    depth = sys.getrecursionlimit()
    sys.setrecursionlimit(10000)                                               # as in the reader's child
    try:
        small, large = _calls(chain(300)), _calls(chain(600))
    finally:
        sys.setrecursionlimit(depth)
    assert large < 2.5 * small, (small, large)


def test_a_file_the_reader_cannot_finish_costs_its_own_row_only(monkeypatch):
    """The reader runs in a child of its own within a CPU-time and memory limit: here 16 MB, which
    a 1 MB file's syntax tree passes; that file's row says it was not compared and why, and the
    class's other files are compared as ever."""
    monkeypatch.setattr(similarity, "READER_MEMORY", 16 * 2**20)
    mine = (SOLUTIONS / "gradients_solution.py").read_text()
    huge = "import numpy as np\n" + "".join(f"x{k} = np.zeros({k})\n" for k in range(40000))
    subs = [_submission("alice.py", "gradients", mine), _submission("bob.py", "gradients", _renamed(mine)),
            _submission("mallory.py", "gradients", huge)]
    flagged = similarity.flags(subs)
    assert "not compared: MemoryError" in flagged.get(Path("mallory.py"), ""), flagged
    assert "bob.py 1.00" in flagged.get(Path("alice.py"), "") and "alice.py 1.00" in flagged.get(Path("bob.py"), "")


def test_a_class_run_compares_the_helpers_each_submission_ran(tmp_path):
    """End to end (``grade FOLDER --csv``): bob's graded file is one import line and alice's code
    is his helper; the CSV's similar column pairs the two, and carol's own code is not flagged."""
    import csv
    import shutil
    from numpy_mamba.grader.run import main
    folder = tmp_path / "class"
    for name in ("alice", "bob", "carol"):
        (folder / name).mkdir(parents=True)
    shutil.copy(SOLUTIONS / "gradients_solution.py", folder / "alice" / "gradients.py")
    shutil.copy(SOLUTIONS / "gradients_solution.py", folder / "bob" / "_mine.py")
    (folder / "bob" / "gradients.py").write_text("from _mine import grad_W_C, grad_W_B, grad_w\n")
    shutil.copy(STUDENTS / "correct_from_the_paper.py", folder / "carol" / "gradients.py")
    assert main([str(folder), "--csv", str(tmp_path / "grades.csv")]) == 0
    rows = {Path(r["submission"]).parent.name: r for r in csv.DictReader((tmp_path / "grades.csv").open())}
    assert rows["bob"]["points"] == "10" and "alice/gradients.py 1.00" in rows["bob"]["similar"], rows["bob"]
    assert "bob/gradients.py 1.00" in rows["alice"]["similar"] and rows["carol"]["similar"] == "", rows

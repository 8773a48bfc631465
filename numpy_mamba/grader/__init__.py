"""The exercises' autograder: ``python -m numpy_mamba grade PATH...`` and ``gradescope EXERCISE``
(tutorials/README.md for students, tutorials/INSTRUCTORS.md for instructors and the threat model).

Each submission is imported and called in a child process that holds no answer and can harm no
one (``sandbox/``: its package docstring is the threat model); this process computes the
references and compares the arrays the child sends back.

    run.py        the command: one file (a student: the public problems of seed 0) or a class (an
                  instructor: every problem of a secret seed kept in a file, the CSV, the
                  similarity flag), exit statuses, outputs written atomically
    seed.py       the secret seed of a course's problems, kept in a file only the grader reads
    margins.py    grade --margins: how far each CPU budget is from the derivations and the
                  shortcuts it stops
    gradescope.py the Gradescope autograder: the zip (setup.sh, run_autograder, a wheel of this
                  package, the secret seed) and what run_autograder runs
    files.py      what is graded: the submissions among files and folders, a file's source (a
                  notebook's code cells: notebook.py), the helper modules each may import
    notebook.py   the Python of an .ipynb's code cells, IPython syntax refused by cell
    grade.py      one submission: its exercise, its groups of problems (public, budget, hidden:
                  each in children of its own), its results
    children.py   running a group of problems in as few children as it takes, and what came back
    sandbox/      the child processes: tiers, Landlock, seccomp, files, the protocol (its own docstring)
    kit.py        what of numpy_mamba a submission can import: an exercise's allowlist and what it
                  calls, copied as source
    registry.py   what an exercise declares (functions, points, imports, problems, budget, hidden
                  problems, reference, comparison, mistakes) and the registry
    exercises/    the declarations, one module per hand-out (gating, gradients, stack)
    problems.py   the seeded grading problems (l = 1, saturated gates, both sides of the hinge, the
                  kink, the budget problem) and the budgets' unit
    compare.py    an answer against its reference: dtype, shape, values; points per group of problems
    hints.py      turning a failed function into a hint
    mistakes.py   known mistakes of the gradients (sign, transpose, factor B, label leak, missing
                  suffix term, ...), each the package's reference with one term changed; the
                  gates' live in their exercise's module
    layer_mistakes.py  known mistakes of the stack's layer_backward (residual added, a path of dH
                  dropped, gate limit off by one, S^T, dW_B / dW_C transposed or swapped, ...)
    similarity.py the similarity flag: every file a submission ran, against the package's
                  reference (what its answers reach) and the classmates
    fingerprint.py its reader: one normal form, winnowed fingerprints, linear, run in a child
                  with limits
    syntax.py     ``parse``: ast.parse one thread at a time (CPython 3.11 shares its recursion check)
    report.py     the text report, the class table, CSV and Gradescope's results.json, made harmless
"""

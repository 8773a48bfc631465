"""The exercises' autograder: ``python -m numpy_mamba grade PATH...`` (tutorials/README.md).

Each submission is imported and called in a child process that cannot reach the reference; this
process only compares the arrays the child sends back.

    run.py       the command: one file (a student) or many / a folder (an instructor), exit statuses
    grade.py     one submission: which exercise, its child processes, its graded functions
    sandbox.py   the parent's side of a child: start it, read it, kill it at the time limit
    child.py     what runs in the child: import the file, call its functions, send the answers
    guard.py     the child's fence: stubbed reference entry points, resource limits, an audit hook
    protocol.py  the frames between child and parent, parsed strictly (numbers only)
    registry.py  what an exercise declares (functions, points, forbidden entry points, inputs,
                 reference, comparison, mistakes) and the registry
    exercises/   the declarations, one module per hand-out (gating, gradients, stack); a new
                 exercise is one new module there
    compare.py   an answer against its reference: dtype, shape, values; points per function
    hints.py     turning a failed function into a hint
    problems.py  the seeded grading problems (l = 1, saturated gates, both sides of the hinge, ...)
    mistakes.py  known mistakes (sign, transpose, factor B, label leak, missing suffix term, ...)
    layer_mistakes.py  known mistakes of the stack's layer_backward (residual added, a path of dH
                 dropped, gate limit off by one, S^T, dW_B / dW_C transposed or swapped, ...)
    report.py    the text report, the class table, CSV and Gradescope's results.json
"""

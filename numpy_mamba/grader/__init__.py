"""The exercises' autograder: ``python -m numpy_mamba grade PATH...`` and ``gradescope EXERCISE``
(tutorials/README.md for students, tutorials/INSTRUCTORS.md for instructors and the threat model).

Each submission is imported and called in a child process that the kernel confines (Landlock,
seccomp) and that holds no answer: it gets the problems' arrays and, of numpy_mamba, only what
its hand-out may import; this process computes the references and compares the arrays the
child sends back.

    run.py        the command: one file (a student) or many / a folder (an instructor), exit statuses,
                  --points, --allow-weak-isolation, outputs checked first and written atomically
    gradescope.py the Gradescope autograder: the zip (setup.sh, run_autograder, a wheel of this
                  package) and what run_autograder runs
    grade.py      one submission: its one exercise, its children, its graded functions
    folders.py    the copy of a submission (and its helpers) a child reads; the cleanup of what a
                  child leaves
    sandbox.py    the parent's side of a child: start a fresh interpreter, feed it, read it, kill it
                  at the time limit; what every child may read
    child.py      what runs in the child: serve the kit, confine itself, import the file, call its
                  functions, send the answers
    kernel.py     the kernel sandbox: Landlock, seccomp-BPF, limits, capabilities, PDEATHSIG; the
                  one line saying what is in force
    kit.py        what of numpy_mamba a submission can import: an exercise's allowlist and what it
                  calls, copied as source
    protocol.py   the frames between child and parent, parsed strictly (numbers only, each event
                  in its state)
    registry.py   what an exercise declares (functions, points, imports, inputs, reference,
                  comparison, mistakes) and the registry
    exercises/    the declarations, one module per hand-out (gating, gradients, stack); a new
                  exercise is one new module there
    compare.py    an answer against its reference: dtype, shape, values; points per function
    hints.py      turning a failed function into a hint
    problems.py   the seeded grading problems (l = 1, saturated gates, both sides of the hinge, the
                  kink, ...)
    mistakes.py   known mistakes of the gradients (sign, transpose, factor B, label leak, missing
                  suffix term, ...); the gates' live in their exercise's module
    layer_mistakes.py  known mistakes of the stack's layer_backward (residual added, a path of dH
                  dropped, gate limit off by one, S^T, dW_B / dW_C transposed or swapped, ...)
    report.py     the text report, the class table, CSV and Gradescope's results.json
"""

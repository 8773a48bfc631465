"""Marks: the solution through a helper module that is a link the student made next to the
submission (_solution.py: a symbolic link to tests/solutions/gradients_solution.py, or a
hard link to a copy only the grader can read; the tests make them).  A grader that opens what
the student names copies the solution into the sandbox."""
from _solution import grad_W_B, grad_W_C, grad_w  # noqa: F401

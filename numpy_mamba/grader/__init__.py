"""The exercises' autograder: ``python -m numpy_mamba grade FILE``.

    run.py       the command: loads the student's file, grades each exercise function, prints a table
    problems.py  the seeded grading problems (l = 1, saturated gates, both sides of the hinge, ...)
    mistakes.py  known mistakes (sign, transpose, factor B, label leak, missing suffix term, ...)
    hints.py     turning a failed answer into a hint
"""

"""Numerical checks of the paper's theory: ``python -m numpy_mamba theory``.

    run.py        the command: settings, runs every check, writes JSON, figures, REPORT.md's section
    claims.py     Theorems 1-4: iterations to converge, tolerated outlier fraction
    mechanism.py  Corollaries 1-2 and Lemmas 4-6: attention sums, gates, projections of w
    measure.py    the measurements they share: steps to a loss, slopes, error curves
    step_sizes.py eta per model by the step-size rule of the reproduce section, on selection worlds of its own
    plots.py      the theory_*.png figures
    report.py     the "theory" section of REPORT.md
"""

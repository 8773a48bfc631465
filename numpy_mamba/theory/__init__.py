"""Numerical checks of the paper's theory: ``python -m numpy_mamba theory``.

    run.py        the command: runs every check, judges, writes JSON, figures, REPORT.md's section
    settings.py   every setting, frozen: FULL, QUICK and one dataclass per experiment
    theorems.py   Theorems 1-4 measured: iterations to converge, tolerated outlier fraction
    claims.py     Theorems 1-4 and Remark 5 judged (``judge`` applies every rule), and the summary of every verdict
    mechanism.py  Corollaries 1-2 and Lemmas 4-6 measured: attention sums, gates, projections of w
    verdicts.py   the rules on the gates across M1 and on one training run (Corollary 2, Lemmas 4-6)
    rows.py       the section's rows of REPORT.md's results table, and the rules they cite
    measure.py    the measurements they share: steps to a loss, slopes, error curves
    step_sizes.py eta per model by the step-size rule of numpy_mamba.runs, on selection worlds of its own
    plots.py      the theory_*.png figures
    report.py     the "theory" section of REPORT.md, one function per part
"""

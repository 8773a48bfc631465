"""Section 4 of the paper reproduced: ``python -m numpy_mamba reproduce``.

    run.py        the command: runs the experiments, writes JSON, figures and REPORT.md's section
    common.py     settings (the paper's where it gives them, ours otherwise), training, error counts
    fig2.py       Figure 2: test error against the outlier fraction alpha (three labellings)
    mechanism.py  Figures 3, 4 and Table 1: attention sums, gates, outlier placement
    claims.py     the paper's claims, each with the rule that decides its verdict
    report.py     the "reproduce" section of REPORT.md
    plots.py, figures.py  the figures, drawn from the saved JSON
"""

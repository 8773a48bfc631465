"""Section 4 of the paper reproduced: ``python -m numpy_mamba reproduce``.

    run.py        the command: runs the experiments, writes JSON, figures and REPORT.md's section
    common.py     settings (the paper's where it gives them, ours otherwise), training, error counts, task groups
    step_size.py  the rule that chooses eta (or any training field) per model on held-out training prompts
    fig2.py       Figure 2: test error against the outlier fraction alpha (three labellings)
    mechanism.py  Figures 3, 4 and Table 1: attention sums, gates, outlier placement
    verdicts.py   verdict rules shared with the theory section (rise at 1/2, Remark 5, Corollary 1, ...)
    claims.py, claims_mechanism.py  the paper's claims, each with the rule that decides its verdict
    report.py, tables.py  the "reproduce" section of REPORT.md and the end-of-run summary
    plots.py, figures.py  the figures, drawn from the saved JSON
"""

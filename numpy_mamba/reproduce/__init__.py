"""Section 4 of the paper reproduced: ``python -m numpy_mamba reproduce``.

    run.py        the command: runs the experiments, writes JSON, figures and REPORT.md's section
    common.py     settings (the paper's where it gives them, ours otherwise), training, error counts, task groups
    step_size.py  the rule that chooses eta (or any training field) per model on held-out training prompts
    fig2.py       Figure 2: test error against the outlier fraction alpha (three labellings)
    mechanism.py  Figures 3, 4 and Table 1: attention sums, gates, outlier placement
    depth3.py     Section 4.2 with three-layer stacks: Figs 3-4 (layer 1), 5-6 (layers 2-3), Table 1
    claims.py, claims_mechanism.py  the paper's claims, each with the rule (numpy_mamba.measure.verdicts) that decides its verdict
    report.py, tables.py  the "reproduce" section of REPORT.md and the end-of-run summary
    report_depth3.py  the three-layer part of that section (delta/eta chosen, training, Table 1)
    plots.py, figures.py  the figures, drawn from the saved JSON
    figures_depth3.py  the three-layer figures (fig3_L3, fig4_L3, fig5, fig6, table1_L3)
"""

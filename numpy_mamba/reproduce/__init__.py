"""Section 4 of the paper reproduced: ``python -m numpy_mamba reproduce``.

One module per experiment, each defining its ``EXPERIMENT`` (``experiment.Experiment``: files,
step-size rule, training units, claims, figures, report part), and one registry that lists them:

    experiment.py   Experiment: what an experiment is, as one value
    registry.py     the registry EXPERIMENTS = (fig2, factorial, mechanism, depth3)
    fig2.py         Figure 2: test error against the outlier fraction alpha (three labellings)
    factorial.py    why Figure 2 misses: training tasks x eta x kappa_a' at its protocol, the gate and
                    the break-even it predicts (its report part: factorial_report.py)
    mechanism.py    Figures 3, 4 and Table 1 from one training run: attention sums, gates, outlier placement
    depth3.py       Section 4.2 with three-layer stacks: Figs 3-4 (layer 1), 5-6 (layers 2-3), Table 1

What the experiments build on:

    run.py          the command: loops over the registry, writes JSON, figures and REPORT.md's section
    common.py       settings (the paper's where it gives them, ours otherwise), training and the
                    held-out check (eta and delta are chosen per model by the step-size rule of numpy_mamba.runs)
    results.py      reading saved results: task groups and subsets, pooled rates, a layer of a three-layer result
    claims.py, claims_mechanism.py  the paper's claims, each with the rule (numpy_mamba.measure) that decides its verdict
    report.py       the head of the "reproduce" section (claims table, settings, training, step sizes),
                    and the rules and first-screen lines the experiments give
    tables.py       number tables in Markdown (Figure 2 in numbers, task groups, Table 1, step sizes)
    report_depth3.py  the three-layer part of that section (delta/eta chosen, training, Table 1)
    plots.py        the shared figure style (colours, settings footer, saving with the smoke stamp) and Figure 2's figures
    figures.py      Figures 3 and 4 and their panels, which the three-layer figures reuse
    figures_table1.py  Table 1 as numbers and image: every setting, task groups, the main setting picked out
    figures_depth3.py  the three-layer figures (fig3_L3, fig4_L3, fig5, fig6, table1_L3)

The ablation of the three-layer gap is a family of its own (``numpy_mamba.ablation``).
"""

"""The distance-2 gap of Table 1's prompts, ablated: ``python -m numpy_mamba ablation``.

The trained models miss mostly tasks whose two patterns are two steps apart on the cycle of
Condition 1's training tasks.  This family varies one factor at a time (the untrained model, the
task set, steps, both, held-out pairs, pre-norm) at one and three layers and measures, beside the
accuracy per task group on Table 1's FQ, R, CQ and clean prompts, every layer's learned
cross-pattern score of Corollary 1:

    run.py       the command: step sizes, every run, the JSON, figure, claims and REPORT.md section
    settings.py  what is varied (arms, task sets, held-out pairs, factors, test prompts) and ``AblationSettings``
    units.py     the step-size rule per model and arm, and one training run per (seed, model, arm, task set)
    terms.py     S(a, b) by signed step on the cycle, split into the parts of W = W^(0) + dW; scores by step per layer
    results.py   the "ablation" JSON assembled from the runs: accuracy, paired changes, mechanism by layer
    claims.py    its questions as rules that can fail: the rows of REPORT.md's results table
    figure.py    ablation.png, drawn from the JSON
    report.py    its REPORT.md section, drawn from the JSON
    tables.py    the section's number tables: accuracy by task group, mechanism by layer
"""

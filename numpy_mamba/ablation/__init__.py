"""The distance-2 gap of Table 1's FQ prompts, ablated: ``python -m numpy_mamba ablation``.

The trained models miss almost only tasks whose two patterns are two steps apart on the cycle of
Condition 1's training tasks.  This family varies one factor at a time (task set, steps, pre-norm)
at one and three layers and measures, beside the accuracy per task group, the learned
cross-pattern score of Corollary 1 that explains it:

    run.py       the command: step sizes, every run, the JSON, figure and REPORT.md section
    settings.py  what is varied (arms, factors, test prompts) and ``AblationSettings``
    units.py     the step-size rule per model and arm, and one training run per (seed, model, arm, task set)
    terms.py     S(a, b) by signed step on the cycle, split into the parts of W = W^(0) + dW
    results.py   the "ablation" JSON assembled from the runs: accuracy, paired changes, mechanism terms
    figure.py    ablation.png, drawn from the JSON
    report.py    its REPORT.md section, drawn from the JSON
"""

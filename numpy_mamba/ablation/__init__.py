"""The distance-2 gap of Table 1's prompts, ablated: ``python -m numpy_mamba ablation``.

The trained models miss mostly tasks whose two patterns are two steps apart on the cycle of
Condition 1's training tasks.  This family varies one factor at a time (the untrained model, the
task set, steps, both, held-out pairs, pre-norm) at one and three layers and measures, beside the
accuracy per task group on Table 1's FQ, R, CQ and clean prompts, every layer's learned
cross-pattern score of Corollary 1:

    gap.py       the experiment: settings, the step-size rule (delta = 0.2 first), the runs, the claims and
                 the REPORT.md section
    one_run.py   one training run (seed, model, arm, task set): accuracy and mechanism at every checkpoint
    terms.py     S(a, b) by signed step on the cycle, split into the parts of W = W^(0) + dW; scores by step per layer
    results.py   the "ablation" JSON assembled from the runs (accuracy, paired changes, mechanism by layer), read
    figure.py    ablation.png, drawn from the JSON
    templates/ablation.md  the sentences and table headers of its REPORT.md section

``COMMAND`` is the ``ablation`` command: its registry, one experiment (``runs.experiment.Command``).
"""
from ..runs.experiment import Command
from . import gap

COMMAND = Command("ablation", (gap,), gap.__doc__, gap.heading, gap.section, seeds=True)

"""What the reproduction (Section 4), its ablation and the theory checks measure on a trained model,
and how they judge it.

The families import these, so a claim two of them judge is measured and judged the same way.

    tasks.py      task groups: where a task (a, b) sits on the cycle of training tasks (Condition 1)
    rates.py      error counts per task group (eq (5)), their pooled Clopper-Pearson intervals and the
                  95% interval over seeds that every verdict rule uses
    attention.py  Corollary 1's attention-score sums and the learned pattern-to-pattern scores
    gates.py      Corollary 2's gates on outlier and clean examples, per position and per clean rank
    rules.py      every rule that turns a number into a verdict, its text beside the function that applies
                  it: the vocabulary of verdicts, the intervals, ties and divergence, the step-size rule,
                  the rules on error rates and on the mechanism
"""

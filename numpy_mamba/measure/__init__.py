"""What the reproduction (Section 4), its ablation and the theory checks measure on a trained model,
and how they judge it.

The families import these, so a claim two of them judge is measured and judged the same way.

    tasks.py      task groups: where a task (a, b) sits on the cycle of training tasks (Condition 1)
    rates.py      error counts per task group (eq (5)), their pooled Clopper-Pearson intervals and the
                  95% interval over seeds that every verdict rule uses
    attention.py  Corollary 1's attention-score sums and the learned pattern-to-pattern scores
    gates.py      Corollary 2's gates on outlier and clean examples, per position and per clean rank
    verdicts.py   the one vocabulary of verdicts, how cases (settings, groups, seeds) make one verdict that
                  names where it holds, borderline margins, and a results-table row (``claim_row``)
    mechanism_verdicts.py  the rules on the mechanism reproduce and theory judge: Corollary 1, Corollary 2
                  (i) and (ii), growth during training; each rule can fail, its text beside it
    error_verdicts.py  the rules on error rates: the rise at alpha = 1/2, Remark 5, Table 1's numbers and
                  pattern, Theorem 4
"""

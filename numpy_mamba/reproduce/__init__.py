"""Section 4 of the paper reproduced: ``python -m numpy_mamba reproduce``.

One module per experiment, each with the parts of an experiment (``numpy_mamba.runs.experiment``:
settings, units, the JSON, figure, claims, its part of the report), and ``COMMAND``, whose registry
lists them:

    fig2.py         Figure 2: test error against the outlier fraction alpha (three labellings), its claims
    factorial.py    why Figure 2 misses: training tasks x eta x kappa_a' at its protocol, the gate and
                    the break-even it predicts
    mechanism.py    Figures 3, 4 and Table 1 from one training run: attention sums, gates, outlier placement
    depth3.py       Section 4.2 with three-layer stacks: Figs 3-4 (layer 1), 5-6 (layers 2-3), Table 1

What they share:

    common.py       settings (the paper's where it gives them, ours otherwise), training, the step-size
                    rule per model (numpy_mamba.runs), reading saved results
    corollaries.py  the claims of Section 4.2 at any depth (Corollaries 1-2, Table 1), each with its rule
    section.py      the command's own part of REPORT.md: heading, claims in detail, settings, training,
                    step sizes; the appendix's "Main setting"
    plots.py        the shared figure style and Figure 2's figures
    figures.py      Figures 3 and 4 and their panels, which the three-layer figures (3-6) reuse
    table1.py       Table 1 as Markdown and as an image
    templates/      the sentences of the section, one Markdown template per experiment and one for the head

The ablation of the three-layer gap is a family of its own (``numpy_mamba.ablation``).
"""
from ..runs.experiment import Command
from . import depth3, factorial, fig2, mechanism, section

DOC = """``python -m numpy_mamba reproduce``: the experiments of the paper's Section 4 (Figures 2-6 and
Table 1) in one command, each experiment a module of the registry ``reproduce.COMMAND``; what each
computes and writes:

fig2, fig3, fig4 and table1 train the one-layer models of eq (3), depth3 the three-layer stacks of
stack.py.  ``--seeds`` sets the training seeds of the one-layer experiments (fig2, fig3, fig4,
table1); factorial and depth3 keep their own.  fig3, fig4 and table1 come from one training run:
``--only`` any of them writes all three.  ``--quick`` runs the same pipeline at reduced size.  The
JSON files are written first; figures and report are drawn from the JSON as saved."""


def _section(results: dict, run, rows: list, heads: list) -> str:
    return section.section(COMMAND.experiments, results, run, rows, heads)    # the registry as it reads when called


COMMAND = Command("reproduce", (fig2, factorial, mechanism, depth3), DOC, section.heading, _section,
                  rules_before=("vocabulary", "step-size", "divergence", "tie", "sd"), notes=section.notes,
                  summary=section.bottom_line, seeds=True)

"""How every experiment command runs and writes its results; the families import it, it imports no family.

    experiment.py  what an experiment is (one module with the same few parts) and what a command is
                   (a name over a registry of experiments): read this first to add an experiment
    command.py     the one runner of reproduce, theory, gates and ablation: options, step-size rule,
                   units, JSON, figures, claims, report section, the closing lines
    runner.py      independent units in worker processes (``--jobs``), all-or-nothing output folders,
                   Ctrl-C and SIGTERM
    claims.py      a claim as a row (``claim_row``), and the results table that opens REPORT.md: every
                   command's claims_<command>.json, one row per claim
    report.py      the report's sentences as Markdown templates, filled from the results
    output.py      results on disk: JSON, named sections of REPORT.md, figures without pyplot, the
                   smoke-run stamp and settings footers of figures
    step_size.py   the training and scoring of the step-size rule (measure.rules.choose) per model on
                   held-out training prompts, never on test settings
    worlds.py      the seeded worlds of training seed s and of step-size selection seed k, which
                   every experiment command shares
    args.py        argparse types every command shares (positive_int, probability, ...): usage errors
    templates/     results.md: the sentences of the results section and of the appendix's head
"""

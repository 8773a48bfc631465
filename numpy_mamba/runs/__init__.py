"""How every experiment command runs and writes its results; the families import it, it imports no family.

    jobs.py        ``--jobs``: independent units (seeds, settings) in worker processes, same numbers for every N
    memory.py      glibc's heap padding for the processes that train (a freed step's pages are reused)
    staging.py     all-or-nothing output folders (``run_staged``): --out checked before computing
    interrupts.py  Ctrl-C and SIGTERM: recorded, raised, never swallowed
    output.py      results on disk: JSON (compact for large results), named sections of REPORT.md,
                   figures without pyplot, the smoke-run stamp and settings footers of figures;
                   show_figure for the tutorials
    worlds.py      the seeded worlds of training seed s and of step-size selection seed k, which
                   every experiment command shares
    args.py        argparse types every command shares (positive_int, probability, ...): usage errors
    summary.py     the closing lines every experiment command prints: headline numbers, verdicts, files, time
    claims.py      a claim as a row (``claim_row``), and the results table that opens REPORT.md: every
                   command's claims_<command>.json, one row per claim
    step_size.py   the rule that chooses eta (or delta, or any training field) per model on held-out
                   training prompts, never on test settings; reproduce, theory and ablation use it
"""

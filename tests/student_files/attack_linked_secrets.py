"""Secrets: helper modules that are links to what the grader can read and the student cannot
(_leak_*.py: the grader's own environment through /proc/self/environ, a root-only key, a hard link
to another; on Gradescope ../source/secret.seed, the secret seed, and ../source/autograder.json; the tests make them).  A
grader that opens what the student names copies them into the sandbox, where this file reads
them and sends them back in its error message."""
from pathlib import Path


def grad_W_C(params, P, z):
    found = {p.name: p.read_bytes()[:3000] for p in sorted(Path(__file__).parent.glob("_leak*"))}
    raise RuntimeError(f"leaked: {found!r}")

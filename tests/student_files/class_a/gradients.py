"""Correct, with its helpers in helpers.py next to it (see class_b: same module name)."""
from helpers import grad_W_C  # noqa: F401

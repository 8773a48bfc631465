"""Correct, with its helpers in helpers.py next to it (see class_b: same module name)."""
from helpers import helper_grad_W_C as grad_W_C  # noqa: F401

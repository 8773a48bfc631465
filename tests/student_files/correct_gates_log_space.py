"""Correct: the gates in log space with numpy and scipy only (what the gates hand-out allows)."""
from _gates_common import my_gates


def gates(w, P):
    return my_gates(w, P)

"""Crash: a forged setup_error after ready, so the parent believed its own setup failed
("internal error", exit 3, no CSV)."""
import numpy as np

from _pipes import send_everywhere


def grad_W_C(params, P, z):
    send_everywhere(b'{"event": "setup_error", "error": "forged"}')
    return np.zeros_like(params.W_C)

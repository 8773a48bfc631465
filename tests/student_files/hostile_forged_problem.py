"""One file stops the class: result frames forged on the result channel for a problem the child
was never given (number 99), which the parent used as an index into its problems (IndexError:
"the grader itself failed", exit 3)."""
import json

import numpy as np

from _pipes import send_everywhere

CALLS = []


def grad_W_C(params, P, z):
    k = len(CALLS)
    CALLS.append(k)
    for message in ({"event": "result", "function": "grad_W_C", "problem": k, "answer": {"none": True}, "arrays": 0},
                    {"event": "start", "function": "grad_W_C", "problem": 99},
                    {"event": "result", "function": "grad_W_C", "problem": 99, "answer": {"none": True},
                     "arrays": 0}):
        send_everywhere(json.dumps(message).encode())
    return np.zeros_like(params.W_C)

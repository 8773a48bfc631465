"""Hidden problems shown: every call's inputs are noted in a global, printed, and put in the error
of grad_w's first call, so that what a child saw of the hidden problems reaches the public
output and a public hint when public and hidden problems share a child."""
import numpy as np

SEEN = []


def fingerprint(P) -> str:
    """How the test recognises a problem in a text: the sum of its prompts."""
    return f"seen:{float(np.sum(P)):.10e}"


def grad_W_C(params, P, z):
    SEEN.append(fingerprint(P))
    print(" ".join(SEEN))
    return np.zeros_like(params.W_C)


def grad_w(params, P, z):
    raise ValueError("everything this process saw: " + " ".join(SEEN))

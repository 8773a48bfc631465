"""Marks without code: a table of answers keyed by a digest of each call's inputs, made beforehand
from the problems every student sees locally (seed 0: ``grade`` without --seed), kept in a helper
module ``_answer_table.py`` next to it (the test writes it from the package's reference).  Any
problem not in the table gets zeros."""
import base64

import numpy as np

from _answer_table import TABLE


def key(params, P, z) -> str:
    """A digest of one call's inputs (the same arrays give the same key)."""
    return f"{P.shape} {float(np.sum(P)):.12e} {float(np.sum(params.W_C)):.12e} {float(np.sum(z)):.3f}"


def _answer(field, params, P, z):
    shape = getattr(params, field).shape
    found = TABLE.get(key(params, P, z), {}).get(field)
    return np.frombuffer(base64.b64decode(found)).reshape(shape).copy() if found else np.zeros(shape)


def grad_W_C(params, P, z):
    return _answer("W_C", params, P, z)


def grad_W_B(params, P, z):
    return _answer("W_B", params, P, z)


def grad_w(params, P, z):
    return _answer("w", params, P, z)

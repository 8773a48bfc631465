"""Cheat: make the grader's comparison always succeed, then return zeros.  The grader is not
importable from a submission, so the file does not even import."""
import numpy_mamba.grader.compare as grader

grader.rel_error = lambda a, b: 0.0


def grad_W_C(params, P, z):
    return 0.0 * params.W_C

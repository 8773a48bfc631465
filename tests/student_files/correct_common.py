"""Correct: all three gradients from _common.my_gradients (a student's vectorised version, with a
helper module next to the file); the grader must pass it."""
from _common import my_gradients


def grad_W_C(params, P, z):
    return my_gradients(params, P, z)[1]


def grad_W_B(params, P, z):
    return my_gradients(params, P, z)[0]


def grad_w(params, P, z):
    return my_gradients(params, P, z)[2]

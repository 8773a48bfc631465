"""Marks without a derivation: a small reverse-mode automatic differentiation (a tape of array
operations, each with its vector-Jacobian product) run through a hand-written forward pass of
eq (3) and the mean hinge loss.  Exact to rounding and about as fast as a derivation: no
correctness check and no budget tells it from one (tutorials/INSTRUCTORS.md, what no grader stops)."""
import numpy as np
from scipy.special import expit, log_expit


class Node:
    """An array on the tape: its value, its parents and how to send a gradient back to them."""

    def __init__(self, value, parents=()):
        self.value, self.parents, self.grad = np.asarray(value, dtype=float), parents, None

    def __add__(self, other):
        return op(self.value + other.value, (self, lambda g: g), (other, lambda g: g))

    def __mul__(self, other):
        return op(self.value * other.value, (self, lambda g: g * other.value), (other, lambda g: g * self.value))


def op(value, *parents):
    return Node(value, parents)


def einsum(spec, a, b):
    inputs, out = spec.split("->")
    left, right = inputs.split(",")
    return op(np.einsum(spec, a.value, b.value),
              (a, lambda g: np.einsum(f"{out},{right}->{left}", g, b.value)),
              (b, lambda g: np.einsum(f"{left},{out}->{right}", a.value, g)))


def apply(f, df, a):
    return op(f(a.value), (a, lambda g: g * df(a.value)))


def reverse_cumsum_after(a):
    """sum_{j>i} a_j along the last axis."""
    def f(x):
        return np.cumsum(x[..., ::-1], axis=-1)[..., ::-1] - x

    def back(g):
        return np.cumsum(g, axis=-1) - g
    return op(f(a.value), (a, back))


def total(a, scale):
    return op(np.sum(a.value) * scale, (a, lambda g: np.full(a.value.shape, g * scale)))


def backward(out):
    order, seen = [], set()

    def visit(node):
        if id(node) not in seen:
            seen.add(id(node))
            for parent, _ in node.parents:
                visit(parent)
            order.append(node)
    visit(out)
    out.grad = np.ones_like(out.value)
    for node in reversed(order):
        for parent, vjp in node.parents:
            g = vjp(node.grad)
            parent.grad = g if parent.grad is None else parent.grad + g


def _grads(params, P, z):
    W_B, W_C, w = Node(params.W_B), Node(params.W_C), Node(params.w)
    PP = Node(P)
    a = einsum("d,bdl->bl", w, PP)
    log_G = apply(log_expit, lambda x: expit(-x), a) + reverse_cumsum_after(apply(lambda x: log_expit(-x),
                                                                                lambda x: -expit(x), a))
    G = apply(np.exp, np.exp, log_G)
    q = einsum("md,bd->bm", W_C, Node(P[:, :, -1]))
    keys = einsum("md,bdl->bml", W_B, PP)
    s = einsum("bml,bm->bl", keys, q)
    F = einsum("bl,bl->b", G * Node(P[:, -1, :]), s)
    F_value = F.value
    active = (1.0 - z * F_value > 0).astype(float)
    loss = total(F * Node(-z * active), 1.0 / len(z))
    backward(loss)
    return W_B.grad, W_C.grad, w.grad


def grad_W_C(params, P, z):
    return _grads(params, P, z)[1]


def grad_W_B(params, P, z):
    return _grads(params, P, z)[0]


def grad_w(params, P, z):
    return _grads(params, P, z)[2]

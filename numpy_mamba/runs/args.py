"""Argument types shared by every command: ``parser.add_argument("--steps", type=nonnegative_int)``.

Each function turns the text of one command-line value into a number or raises
``argparse.ArgumentTypeError`` saying what it received and what it expected; argparse then prints
the usage line and ``argument --steps: expected an integer >= 0; got '-1'`` and exits with status 2,
without a traceback.  They check only what holds for every use of such a number (a seed is never
negative, a step size is a positive finite number); a command's own rules, such as an upper
bound, stay with the command.

    positive_int       1, 2, 3, ...             batch sizes, steps of a loop, repetitions
    nonnegative_int    0, 1, 2, ...             seeds (np.random.default_rng refuses negatives), T
    positive_float     finite, > 0              step sizes eta, scales such as kappa_a
    nonnegative_float  finite, >= 0
    probability        in [0, 1)                p_a and alpha of the paper (1 would leave no clean example)

and ``help_text(__doc__)``: a command's docstring as its ``--help`` prints it, in plain text.
"""
from __future__ import annotations

import argparse
import math
import re


def help_text(doc: str) -> str:
    """``doc`` (reST, as docstrings are written) as plain text for ``--help``: ``code`` and
    :role:`name` lose their markup, and a line ending in '::' (a literal block follows) ends in ':'."""
    text = re.sub(r":\w+:`([^`]*)`", r"\1", doc)
    text = re.sub(r"``(.+?)``", r"\1", text)
    text = re.sub(r" ?::$", ":", text, flags=re.M)
    return text


def _integer(text: str, minimum: int) -> int:
    try:
        value = int(text)
    except (TypeError, ValueError):
        raise argparse.ArgumentTypeError(f"expected an integer >= {minimum}; got {text!r}") from None
    if value < minimum:
        raise argparse.ArgumentTypeError(f"expected an integer >= {minimum}; got {text!r}")
    return value


def _real(text: str, expected: str, ok) -> float:
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise argparse.ArgumentTypeError(f"expected {expected}; got {text!r}") from None
    if not (math.isfinite(value) and ok(value)):
        raise argparse.ArgumentTypeError(f"expected {expected}; got {text!r}")
    return value


def positive_int(text: str) -> int:
    """An integer >= 1 (``"3"``; not ``"0"``, ``"-2"``, ``"2.5"`` or ``"1e3"``)."""
    return _integer(text, 1)


def nonnegative_int(text: str) -> int:
    """An integer >= 0, e.g. a seed (NumPy refuses negative seeds) or a number of steps."""
    return _integer(text, 0)


def positive_float(text: str) -> float:
    """A finite number > 0 (``"0.1"``, ``"1e-3"``; not ``"0"``, ``"-1"``, ``"nan"`` or ``"inf"``)."""
    return _real(text, "a positive finite number", lambda x: x > 0)


def nonnegative_float(text: str) -> float:
    """A finite number >= 0."""
    return _real(text, "a finite number >= 0", lambda x: x >= 0)


def probability(text: str) -> float:
    """A number in [0, 1), as the paper's outlier probabilities p_a and alpha."""
    return _real(text, "a probability in [0, 1)", lambda x: 0 <= x < 1)

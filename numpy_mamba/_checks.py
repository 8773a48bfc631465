"""Input validation shared by every public function.

Every check raises ``ValueError`` with what was received and what was expected;
nothing is clipped, dropped or silently coerced.
"""
from __future__ import annotations

import numbers

import numpy as np


def received(x) -> str:
    """``'0.1' (str)``: the value and its type, for messages about a wrong type."""
    return f"{x!r} ({type(x).__name__})"


def check_real(x, name: str, expected: str = "a real number") -> float:
    """A real scalar as a float: int, float, NumPy integer or floating scalar, or a 0-d array of
    those.  A string, a bool (True is not the number 1 here), a complex or None is refused;
    ``expected`` says what ``name`` should be in the message."""
    if isinstance(x, np.ndarray) and x.ndim == 0 and x.dtype.kind in "iuf":
        x = x[()]
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, numbers.Real):
        raise ValueError(f"{name} must be {expected}; got {received(x)}.")
    return float(x)


def as_real_array(x, name: str, *, finite: bool = True) -> np.ndarray:
    """Return ``x`` as a float64 array, refusing non-numeric, complex or (unless ``finite`` is
    False) non-finite data."""
    arr = np.asarray(x)
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        raise ValueError(f"{name} must be a real numeric array; got dtype {arr.dtype}.")
    if np.iscomplexobj(arr):
        raise ValueError(f"{name} must be real; got complex dtype {arr.dtype}.")
    arr = arr.astype(np.float64, copy=False)
    if not finite:
        return arr
    with np.errstate(over="ignore", invalid="ignore"):
        suspicious = not np.isfinite(np.sum(arr))          # cheap test; exact one below
    if suspicious and not np.all(np.isfinite(arr)):
        bad = np.argwhere(~np.isfinite(arr))[0]
        raise ValueError(
            f"{name} must be finite; found {float(arr[tuple(bad)])} at index {tuple(int(b) for b in bad)}."
        )
    return arr


def check_prompts(P, d0: int | None = None) -> tuple[np.ndarray, bool]:
    """Validate prompts laid out as eq (2).

    Returns ``(P, single)`` with ``P`` of shape (B, d+1, l+1) and ``single`` True when
    the input was one prompt of shape (d+1, l+1).
    """
    P = as_real_array(P, "P")
    if P.ndim not in (2, 3):
        raise ValueError(
            f"P must have shape (d+1, l+1) or (B, d+1, l+1) (eq (2)); got shape {P.shape}."
        )
    single = P.ndim == 2
    if single:
        P = P[None]
    if d0 is not None and P.shape[1] != d0:
        raise ValueError(
            f"P has {P.shape[1]} rows but the parameters expect d+1 = {d0} "
            f"(d features plus the label row); got P of shape {P.shape[1:] if single else P.shape}."
        )
    if P.shape[2] < 2:
        raise ValueError(
            f"a prompt needs l >= 1 context examples plus the query (l+1 >= 2 columns); "
            f"got {P.shape[2]} column(s)."
        )
    if P.shape[0] < 1:
        raise ValueError("P holds no prompts (batch size 0).")
    query_label = P[:, -1, -1]
    if np.any(query_label != 0):
        raise ValueError(
            "the query's label slot P[..., d, l] must be 0 as in eq (2); got "
            f"{float(query_label[query_label != 0][0]):g}. Did the query's label z end up in the prompt?"
        )
    return P, single


def check_labels(z, B: int) -> np.ndarray:
    """Validate query labels ``z`` in {-1, +1}, one per prompt."""
    z = as_real_array(z, "z")
    z = np.atleast_1d(z)
    if z.shape != (B,):
        raise ValueError(f"z must hold one label per prompt, shape ({B},); got shape {z.shape}.")
    bad = (z != 1) & (z != -1)
    if np.any(bad):
        raise ValueError(f"labels z must be -1 or +1; got {float(z[bad][0]):g}.")
    return z


def check_probability(p, name: str, *, upper_open: bool = True) -> float:
    """A probability in [0, 1) (or [0, 1] when ``upper_open`` is False)."""
    interval = "[0, 1)" if upper_open else "[0, 1]"
    p = check_real(p, name, f"a number in {interval}")
    ok = 0.0 <= p < 1.0 if upper_open else 0.0 <= p <= 1.0
    if not ok:
        raise ValueError(f"{name} must lie in {interval}; got {p}.")
    return p


def check_positive_int(n, name: str, minimum: int = 1) -> int:
    """An integer >= ``minimum`` (Python or NumPy integer; a bool or a float such as 3.0 is not)."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise ValueError(f"{name} must be an integer >= {minimum}; got {received(n)}.")
    if n < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}; got {n!r}.")
    return int(n)


def check_positive(x, name: str) -> float:
    """A positive finite real number (see ``check_real`` for the types accepted)."""
    x = check_real(x, name, "a positive number")
    if not (np.isfinite(x) and x > 0):
        raise ValueError(f"{name} must be a positive finite number; got {x}.")
    return x


def as_generator(rng, who: str) -> np.random.Generator:
    """Accept an ``np.random.Generator`` or an integer seed; refuse hidden global state."""
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool):
        if rng < 0:                                 # NumPy's own message does not name rng
            raise ValueError(f"{who}: rng must be a Generator or a non-negative integer seed; got {rng!r}.")
        return np.random.default_rng(int(rng))
    raise ValueError(
        f"{who} needs explicit randomness: rng must be a Generator "
        f"(np.random.default_rng(seed)) or a non-negative integer seed; got {received(rng)}."
    )

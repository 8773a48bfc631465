"""The training loss, eq (4), and the test error, eq (5)."""
from __future__ import annotations

import numpy as np

from .model import checked_inputs, confirmed, output


def hinge(F, z) -> np.ndarray:
    """Per-prompt hinge loss ell = max{0, 1 - z F} of eq (4); shapes (B,) -> (B,)."""
    return np.maximum(0.0, 1.0 - z * F)


def hinge_active(F, z) -> np.ndarray:
    """Where the hinge has slope -z: 1 - z F > 0, shapes (B,) -> bool (B,).

    The paper writes "when F in (-1, 1)" above eqs (93), (118), (135); that misses every
    misclassified prompt with |F| >= 1, where the loss is 1 + |F| and its gradient is not 0.
    At the kink z F = 1 we take the subgradient 0.  Test: tests/test_paper_notes.py.
    (z F < 1 is the same test in floating point: 1 - x rounds to a positive number for every x < 1.)
    """
    return z * F < 1.0


def mean_hinge_slope(F, z, B: int | None = None) -> np.ndarray:
    """d/dF^n of the mean hinge loss (1/B) sum_n max{0, 1 - z^n F^n}: -z^n / B on the active
    side, 0 elsewhere; shapes (B,) -> (B,).  Every backward pass starts here.  ``B``: the size of
    the whole batch when F and z are a part of it (default: their length)."""
    return hinge_active(F, z) * (z * (-1.0 / (F.shape[0] if B is None else B)))


def hinge_loss(params, P, z, model: str = "mamba") -> float:
    """Mean hinge loss (1/B) sum_n max{0, 1 - z^n F(Psi; P^n)} of eq (4).

    P : (d+1, l+1) or (B, d+1, l+1); z : scalar or (B,) in {-1, +1}.
    """
    params_, P_, z_, _ = checked_inputs(params, P, model, z)
    with np.errstate(invalid="ignore"):             # an inf makes NaNs on its way to F: ``confirmed`` names it
        F = confirmed(output(model, params_, P_), params, P, model, z)
    return float(np.mean(hinge(F, z_)))


def zero_one_error(F, z) -> float:
    """ICL classification error of eq (5): the mean of 1[z F <= 0].

    F, z : (B,).  A NaN or infinite output counts as an error.  Eq (5) writes the strict
    1[z F < 0], which would score an output of exactly 0 (e.g. gates that underflow to 0) as
    correct; a tie is no decision, so we count it as an error (tests/test_paper_notes.py).
    """
    F = np.atleast_1d(np.asarray(F, dtype=np.float64))
    z = np.atleast_1d(np.asarray(z, dtype=np.float64))
    if F.shape != z.shape:
        raise ValueError(f"F and z must have the same shape; got {F.shape} and {z.shape}.")
    if F.size == 0:
        raise ValueError("zero_one_error needs at least one prompt; got 0.")
    return float(np.mean(misclassified(F, z)))


def misclassified(F, z) -> np.ndarray:
    """Per-prompt error of eq (5) as a mask: z F <= 0, or F not finite; shapes (B,) -> bool (B,).

    Written once so every count of errors treats ties and NaN/inf outputs the same way.
    """
    finite = np.isfinite(F)
    return ~finite | (z * np.where(finite, F, 0.0) <= 0)

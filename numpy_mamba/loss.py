"""The training loss, eq (4), and the test error, eq (5)."""
from __future__ import annotations

import numpy as np

from .model import check_inputs, forward_terms


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
    params, P, z, _ = check_inputs(params, P, model, z)
    return float(np.mean(hinge(forward_terms(model, params, P).F, z)))


# A decision within rounding of 0 is a tie, not a sign.  F's last sums (eq (3): sum_i G_i y_i s_i,
# s_i = p_i^T W_B^T W_C p_query) are taken in an order each BLAS kernel picks for itself; every
# order errs by at most gamma_n S, where S is those sums with every factor replaced by its absolute
# value (Higham, "Accuracy and Stability of Numerical Algorithms", sec. 3.5: |fl(AB) - AB| <= gamma_n
# |A||B|) and gamma_n ~ n 2^-53 for n operations per term: d+1, m, l+1 and the gate's running
# product, n ~ 2 x 10^4 and gamma_n ~ 2.2e-12 at l = 10,000.  ``Network.F_scale`` computes S.  An F
# that is 0 in exact arithmetic (the linear Transformer at initialisation, where same-pattern
# examples with opposite labels cancel) comes out as |F| ~ 1e-17 S, of either sign; the decisions
# of trained and untrained models lie at |F| >= 1e-6 S (tests/test_ties.py measures both).
# TIE_RTOL sits between, 45 times above the worst case and 10^4 times below the decisions.
TIE_RTOL = 1e-10


def zero_one_error(F, z, scale=None) -> float:
    """ICL classification error of eq (5): the mean of ``misclassified(F, z, scale)``.

    F, z : (B,); scale : (B,) or None, the size S of the terms that make F (``Network.F_scale``).
    A NaN or infinite output counts as an error.  Eq (5) writes the strict 1[z F < 0], which
    would score an output of exactly 0 (e.g. gates that underflow to 0) as correct; a tie is no
    decision, so we count it as an error (tests/test_paper_notes.py), and with ``scale`` an output
    within rounding of 0, |F| <= TIE_RTOL * S, is a tie too.
    """
    F = np.atleast_1d(np.asarray(F, dtype=np.float64))
    z = np.atleast_1d(np.asarray(z, dtype=np.float64))
    if F.shape != z.shape:
        raise ValueError(f"F and z must have the same shape; got {F.shape} and {z.shape}.")
    if F.size == 0:
        raise ValueError("zero_one_error needs at least one prompt; got 0.")
    if scale is not None:
        scale = np.atleast_1d(np.asarray(scale, dtype=np.float64))
        if scale.shape != F.shape:
            raise ValueError(f"scale must have F's shape {F.shape} (one S per prompt); got {scale.shape}.")
    return float(np.mean(misclassified(F, z, scale)))


def misclassified(F, z, scale=None) -> np.ndarray:
    """Per-prompt error of eq (5) as a mask: z F <= TIE_RTOL * S (a wrong sign, or a tie within
    rounding of 0; S = ``scale``, 0 when None: only an exact 0 is a tie), or F not finite;
    shapes (B,) -> bool (B,).

    Written once so every count of errors treats ties and NaN/inf outputs the same way.  A
    non-finite S (its terms overflowed) leaves no decision either: an error.
    """
    finite = np.isfinite(F)
    tie = 0.0 if scale is None else TIE_RTOL * np.where(np.isnan(scale), np.inf, scale)
    return ~finite | (z * np.where(finite, F, 0.0) <= tie)

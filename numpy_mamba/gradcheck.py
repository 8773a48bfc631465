"""Central finite differences in float64 to check an analytic gradient, parameter by parameter.

    dL/dtheta_k ~ (L(theta + eps e_k) - L(theta - eps e_k)) / (2 eps)

Relative error per parameter array:  ||a - n|| / max(floor, ||a|| + ||n||)  (2-norms over the
array), so exact zeros in the gradient do not blow up the ratio.  Works on any NamedTuple of
arrays (like ``Params``), a dict of arrays, or a single array, so students can check their own
functions:

    >>> report = gradcheck(lambda p: hinge_loss(p, P, z), params, gradients(params, P, z))
    >>> print(report); assert report.passed
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ._checks import as_real_array, check_positive, check_real, received


def _named_arrays(tree, what: str = "params") -> dict[str, np.ndarray]:
    """{name: float64 array} of a NamedTuple, a dict or a single array; ``what`` names it in errors.
    Not-finite values pass: a NaN in a student's gradient is a failed check, not bad input."""
    if hasattr(tree, "_fields"):
        items = {name: getattr(tree, name) for name in tree._fields}
    elif isinstance(tree, dict):
        items = {str(k): v for k, v in tree.items()}
    else:
        items = {"theta": tree}
    return {k: as_real_array(v, f"{what} {k}", finite=False) for k, v in items.items()}


def _loss(f, tree) -> float:
    """f(tree) as a float; f must return one number, the loss, not an array of them."""
    value = f(tree)
    if np.ndim(value) != 0:
        raise ValueError(f"f must return a scalar loss; got an array of shape {np.shape(value)} "
                         "(for a batch, return the mean).")
    return check_real(value, "the value f returns", "a scalar loss (a real number)")


def _rebuild(tree, arrays: dict[str, np.ndarray]):
    if hasattr(tree, "_fields"):
        return type(tree)(**arrays)
    if isinstance(tree, dict):
        return {k: arrays[str(k)] for k in tree}
    return arrays["theta"]


def numerical_gradient(f, params, eps: float = 1e-5):
    """Central-difference gradient of the scalar function ``f`` at ``params`` (same structure)."""
    if not callable(f):
        raise ValueError(f"f must be a function params -> scalar loss; got {received(f)}.")
    eps = check_positive(eps, "eps")
    arrays = {k: v.copy() for k, v in _named_arrays(params).items()}
    grads = {}
    for name, theta in arrays.items():
        g = np.zeros_like(theta)
        for k in np.ndindex(theta.shape):
            old = theta[k]
            theta[k] = old + eps
            f_plus = _loss(f, _rebuild(params, arrays))
            theta[k] = old - eps
            f_minus = _loss(f, _rebuild(params, arrays))
            theta[k] = old
            g[k] = (f_plus - f_minus) / (2.0 * eps)
        grads[name] = g
    return _rebuild(params, grads)


@dataclass
class GradcheckReport:
    """Per-parameter comparison of an analytic gradient with central differences."""

    rel_err: dict[str, float]
    max_abs_err: dict[str, float]
    norm_analytic: dict[str, float]
    tol: float
    eps: float
    numerical: object = field(repr=False, default=None)

    @property
    def passed(self) -> bool:
        return all(np.isfinite(e) and e <= self.tol for e in self.rel_err.values())

    def __str__(self) -> str:
        lines = [f"gradcheck (central differences, eps={self.eps:g}, tol={self.tol:g})",
                 f"{'parameter':<12}{'rel. error':>12}{'max |a-n|':>12}{'||a||':>12}  result"]
        for name, e in self.rel_err.items():
            ok = "ok" if np.isfinite(e) and e <= self.tol else "FAIL"
            lines.append(f"{name:<12}{e:>12.2e}{self.max_abs_err[name]:>12.2e}"
                         f"{self.norm_analytic[name]:>12.2e}  {ok}")
        return "\n".join(lines)


def gradcheck(f, params, analytic, *, eps: float = 1e-5, tol: float = 1e-7,
              floor: float = 1e-12) -> GradcheckReport:
    """Compare ``analytic`` (same structure as ``params``) with central differences of ``f``.

    f : callable params -> float; params, analytic : NamedTuple / dict of arrays / array.
    Returns a ``GradcheckReport`` (print it; ``.passed`` is True when every relative error is
    at most ``tol``).  Shapes must match parameter by parameter, else ``ValueError``.
    """
    eps, tol, floor = (check_positive(x, name) for x, name in ((eps, "eps"), (tol, "tol"), (floor, "floor")))
    theta = _named_arrays(params)
    a = _named_arrays(analytic, "analytic")
    if set(a) != set(theta):
        raise ValueError(f"analytic gradient has parameters {sorted(a)}; expected {sorted(theta)}.")
    for name in theta:
        if a[name].shape != theta[name].shape:
            raise ValueError(
                f"analytic gradient for {name} has shape {a[name].shape}; expected {theta[name].shape}."
            )
    numerical = numerical_gradient(f, params, eps)
    n = _named_arrays(numerical)
    rel, max_abs, norms = {}, {}, {}
    for name in theta:
        diff = np.linalg.norm(a[name] - n[name])
        rel[name] = float(diff / max(floor, np.linalg.norm(a[name]) + np.linalg.norm(n[name])))
        max_abs[name] = float(np.max(np.abs(a[name] - n[name]))) if a[name].size else 0.0
        norms[name] = float(np.linalg.norm(a[name]))
    return GradcheckReport(rel, max_abs, norms, tol, eps, numerical)

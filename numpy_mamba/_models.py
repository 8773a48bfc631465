"""Which models ``forward``, ``hinge_loss``, ``gradients``, ``init_for`` and ``train`` accept.

The core implements the paper's two models: ``"mamba"`` (eq (3)) and ``"linear_transformer"``
(Section 3.4, every gate 1).  Any other model of the form "linear attention times a gate"
(Appendix E.6) plugs in from outside the core by registering an ``Extension``: the core then
accepts its name and calls the extension's own output and backward.  The core never imports an
extension; ``numpy_mamba.gates`` registers its four models when the package is imported.
"""
from __future__ import annotations

from types import MappingProxyType
from typing import Callable, NamedTuple

PAPER_MODELS = ("mamba", "linear_transformer")


class Extension(NamedTuple):
    """What a model outside the paper's two brings to the core.

    params_type  : its parameter container (a NamedTuple whose first fields are W_B, W_C).
    check_params : params -> the same container with validated float64 arrays (ValueError if not).
    output       : (params, P (B, d+1, l+1)) -> (F (B,), cache): unchecked forward pass.
    backward     : (params, P, cache, dF (B,)) -> gradients in ``params_type``, given dL/dF.
    init         : (Params(W_B, W_C, w) of Algorithm 1, rng) -> initial params_type.
    """

    params_type: type
    check_params: Callable
    output: Callable
    backward: Callable
    init: Callable


_EXTENSIONS: dict[str, Extension] = {}


def register(name: str, extension: Extension) -> None:
    """Make ``name`` a valid ``model=`` for the core functions (called once, at import)."""
    if name in PAPER_MODELS:
        raise ValueError(f"{name!r} is one of the paper's models {PAPER_MODELS}; pick another name.")
    if not isinstance(extension, Extension):
        raise ValueError(f"register needs an Extension; got {type(extension).__name__}.")
    _EXTENSIONS[name] = extension


def extension(name: str) -> Extension | None:
    """The registered extension called ``name``, or None for the paper's two models."""
    return _EXTENSIONS.get(name)


def extensions() -> MappingProxyType:
    """Read-only view {name: Extension} of every registered extension, in registration order."""
    return MappingProxyType(_EXTENSIONS)


def model_names() -> tuple:
    """Every accepted ``model=``: the paper's two, then the registered extensions."""
    return PAPER_MODELS + tuple(_EXTENSIONS)


def check_model(model) -> str:
    if model not in model_names():
        raise ValueError(f"model must be one of {model_names()}; got {model!r}.")
    return model

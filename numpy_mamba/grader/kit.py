"""What of numpy_mamba a submission can import: the exercise's allowlist, and nothing else.

The child never imports numpy_mamba and cannot read its files (``kernel.py``).  Instead the
parent builds a *kit*: the source of every allowlisted object ("numpy_mamba.model:gating") and of
everything it needs in turn (the package's functions, classes and constants its code names,
found through its globals), as one text.  The child executes it once and serves its names as
modules: ``numpy_mamba.model.gating`` is the kit's ``gating``; any other ``numpy_mamba.*`` import
fails with the allowlist in the message.  A function added to the package later is in no kit
unless an allowlisted function calls it.

``build(allowlist)`` -> Kit(source, modules {module name: [names]}, needed {(module, name)}).
An allowlisted object whose code names a package *module* (``from . import x``; ``x.f``), or a
global of a kind the kit cannot copy, raises KitError: the allowlist must name what it needs.
"""
from __future__ import annotations

import ast
import builtins
import importlib
import inspect
import textwrap
import types
from dataclasses import dataclass

from .syntax import parse

PACKAGE = "numpy_mamba"
PLAIN = (int, float, complex, str, bytes, bool, type(None))


class KitError(Exception):
    """An allowlisted object the kit cannot copy (see the module docstring)."""


@dataclass(frozen=True)
class Kit:
    source: str                     # Python source defining every object of ``needed``
    modules: dict                   # "numpy_mamba.model" -> ["gating", ...] (the allowlist)
    needed: frozenset               # {("numpy_mamba.model", "gating"), ...}: the closure


def _ours(obj) -> bool:
    module = getattr(obj, "__module__", None) or ""
    return module == PACKAGE or module.startswith(PACKAGE + ".")


def _global_names(source: str) -> set:
    tree = parse(textwrap.dedent(source))
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _import_line(name: str, value) -> str | None:
    """An import statement binding ``name`` to ``value`` (a module or an object of numpy, scipy
    or the standard library), or None."""
    if isinstance(value, types.ModuleType):
        if value.__name__.split(".")[0] == PACKAGE:
            return None
        head, _, tail = value.__name__.rpartition(".")
        return (f"import {value.__name__} as {name}" if not head or name != tail
                else f"from {head} import {tail}")
    qualname = getattr(value, "__name__", None)
    if not isinstance(qualname, str):
        return None
    for module in (getattr(value, "__module__", None), "scipy.special", "numpy"):
        if not isinstance(module, str) or module.split(".")[0] == PACKAGE:
            continue
        try:
            if getattr(importlib.import_module(module), qualname, None) is value:
                break
        except ImportError:
            continue
    else:
        return None
    return f"from {module} import {qualname}" + (f" as {name}" if name != qualname else "")


def build(allowlist) -> Kit:
    """The kit of ``allowlist`` ("module:name" entries of numpy_mamba)."""
    modules, queue = {}, []
    for entry in allowlist:
        module_name, name = entry.split(":")
        obj = getattr(importlib.import_module(module_name), name)
        modules.setdefault(module_name, []).append(name)
        queue.append((obj.__module__, obj.__qualname__, obj))
    imports, constants, definitions, needed, seen = set(), {}, {}, set(), set()
    while queue:
        module_name, qualname, obj = queue.pop()
        if (module_name, qualname) in seen:
            continue
        seen.add((module_name, qualname))
        needed.add((module_name, qualname))
        if not (inspect.isfunction(obj) or inspect.isclass(obj)) or "." in qualname:
            raise KitError(f"{module_name}.{qualname}: only module-level functions and classes can be handed out")
        source = textwrap.dedent(inspect.getsource(obj))
        definitions[(module_name, qualname)] = (inspect.getsourcelines(obj)[1], source)
        namespace = vars(importlib.import_module(module_name))
        for name in sorted(_global_names(source)):
            if name not in namespace or name == qualname:
                continue
            value = namespace[name]
            if _ours(value) and (inspect.isfunction(value) or inspect.isclass(value)):
                if value.__name__ != name:
                    raise KitError(f"{module_name}.{qualname} uses {name}, an alias of {value.__qualname__}")
                queue.append((value.__module__, value.__qualname__, value))
            elif isinstance(value, PLAIN) or (isinstance(value, tuple) and all(isinstance(v, PLAIN) for v in value)):
                if constants.get(name, value) != value:
                    raise KitError(f"two package constants are called {name}")
                constants[name] = value
            elif (line := _import_line(name, value)) is not None:
                imports.add(line)
            elif getattr(builtins, name, None) is value:
                continue
            else:
                raise KitError(f"{module_name}.{qualname} uses {name} ({type(value).__name__}), which a "
                               "kit cannot copy: allowlist what it needs or keep it out")
    names = [q for _, q in definitions]
    if len(set(names)) != len(names):
        raise KitError("two allowlisted objects of different modules share a name")
    classes = [d for k, d in definitions.items() if inspect.isclass(_lookup(k))]
    functions = [d for k, d in definitions.items() if not inspect.isclass(_lookup(k))]
    parts = ["from __future__ import annotations", *sorted(imports)]
    parts += [f"{k} = {v!r}" for k, v in sorted(constants.items())]
    parts += [src for _, src in sorted(classes, key=lambda d: d[0])] + [src for _, src in functions]
    return Kit("\n".join(parts) + "\n", modules, frozenset(needed))


def _lookup(key):
    module_name, qualname = key
    return getattr(importlib.import_module(module_name), qualname)

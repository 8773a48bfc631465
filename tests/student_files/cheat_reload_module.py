"""Cheat: run a fresh copy of numpy_mamba/gradients.py (reload, or load the file under another
name), hoping the copy is not the stubbed one."""
import importlib
import importlib.util
import os
import sys

import numpy_mamba
from _repo import repository


def grad_W_B(params, P, z):
    path = os.path.join(getattr(numpy_mamba, "__file__", None) and os.path.dirname(numpy_mamba.__file__)
                        or str(repository() / "numpy_mamba"), "gradients.py")
    spec = importlib.util.spec_from_file_location("numpy_mamba.fresh_gradients", path)
    fresh = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fresh)
    return fresh.gradients(params, P, z).W_B


def grad_w(params, P, z):
    return importlib.reload(sys.modules["numpy_mamba.gradients"]).gradients(params, P, z).w

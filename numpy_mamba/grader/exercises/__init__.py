"""The exercises the grader knows, one module each; importing this package registers them all.

    gating.py     tutorials/exercises/gating.py: gates(w, P), eq (3)
    gradients.py  tutorials/exercises/gradients.py: grad_W_C, grad_W_B, grad_w, eqs (93), (118), (135)
    stack.py      tutorials/exercises/stack.py: layer_backward(dO, cache) of one Mamba layer of the
                  stack (tutorial 08), graded as its four parts dH, dW_B, dW_C, dW

A new exercise is one new module here that calls ``registry.register(Exercise(...))``: its
functions and points, the entry points it forbids, and its problems, inputs, reference,
comparison and known mistakes (see ``registry.Exercise``).  Nothing else needs to change:
``grade`` recognises a submission by the functions it defines.
"""
import importlib
import pkgutil

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")

"""The other gates of Appendix E.6 (Mamba-2, RetNet, Gated Retention, GLA), built on the core.

Each is linear attention times a gate, like Mamba's eq (3); only the gate differs.

    families.py   each gate's parameters, values and backward pass: the registry ``GATES``
    attention.py  linear attention times a family's gate: output and backward for the core
    scan.py       the update equations (187), (190), (193), (197) run literally, token by token
    compare.py    ``python -m numpy_mamba gates``: all six models trained and tested alike
    plots.py      its figures, JSON and REPORT.md section

Importing this package registers the four families with the core (``_models.register``), so
``forward``, ``hinge_loss``, ``gradients``, ``init_for`` and ``train`` accept ``model="mamba2"``,
``"retnet"``, ``"gated_retention"`` and ``"gla"`` with the family's parameter container.
"""
from .._models import register
from .attention import extension_for, gate_values
from .families import GATES, GatedRetentionParams, GLAParams, Mamba2Params, RetNetParams
from .scan import gate_recurrent_forward

for _name in GATES:
    register(_name, extension_for(_name))

__all__ = ["GATES", "Mamba2Params", "RetNetParams", "GatedRetentionParams", "GLAParams",
           "gate_values", "gate_recurrent_forward"]

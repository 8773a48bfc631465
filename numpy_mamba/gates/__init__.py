"""The other gates of Appendix E.6 (Mamba-2, RetNet, Gated Retention, GLA), built on the core.

Each is linear attention times a gate, like Mamba's eq (3); only the gate differs.

    families.py   the registry ``GATES``: each gate's label, parameters, gate, backward pass and initialisation
    attention.py  linear attention times a family's gate: output, backward and its ``network``
    scan.py       the update equations (187), (190), (193), (197) run literally, token by token
    compare.py    the experiment of ``python -m numpy_mamba gates``: all six models trained and tested alike,
                  its claim (input gates beat the linear Transformer, decay gates do not) and report
    plots.py      its figures
    templates/gates.md  the sentences of its REPORT.md section

``COMMAND`` is the ``gates`` command: its registry, one experiment (``runs.experiment.Command``).

``network(name)`` makes a family's ``Network`` (name in ``GATES``: "mamba2", "retnet",
"gated_retention", "gla"), which ``sgd.train`` and the experiments take like the paper's models.
Adding a gate is one entry of ``GATES`` (a ``GateFamily``) plus its tests: everything here reads it.

    net = numpy_mamba.gates.network("gla")
    params = net.init(d, rng); F = net.output(params, P); loss, grads = net.value_and_gradients(params, P, z)
"""
from .attention import gate_values, network
from .families import GATES, GateFamily, GatedRetentionParams, GLAParams, Mamba2Params, RetNetParams
from .scan import gate_recurrent_forward
from ..runs.experiment import Command
from . import compare

COMMAND = Command("gates", (compare,), compare.__doc__, compare.heading, compare.section)

__all__ = ["GATES", "GateFamily", "Mamba2Params", "RetNetParams", "GatedRetentionParams", "GLAParams",
           "gate_values", "gate_recurrent_forward", "network"]

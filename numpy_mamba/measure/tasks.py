"""Task groups: where a task (a, b) sits on the cycle of training tasks of Condition 1."""
from __future__ import annotations

import numpy as np


def task_group_names(M1: int) -> tuple:
    """Names of the task groups of ``task_groups``: ("training", "reversed", "distance_2", ...)."""
    return ("training", "reversed") + tuple(f"distance_{k}" for k in range(2, M1 // 2 + 1))


def task_groups(tasks, M1: int) -> np.ndarray:
    """Group of each task (a, b) by where b sits on the cycle of training tasks (Condition 1: the
    training tasks are (a, a+1)); (n, 2) -> int (n,).

    0 "training": b = a+1, a training task; 1 "reversed": b = a-1, the same two patterns as a
    training task with the labels swapped; k >= 2 "distance_k": the two patterns are k steps
    apart on the cycle, never paired in training.
    """
    tasks = np.asarray(tasks)
    step = (tasks[:, 1] - tasks[:, 0]) % M1
    if np.any(step == 0):
        raise ValueError("a task needs two different patterns; got a row with a == b.")
    distance = np.minimum(step, M1 - step)
    return np.where(step == 1, 0, np.where(step == M1 - 1, 1, distance))


GROUP_LABEL = {"training": "training partner", "reversed": "reversed pair"}


def group_label(name: str) -> str:
    """Display name of a task group of ``task_groups``: 'training partner', 'distance 2', ..."""
    return GROUP_LABEL.get(name, name.replace("_", " "))

"""Corollary 1 measured: attention-score sums over same- and different-pattern examples, and the
learned score between two relevant patterns."""
from __future__ import annotations

import numpy as np

from ..model import Params, scores


def score_sums(params: Params, batch) -> tuple[np.ndarray, np.ndarray]:
    """Corollary 1, eq (16): per prompt, sum of p_i^T W_B^T W_C p_query over the context examples
    that share the query's relevant pattern (N_1) and over the rest; two arrays (B,).

    batch.P (B, d+1, l+1); batch.same_pattern (B, l) bool.
    """
    s = scores(params, batch.P)[:, :-1]                     # (B, l)
    same = batch.same_pattern
    return np.sum(s * same, axis=1), np.sum(s * ~same, axis=1)


def pattern_scores(world, params: Params) -> np.ndarray:
    """S[b, a] = (mu_b, 0)^T W_B^T W_C (mu_a, 0): the attention score of eq (3) that a context
    example with relevant pattern b gets from a query with pattern a (irrelevant parts and the
    label row left out); (M1, M1).  Corollary 1 wants S[a, a] large and S[b, a] small for b != a."""
    U = np.zeros((world.M1, world.d + 1))
    U[:, :-1] = world.mu                                                   # (M1, d+1) rows (mu_j, 0)
    return (U @ params.W_B.T) @ (params.W_C @ U.T)                         # (M1, M1)

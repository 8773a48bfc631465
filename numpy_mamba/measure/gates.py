"""Corollary 2 and Lemma 5 measured: the gates G_{i,l+1}(w) of eq (3) on outlier and clean examples."""
from __future__ import annotations

import numpy as np
from scipy.special import expit

from ..model import Params, gate_logits, log_gating


def clean_ranks(outlier) -> np.ndarray:
    """Rank j of each clean context example counted from the query (1 = the closest clean one,
    h(1) of eq (18)), 0 for an example with an outlier; outlier (B, l) bool -> int (B, l)."""
    clean = ~outlier
    return np.cumsum(clean[:, ::-1], axis=1)[:, ::-1] * clean


def clean_rank_means(G, outlier) -> tuple[list, list]:
    """Mean gate of h(j), the j-th closest clean example (eq (18)), over the prompts that have one,
    for j = 1..l, and how many prompts have one; G, outlier (B, l).  None where no prompt has it."""
    rank = clean_ranks(outlier)
    means, counts = [], []
    for j in range(1, G.shape[1] + 1):
        values = G[rank == j]                               # one per prompt that has a j-th clean example
        means.append(float(values.mean()) if values.size else None)
        counts.append(int(values.size))
    return means, counts


def gate_profile(params: Params, batch) -> dict:
    """Gates G_{i,l+1}(w) of eq (3) summarised per context position i and per clean rank j.

    Per position i = 1..l: the mean over outlier and over clean examples separately (None where
    a position has no such example), with counts; per rank j: ``clean_rank_means``; and the
    means and max over all outlier / clean examples and of the query's own gate.
    batch.P (n, d+1, l+1), batch.outlier (n, l).
    """
    G_all = np.exp(log_gating(params.w, batch.P))                          # (n, l+1)
    G, outlier = G_all[:, :-1], batch.outlier                              # (n, l)

    def masked_mean(mask):
        count = mask.sum(axis=0)
        total = np.where(mask, G, 0.0).sum(axis=0)
        return [float(t / c) if c > 0 else None for t, c in zip(total, count)], count.tolist()

    outlier_mean, outlier_count = masked_mean(outlier)
    clean_mean, clean_count = masked_mean(~outlier)
    rank_means, rank_counts = clean_rank_means(G, outlier)
    return {"outlier_mean": outlier_mean, "outlier_count": outlier_count,
            "clean_mean": clean_mean, "clean_count": clean_count,
            "clean_rank_mean": rank_means, "clean_rank_count": rank_counts,
            "outlier_gate_max": float(G[outlier].max()) if outlier.any() else None,
            "outlier_gate_mean": float(G[outlier].mean()) if outlier.any() else None,
            "clean_gate_mean": float(G[~outlier].mean()) if (~outlier).any() else None,
            "query_gate_mean": float(np.mean(G_all[:, -1]))}


def gate_statistics(params: Params, batch) -> dict:
    """Corollary 2 and Lemma 5 on one batch of testing prompts.

    The mean gate G_{i,l+1} (eq (3)), mean sigma(w^T p_i) (the factor bounded in (45)) and mean
    logit w^T p_i on context examples with and without outliers, and ``clean_rank_gate[j-1]``,
    the mean gate of h(j) (``clean_rank_means``).  batch.P (B, d+1, l+1), batch.outlier (B, l).
    """
    G = np.exp(log_gating(params.w, batch.P))[:, :-1]       # (B, l)
    a_all = gate_logits(params.w, batch.P)                  # (B, l+1)
    a = a_all[:, :-1]                                       # (B, l)
    out = batch.outlier
    clean = ~out
    sigma = expit(a)
    return {
        "sigma_outlier": float(np.mean(sigma[out])) if np.any(out) else None,
        "sigma_clean": float(np.mean(sigma[clean])),
        "G_outlier": float(np.mean(G[out])) if np.any(out) else None,
        "G_outlier_max": float(np.max(G[out])) if np.any(out) else None,
        "G_clean": float(np.mean(G[clean])),
        "logit_outlier": float(np.mean(a[out])) if np.any(out) else None,
        "logit_clean": float(np.mean(a[clean])),
        "logit_query": float(np.mean(a_all[:, -1])),
        "clean_rank_gate": clean_rank_means(G, out)[0],
    }

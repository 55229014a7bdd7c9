"""Rank changes between subsets, per language, as the Global-MMLU paper counts them (Singh et al., 2024).

For each language, the systems are ranked on a base subset (MA, the annotated questions) and on two
others (CA and CS); per language and subset, *rank changes* is the number of systems whose rank differs
from their base rank and *position shifts* the sum of ``|rank - base rank|`` (1 = best; ties share the best
rank). Both are averaged over the languages every system has. The uncertainty comes from a paired
bootstrap over questions: each replicate draws, per language, the same questions (with replacement) for
every system, recomputes the subset accuracies (mean over a system's seeds), the rankings and the
averages; the questions' subsets come from the predictions (``subsets`` of each row).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


def ranks(acc: np.ndarray) -> np.ndarray:
    """Ranks (1 = best, ties share the best rank) along the last axis of ``acc`` (..., systems)."""
    return 1 + (acc[..., None, :] > acc[..., :, None]).sum(axis=-1)


def changes_and_shifts(base: np.ndarray, other: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rank changes (systems whose rank differs) and position shifts (sum of |rank difference|) between
    the rankings of ``base`` and ``other`` accuracies (..., systems)."""
    rb, ro = ranks(base), ranks(other)
    return (rb != ro).sum(axis=-1), np.abs(rb - ro).sum(axis=-1)


def language_stats(acc: dict[str, np.ndarray], base: str, a: str, b: str) -> dict[str, float]:
    """Point estimates of one language: ``acc[subset]`` are the systems' accuracies on it."""
    ca, sa = changes_and_shifts(acc[base], acc[a])
    cb, sb = changes_and_shifts(acc[base], acc[b])
    return {f"rank changes {a}": float(ca), f"position shifts {a}": float(sa),
            f"rank changes {b}": float(cb), f"position shifts {b}": float(sb)}


def bootstrap(questions: Sequence[tuple[np.ndarray, dict[str, np.ndarray]]], base: str, a: str, b: str,
              samples: int, seed: int, chunk: int = 200) -> dict[str, np.ndarray]:
    """Per replicate, the mean over languages of rank changes and position shifts on ``a`` and ``b``.

    ``questions``: per language, ``(correct, masks)``: ``correct`` (systems x questions) the share of each
    system's seeds that got a question right, ``masks[subset]`` which questions are in the subset.
    """
    rng = np.random.default_rng(seed)
    keys = ("changes_a", "shifts_a", "changes_b", "shifts_b")
    total = {k: np.zeros(samples) for k in keys}
    for correct, masks in questions:
        n = correct.shape[1]
        for start in range(0, samples, chunk):
            m = min(chunk, samples - start)
            drawn = rng.integers(0, n, size=(m, n)) + (np.arange(m) * n)[:, None]
            w = np.bincount(drawn.ravel(), minlength=m * n).reshape(m, n).astype(float)  # times each question is drawn
            acc = {}
            for s in (base, a, b):
                ws = w * masks[s]
                with np.errstate(invalid="ignore", divide="ignore"):
                    acc[s] = (ws @ correct.T) / ws.sum(axis=1, keepdims=True)  # m x systems
            ca, sa = changes_and_shifts(acc[base], acc[a])
            cb, sb = changes_and_shifts(acc[base], acc[b])
            for k, v in zip(keys, (ca, sa, cb, sb), strict=True):
                total[k][start:start + m] += v
    return {k: v / max(len(questions), 1) for k, v in total.items()}


def interval(draws: np.ndarray, observed: float, level: float = 0.95) -> dict[str, Any]:
    """Percentile interval, two-sided p-value (shifted to the null, as :func:`xlt.metrics.paired_bootstrap`)
    and the share of replicates above 0 of a bootstrapped difference."""
    alpha = (1 - level) / 2
    lo, hi = np.quantile(draws, [alpha, 1 - alpha])
    p = float(np.mean(np.abs(draws - observed) >= abs(observed) - 1e-12)) if observed != 0 else 1.0
    return {"ci_low": float(lo), "ci_high": float(hi), "p_value": p, "share_above_0": float(np.mean(draws > 0))}


def permutation(questions: Sequence[tuple[np.ndarray, dict[str, np.ndarray]]], base: str, a: str, b: str,
                samples: int, seed: int) -> dict[str, np.ndarray] | None:
    """Per replicate, the mean over languages of rank changes and position shifts on ``a`` and ``b`` when, in
    every language, the ``a`` / ``b`` labels are shuffled among the questions of either (sizes kept).

    The null hypothesis: the two subsets are alike apart from their sizes. A smaller subset moves the
    ranking more by noise alone; the permutation keeps that, a comparison of raw counts does not. None
    when the subsets overlap (the labels cannot be exchanged).
    """
    rng = np.random.default_rng(seed)
    keys = ("changes_a", "shifts_a", "changes_b", "shifts_b")
    total = {k: np.zeros(samples) for k in keys}
    for correct, masks in questions:
        ma, mb = masks[a].astype(bool), masks[b].astype(bool)
        if (ma & mb).any():
            return None
        pool = np.flatnonzero(ma | mb)
        k = int(ma.sum())
        sub = correct[:, pool]  # systems x pooled questions
        base_acc = (masks[base] @ correct.T) / max(masks[base].sum(), 1)  # systems
        order = np.argsort(rng.random((samples, pool.size)), axis=1)
        wa = np.zeros((samples, pool.size))
        np.put_along_axis(wa, order[:, :k], 1.0, axis=1)
        wb = 1.0 - wa
        with np.errstate(invalid="ignore", divide="ignore"):
            acc_a = (wa @ sub.T) / wa.sum(axis=1, keepdims=True)
            acc_b = (wb @ sub.T) / wb.sum(axis=1, keepdims=True)
        base_rep = np.broadcast_to(base_acc, acc_a.shape)
        ca, sa = changes_and_shifts(base_rep, acc_a)
        cb, sb = changes_and_shifts(base_rep, acc_b)
        for key, v in zip(keys, (ca, sa, cb, sb), strict=True):
            total[key] += v
    return {key: v / max(len(questions), 1) for key, v in total.items()}

"""The tests that decide the findings' verdicts (:mod:`xlt.reporting.findings`), on arrays.

Every verdict is decided by a test at the level :data:`ALPHA`, one-sided in the direction the paper
claims, with the null hypothesis the design implies: "the compared systems are exchangeable on every
question" (a paired permutation: each question's two scores swapped at random) for comparisons of systems
on the same questions, "the subsets are alike apart from their sizes" for rank changes
(:func:`xlt.reporting.rank_changes.permutation`), "the languages are exchangeable" for groups of languages.
A claim with several parts ("best of three": better than each of the others; "on every tier") holds when
every part is significant: an intersection-union test, whose level is the largest of the parts' levels,
so no correction is needed (Berger 1982); a part that cannot be tested (no question both systems answered:
a NaN p-value) makes the whole verdict "cannot be tested" (:func:`untestable_parts`, :func:`largest_p`). p-values are Monte-Carlo permutation p-values
``(1 + hits) / (1 + B)`` (:func:`xlt.metrics.permutation_p_value`), valid for any number B of permutations.
The calibration suite (tests/reporting/test_calibration.py) checks every finding's rate of "holds" on
equal systems and its power under a planted effect; docs/findings.md has the numbers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from xlt.metrics import distinct_values, permutation_p_value

ALPHA = 0.05


def swapped_accuracies(target: np.ndarray, other: np.ndarray, samples: int,
                       rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Accuracies (percent) of two systems on the same questions when each question's two scores are
    swapped with probability 1/2: ``samples`` draws each. ``target`` / ``other``: per question, the share
    of a system's seeds that got it right."""
    n = target.size
    if n == 0:
        return np.full(samples, np.nan), np.full(samples, np.nan)
    values, counts = distinct_values(other - target)
    moved = rng.binomial(counts, 0.5, size=(samples, counts.size)) @ values  # what the swapped questions add
    return (target.sum() + moved) / n * 100, (other.sum() - moved) / n * 100


def count_above_test(target: Sequence[np.ndarray], other: Sequence[np.ndarray], threshold: float, strict: bool,
                     samples: int, seed: int) -> dict[str, float]:
    """Does ``target`` have more languages above ``threshold`` than ``other``? Per language, the two systems'
    per-question scores (same questions); the statistic is the difference of the counts; the null swaps
    each question's two scores at random (independently in every language). One-sided p-value."""
    rng = np.random.default_rng(seed)

    def above(x: np.ndarray) -> np.ndarray:
        return x > threshold if strict else x >= threshold

    acc_t = np.array([t.mean() * 100 for t in target])
    acc_o = np.array([o.mean() * 100 for o in other])
    observed = float(above(acc_t).sum() - above(acc_o).sum())
    null = np.zeros(samples)
    for t, o in zip(target, other, strict=True):
        st, so = swapped_accuracies(t, o, samples, rng)
        null += above(st).astype(float) - above(so)
    return {"count_target": int(above(acc_t).sum()), "count_other": int(above(acc_o).sum()),
            "diff": observed, "p_value": permutation_p_value(null, observed, "greater")}


def wins_test(diffs: Sequence[np.ndarray], samples: int, seed: int) -> dict[str, float]:
    """On how many languages is the mean of the per-question differences ``diffs[language]`` above 0, and is
    that more than chance? The null flips every question's difference at random (the two ways of scoring
    a question exchangeable), independently per language; one-sided p-value of the number of wins."""
    rng = np.random.default_rng(seed)
    observed = float(sum(float(d.mean()) > 1e-12 for d in diffs))
    null = np.zeros(samples)
    for d in diffs:
        values, counts = distinct_values(d)
        flipped = rng.binomial(counts, 0.5, size=(samples, counts.size))
        null += ((counts - 2 * flipped) @ values / d.size) > 1e-12
    return {"wins": int(observed), "languages": len(diffs), "p_value": permutation_p_value(null, observed, "greater")}


def group_permutation_test(xa: np.ndarray, xb: np.ndarray, samples: int, seed: int,
                           alternative: str = "greater") -> float:
    """Permutation p-value of mean(xa) - mean(xb) when the labels of the pooled values are exchangeable
    (languages of two groups); vectorised over ``samples`` shuffles."""
    pooled = np.concatenate([xa, xb]).astype(float)
    rng = np.random.default_rng(seed)
    perm = rng.permuted(np.broadcast_to(pooled, (samples, pooled.size)), axis=1)
    null = perm[:, :xa.size].mean(axis=1) - perm[:, xa.size:].mean(axis=1)
    return permutation_p_value(null, float(xa.mean() - xb.mean()), alternative)


def all_significant(p_values: Sequence[float], alpha: float = ALPHA) -> bool:
    """The intersection-union rule: every part's p-value below ``alpha`` (False for none or NaN)."""
    return bool(p_values) and all(p < alpha for p in p_values)


def largest_p(p_values: Sequence[float]) -> float:
    """The largest of the parts' p-values (the intersection-union test's), NaN when any part is NaN: Python's
    ``max`` keeps an earlier finite value over a later NaN, which would let an untestable part pass unseen."""
    values = [float("nan") if p is None else float(p) for p in p_values]
    if not values or any(math.isnan(p) for p in values):
        return float("nan")
    return max(values)


def untestable_parts(parts: Mapping[str, float | None]) -> list[str]:
    """The names of the parts of a multi-part claim that cannot be tested (p-value NaN or None: nothing to
    test them on, e.g. two systems that share no question id). Any such part makes the verdict "cannot be
    tested": the claim holds only when every part is tested and significant."""
    return [name for name, p in parts.items() if p is None or (isinstance(p, float) and math.isnan(p))]


UNTESTED_PART = ("a claim with several parts is decided only when every part can be tested; cannot be tested: "
                 "{parts}")

"""Accuracy, seeded bootstrap intervals, paired bootstrap tests, and the summaries over languages.

Accuracies are in percent throughout (results files, tables, plots).

Bootstrap over 0/1 correctness is computed exactly and cheaply: the number of correct answers in a
resample of ``n`` items drawn with replacement is ``Binomial(n, k/n)``; for a paired comparison the
per-item differences take few values (-1/0/+1, or multiples of 1/k for means over k seeds), so a
resample's counts are ``Multinomial(n, p)`` over those values. This gives the same distribution as
resampling indices, in O(B * values) instead of O(B * n) memory and time; a paired permutation (sign-flip)
test is computed the same way with ``Binomial(count, 1/2)`` flips per value.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

THRESHOLDS = (50.0, 70.0)


def accuracy(correct: Sequence[bool] | np.ndarray) -> float:
    """Accuracy in percent (NaN for an empty set)."""
    arr = np.asarray(correct, dtype=float)
    return float(arr.mean() * 100) if arr.size else float("nan")


def chance_level(counts: Sequence[int] | np.ndarray) -> float | None:
    """Expected accuracy (percent) of guessing uniformly among each item's own options: ``100 * mean(1/n)``
    (25.0 for 4-option items; None for no items)."""
    arr = np.asarray(counts, dtype=float)
    return float(np.mean(1.0 / arr) * 100) if arr.size else None


def bootstrap_ci(correct: Sequence[bool] | np.ndarray, samples: int = 1000, seed: int = 0,
                 level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap interval (percent) of the accuracy of 0/1 ``correct``; seeded."""
    arr = np.asarray(correct, dtype=bool)
    n = arr.size
    if n == 0 or samples <= 0:
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    means = rng.binomial(n, arr.mean(), size=samples) / n * 100
    alpha = (1 - level) / 2
    lo, hi = np.quantile(means, [alpha, 1 - alpha])
    return float(lo), float(hi)


def accuracy_with_ci(correct: Sequence[bool] | np.ndarray, samples: int = 1000, seed: int = 0) -> dict[str, Any]:
    """``{"accuracy", "n", "correct", "ci_low", "ci_high"}`` for one set of items."""
    arr = np.asarray(correct, dtype=bool)
    lo, hi = bootstrap_ci(arr, samples, seed)
    return {"accuracy": accuracy(arr), "n": int(arr.size), "correct": int(arr.sum()), "ci_low": lo, "ci_high": hi}


def draws_accuracy_with_ci(correct: np.ndarray, samples: int = 1000, seed: int = 0,
                           level: float = 0.95) -> dict[str, Any]:
    """The accuracy of several draws scored on the same items (``correct``: ``(draws, n)`` 0/1), as the mean of
    the draws' accuracies, with a percentile bootstrap interval that resamples items (each item's share of
    draws that got it right, multiples of 1/draws: :func:`resampled_means`). ``correct``: right answers over
    all draws (``accuracy == 100 * correct / (draws * n)``)."""
    arr = np.asarray(correct, dtype=bool)
    draws, n = arr.shape
    share = arr.mean(axis=0) if draws else np.zeros(0)
    out = {"accuracy": accuracy(share) if draws else float("nan"), "n": int(n), "correct": int(arr.sum())}
    if n == 0 or samples <= 0 or draws == 0:
        return {**out, "ci_low": float("nan"), "ci_high": float("nan")}
    values, counts = distinct_values(share)
    means = resampled_means(values, counts, samples, np.random.default_rng(seed)) * 100
    alpha = (1 - level) / 2
    lo, hi = np.quantile(means, [alpha, 1 - alpha])
    return {**out, "ci_low": float(lo), "ci_high": float(hi)}


def spread(accuracies: Sequence[float]) -> dict[str, float]:
    """The spread of several draws' (or runs') accuracies: sample std (ddof 1, as the seeds tables; 0 for one),
    min, max."""
    acc = np.asarray(accuracies, dtype=float)
    return {"std": float(np.std(acc, ddof=1)) if acc.size > 1 else 0.0, "min": float(acc.min()), "max": float(acc.max())}


ALTERNATIVES = ("two-sided", "greater", "less")


def paired_bootstrap(correct_a: Sequence[bool] | np.ndarray, correct_b: Sequence[bool] | np.ndarray,
                     samples: int = 1000, seed: int = 0, level: float = 0.95,
                     alternative: str = "two-sided") -> dict[str, float]:
    """Paired comparison of accuracy(b) - accuracy(a) on the same items (percent points): the difference,
    its paired-bootstrap percentile interval and a paired permutation p-value (:func:`bootstrap_mean_diff`)."""
    a = np.asarray(correct_a, dtype=float)  # 0/1, or a share of draws (protocol=paper results)
    b = np.asarray(correct_b, dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"paired bootstrap needs the same items: {a.shape} vs {b.shape}")
    return bootstrap_mean_diff(b - a, samples, seed, level, alternative=alternative)


def distinct_values(diffs: Sequence[float] | np.ndarray, decimals: int = 9) -> tuple[np.ndarray, np.ndarray]:
    """The distinct values of ``diffs`` and how often each occurs, values equal to ``decimals`` places counted
    as one (each represented by the mean of its members).

    Seed means are fractions k/s that floating point does not always write the same way (``1 - 2/3`` and
    ``1/3 - 0`` differ in the last bit); exact equality would split one value in two. Distinct fractions with
    denominators up to 10**4 differ by far more than 10**-9, so nothing else is merged.
    """
    d = np.asarray(diffs, dtype=float)
    _, inverse, counts = np.unique(np.round(d, decimals), return_inverse=True, return_counts=True)
    values = np.bincount(inverse.ravel(), weights=d, minlength=counts.size) / counts
    return values, counts


def resampled_means(values: np.ndarray, counts: np.ndarray, samples: int, rng: np.random.Generator) -> np.ndarray:
    """``samples`` means of ``n = counts.sum()`` items drawn with replacement from the items with these
    values: how often each value is drawn is ``Multinomial(n, counts / n)``, the same distribution as
    drawing ``n`` indices (O(samples * values) instead of O(samples * n))."""
    n = int(counts.sum())
    return rng.multinomial(n, counts / n, size=samples) @ values / n


def sign_flip_means(values: np.ndarray, counts: np.ndarray, samples: int, rng: np.random.Generator) -> np.ndarray:
    """``samples`` means of the items' values with each item's sign flipped at random (a paired permutation:
    the two systems' answers to each item swapped with probability 1/2). The number of flipped items of
    each value is ``Binomial(count, 1/2)``: the same distribution as flipping every item, in O(samples * values)."""
    n = int(counts.sum())
    flipped = rng.binomial(counts, 0.5, size=(samples, counts.size))
    return (counts - 2 * flipped) @ values / n


def permutation_p_value(null: np.ndarray, observed: float, alternative: str = "two-sided") -> float:
    """Monte-Carlo permutation p-value ``(1 + #{null at least as extreme}) / (1 + B)``: the observed
    arrangement counts as one of the permutations, so the p-value is valid (P(p <= a) <= a under the null)
    for any number B of permutations (Phipson & Smyth 2010). ``greater``: large values are extreme."""
    if alternative not in ALTERNATIVES:
        raise ValueError(f"alternative must be one of {ALTERNATIVES}, got {alternative!r}")
    null = np.asarray(null, dtype=float)
    tol = 1e-9 * max(1.0, abs(observed))
    if alternative == "greater":
        hits = np.sum(null >= observed - tol)
    elif alternative == "less":
        hits = np.sum(null <= observed + tol)
    else:
        hits = np.sum(np.abs(null) >= abs(observed) - tol)
    return float((hits + 1) / (null.size + 1))


def bootstrap_mean_diff(diffs: Sequence[float] | np.ndarray, samples: int = 1000, seed: int = 0,
                        level: float = 0.95, alternative: str = "two-sided") -> dict[str, float]:
    """The mean of per-item paired differences (fractions in [-1, 1], reported in percent points) with a
    bootstrap interval and a permutation p-value.

    * interval: percentile bootstrap, the items resampled with replacement (:func:`resampled_means`; exact
      index resampling in distribution, checked against it in tests/scoring/test_bootstrap_reference.py);
    * p-value: paired permutation (sign-flip) test of "the two systems are exchangeable on every item"
      (:func:`sign_flip_means`, :func:`permutation_p_value`): exact level for any number of items, which the
      shifted-bootstrap p-value is not. ``alternative``: ``greater`` tests mean > 0, ``less`` mean < 0.

    Differences of seed means (multiples of 1/k) are grouped by value (:func:`distinct_values`). An empty
    input gives NaN throughout.
    """
    if alternative not in ALTERNATIVES:
        raise ValueError(f"alternative must be one of {ALTERNATIVES}, got {alternative!r}")
    d = np.asarray(diffs, dtype=float).ravel()
    n = d.size
    delta = float(d.mean() * 100) if n else float("nan")
    if n == 0 or samples <= 0:
        return {"diff": delta, "ci_low": float("nan"), "ci_high": float("nan"), "p_value": float("nan")}
    values, counts = distinct_values(d)
    rng = np.random.default_rng(seed)
    boot = resampled_means(values, counts, samples, rng) * 100
    alpha = (1 - level) / 2
    lo, hi = np.quantile(boot, [alpha, 1 - alpha])
    null = sign_flip_means(values, counts, samples, rng) * 100
    p = permutation_p_value(null, delta, alternative)
    return {"diff": delta, "ci_low": float(lo), "ci_high": float(hi), "p_value": p}


def holm_adjust(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment of ``p_values`` (family-wise error rate; Holm 1979): the i-th smallest
    of m p-values becomes max over j <= i of min(1, (m - j + 1) p_(j)). NaN p-values stay NaN and do
    not count in m."""
    p = np.asarray(p_values, dtype=float)
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(~np.isnan(p))
    m = ok.size
    running = 0.0
    for rank, i in enumerate(ok[np.argsort(p[ok], kind="stable")]):
        running = max(running, min(1.0, (m - rank) * p[i]))
        out[i] = running
    return [float(x) for x in out]


def group_means(df: pd.DataFrame, by: str, value: str = "accuracy",
                extra: Sequence[str] = ()) -> dict[str, dict[str, Any]]:
    """Mean of ``value`` over languages per group of column ``by``: {group: {"mean", "n_languages"}}, plus
    the mean of each ``extra`` column (keyed without its ``acc_`` prefix; None where all are missing)."""
    out: dict[str, dict[str, Any]] = {}
    sub = df.dropna(subset=[value])
    for key, grp in sub.groupby(by, sort=True):
        out[str(key)] = {"mean": float(grp[value].mean()), "n_languages": int(len(grp)),
                         **{c.removeprefix("acc_"): float(grp[c].mean()) if grp[c].notna().any() else None
                            for c in extra}}
    return out


def summarize(per_lang: pd.DataFrame, groupings: Sequence[str] = (), subsets: Sequence[str] = (),
              thresholds: Sequence[float] = THRESHOLDS) -> dict[str, Any]:
    """Headline numbers of a per-language table (column ``accuracy``; ``acc_<subset>`` per subset; the
    grouping columns; optionally ``chance``). Every mean is over languages.

    ``mean`` and ``n_languages``; ``n_ge_<t>``: languages at or above each threshold; ``chance``: the mean
    chance level; with subsets, ``full`` and each subset's mean (None where no language has its items);
    finer subsets ``acc_<kind>/<name>`` as ``by_<kind>`` ({name: mean}); per grouping column ``g``,
    ``by_<g>`` = {group: {"mean", "n_languages", <subset>: mean}}.
    """
    acc = per_lang["accuracy"]
    out: dict[str, Any] = {"mean": float(acc.mean()), "n_languages": int(len(per_lang)),
                           **{f"n_ge_{t:g}": int((acc >= t).sum()) for t in thresholds}}
    if "chance" in per_lang and per_lang["chance"].notna().any():
        out["chance"] = float(per_lang["chance"].mean())
    cols = [f"acc_{s}" for s in subsets if f"acc_{s}" in per_lang]
    if subsets:
        for s in ("full", *subsets):
            col = f"acc_{s}"
            out[s] = float(per_lang[col].mean()) if col in per_lang and per_lang[col].notna().any() else None
    for c in sorted(per_lang.columns):
        if c.startswith("acc_") and "/" in c and per_lang[c].notna().any():
            kind, _, name = c.removeprefix("acc_").partition("/")
            out.setdefault(f"by_{kind}", {})[name] = float(per_lang[c].mean())
    for by in groupings:
        if by in per_lang:
            out[f"by_{by}"] = group_means(per_lang, by, extra=cols)
    return out

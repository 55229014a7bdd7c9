"""Accuracy, seeded bootstrap intervals, paired bootstrap tests, and the summaries over languages.

Accuracies are in percent throughout (results files, tables, plots).

Bootstrap over 0/1 correctness is computed exactly and cheaply: the number of correct answers in a
resample of ``n`` items drawn with replacement is ``Binomial(n, k/n)``; for a paired comparison the
per-item differences take values -1/0/+1, so a resample's counts are ``Multinomial(n, p)``. This gives
the same distribution as resampling indices, in O(B) instead of O(B*n) memory and time.
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


def paired_bootstrap(correct_a: Sequence[bool] | np.ndarray, correct_b: Sequence[bool] | np.ndarray,
                     samples: int = 1000, seed: int = 0, level: float = 0.95) -> dict[str, float]:
    """Paired bootstrap of accuracy(b) - accuracy(a) on the same items (percent points).

    Returns the difference, its percentile interval and a two-sided p-value: the share of resampled
    differences at least as far from the observed one as the observed one is from 0 (the bootstrap
    distribution shifted to the null, Berg-Kirkpatrick et al. 2012).
    """
    a = np.asarray(correct_a, dtype=int)
    b = np.asarray(correct_b, dtype=int)
    if a.shape != b.shape:
        raise ValueError(f"paired bootstrap needs the same items: {a.shape} vs {b.shape}")
    n = a.size
    d = b - a
    delta = float(d.mean() * 100) if n else float("nan")
    if n == 0 or samples <= 0:
        return {"diff": delta, "ci_low": float("nan"), "ci_high": float("nan"), "p_value": float("nan")}
    probs = np.array([(d == -1).mean(), (d == 0).mean(), (d == 1).mean()])
    counts = np.random.default_rng(seed).multinomial(n, probs, size=samples)
    resampled = (counts[:, 2] - counts[:, 0]) / n * 100
    alpha = (1 - level) / 2
    lo, hi = np.quantile(resampled, [alpha, 1 - alpha])
    p = float(np.mean(np.abs(resampled - delta) >= abs(delta) - 1e-12)) if delta != 0 else 1.0
    return {"diff": delta, "ci_low": float(lo), "ci_high": float(hi), "p_value": p}


def group_means(df: pd.DataFrame, by: str, value: str = "accuracy") -> dict[str, dict[str, float]]:
    """Mean of ``value`` over languages per group of column ``by``: {group: {"mean", "n_languages"}}."""
    out: dict[str, dict[str, float]] = {}
    sub = df.dropna(subset=[value])
    for key, grp in sub.groupby(by, sort=True):
        out[str(key)] = {"mean": float(grp[value].mean()), "n_languages": int(len(grp))}
    return out


def belebele_summary(per_lang: pd.DataFrame, with_resource: bool = True) -> dict[str, Any]:
    """Belebele headline numbers from a per-language table (columns accuracy, script, family, resource).

    Mean over languages (macro = micro: 900 items each), number of languages >= 50 and >= 70, and the
    means grouped by script, family and (when available) resource level.
    """
    acc = per_lang["accuracy"]
    out: dict[str, Any] = {
        "mean": float(acc.mean()),
        "n_languages": int(len(per_lang)),
        **{f"n_ge_{int(t)}": int((acc >= t).sum()) for t in THRESHOLDS},
        "by_script": group_means(per_lang, "script"),
        "by_family": group_means(per_lang, "family"),
    }
    if with_resource and "resource" in per_lang:
        out["by_resource"] = group_means(per_lang, "resource")
    return out


GMMLU_SUBSETS = ("full", "MA", "CS", "CA")


def gmmlu_summary(per_lang: pd.DataFrame) -> dict[str, Any]:
    """Global-MMLU summaries from a per-language table with one accuracy column per subset.

    Columns ``acc_full``, ``acc_MA``, ``acc_CS``, ``acc_CA``, ``acc_category/<cat>`` (NaN where a language
    has no such items), plus ``tier`` and ``translation``. Every mean is over languages.
    """
    out: dict[str, Any] = {"n_languages": int(len(per_lang))}
    for subset in GMMLU_SUBSETS:
        col = f"acc_{subset}"
        out[subset] = float(per_lang[col].mean()) if col in per_lang and per_lang[col].notna().any() else None
    out["by_category"] = {
        c.removeprefix("acc_category/"): float(per_lang[c].mean())
        for c in sorted(per_lang.columns)
        if c.startswith("acc_category/") and per_lang[c].notna().any()
    }
    for by, key in (("tier", "by_tier"), ("translation", "by_translation")):
        out[key] = {}
        if by not in per_lang:
            continue
        for group, grp in per_lang.groupby(by, sort=True):
            out[key][str(group)] = {
                "n_languages": int(len(grp)),
                **{s: (float(grp[f"acc_{s}"].mean()) if grp[f"acc_{s}"].notna().any() else None)
                   for s in GMMLU_SUBSETS if f"acc_{s}" in grp},
            }
    return out

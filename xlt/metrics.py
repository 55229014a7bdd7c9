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
    return bootstrap_mean_diff(b - a, samples, seed, level, support=(-1, 0, 1))


def bootstrap_mean_diff(diffs: Sequence[float] | np.ndarray, samples: int = 1000, seed: int = 0,
                        level: float = 0.95, support: Sequence[float] | None = None) -> dict[str, float]:
    """Bootstrap of the mean of per-item differences (fractions in [-1, 1], reported in percent points):
    the items are resampled with replacement, each resample's mean is one draw.

    The differences take few distinct values (-1/0/+1 for one pair of 0/1 answers; multiples of 1/k for
    means over seeds), so a resample is a multinomial draw of how often each value occurs: the same
    distribution as resampling indices, in O(B * values). ``support`` fixes the values (and with them the
    random stream); by default the distinct values of ``diffs``. Interval and two-sided p-value as in
    :func:`paired_bootstrap`; an empty input gives NaN throughout.
    """
    d = np.asarray(diffs, dtype=float)
    n = d.size
    delta = float(d.mean() * 100) if n else float("nan")
    if n == 0 or samples <= 0:
        return {"diff": delta, "ci_low": float("nan"), "ci_high": float("nan"), "p_value": float("nan")}
    values = np.asarray(support if support is not None else np.unique(d), dtype=float)
    probs = np.array([(np.isclose(d, v)).mean() for v in values])
    counts = np.random.default_rng(seed).multinomial(n, probs / probs.sum(), size=samples)
    resampled = counts @ values / n * 100
    alpha = (1 - level) / 2
    lo, hi = np.quantile(resampled, [alpha, 1 - alpha])
    p = float(np.mean(np.abs(resampled - delta) >= abs(delta) - 1e-12)) if delta != 0 else 1.0
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

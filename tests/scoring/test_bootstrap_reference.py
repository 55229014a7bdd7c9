"""The seed-averaged paired bootstrap and permutation test against brute-force references, for 1 to 6
seeds and unequal question counts (issue 35).

References: index resampling (``rng.integers(n, size=(B, n))``, the textbook paired bootstrap),
``scipy.stats.bootstrap`` (paired) and ``scipy.stats.permutation_test`` (``permutation_type="samples"``:
each question's two scores swapped at random), and exact fractions for the grouping of values.

Tolerances: two Monte-Carlo estimates of a 2.5% / 97.5% quantile from B draws each differ with a standard
deviation of about 2.7 * sqrt(2 / B) bootstrap standard deviations (normal approximation, density at the
quantile); B = 10000 gives 0.038 sd, and the tests allow 0.2 sd (over 5 standard deviations of Monte-Carlo
noise). The defect these tests catch moved the interval by about 1.5 sd (issue 35: [+19.4, +24.0] around
+17.6 with 3 seeds). p-values: two estimates differ with a standard deviation of at most
sqrt(2 * 0.25 / B) = 0.007 at B = 10000; the tests allow 0.03.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from xlt.metrics import bootstrap_mean_diff, distinct_values, paired_bootstrap, permutation_p_value

B = 10_000


def seed_means(rng: np.random.Generator, n: int, seeds: int, p: np.ndarray) -> np.ndarray:
    """Per question, the share of ``seeds`` seeds that answered it right (question difficulty ``p``)."""
    return (rng.random((seeds, n)) < p).mean(axis=0)


def simulated(seeds_a: int, seeds_b: int, n: int, gain: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.2, 0.8, n)
    return seed_means(rng, n, seeds_b, np.clip(p + gain, 0, 1)) - seed_means(rng, n, seeds_a, p)


def index_bootstrap(d: np.ndarray, samples: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    out = np.empty(samples)
    for start in range(0, samples, 2000):
        idx = rng.integers(0, d.size, size=(min(2000, samples - start), d.size))
        out[start:start + idx.shape[0]] = d[idx].mean(axis=1)
    return out * 100


def sign_flips(d: np.ndarray, samples: int, seed: int) -> np.ndarray:
    """Every question's difference negated with probability 1/2 (its two systems' scores swapped)."""
    rng = np.random.default_rng(seed)
    return np.where(rng.random((samples, d.size)) < 0.5, -d, d).mean(axis=1) * 100


def brute_p(null: np.ndarray, observed: float, alternative: str) -> float:
    hits = {"greater": null >= observed - 1e-9, "less": null <= observed + 1e-9,
            "two-sided": np.abs(null) >= abs(observed) - 1e-9}[alternative]
    return float((hits.sum() + 1) / (null.size + 1))


# 1 to 6 seeds each, unequal seed counts, question counts that differ between cases
CASES = [(k, k, n) for k, n in zip(range(1, 7), (237, 900, 411, 150, 1003, 333), strict=True)]
CASES += [(3, 5, 411), (2, 6, 150), (1, 4, 1003), (6, 3, 237)]


@pytest.mark.parametrize(("seeds_a", "seeds_b", "n"), CASES)
def test_interval_and_p_value_match_brute_force(seeds_a, seeds_b, n):
    d = simulated(seeds_a, seeds_b, n, gain=0.04, seed=seeds_a * 100 + seeds_b * 10 + n)
    ref = index_bootstrap(d, B, seed=2)
    sd = ref.std()
    lo, hi = np.quantile(ref, [0.025, 0.975])
    null = sign_flips(d, B, seed=3)
    for alt in ("two-sided", "greater", "less"):
        ours = bootstrap_mean_diff(d, B, seed=1, alternative=alt)
        assert ours["diff"] == pytest.approx(100 * d.mean())
        assert abs(ours["ci_low"] - lo) < 0.2 * sd and abs(ours["ci_high"] - hi) < 0.2 * sd
        assert ours["ci_low"] < ours["diff"] < ours["ci_high"]
        assert ours["p_value"] == pytest.approx(brute_p(null, 100 * d.mean(), alt), abs=0.03), alt


@pytest.mark.parametrize(("seeds_a", "seeds_b", "n"), [(3, 3, 900), (5, 2, 311)])
def test_interval_and_p_value_match_scipy(seeds_a, seeds_b, n):
    """scipy.stats.bootstrap (paired, percentile) and scipy.stats.permutation_test (paired samples)."""
    d = simulated(seeds_a, seeds_b, n, gain=0.03, seed=n)
    zeros = np.zeros_like(d)
    sd = index_bootstrap(d, 2000, seed=0).std()
    ours = bootstrap_mean_diff(d, B, seed=1, alternative="greater")
    ci = stats.bootstrap((d, zeros), lambda x, y, axis=-1: (x - y).mean(axis=axis) * 100, paired=True,
                         vectorized=True, n_resamples=B, method="percentile", random_state=3).confidence_interval
    assert abs(ours["ci_low"] - ci.low) < 0.2 * sd and abs(ours["ci_high"] - ci.high) < 0.2 * sd
    p = stats.permutation_test((d, zeros), lambda x, y, axis=-1: (x - y).mean(axis=axis), n_resamples=B,
                               permutation_type="samples", vectorized=True, alternative="greater",
                               random_state=5).pvalue
    assert ours["p_value"] == pytest.approx(p, abs=0.03)


@pytest.mark.parametrize("seeds", range(1, 7))
def test_values_are_grouped_exactly_as_fractions(seeds):
    """Every distinct seed-mean difference once, with its exact frequency (the old code kept 1 - 2/3 and
    1/3 - 0 apart and credited each with both's mass)."""
    rng = np.random.default_rng(seeds)
    ka, kb = rng.integers(0, seeds + 1, 500), rng.integers(0, seeds + 1, 500)
    d = kb / seeds - ka / seeds
    d = np.where(rng.random(500) < 0.5, d, (seeds - ka) / seeds - (seeds - kb) / seeds)  # other float paths
    exact: dict[Fraction, int] = {}
    for x, y in zip(ka, kb, strict=True):
        exact[Fraction(int(y) - int(x), seeds)] = exact.get(Fraction(int(y) - int(x), seeds), 0) + 1
    values, counts = distinct_values(d)
    assert counts.sum() == d.size
    assert {Fraction(v).limit_denominator(seeds): int(c) for v, c in zip(values, counts, strict=True)} == exact


def test_the_issue_case_three_seeds_interval_contains_its_estimate():
    """Issue 35: 3 seeds, 900 questions; the old interval [+19.44, +23.96] missed the estimate +17.63."""
    d = simulated(3, 3, 900, gain=0.18, seed=35)
    t = bootstrap_mean_diff(d, 1000, 0)
    assert t["ci_low"] < t["diff"] < t["ci_high"]
    ref = index_bootstrap(d, B, 1)
    assert abs(t["diff"] - ref.mean()) < 0.1 * ref.std()


def test_zero_one_answers_and_edge_cases():
    a = np.array([1, 0, 1, 1, 0, 0, 1, 0] * 10, dtype=bool)
    b = np.roll(a, 1)
    assert bootstrap_mean_diff(b.astype(int) - a.astype(int), 300, 4) == paired_bootstrap(a, b, 300, 4)
    same = paired_bootstrap(a, a, 300, 0)
    assert same["diff"] == 0 and same["p_value"] == 1.0
    assert np.isnan(bootstrap_mean_diff([], 100, 0)["p_value"])
    with pytest.raises(ValueError, match="alternative"):
        bootstrap_mean_diff([0.1], 10, 0, alternative="bigger")
    # the permutation p-value counts the observed arrangement: never 0, at least 1 / (B + 1)
    assert permutation_p_value(np.zeros(99), 5.0, "greater") == pytest.approx(0.01)
    assert permutation_p_value(np.zeros(99), -5.0, "greater") == 1.0

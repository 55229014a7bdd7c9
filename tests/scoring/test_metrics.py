"""Accuracy, bootstrap and the summaries, against hand-computed values."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from xlt.data.benchmarks import get_benchmark
from xlt.metrics import (
    accuracy,
    accuracy_with_ci,
    bootstrap_ci,
    paired_bootstrap,
    summarize,
)
from xlt.reporting.tables import summarize_results, summary_tables


def test_accuracy_and_seeded_bootstrap():
    correct = np.array([1, 1, 1, 0] * 50, dtype=bool)
    assert accuracy(correct) == 75.0
    lo, hi = bootstrap_ci(correct, samples=2000, seed=3)
    assert (lo, hi) == bootstrap_ci(correct, samples=2000, seed=3)  # seeded
    # normal approximation: 75 +- 1.96 * sqrt(.75*.25/200) * 100 = 75 +- 6.0
    assert 68 < lo < 71.5 and 78.5 < hi < 82
    res = accuracy_with_ci([True, False], samples=10)
    assert res["n"] == 2 and res["correct"] == 1 and res["accuracy"] == 50.0


def test_bootstrap_matches_index_resampling():
    rng = np.random.default_rng(0)
    correct = rng.random(300) < 0.6
    lo, hi = bootstrap_ci(correct, samples=4000, seed=1)
    idx = rng.integers(0, 300, size=(4000, 300))
    ref = np.quantile(correct[idx].mean(1) * 100, [0.025, 0.975])
    assert abs(lo - ref[0]) < 1.0 and abs(hi - ref[1]) < 1.0


def test_paired_bootstrap():
    a = np.array([1, 0] * 100, dtype=bool)
    same = paired_bootstrap(a, a, samples=500)
    assert same["diff"] == 0 and same["p_value"] == 1.0
    b = np.ones(200, dtype=bool)
    better = paired_bootstrap(a, b, samples=500, seed=2)
    assert better["diff"] == 50.0 and better["p_value"] < 0.01 and better["ci_low"] > 40
    c = a.copy()
    c[1] = True  # one more right of 200: not significant
    small = paired_bootstrap(a, c, samples=500, seed=2)
    assert small["diff"] == 0.5 and small["p_value"] > 0.2
    with pytest.raises(ValueError):
        paired_bootstrap(a, a[:10])


def test_summary_without_subsets_hand_computed():
    df = pd.DataFrame({
        "language": ["a", "b", "c", "d"],
        "accuracy": [80.0, 60.0, 50.0, 30.0],
        "script": ["Latn", "Latn", "Cyrl", "Arab"],
        "family": ["Romance", "Germanic", "Balto-Slavic", "Afro-Asiatic"],
        "resource": ["high", "high", "mid", "n/a"],
    })
    s = summarize(df, ("script", "family", "resource"))
    declared = summarize_results(get_benchmark("belebele"), df)  # the default definition: these groupings, + the taxonomy
    assert declared.pop("resource_taxonomy").startswith("NLLB resource levels") and declared == s
    assert s["mean"] == 55.0 and s["n_languages"] == 4 and "chance" not in s and "full" not in s
    assert s["n_ge_50"] == 3 and s["n_ge_70"] == 1
    assert s["by_script"] == {"Arab": {"mean": 30.0, "n_languages": 1}, "Cyrl": {"mean": 50.0, "n_languages": 1},
                              "Latn": {"mean": 70.0, "n_languages": 2}}
    assert s["by_resource"]["high"] == {"mean": 70.0, "n_languages": 2}
    assert s["by_family"]["Romance"]["mean"] == 80.0
    assert summarize(df.assign(chance=[50.0, 50.0, 25.0, 25.0]), thresholds=(40,)) == {
        "mean": 55.0, "n_languages": 4, "n_ge_40": 3, "chance": 37.5}


def test_subsets_and_summary_of_a_definition_with_subsets():
    items = pd.DataFrame({
        "is_annotated": [True, True, False, True],
        "cultural_sensitivity_label": ["CS", "CA", "-", "CA"],
        "subject_category": ["STEM", "Medical", "STEM", "Other"],
    })
    m = get_benchmark("global_mmlu").item_subsets(items)
    assert m["full"].all()
    assert m["MA"].tolist() == [True, True, False, True]
    assert m["CS"].tolist() == [True, False, False, False] and m["CA"].sum() == 2
    assert m["category/STEM"].tolist() == [True, False, True, False]
    per_lang = pd.DataFrame({
        "language": ["x", "y", "z"], "accuracy": [60.0, 40.0, 50.0],
        "acc_full": [60.0, 40.0, 50.0], "acc_MA": [50.0, 30.0, 40.0],
        "acc_CS": [40.0, 20.0, np.nan], "acc_CA": [70.0, 50.0, 60.0],
        "acc_category/STEM": [10.0, 20.0, 30.0],
        "tier": ["high", "low", "low"], "translation": ["human", "machine", "machine"],
    })
    s = summarize_results(get_benchmark("global_mmlu"), per_lang)
    assert s["mean"] == s["full"] == 50.0 and s["MA"] == 40.0 and s["CS"] == 30.0 and s["CA"] == 60.0
    assert s["by_category"] == {"STEM": 20.0}
    assert s["by_tier"]["low"] == {"mean": 45.0, "n_languages": 2, "MA": 35.0, "CS": 20.0, "CA": 55.0}
    assert s["by_translation"]["human"]["mean"] == 60.0
    assert not any(k.startswith("n_ge_") for k in s) and "resource_taxonomy" not in s  # declared: no thresholds
    frames = summary_tables(get_benchmark("global_mmlu"), s)
    assert list(frames) == ["overview", "subsets", "by category", "by resource tier", "by translation"]
    assert frames["subsets"].set_index("subset")["mean accuracy"].to_dict() == {"full": 50.0, "MA": 40.0, "CS": 30.0,
                                                                                 "CA": 60.0}


def test_chance_level_is_the_mean_of_one_over_each_items_options():
    from xlt.metrics import chance_level

    assert chance_level([4] * 9) == 25.0
    assert chance_level([3, 3]) == pytest.approx(100 / 3)
    assert chance_level([2, 3, 5]) == pytest.approx(100 * (1 / 2 + 1 / 3 + 1 / 5) / 3)
    assert chance_level([]) is None


def test_holm_adjust_and_the_mean_difference_bootstrap():
    from xlt.metrics import bootstrap_mean_diff, holm_adjust

    # sorted: 0.005*4=0.02, 0.01*3=0.03, 0.03*2=0.06, 0.04*1=0.04 -> monotone 0.06
    assert holm_adjust([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    adj = holm_adjust([0.5, float("nan"), 0.9])
    assert adj[0] == pytest.approx(1.0) and np.isnan(adj[1]) and adj[2] == pytest.approx(1.0)
    a = np.array([1, 0, 1, 1, 0, 0, 1, 0] * 10, dtype=bool)
    b = np.roll(a, 1)
    # 0/1 answers: the same draws as paired_bootstrap
    assert bootstrap_mean_diff(b.astype(int) - a.astype(int), 300, 4) == paired_bootstrap(a, b, 300, 4)
    # seed means (multiples of 1/3): the observed mean, an interval around it; none: NaN
    d = np.array([1 / 3, 0, 2 / 3, -1 / 3] * 20)
    t = bootstrap_mean_diff(d, 500, 0)
    assert t["diff"] == pytest.approx(100 * d.mean()) and t["ci_low"] < t["diff"] < t["ci_high"]
    assert np.isnan(bootstrap_mean_diff([], 100, 0)["p_value"])

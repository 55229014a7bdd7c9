"""The gold and fixed scorers and the check every scorer's output passes, for items with their own
number of options."""

from __future__ import annotations

import numpy as np
import pytest
from datasets import Dataset

from xlt.errors import ConfigError
from xlt.scoring.scorers import FixedScorer, GoldScorer, check_scores, empty_scores

INF = -np.inf


def items(counts, labels):
    return Dataset.from_dict({"options": [[f"o{k}" for k in range(n)] for n in counts], "label": labels})


def test_gold_scores_pad_missing_options_with_minus_inf():
    scores = GoldScorer().score(items([2, 4, 3], [1, 3, 0]), benchmark="b", language="l")
    np.testing.assert_array_equal(scores, [[0, 1, INF, INF], [0, 0, 0, 1], [1, 0, 0, INF]])
    assert check_scores(scores, [2, 4, 3], "b/l").shape == (3, 4)


def test_fixed_option_an_item_lacks_gives_it_no_prediction():
    scores = FixedScorer(option=2).score(items([2, 3, 5], [0, 2, 1]), benchmark="b", language="l")
    np.testing.assert_array_equal(scores, [[INF] * 5, [0, 0, 1, INF, INF], [0, 0, 1, 0, 0]])
    check_scores(scores, [2, 3, 5], "b/l")
    assert (FixedScorer(option=7).score(items([2, 3], [0, 0]), benchmark="b", language="l") == INF).all()
    with pytest.raises(ConfigError, match="eval.fixed_option must be >= 0"):
        FixedScorer(option=-1)


@pytest.mark.parametrize(("scores", "counts", "message"), [
    (np.zeros((2, 4)), [3, 3], r"shape \(2, 4\), expected \(2, 3\)"),
    (np.zeros((3, 3)), [3, 3], r"shape \(3, 3\), expected \(2, 3\)"),
    ([[0.0, np.nan, 1.0], [0.0, 0.0, 0.0]], [3, 3], "NaN"),
    ([[0.0, 1.0, INF], [0.0, 0.0, 0.5]], [3, 2], "item 1 does not have"),
    ([[0.0, 1.0, 0.0], [0.0, 0.0, 0.0]], [2, 3], r"item 0 does not have \(it has 2 options"),
])
def test_check_scores_refuses(scores, counts, message):
    with pytest.raises(ValueError, match=message):
        check_scores(scores, counts, "b/l")


def test_check_scores_accepts_minus_inf_in_own_slots_and_no_items():
    check_scores([[INF, INF], [0.0, INF]], [2, 1], "b/l")  # an item with no score at all: no prediction
    assert check_scores(np.zeros((0, 0)), [], "b/l").shape == (0, 0)
    assert empty_scores([]).shape == (0, 0)

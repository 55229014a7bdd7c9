"""Optional n-gram overlap check of the training set against evaluation texts (benchmark passages and questions).

A training row is flagged when its passage or question shares a word n-gram (default 13, lower-cased,
punctuation ignored) with any evaluation text. Flagged rows are reported, and removed on request.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

log = logging.getLogger(__name__)

_WORD = re.compile(r"\w+", re.UNICODE)


def ngrams(text: str, n: int) -> Iterator[tuple[str, ...]]:
    words = _WORD.findall(text.lower())
    for i in range(len(words) - n + 1):
        yield tuple(words[i : i + n])


def eval_ngrams(texts: Iterable[str], n: int) -> set[int]:
    """Hashes of every word n-gram of the evaluation ``texts``."""
    return {hash(g) for t in texts for g in ngrams(t, n)}


def find_overlaps(rows: Sequence[dict[str, Any]], eval_texts: Iterable[str], n: int = 13) -> list[int]:
    """Indices of ``rows`` whose passage or question shares an ``n``-gram with ``eval_texts``."""
    table = eval_ngrams(eval_texts, n)
    if not table:
        return []
    cache: dict[str, bool] = {}

    def hit(text: str) -> bool:
        if text not in cache:
            cache[text] = any(hash(g) in table for g in ngrams(text, n))
        return cache[text]

    return [i for i, r in enumerate(rows) if hit(r["passage"]) or hit(r["question"])]

"""Optional n-gram overlap check of the training set against evaluation texts (Belebele passages/questions).

A training row is flagged when its passage or question shares a word n-gram (default 13, lower-cased,
punctuation ignored) with any evaluation text. Flagged rows are reported, and removed on request.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from xlt.data.sources.files import iter_jsonl
from xlt.errors import DataError

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


def belebele_texts(path: str | Path, languages: Sequence[str] | None = None) -> list[str]:
    """``flores_passage`` and ``question`` texts from a local Belebele copy (``<path>[/data]/<code>.jsonl``).

    ``languages`` None or empty reads every language file found.
    """
    root = Path(path).expanduser()
    folder = root / "data" if (root / "data").is_dir() else root
    if languages:
        files = []
        for code in languages:
            f = folder / f"{code}.jsonl"
            if not f.is_file():
                log.info("decontamination: no %s in %s; skipped", f.name, folder)
                continue
            files.append(f)
    else:
        files = sorted(folder.glob("*.jsonl"))
    texts: list[str] = []
    seen: set[str] = set()
    for f in files:
        for row in iter_jsonl(f):  # the shared reader: bad bytes, truncated lines, empty files name the line
            for key in ("flores_passage", "question"):
                value = row.data.get(key)
                if not isinstance(value, str):
                    raise DataError(f"{row.where}: field '{key}' must be a string, got {value!r:.60}")
                if value not in seen:
                    seen.add(value)
                    texts.append(value)
    return texts

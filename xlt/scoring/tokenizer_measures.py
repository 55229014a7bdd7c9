"""Tokenizer measures per language: fertility, continued words, tokenization premium, unknown-piece rate.

The measures the literature compares vocabularies by, computed on a benchmark's own items (the passage,
question and options of each; a passage shared by several questions counted once for the pooled measures):

* **fertility**: subword tokens per word (Rust et al., 2021, "How good is your tokenizer?");
* **continued words**: the share of words split into two or more pieces (ibid.);
* **tokenization premium**: the language's token count on the parallel items divided by the benchmark's
  English (its ``pivot_language``) on the same items (Petrov et al., 2023); Belebele's passages are
  FLORES-200 paragraphs, parallel across its variants, Global-MMLU's questions parallel by id;
* **unknown-piece rate**: the share of tokens that are the tokenizer's unknown piece (a script that
  collapses to ``<unk>`` looks cheap in the other measures).

Tokens are counted without special tokens. Words are the white-space separated chunks of a text, with
punctuation at their edges split off as words of their own (as in Universal Dependencies); a word's pieces
are the tokens whose character offsets overlap it. Fertility and continued words are defined only for
languages written with spaces between words: for a script without them (:data:`NO_SPACE_SCRIPTS`, from
the ``script`` column of ``xlt/languages.tsv``) a white-space chunk is a phrase or a sentence, so the
measures say why they are not defined instead of a misleading number.

The per-item token counts of one (tokenizer, items, language) are computed once and cached under
``$XLT_CACHE/tokenizer_measures/`` (default ``~/.cache/xlt``), keyed by the tokenizer's fingerprint
(:func:`tokenizer_fingerprint`: the content of its serialised definition) and a digest of the items' texts.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import unicodedata
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from xlt import languages as langtab
from xlt.errors import XltError
from xlt.run.files import atomic_write_json
from xlt.run.fingerprint import digest, path_fingerprint

# Bump when the counting changes: cached counts of an older version are recomputed.
VERSION = 1
# Scripts written without spaces between words (ISO 15924, as the language table spells them).
NO_SPACE_SCRIPTS = {
    "Hans": "Chinese",
    "Hant": "Chinese",
    "Jpan": "Japanese",
    "Thai": "Thai",
    "Khmr": "Khmer",
    "Laoo": "Lao",
    "Mymr": "Myanmar",
    "Tibt": "Tibetan",
}
# The per-language columns of a report (a result's ``tokenizer`` entry), in order.
COLUMNS = ("fertility", "continued_words", "premium", "unk_rate")
_MEMO: dict[str, dict[str, Any]] = {}


def tokenizer_fingerprint(tokenizer: Any) -> str:
    """A content fingerprint of a loaded tokenizer: its class and serialised definition (vocabulary,
    merges, normaliser, pre-tokeniser: ``backend_tokenizer.to_str()``), or, for one without a backend, the
    files ``save_pretrained`` writes. Two copies of the same tokenizer share it wherever they are loaded from."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    name = type(tokenizer).__name__
    if backend is not None:
        return hashlib.sha256(f"{name}\0{backend.to_str()}".encode()).hexdigest()[:16]
    with tempfile.TemporaryDirectory() as tmp:
        tokenizer.save_pretrained(tmp)
        return digest([name, path_fingerprint(tmp)])


def _cache_root() -> Path:
    return (
        Path(os.environ.get("XLT_CACHE", Path.home() / ".cache" / "xlt")).expanduser() / "tokenizer_measures"
    )


def spaced(language: str) -> tuple[bool, str]:
    """Whether ``language`` is written with spaces between words (from its script), and why not if not."""
    lang = langtab.lookup(language)
    script = lang.script if lang is not None else (language.partition("_")[2] or "")
    if script in NO_SPACE_SCRIPTS:
        return False, (
            f"not defined for {language}: the {NO_SPACE_SCRIPTS[script]} script ({script}) is written "
            "without spaces between words, so white-space words are phrases, not words"
        )
    return True, ""


def word_spans(text: str) -> list[tuple[int, int]]:
    """The words of ``text`` as (start, end) character spans: white-space separated chunks, with the
    punctuation at their start and end split off, one word per mark ("Hello," -> "Hello", ",")."""
    spans: list[tuple[int, int]] = []
    i, n = 0, len(text)
    while i < n:
        if text[i].isspace():
            i += 1
            continue
        j = i
        while j < n and not text[j].isspace():
            j += 1
        a, b = i, j
        while a < b and unicodedata.category(text[a]).startswith("P"):
            spans.append((a, a + 1))
            a += 1
        tail = []
        while b > a and unicodedata.category(text[b - 1]).startswith("P"):
            tail.append((b - 1, b))
            b -= 1
        if a < b:
            spans.append((a, b))
        spans += reversed(tail)
        i = j
    return spans


def item_texts(item: dict[str, Any]) -> list[str]:
    """The texts of one benchmark item a model reads: its passage (when it has one), question and options."""
    return [
        t for t in (item.get("passage") or "", item.get("question") or "", *(item.get("options") or [])) if t
    ]


def _pieces_per_word(text: str, offsets: Sequence[tuple[int, int]] | None, tokenizer: Any) -> list[int]:
    """Per word of ``text``, the number of tokens it is split into: the tokens whose offsets overlap it
    (a fast tokenizer's offsets), else the word tokenized on its own."""
    spans = word_spans(text)
    if offsets is None:
        return [len(tokenizer(text[a:b], add_special_tokens=False)["input_ids"]) for a, b in spans]
    tokens = sorted((s, e) for s, e in offsets if e > s)
    counts, k = [], 0
    for a, b in spans:
        while k < len(tokens) and tokens[k][1] <= a:
            k += 1
        m = k
        c = 0
        while m < len(tokens) and tokens[m][0] < b:
            c += tokens[m][1] > a
            m += 1
        counts.append(c)
    return counts


def count_texts(tokenizer: Any, texts: Sequence[str], with_words: bool = True) -> dict[str, Any]:
    """Token counts of ``texts`` (no special tokens): per text the tokens, and over all of them the tokens,
    unknown pieces, words and words of two or more pieces (``with_words``)."""
    unk = getattr(tokenizer, "unk_token_id", None)
    fast = bool(getattr(tokenizer, "is_fast", False))
    enc = (
        tokenizer(list(texts), add_special_tokens=False, return_offsets_mapping=fast)
        if texts
        else {"input_ids": []}
    )
    per_text = [len(ids) for ids in enc["input_ids"]]
    out: dict[str, Any] = {
        "per_text": per_text,
        "tokens": sum(per_text),
        "unknown": sum(sum(t == unk for t in ids) for ids in enc["input_ids"]) if unk is not None else 0,
        "words": 0,
        "continued": 0,
    }
    if with_words:
        offsets = enc.get("offset_mapping") if fast else None
        for i, text in enumerate(texts):
            pieces = _pieces_per_word(text, offsets[i] if offsets is not None else None, tokenizer)
            out["words"] += len(pieces)
            out["continued"] += sum(p >= 2 for p in pieces)
    return out


# What a cached file of counts must hold to be used (language_counts).
_COUNTS = {"tokens", "unknown", "words", "continued", "per_item"}


def language_counts(
    tokenizer: Any, items: Iterable[dict[str, Any]], language: str, fingerprint: str | None = None
) -> dict[str, Any]:
    """Counts of one language's items: per item id its tokens (all its texts), and over the distinct texts
    the tokens, unknown pieces, words and continued words. Cached by the tokenizer's fingerprint and the
    items' texts (in memory and under ``$XLT_CACHE``)."""
    rows = [(str(it["id"]), item_texts(it)) for it in items]
    fp = fingerprint or tokenizer_fingerprint(tokenizer)
    key = digest({"version": VERSION, "tokenizer": fp, "language": language, "items": rows})
    if key in _MEMO:
        return _MEMO[key]
    path = _cache_root() / fp / f"{language}-{key}.json"
    try:
        cached = json.loads(path.read_text())
        # a damaged or foreign file (another shape, fields missing) is recomputed, never used
        if isinstance(cached, dict) and cached.get("key") == key and _COUNTS <= set(cached):
            _MEMO[key] = cached
            return cached
    except (OSError, ValueError):
        pass
    distinct = list(dict.fromkeys(t for _, texts in rows for t in texts))
    counted = count_texts(tokenizer, distinct, with_words=spaced(language)[0])
    per = dict(zip(distinct, counted.pop("per_text"), strict=True))
    out = {
        "key": key,
        "tokenizer": fp,
        "language": language,
        **counted,
        "per_item": {i: sum(per[t] for t in texts) for i, texts in rows},
    }
    try:
        atomic_write_json(path, out)
    except OSError:  # the cache is an optimisation; a read-only cache never fails a run
        pass
    _MEMO[key] = out
    return out


def measures(
    counts: dict[str, Any], english: dict[str, Any] | None, language: str, english_why: str = ""
) -> dict[str, Any]:
    """The four measures of one language from its counts and the English counts (None: no English items;
    ``english_why`` says why); a measure that is not defined is None, with the reason in ``notes``."""
    notes: list[str] = []
    ok, why = spaced(language)
    out: dict[str, Any] = {
        "tokenizer": counts["tokenizer"],
        "tokens": counts["tokens"],
        "words": counts["words"],
    }
    if ok and counts["words"]:
        out["fertility"] = counts["tokens"] / counts["words"]
        out["continued_words"] = counts["continued"] / counts["words"]
    else:
        out["fertility"] = out["continued_words"] = None
        notes.append(f"fertility and continued words {why}" if not ok else "fertility: no words")
    out["unk_rate"] = counts["unknown"] / counts["tokens"] if counts["tokens"] else None
    if english is None:
        out["premium"] = None
        notes.append(f"premium not defined: {english_why or 'no English items to compare with'}")
    else:
        shared = sorted(set(counts["per_item"]) & set(english["per_item"]))
        den = sum(english["per_item"][i] for i in shared)
        out["premium"] = sum(counts["per_item"][i] for i in shared) / den if den else None
        out["parallel_items"] = len(shared)
        if not shared:
            notes.append("premium not defined: no item id shared with the English items")
    out["notes"] = "; ".join(notes)
    return out


_FINGERPRINTS: dict[int, tuple[Any, str]] = {}
_PIVOTS: dict[str, tuple[dict[str, Any] | None, str]] = {}


def _fingerprint(tokenizer: Any) -> str:
    """:func:`tokenizer_fingerprint`, once per loaded tokenizer object."""
    hit = _FINGERPRINTS.get(id(tokenizer))
    if hit is None or hit[0] is not tokenizer:
        hit = (tokenizer, tokenizer_fingerprint(tokenizer))
        _FINGERPRINTS[id(tokenizer)] = hit
    return hit[1]


def benchmark_measures(
    bench: Any, bcfg: Any, language: str, items: Iterable[dict[str, Any]], tokenizer: Any
) -> dict[str, Any]:
    """The measures of one language of a benchmark entry (``bench``: its definition, ``bcfg``: its config
    entry) on ``items``, the premium against the entry's English items (the definition's
    ``pivot_language``, loaded as the entry loads any language; a benchmark without English, or English
    that cannot be loaded, leaves the premium undefined with the reason)."""
    fp = _fingerprint(tokenizer)
    counts = language_counts(tokenizer, items, language, fp)
    pivot = bench.pivot_language
    if pivot is None:
        return measures(counts, None, language, f"{bench.title} has no English items")
    if bench.canonical(language) == bench.canonical(pivot):
        return measures(counts, counts, language)
    key = digest([fp, bench.kind, pivot, json.dumps(_plain(bcfg), sort_keys=True, default=str)])
    if key not in _PIVOTS:
        try:
            english = bench.load_checked(bcfg, pivot, split=bcfg.split)[0]
            _PIVOTS[key] = (language_counts(tokenizer, english, pivot, fp), "")
        except (XltError, OSError) as err:
            _PIVOTS[key] = (
                None,
                f"the English items ({pivot}) could not be read: {str(err).splitlines()[0]}",
            )
    english_counts, why = _PIVOTS[key]
    return measures(counts, english_counts, language, why)


def _plain(bcfg: Any) -> Any:
    return OmegaConf.to_container(bcfg, resolve=True) if OmegaConf.is_config(bcfg) else bcfg

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

Memory is bounded whatever the tokenizer: texts are tokenized a chunk at a time, and a text longer than a
chunk in parts with a little context on both sides (:func:`count_texts`, :func:`_count_long`). The counts
equal those of one call where the tokenizer provably tokenizes the parts as the whole
(:func:`xlt.scoring.tokenizer_cuts.exact_rule`, checked again at a few cuts); elsewhere they are ``estimated``,
with the reason, and the report says so.

The per-item token counts of one (tokenizer, items, language) are computed once and cached under
``$XLT_CACHE/tokenizer_measures/`` (default ``~/.cache/xlt``), keyed by the tokenizer's fingerprint
(:func:`tokenizer_fingerprint`: the content of its serialised definition) and a digest of the items' texts.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import logging
import os
import tempfile
import unicodedata
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from omegaconf import OmegaConf

from xlt import languages as langtab
from xlt.errors import XltError
from xlt.run.files import atomic_write_json
from xlt.run.fingerprint import digest, path_fingerprint
from xlt.scoring.tokenizer_cuts import exact_rule, text_cuts

# Bump when the counting changes: cached counts of an older version are recomputed.
VERSION = 2
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
log = logging.getLogger(__name__)


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


# White space and punctuation (Unicode category P) lie in planes 0 and 1: a table of these code points.
_TABLE_SIZE = 0x20000


@functools.cache
def _char_classes() -> Any:
    """Per code point below :data:`_TABLE_SIZE`: 1 white space (``str.isspace``), 2 punctuation, 0 other."""
    table = np.zeros(_TABLE_SIZE, dtype=np.uint8)
    for c in range(_TABLE_SIZE):
        ch = chr(c)
        if ch.isspace():
            table[c] = 1
        elif unicodedata.category(ch).startswith("P"):
            table[c] = 2
    return table


def _word_array(text: str, a: int = 0, b: int | None = None) -> Any:
    """The words of ``text[a:b]`` (:func:`word_spans`) as an (n, 2) array of spans in ``text``, in order:
    per white-space separated run, its punctuation before the first and after the last character that is
    not punctuation one word each, and what lies from that first to that last character one word."""
    cps = np.frombuffer(text[a:b].encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    cls = np.zeros(len(cps), dtype=np.uint8)
    low = cps < _TABLE_SIZE
    cls[low] = _char_classes()[cps[low]]
    solid = cls != 1
    idx = np.arange(len(cps))
    run = np.cumsum(solid & ~np.concatenate([[False], solid[:-1]])) - 1  # the run of each solid character
    core = idx[solid & (cls != 2)]
    first = np.full(int(run[-1]) + 1 if len(run) else 0, -1, dtype=np.int64)
    last = first.copy()
    if len(core):
        change = run[core][1:] != run[core][:-1]
        heads = core[np.concatenate([[True], change])]
        tails = core[np.concatenate([change, [True]])]
        first[run[heads]], last[run[tails]] = heads, tails
    marks = idx[solid & (cls == 2)]
    r = run[marks]
    marks = marks[(first[r] < 0) | (marks < first[r]) | (marks > last[r])]
    has = first >= 0
    spans = np.concatenate([np.stack([first[has], last[has] + 1], axis=1), np.stack([marks, marks + 1], axis=1)])
    return spans[np.argsort(spans[:, 0], kind="stable")] + a


def word_spans(text: str) -> list[tuple[int, int]]:
    """The words of ``text`` as (start, end) character spans: white-space separated chunks, with the
    punctuation at their start and end split off, one word per mark ("Hello," -> "Hello", ",")."""
    return [(int(s), int(e)) for s, e in _word_array(text)]


def _word_pieces(text: str, offsets: Any, a: int, b: int) -> tuple[Any, Any]:
    """The words of ``text[a:b]`` (:func:`word_spans`, an (n, 2) array) and the number of tokens
    (``offsets``, an (m, 2) array in ``text``) that overlap each."""
    spans = _word_array(text, a, b)
    offsets = offsets[offsets[:, 1] > offsets[:, 0]]
    starts, ends = np.sort(offsets[:, 0]), np.sort(offsets[:, 1])
    # a token overlaps [s, e) when it starts before e and ends after s; one that ends by s starts before e
    return spans, np.searchsorted(starts, spans[:, 1], "left") - np.searchsorted(ends, spans[:, 0], "right")


def _word_counts(text: str, offsets: Any, a: int, b: int) -> tuple[int, int]:
    """The words of ``text[a:b]`` and how many of them are in two or more pieces (:func:`_word_pieces`)."""
    spans, pieces = _word_pieces(text, offsets, a, b)
    return len(spans), int((pieces >= 2).sum())


def item_texts(item: dict[str, Any]) -> list[str]:
    """The texts of one benchmark item a model reads: its passage (when it has one), question and options."""
    return [
        t for t in (item.get("passage") or "", item.get("question") or "", *(item.get("options") or [])) if t
    ]


def _pieces_per_word(text: str, offsets: None, tokenizer: Any) -> list[int]:
    """Per word of ``text``, the number of tokens it is split into, each word tokenized on its own (a slow
    tokenizer, without offsets; a fast one's are counted from its offsets by :func:`_word_counts`)."""
    return [len(tokenizer(text[a:b], add_special_tokens=False)["input_ids"]) for a, b in word_spans(text)]


# Bounds of one tokenizer call of :func:`count_texts`: texts and characters. A language's text is counted a
# chunk at a time (the offsets of every token of a call are Python objects, ~150 bytes a token), so the
# memory of the measures is that of one chunk, not of all of a language's text. A longer text is counted in
# parts of at most ``PART_CHARS`` characters (``max_chars`` if less), each encoded with ``CONTEXT_CHARS``
# characters of the text on both sides (its tokens: those whose offsets start inside the part), as many
# parts per call as fit in ``max_chars`` (the tokenizers library encodes a long string slower per character
# than several short ones: 8,000 characters is near the fastest for the shipped tokenizers).
CHUNK_TEXTS = 1024
CHUNK_CHARS = 200_000
PART_CHARS = 8_000
CONTEXT_CHARS = 256
# What the counts of a long text may differ from one call's by, per cut not provably exact (a stated bound,
# checked by tests/scoring/test_tokenizer_measures_cuts.py on every kind of normalizer and model; measured: 0).
ESTIMATE_BOUND = 1
# The cuts of a long text checked against the text around them encoded whole (``CHECK_CHARS`` each side).
CHECKED_CUTS = 4
CHECK_CHARS = 5_000

def _plain_backend(tokenizer: Any) -> Any:
    """The fast tokenizer's backend, or a copy of it without truncation and padding where it has them."""
    backend = tokenizer.backend_tokenizer
    if backend.truncation is None and backend.padding is None:
        return backend
    from tokenizers import Tokenizer

    copy = Tokenizer.from_str(backend.to_str())
    copy.no_truncation()
    copy.no_padding()
    return copy


def _windowed(backend: Any, text: str, parts: Sequence[tuple[int, int]], context: int, per_call: int = 1) -> Iterable[
    tuple[int, int, Any, Any]
]:
    """Per part ``(a, b)`` of ``text``: ``(a, b, ids, offsets)`` of the tokens whose offsets start in it
    (numpy arrays, offsets in ``text``), the part encoded with ``context`` characters on both sides,
    ``per_call`` parts per call. The next call is encoded (in the tokenizers library, without the GIL) while
    the caller reads this one's tokens: at most two calls in memory."""
    from concurrent.futures import ThreadPoolExecutor

    context = max(1, context)  # a token prepended at a window's start lies before its part
    groups = [parts[g: g + per_call] for g in range(0, len(parts), per_call)]

    def encode(group: Sequence[tuple[int, int]]) -> tuple[list[tuple[int, int]], Any]:
        spans = [(max(0, a - context), min(len(text), b + context)) for a, b in group]
        return spans, backend.encode_batch([text[s:e] for s, e in spans], add_special_tokens=False)

    with ThreadPoolExecutor(max_workers=1) as pool:
        pending = pool.submit(encode, groups[0]) if groups else None
        for n, group in enumerate(groups):
            spans, encs = pending.result()
            pending = pool.submit(encode, groups[n + 1]) if n + 1 < len(groups) else None
            for (a, b), (s, _), enc in zip(group, spans, encs, strict=True):
                flat = itertools.chain.from_iterable(enc.offsets)  # faster than asarray of a list of tuples
                offsets = np.fromiter(flat, dtype=np.int64, count=2 * len(enc)).reshape(-1, 2) + s
                ids = np.asarray(enc.ids, dtype=np.int64)
                keep = (offsets[:, 0] >= a) & (offsets[:, 0] < b) if a else offsets[:, 0] < b
                yield a, b, ids[keep], offsets[keep]
            del encs


def _check_cut(backend: Any, text: str, k: int, context: int, span: int) -> int:
    """Tokens of ``text`` around cut ``k`` (``span`` characters each side) counted in its two parts as
    :func:`_windowed` counts them, less those of the same text encoded whole; 0 also requires the same
    tokens at the same offsets (else the difference is reported as at least 1)."""
    s, e = max(0, k - span), min(len(text), k + span)
    sub = text[s:e]
    whole = backend.encode(sub, add_special_tokens=False)
    got = list(_windowed(backend, sub, [(0, k - s), (k - s, len(sub))], context))
    ids = np.concatenate([g[2] for g in got])
    offsets = np.concatenate([g[3] for g in got])
    diff = len(ids) - len(whole.ids)
    if diff == 0 and not (np.array_equal(ids, np.asarray(whole.ids, dtype=np.int64))
                          and np.array_equal(offsets, np.asarray(whole.offsets, dtype=np.int64).reshape(-1, 2))):
        return 1
    return diff


_RULES: dict[int, tuple[Any, tuple[str, frozenset[str]]]] = {}


def _count_long(tokenizer: Any, text: str, with_words: bool, max_chars: int, context: int) -> dict[str, Any]:
    """The counts of one text longer than ``max_chars``, in parts (:func:`_windowed`), with ``estimated``:
    "" where the parts provably give the whole text's counts (:func:`xlt.scoring.tokenizer_cuts.exact_rule`, every
    cut safe, and the checked cuts agree), else why not, with the number of cuts and the checked cuts' differences."""
    unk = getattr(tokenizer, "unk_token_id", None)
    hit = _RULES.get(id(tokenizer))
    if hit is None or hit[0] is not tokenizer:  # once per loaded tokenizer (Gemma's vocabulary is read)
        hit = _RULES[id(tokenizer)] = (tokenizer, exact_rule(tokenizer))
    why, crossing = hit[1]
    part_chars = min(max_chars, PART_CHARS)
    cuts, unsafe = text_cuts(text, part_chars, crossing)
    bounds = [0, *cuts, len(text)]
    parts = list(zip(bounds, bounds[1:], strict=False))
    out = {"tokens": 0, "unknown": 0, "words": 0, "continued": 0}
    if getattr(tokenizer, "backend_tokenizer", None) is None or not getattr(tokenizer, "is_fast", False):
        for a, b in parts:  # a slow tokenizer: each part on its own, words tokenized one by one
            ids = tokenizer(text[a:b], add_special_tokens=False)["input_ids"]
            out["tokens"] += len(ids)
            out["unknown"] += sum(t == unk for t in ids) if unk is not None else 0
            if with_words:
                pieces = _pieces_per_word(text[a:b], None, tokenizer)
                out["words"] += len(pieces)
                out["continued"] += sum(p >= 2 for p in pieces)
        return {**out, "estimated": f"{why}: a text of {len(text):,} characters counted in {len(parts)} parts "
                f"on their own"}
    backend = _plain_backend(tokenizer)
    pending = -1  # the pieces of the last part's last word, which goes on past the cut (a cut in a word)
    for a, b, ids, offsets in _windowed(backend, text, parts, context, max(1, max_chars // part_chars)):
        out["tokens"] += len(ids)
        if unk is not None:
            out["unknown"] += int((ids == unk).sum())
        if not with_words:
            continue
        spans, pieces = _word_pieces(text, offsets, a, b)
        if pending >= 0 and len(spans) and spans[0, 0] == a:
            pieces[0] += pending  # one word, its tokens counted on both sides of the cut
        elif pending >= 0:
            out["words"] += 1
            out["continued"] += pending >= 2
        pending = -1
        if len(spans) and spans[-1, 1] == b < len(text) and not (text[b - 1].isspace() or text[b].isspace()):
            pending = int(pieces[-1])
            spans, pieces = spans[:-1], pieces[:-1]
        out["words"] += len(spans)
        out["continued"] += int((pieces >= 2).sum())
    step = max(1, len(cuts) // CHECKED_CUTS)
    checked = sorted({*cuts[::step][:CHECKED_CUTS - 1], cuts[-1]})
    diffs = [_check_cut(backend, text, k, context, max(CHECK_CHARS, 2 * context)) for k in checked]
    rule_why = why
    if not why and unsafe:
        why = f"{unsafe} of its cuts are not at a space between two letters or digits"
    if not why and any(diffs):
        why = "the parts differ from the whole text at a checked cut (a tokenizer this module reasons about wrongly)"
        log.warning("tokenizer measures: %s; the counts of a long text are estimated", why)
    if not why:
        return {**out, "estimated": ""}
    loose = unsafe if not rule_why and not any(diffs) else len(cuts)
    return {**out, "estimated": (
        f"{why}: a text of {len(text):,} characters counted in {len(parts)} parts with {context:,} characters "
        f"of context, {loose} cut(s) not provably exact (bound: {ESTIMATE_BOUND} token and word per such cut); at "
        f"{len(checked)} checked cuts the parts gave {sum(map(abs, diffs))} token(s) more or less than the "
        "text around the cut encoded whole")}


def count_texts(
    tokenizer: Any,
    texts: Sequence[str],
    with_words: bool = True,
    max_texts: int = CHUNK_TEXTS,
    max_chars: int = CHUNK_CHARS,
    context: int = CONTEXT_CHARS,
) -> dict[str, Any]:
    """Token counts of ``texts`` (no special tokens): per text the tokens, and over all of them the tokens,
    unknown pieces, words and words of two or more pieces (``with_words``). Counted a chunk of at most
    ``max_texts`` texts and ``max_chars`` characters at a time, a longer text in parts of at most
    ``max_chars`` characters with ``context`` characters on both sides (:func:`_count_long`): the counts
    are those of all texts in one call where the tokenizer provably tokenizes the parts as the whole, and
    ``estimated`` says why not where it does not (else "")."""
    unk = getattr(tokenizer, "unk_token_id", None)
    fast = bool(getattr(tokenizer, "is_fast", False))
    out: dict[str, Any] = {"per_text": [0] * len(texts), "tokens": 0, "unknown": 0, "words": 0, "continued": 0}
    reasons: list[str] = []

    def count(batch: list[tuple[int, str]]) -> None:
        enc = tokenizer([t for _, t in batch], add_special_tokens=False, return_offsets_mapping=fast and with_words)
        offsets = enc.get("offset_mapping") if fast and with_words else None
        for (i, text), ids in zip(batch, enc["input_ids"], strict=True):
            out["per_text"][i] += len(ids)
            out["tokens"] += len(ids)
            if unk is not None:
                out["unknown"] += sum(t == unk for t in ids)
            if with_words and offsets is None:
                pieces = _pieces_per_word(text, None, tokenizer)
                out["words"] += len(pieces)
                out["continued"] += sum(p >= 2 for p in pieces)
        if with_words and offsets is not None:  # the batch's texts joined by spaces, counted at once
            starts = np.cumsum([0, *(len(t) + 1 for _, t in batch[:-1])])
            joined = np.concatenate([np.asarray(o, dtype=np.int64).reshape(-1, 2) + s
                                     for o, s in zip(offsets, starts, strict=True)])
            words, continued = _word_counts(" ".join(t for _, t in batch), joined, 0, int(starts[-1] + len(batch[-1][1])))
            out["words"] += words
            out["continued"] += continued

    batch: list[tuple[int, str]] = []
    chars = 0
    for i, text in enumerate(texts):
        if len(text) > max_chars:
            long = _count_long(tokenizer, text, with_words, max_chars, context)
            out["per_text"][i] = long["tokens"]
            for key in ("tokens", "unknown", "words", "continued"):
                out[key] += long[key]
            if long["estimated"]:
                reasons.append(long["estimated"])
            continue
        if batch and (len(batch) >= max_texts or chars + len(text) > max_chars):
            count(batch)
            batch, chars = [], 0
        batch.append((i, text))
        chars += len(text)
    if batch:
        count(batch)
    out["estimated"] = "; ".join(dict.fromkeys(reasons)) if len(reasons) < 2 else (
        f"{len(reasons)} long texts estimated, the first: {reasons[0]}")
    return out


# What a cached file of counts must hold to be used (language_counts).
_COUNTS = {"tokens", "unknown", "words", "continued", "per_item", "estimated"}


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
        if english.get("estimated") and english is not counts:
            out_estimated = f"the premium's English counts are estimated ({english['estimated']})"
            counts = {**counts, "estimated": "; ".join(x for x in (counts.get("estimated"), out_estimated) if x)}
        shared = sorted(set(counts["per_item"]) & set(english["per_item"]))
        den = sum(english["per_item"][i] for i in shared)
        out["premium"] = sum(counts["per_item"][i] for i in shared) / den if den else None
        out["parallel_items"] = len(shared)
        if not shared:
            notes.append("premium not defined: no item id shared with the English items")
    out["notes"] = "; ".join(notes)
    # counts of a long text that are not provably those of one call (count_texts): the report says so
    out["estimated"] = counts.get("estimated") or ""
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

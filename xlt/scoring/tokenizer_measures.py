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
import logging
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
from xlt.scoring.llm import encoding

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


# Bounds of one tokenizer call of :func:`count_texts`: texts and characters. A language's text is counted a
# chunk at a time (the offsets of every token of a call are Python objects, ~150 bytes a token), so the
# memory of the measures is that of one chunk, not of all of a language's text.
CHUNK_TEXTS = 1024
CHUNK_CHARS = 200_000

# Normalizers that map each character (or grapheme cluster, Precompiled) on its own: at a single ASCII space
# between two letters or digits (a grapheme and normalization boundary: neither a combining mark after it
# nor a Prepend character before it) a text normalizes to its two parts' normalized forms, joined.
_LOCAL_NORMALIZERS = {"BertNormalizer", "Lowercase", "NFC", "NFD", "NFKC", "NFKD", "StripAccents", "Precompiled"}
# Pre-tokenizers that always split at white space, so that no piece spans such a space, and treat the part
# after it (which begins with that space) as they treat it inside the whole text.
_SPACE_SPLITTERS = {"WhitespaceSplit", "Whitespace", "BertPreTokenizer"}
# Grapheme_Cluster_Break=Prepend (Unicode 15): no grapheme boundary after these, even before a space.
_PREPEND = frozenset(
    [*range(0x600, 0x606), 0x6DD, 0x70F, 0x890, 0x891, 0x8E2, 0xD4E, 0x110BD, 0x110CD, 0x111C2, 0x111C3,
     0x1193F, 0x11941, 0x11A3A, *range(0x11A84, 0x11A8A), 0x11D46, 0x11F02]
)
# Letters that extend the grapheme before them (Grapheme_Cluster_Break Extend or SpacingMark): Thai and Lao
# SARA AM, the half-width katakana sound marks.
_EXTENDING_LETTERS = frozenset([0xE33, 0xEB3, 0xFF9E, 0xFF9F])


def _local_pre_tokenizer(pre: dict[str, Any]) -> bool:
    kind = pre.get("type")
    if kind in _SPACE_SPLITTERS:
        return True
    if kind == "Metaspace":  # a space becomes the marker that begins the next piece; never doubled
        return bool(pre.get("split", True)) and pre.get("prepend_scheme", "always") in ("always", "first", "never")
    if kind == "Sequence":
        steps = pre.get("pretokenizers") or []
        return bool(steps) and all(_local_pre_tokenizer(step) for step in steps)
    return False


def splittable(tokenizer: Any) -> bool:
    """Whether a long text may be counted in parts cut at :func:`_safe_cut` positions with the same counts,
    offsets and words as whole: a fast tokenizer whose normalizer works character by character (or none),
    whose pre-tokenizer splits at white space (or is byte-level with a split that looks only a few characters
    ahead, :func:`xlt.scoring.llm.encoding.split_safe`), a model without dropout, and no added token with
    white space in it or that swallows the white space after it."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None or not getattr(tokenizer, "is_fast", False):
        return False
    if getattr(backend.model, "dropout", None):
        return False
    try:
        norm = encoding.component_spec(backend.normalizer)
        pre = encoding.component_spec(backend.pre_tokenizer)
    except Exception:  # noqa: BLE001 - a component that cannot describe itself: counted whole
        return False
    norms = norm.get("normalizers") if norm.get("type") == "Sequence" else ([norm] if norm else [])
    if not all(n.get("type") in _LOCAL_NORMALIZERS for n in norms or []):
        return False
    for added in backend.get_added_tokens_decoder().values():
        if any(ch.isspace() for ch in added.content) or added.rstrip:
            return False
    return _local_pre_tokenizer(pre) or (not norms and encoding.split_safe(tokenizer))


def _safe(text: str, k: int) -> bool:
    """A single ASCII space at ``k`` between two letters or digits (see :data:`_LOCAL_NORMALIZERS`)."""
    if not (0 < k < len(text) - 1 and text[k] == " "):
        return False
    before, after = text[k - 1], text[k + 1]
    return (
        unicodedata.category(before)[0] in "LN"
        and unicodedata.category(after)[0] in "LN"
        and ord(before) not in _PREPEND
        and ord(after) not in _EXTENDING_LETTERS
    )


def _safe_cut(text: str, start: int, target: int) -> int:
    """The last safe cut (:func:`_safe`) in ``text[start + target // 2 : start + target]``, else the first
    after it; -1 if there is none."""
    lo, hi = start + target // 2, min(start + target, len(text) - 1)
    k = text.rfind(" ", lo, hi)
    while k > lo and not _safe(text, k):
        k = text.rfind(" ", lo, k)
    if k >= lo and _safe(text, k):
        return k
    k = text.find(" ", hi)
    while k != -1 and not _safe(text, k):
        k = text.find(" ", k + 1)
    return k


def _parts(text: str, max_chars: int) -> list[tuple[int, int]]:
    """``text`` cut at safe positions into parts of at most about ``max_chars`` characters, as spans."""
    parts, start = [], 0
    while len(text) - start > max_chars:
        k = _safe_cut(text, start, max_chars)
        if k == -1:
            break
        parts.append((start, k))
        start = k
    parts.append((start, len(text)))
    return parts


def _cuts_hold(tokenizer: Any, text: str, parts: list[tuple[int, int]], window: int = 400) -> bool:
    """A check of the reasoning of :func:`splittable` on this text: around its first cuts, the tokens of a
    window counted whole equal those of its two sides counted apart."""
    for _, k in parts[:-1][:3]:
        a, b = max(0, k - window), min(len(text), k + window)
        enc = tokenizer([text[a:b], text[a:k], text[k:b]], add_special_tokens=False, return_offsets_mapping=True)
        (whole, left, right), ids = enc["offset_mapping"], enc["input_ids"]
        shifted = [(s + a, e + a) for s, e in left] + [(s + k, e + k) for s, e in right]
        if list(ids[0]) != [*ids[1], *ids[2]] or [(s + a, e + a) for s, e in whole] != shifted:
            return False
    return True


def _chunks(tokenizer: Any, texts: Sequence[str], max_texts: int, max_chars: int) -> Iterable[
    tuple[list[tuple[int, str]], bool]
]:
    """The texts in tokenizer calls of at most ``max_texts`` texts and about ``max_chars`` characters:
    ``([(index of the text, text or part of it), ...], alone)``; a text over ``max_chars`` is cut into
    parts where :func:`splittable` allows (each part a chunk of its own), else counted ``alone``."""
    batch: list[tuple[int, str]] = []
    chars = 0
    can_split: bool | None = None
    for i, text in enumerate(texts):
        if len(text) > max_chars:
            if batch:
                yield batch, False
                batch, chars = [], 0
            if can_split is None:
                can_split = splittable(tokenizer)
            parts = _parts(text, max_chars) if can_split else [(0, len(text))]
            if len(parts) > 1 and not _cuts_hold(tokenizer, text, parts):
                log.warning("tokenizer measures: cutting a long text changes its tokens; counted whole")
                parts = [(0, len(text))]
            for a, b in parts:
                yield [(i, text[a:b])], len(parts) == 1
            continue
        if batch and (len(batch) >= max_texts or chars + len(text) > max_chars):
            yield batch, False
            batch, chars = [], 0
        batch.append((i, text))
        chars += len(text)
    if batch:
        yield batch, False


def count_texts(
    tokenizer: Any,
    texts: Sequence[str],
    with_words: bool = True,
    max_texts: int = CHUNK_TEXTS,
    max_chars: int = CHUNK_CHARS,
) -> dict[str, Any]:
    """Token counts of ``texts`` (no special tokens): per text the tokens, and over all of them the tokens,
    unknown pieces, words and words of two or more pieces (``with_words``). Counted a chunk of at most
    ``max_texts`` texts and ``max_chars`` characters at a time (a longer text on its own, in parts where the
    tokenizer allows it: :func:`splittable`); the counts are those of all texts in one call."""
    unk = getattr(tokenizer, "unk_token_id", None)
    fast = bool(getattr(tokenizer, "is_fast", False))
    out: dict[str, Any] = {"per_text": [0] * len(texts), "tokens": 0, "unknown": 0, "words": 0, "continued": 0}
    for batch, alone in _chunks(tokenizer, texts, max_texts, max_chars):
        backend = getattr(tokenizer, "backend_tokenizer", None)
        if alone and fast and backend.truncation is None and backend.padding is None:
            # one long text that cannot be cut: the backend's encoding, read for its ids (and offsets) only
            enc = backend.encode(batch[0][1], add_special_tokens=False)
            ids_of: Iterable[Sequence[int]] = [enc.ids]
            offsets = [enc.offsets] if with_words else None
        else:
            enc = tokenizer(
                [t for _, t in batch], add_special_tokens=False, return_offsets_mapping=fast and with_words
            )
            ids_of = enc["input_ids"]
            offsets = enc.get("offset_mapping") if fast and with_words else None
        for j, ((i, text), ids) in enumerate(zip(batch, ids_of, strict=True)):
            out["per_text"][i] += len(ids)
            out["tokens"] += len(ids)
            if unk is not None:
                out["unknown"] += sum(t == unk for t in ids)
            if with_words:
                pieces = _pieces_per_word(text, offsets[j] if offsets is not None else None, tokenizer)
                out["words"] += len(pieces)
                out["continued"] += sum(p >= 2 for p in pieces)
        del enc, ids_of, offsets
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

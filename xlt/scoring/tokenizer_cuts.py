"""Where a tokenizer may cut a text: the one home of these rules, for the two places that encode a text in parts.

* **A shared head encoded once** (:mod:`xlt.scoring.llm.encoding`, the LLM scorer's k-shot contexts): a fast
  tokenizer whose pipeline splits text into pieces tokenized on their own, by a rule that looks only forward and
  only a few characters (:func:`split_safe`: no normalizer, a byte-level pre-tokenizer with the GPT-2 split or one
  of :data:`LOCAL_SPLIT_PATTERNS` (GPT-4's, Llama 3's, Qwen 2's) before a byte-level mapping, no prefix space, a
  BPE model without dropout) may be cut at the start of a late piece of the head (:func:`head_cut`).
* **A long text counted in parts** (:mod:`xlt.scoring.tokenizer_measures`): the parts get the whole text's tokens
  where the tokenizer provably tokenizes them as the whole (:func:`exact_rule`) and each cut is a safe position
  (:func:`safe_cut`: one ASCII space between two letters or digits); :func:`text_cuts` and :func:`text_parts` cut
  a text so, and say how many cuts are not safe.

Both callers check their cuts against whole encodings on a sample: a tokenizer these rules reason about wrongly is
caught there, never silently.
"""

from __future__ import annotations

import json
import unicodedata
from typing import Any

# Split patterns whose matches look at most a few characters past their end and never behind.
LOCAL_SPLIT_PATTERNS = frozenset({
    # GPT-4 (cl100k) and Llama 3
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
    # Qwen 2 / 2.5 / 3
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
})

# Normalizers that map each character (or grapheme cluster, Precompiled) on its own: at a single ASCII space
# between two letters or digits (a grapheme and normalization boundary: neither a combining mark after it
# nor a Prepend character before it) a text normalizes to its two parts' normalized forms, joined. Strip
# and Prepend change only the ends of a text (inside the context of a part, never at a cut).
_LOCAL_NORMALIZERS = {"BertNormalizer", "Lowercase", "NFC", "NFD", "NFKC", "NFKD", "StripAccents", "Precompiled",
                      "Nmt", "ByteLevel", "Strip", "Prepend"}
# Pre-tokenizers that always split at white space, so that no piece spans such a space, and treat the part
# after it (which begins with that space) as they treat it inside the whole text.
_SPACE_SPLITTERS = {"WhitespaceSplit", "Whitespace", "BertPreTokenizer"}
# Pre-tokenizers that only split their pieces further, by a rule about single characters.
_CHAR_SPLITTERS = {"Punctuation", "Digits", "UnicodeScripts", "CharDelimiterSplit"}
# Grapheme_Cluster_Break=Prepend (Unicode 15): no grapheme boundary after these, even before a space.
_PREPEND = frozenset(
    [*range(0x600, 0x606), 0x6DD, 0x70F, 0x890, 0x891, 0x8E2, 0xD4E, 0x110BD, 0x110CD, 0x111C2, 0x111C3,
     0x1193F, 0x11941, 0x11A3A, *range(0x11A84, 0x11A8A), 0x11D46, 0x11F02]
)
# Letters that extend the grapheme before them (Grapheme_Cluster_Break Extend or SpacingMark): Thai and Lao
# SARA AM, the half-width katakana sound marks.
_EXTENDING_LETTERS = frozenset([0xE33, 0xEB3, 0xFF9E, 0xFF9F])
# Characters a cut of a text without a safe cut is never put before (they join the character before them).
_JOINING = frozenset(["\u200d", "\u200c", "\u034f", *map(chr, range(0xFE00, 0xFE10)),
                      *map(chr, range(0x1F3FB, 0x1F400)), *map(chr, range(0xE0020, 0xE0080))])


def _space_splitter(pre: dict[str, Any]) -> bool:
    kind = pre.get("type")
    if kind in _SPACE_SPLITTERS:
        return True
    # Metaspace: a space becomes the marker that begins the next piece; never doubled (the part after a cut
    # begins with it, so no marker is prepended there, whatever the scheme)
    return kind == "Metaspace" and bool(pre.get("split", True)) and pre.get("prepend_scheme", "always") in (
        "always", "first", "never")


def _local_pre_tokenizer(pre: dict[str, Any]) -> bool:
    """Splits at every white space: a space splitter, or a sequence in which one comes after steps that only
    split by single characters (any step after it works on pieces that already end at the space)."""
    steps = (pre.get("pretokenizers") or []) if pre.get("type") == "Sequence" else [pre]
    for step in steps:
        if _space_splitter(step):
            return True
        if step.get("type") not in _CHAR_SPLITTERS:
            return False
    return False


def _no_crossing_pre_tokenizer(pre: dict[str, Any]) -> bool:
    """None, or steps that only split, by a rule about single characters (a Split on one character)."""
    steps = (pre.get("pretokenizers") or []) if pre.get("type") == "Sequence" else ([pre] if pre else [])
    for step in steps:
        pattern = step.get("pattern") or {}
        if not (step.get("type") in _CHAR_SPLITTERS
                or (step.get("type") == "Split" and len(pattern.get("String") or "") == 1)):
            return False
    return True


def _crossing(backend: Any, space: str) -> frozenset[str] | None:
    """For a BPE model: the characters some token of the vocabulary has right before ``space`` (what a space
    becomes), so that a merge may join them to it; a cut after any other character is never crossed by a
    merge (each side is merged as on its own). None when ``space`` is not one piece of the vocabulary."""
    vocab = backend.get_vocab()
    if space not in vocab:
        return None
    out: set[str] = set()
    for piece in vocab:
        i = piece.find(space, 1)
        while i > 0:
            if piece[i - 1] != space[-1]:
                out.add(piece[i - 1])
            i = piece.find(space, i + 1)
    return frozenset(out)


def exact_rule(tokenizer: Any) -> tuple[str, frozenset[str]]:
    """Whether the parts of a long text cut at :func:`safe_cut` positions provably get the whole text's tokens,
    and which characters before a space make it unsafe all the same: ``("", chars)`` when they do, else
    ``(why not, _)``. They do for a fast tokenizer whose model has no dropout, whose normalizers work
    character by character (:data:`_LOCAL_NORMALIZERS`; Replace of one character, or of a string without
    a space), with no added token that can match across a space between two letters or digits, and

    * a pre-tokenizer that splits at every white space (:func:`_local_pre_tokenizer`: BERT's, XLM-R's, the
      tiny model's Metaspace + Punctuation), or a byte-level one with a split that looks only a few
      characters ahead and no normalizer (:func:`split_safe`); or
    * a BPE model and a pre-tokenizer that only splits by single characters (Gemma's: its normalizer makes
      spaces ``▁``, and it merges over the whole text): no token of the vocabulary has a letter or digit
      before the space's ``▁``, so no merge crosses the cut (the characters it does have them before are
      returned: a cut after one of them is not safe)."""
    from tokenizers.models import BPE

    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None or not getattr(tokenizer, "is_fast", False):
        return "a slow tokenizer (no offsets)", frozenset()
    if getattr(backend.model, "dropout", None):
        return "the model samples its pieces (dropout)", frozenset()
    try:
        norm = component_spec(backend.normalizer)
        pre = component_spec(backend.pre_tokenizer)
    except Exception:  # noqa: BLE001 - a component that cannot describe itself: not provable
        return "a normalizer or pre-tokenizer that does not describe itself", frozenset()
    norms = norm.get("normalizers") if norm.get("type") == "Sequence" else ([norm] if norm else [])
    for n in norms or []:
        pattern = (n.get("pattern") or {}).get("String") if n.get("type") == "Replace" else None
        if n.get("type") not in _LOCAL_NORMALIZERS and not (
                pattern is not None and (len(pattern) == 1 or " " not in pattern)):
            return f"its {n.get('type')} normalizer may change text across a space", frozenset()
    space = " "  # what a space between two letters becomes
    if backend.normalizer is not None:
        whole, left = backend.normalizer.normalize_str("x y"), backend.normalizer.normalize_str("x")
        if not (whole.startswith(left) and whole.endswith("y") and len(whole) > len(left) + 1):
            return "its normalizer does not keep a space between two letters", frozenset()
        space = whole[len(left):-1]
    for added in backend.get_added_tokens_decoder().values():
        content = added.content
        pairs = zip(content, content[1:], strict=False)
        if (any(a.isalnum() and b in (" ", space) for a, b in pairs)
                or (added.rstrip and content[-1:].isalnum()) or (added.lstrip and content[:1] in (" ", space))):
            return f"its added token {content!r} may match across a space", frozenset()
    # a space splitter splits at the space the normalizer leaves (one that makes it "▁" leaves none)
    if (space == " " and _local_pre_tokenizer(pre)) or (not norms and split_safe(tokenizer)):
        return "", frozenset()
    if isinstance(backend.model, BPE) and space and _no_crossing_pre_tokenizer(pre):
        crossing = _crossing(backend, space)
        if crossing is not None:
            return "", crossing
    return "its pre-tokenizer does not split at every space", frozenset()


def splittable(tokenizer: Any) -> bool:
    """Whether a long text is provably counted exactly in parts cut at safe positions (:func:`exact_rule`)."""
    return not exact_rule(tokenizer)[0]


def safe_cut(text: str, k: int, crossing: frozenset[str] = frozenset()) -> bool:
    """A single ASCII space at ``k`` between two letters or digits (see :data:`_LOCAL_NORMALIZERS`), the one
    before it not one a token of the vocabulary joins to a space (``crossing``, :func:`exact_rule`)."""
    if not (0 < k < len(text) - 1 and text[k] == " "):
        return False
    before, after = text[k - 1], text[k + 1]
    return (
        unicodedata.category(before)[0] in "LN"
        and unicodedata.category(after)[0] in "LN"
        and ord(before) not in _PREPEND
        and ord(after) not in _EXTENDING_LETTERS
        and before not in crossing
    )


def last_cut(text: str, lo: int, hi: int, crossing: frozenset[str]) -> tuple[int, bool]:
    """Where to cut ``text`` in ``[lo, hi]``: the last safe position (:func:`safe_cut`), else the last white
    space, else the last character that does not join the one before it (a combining mark, a joiner, a
    variation selector, a skin tone); and whether it is safe."""
    k = text.rfind(" ", lo, hi + 1)
    while k >= lo:
        if safe_cut(text, k, crossing):
            return k, True
        k = text.rfind(" ", lo, k)
    for k in range(hi, lo, -1):
        if text[k].isspace():
            return k, False
    k = hi
    while k > lo + 1 and (unicodedata.category(text[k])[0] == "M" or text[k] in _JOINING
                          or text[k - 1] in _JOINING or 0xDC00 <= ord(text[k]) <= 0xDFFF):
        k -= 1
    return k, False


def text_cuts(text: str, max_chars: int, crossing: frozenset[str] = frozenset()) -> tuple[list[int], int]:
    """Cut positions that make ``text`` parts of at most ``max_chars`` characters (each at least half of it,
    but the last), and how many of them are not safe (:func:`last_cut`)."""
    cuts: list[int] = []
    start, unsafe = 0, 0
    while len(text) - start > max_chars:
        k, ok = last_cut(text, start + max(1, max_chars // 2), start + max_chars, crossing)
        cuts.append(k)
        unsafe += not ok
        start = k
    return cuts, unsafe


def text_parts(text: str, max_chars: int, crossing: frozenset[str] = frozenset()) -> list[tuple[int, int]]:
    """``text`` cut (:func:`text_cuts`) into parts of at most ``max_chars`` characters, as spans."""
    bounds = [0, *text_cuts(text, max_chars, crossing)[0], len(text)]
    return list(zip(bounds, bounds[1:], strict=False))



def _byte_level(pre: dict[str, Any], use_regex: bool) -> bool:
    return (pre.get("type") == "ByteLevel" and not pre.get("add_prefix_space", True)
            and bool(pre.get("use_regex", True)) == use_regex)


def component_spec(component: Any) -> dict[str, Any]:
    """A pipeline component's own settings (its JSON; not the whole tokenizer's, which holds the vocabulary)."""
    return json.loads(component.__getstate__()) if component is not None else {}


def split_safe(tokenizer: Any) -> bool:
    """Whether ``tokenizer`` splits text into pieces tokenized on their own by a rule that looks only forward and
    only a few characters (see the module's docstring): a text may be cut at the start of a piece (:func:`head_cut`)
    and its parts encoded on their own."""
    from tokenizers.models import BPE

    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None or not getattr(tokenizer, "is_fast", False):
        return False
    if backend.normalizer is not None or backend.truncation or backend.padding:
        return False
    if not isinstance(backend.model, BPE) or backend.model.dropout:
        return False
    try:
        pre = component_spec(backend.pre_tokenizer)
    except Exception:  # noqa: BLE001 - a pre-tokenizer that cannot describe itself: encoded whole
        return False
    if _byte_level(pre, use_regex=True):
        return True
    steps = pre.get("pretokenizers") if pre.get("type") == "Sequence" else None
    if not steps or len(steps) != 2:
        return False
    split, byte = steps
    return (split.get("type") == "Split" and split.get("behavior") == "Isolated" and not split.get("invert")
            and (split.get("pattern") or {}).get("Regex") in LOCAL_SPLIT_PATTERNS and _byte_level(byte, use_regex=False))


def head_cut(tokenizer: Any, head: str, min_start: int) -> int:
    """Where texts starting with ``head`` may be cut (0: nowhere), at ``min_start`` characters or more, so that
    the head's part before the cut is encoded once (:mod:`xlt.scoring.llm.encoding`): the start of a piece of the
    head without its trailing whitespace, the last one at least three characters before that part's end (the split
    patterns look at most two characters past a piece) and after a character that is not whitespace (so
    the head's part before the cut ends in the same pieces on its own)."""
    body = head.rstrip()
    pieces = tokenizer.backend_tokenizer.pre_tokenizer.pre_tokenize_str(body)
    for _, (start, _end) in reversed(pieces):
        if start >= min_start and start + 3 <= len(body) and not head[start - 1].isspace():
            return start
    return 0

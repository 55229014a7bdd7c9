"""Token ids of texts exactly as lm-evaluation-harness's ``tok_encode`` gives them, encoded fast.

The k-shot contexts of one language begin with the same few-shot examples (thousands of characters),
and the harness encodes every context and every context + continuation whole. Where it is exact, xlt
encodes a shared head once and only the rest of each text (:func:`encode_texts` with ``heads``):

* the tokenizer must be a fast one whose pipeline splits text into pieces that are tokenized on their
  own, by a rule that looks only forward and only a few characters
  (:func:`xlt.scoring.tokenizer_cuts.split_safe`, where the rules of where a tokenizer may cut a text live).
  SentencePiece-style tokenizers (Gemma, Llama 2, XLM-R: a space marker prepended, or one piece for the
  whole text) are always encoded whole;
* the cut ``c`` is the start of a late piece of the head without its trailing whitespace
  (:func:`xlt.scoring.tokenizer_cuts.head_cut`, at least :data:`MIN_HEAD` characters in): the pieces before
  it end where they end whatever follows the head, and the rest is split from ``c`` on exactly as on
  its own;
* the head's tokens before ``c`` (with the tokenizer's leading special tokens) + the tokens of
  ``text[c:]`` without special tokens are the text's tokens; a text with an added token near the cut is
  encoded whole.

Every call encodes a sample of the texts whole too and compares: a difference (a tokenizer this module
reasons about wrongly) sends every text of the call through whole encoding and is logged.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from xlt.scoring import tokenizer_cuts

log = logging.getLogger(__name__)

SAMPLE = 4  # texts per call also encoded whole and compared
MIN_HEAD = 64  # characters: a shorter shared head is not worth a cut


def _leading_specials_only(tokenizer, kw: dict) -> bool:
    """Whether the tokenizer adds special tokens only before a text (a BOS), none after it (an EOS)."""
    probe = "xlt probe"
    bare = tokenizer(probe, add_special_tokens=False)["input_ids"]
    full = tokenizer(probe, **kw)["input_ids"]
    return len(full) >= len(bare) and list(full[len(full) - len(bare):]) == list(bare)


def _call(tokenizer, texts: list[str], kw: dict) -> list[list[int]]:
    return [list(ids) for ids in tokenizer(texts, **kw)["input_ids"]]


def encode_group(tokenizer, texts: list[str], kw: dict, heads: Sequence[str] | None) -> list[list[int]]:
    """``texts`` encoded with the tokenizer call's keywords ``kw``; with ``heads`` (``heads[i]`` a string
    ``texts[i]`` starts with, shared with other texts), each distinct head's part before its cut once."""
    if heads is None or not texts or not tokenizer_cuts.split_safe(tokenizer):
        return _call(tokenizer, texts, kw)
    specials = kw.get("add_special_tokens", True)
    added = list(tokenizer.backend_tokenizer.get_added_tokens_decoder().values())
    longest = max((len(t.content) for t in added), default=0)
    cuts: dict[str, int] = {}
    split: list[int] = []  # texts encoded as head + rest
    pieces: list[str] = []
    for i, (text, head) in enumerate(zip(texts, heads, strict=True)):
        if len(head) < MIN_HEAD or not text.startswith(head):
            continue
        if head not in cuts:
            cuts[head] = tokenizer_cuts.head_cut(tokenizer, head, MIN_HEAD)
        c = cuts[head]
        near = text[max(0, c - longest): c + longest]
        if c and not any(t.content in near for t in added):
            split.append(i)
            pieces.append(text[c:])
    out: list[list[int] | None] = [None] * len(texts)
    if split:
        if specials and not _leading_specials_only(tokenizer, kw):
            return _call(tokenizer, texts, kw)
        cut_heads = [h for h, c in cuts.items() if c]
        lead = dict(zip(cut_heads, _call(tokenizer, [h[: cuts[h]] for h in cut_heads], kw), strict=True))
        backend = tokenizer.backend_tokenizer
        fast = getattr(backend, "encode_batch_fast", backend.encode_batch)  # the same ids, without offsets
        rests = fast(pieces, add_special_tokens=False)
        for i, rest in zip(split, rests, strict=True):
            out[i] = lead[heads[i]] + list(rest.ids)
    whole = [i for i, ids in enumerate(out) if ids is None]
    if whole:
        for i, ids in zip(whole, _call(tokenizer, [texts[i] for i in whole], kw), strict=True):
            out[i] = ids
    if split:
        step = max(1, len(split) // SAMPLE)
        sample = split[::step][:SAMPLE] + [split[-1]]
        if _call(tokenizer, [texts[i] for i in sample], kw) != [out[i] for i in sample]:
            log.warning("encoding a shared head once differed from encoding whole for %s: every text is "
                        "encoded whole", type(tokenizer).__name__)
            return _call(tokenizer, texts, kw)
    return out  # type: ignore[return-value]

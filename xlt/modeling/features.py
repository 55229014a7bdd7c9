"""Multiple-choice features: each question becomes one (passage, question + option) pair per option.

Items may have any number of options (training items have 4; a benchmark's items 2, 3, 5 or mixed):
the pairs of a batch are tokenized in one call and cut back into items at per-item offsets.

Only the passage is truncated (``only_first``). Items without a passage become
(question, option) pairs. Before tokenization every text is cut to :func:`max_chars` characters
(``CHARS_PER_TOKEN`` x ``max_length``, far more than ``max_length`` tokens can hold), so one
pathological row (a 10 MB passage) cannot blow up memory; the token ids do not change. Tokenization is batched and cached per (tokenizer, max length, data
fingerprint); padding is dynamic (per batch) in :class:`MCCollator` (transformers'
``DataCollatorForMultipleChoice``). ``token_type_ids`` are kept where the tokenizer makes them (BERT family).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from datasets import Dataset

from xlt.data.schema import option_counts

FEATURES_VERSION = "3"
# A token of XLM-R's vocabulary is at most ~16 characters of ordinary text: 32 is a generous bound.
CHARS_PER_TOKEN = 32


def max_chars(max_length: int) -> int:
    """The character cut applied before tokenization for sequences of ``max_length`` tokens."""
    return CHARS_PER_TOKEN * max(int(max_length), 1)


def tokenizer_fingerprint(tokenizer) -> str:
    """A stable hash of what determines the token ids: vocabulary, settings and special tokens."""
    h = hashlib.sha256()
    h.update(type(tokenizer).__name__.encode())
    backend = getattr(tokenizer, "backend_tokenizer", None) or getattr(tokenizer, "_tokenizer", None)
    if backend is not None:
        # The backend's JSON also holds the truncation/padding state of the last call: leave it out.
        state = json.loads(backend.to_str())
        state.pop("truncation", None)
        state.pop("padding", None)
        h.update(json.dumps(state, sort_keys=True).encode())
    else:
        h.update(repr(sorted(tokenizer.get_vocab().items())).encode())
    return h.hexdigest()[:16]


def _pairs(passages: Sequence[str], questions: Sequence[str], options: Sequence[Sequence[str]], limit: int):
    first, second = [], []
    for passage, question, opts in zip(passages, questions, options, strict=True):
        passage, question = passage[:limit], question[:limit]
        for opt in opts:
            opt = opt[:limit]
            if passage:
                first.append(passage)
                second.append(f"{question} {opt}".strip())
            else:
                first.append(question)
                second.append(opt)
    return first, second


# The model inputs a feature may carry: token_type_ids only where the tokenizer makes them (BERT family).
MODEL_INPUTS = ("input_ids", "token_type_ids", "attention_mask")


def _cut_flags(enc, max_length: int) -> list[bool]:
    """Per pair of one tokenizer call: whether truncation removed tokens to fit ``max_length``.

    A fast tokenizer keeps what truncation removed in each encoding's ``overflowing``; without one, a
    sequence of exactly ``max_length`` tokens counts as cut (an upper bound)."""
    encodings = getattr(enc, "encodings", None)
    if encodings:
        return [bool(e.overflowing) for e in encodings]
    return [len(ids) >= max_length for ids in enc["input_ids"]]


def _encode(tokenizer, first: list[str], second: list[str], max_length: int) -> tuple[dict[str, list], list[bool]]:
    """The pairs' model inputs and cut flags, truncating the passage only when that suffices, else both
    sides (longest first)."""
    try:
        enc = tokenizer(first, second, truncation="only_first", max_length=max_length, padding=False)
        return dict(enc), _cut_flags(enc, max_length)
    except Exception:  # tokenizers refuses `only_first` when a (question + option) alone is too long
        pass
    merged: dict[str, list] = {}
    cut: list[bool] = []
    for a, b in zip(first, second, strict=True):
        try:
            enc = tokenizer([a], [b], truncation="only_first", max_length=max_length)
        except Exception:
            enc = tokenizer([a], [b], truncation="longest_first", max_length=max_length)
        for key, value in enc.items():
            merged.setdefault(key, []).extend(value)
        cut += _cut_flags(enc, max_length)
    return merged, cut


def encode_batch(batch: dict[str, list[Any]], tokenizer, max_length: int) -> dict[str, list[Any]]:
    """Tokenize a batch of MC items into per-item lists of sequences, one per option (no padding).

    Columns: the model inputs the tokenizer produces (``input_ids``, ``attention_mask`` and, for the
    BERT family, ``token_type_ids``: 0 for the passage segment, 1 for question + option), ``labels``,
    ``length`` (the item's longest option: what batches are grouped and sorted by) and ``truncated``
    (whether any of its pairs was cut to fit ``max_length``)."""
    limit = max_chars(max_length)
    first, second = _pairs(batch["passage"], batch["question"], batch["options"], limit)
    enc, cut = _encode(tokenizer, first, second, max_length)
    cut = [c or len(a) >= limit for c, a in zip(cut, first, strict=True)]  # the character cut counts too
    # Item i owns pairs offsets[i]:offsets[i + 1] (its own number of options).
    offsets = np.concatenate([[0], np.cumsum(option_counts(batch))]).tolist()
    spans = list(zip(offsets[:-1], offsets[1:], strict=True))
    out: dict[str, list[Any]] = {}
    for key in MODEL_INPUTS:
        if key in enc:
            flat = enc[key]
            out[key] = [flat[a:b] for a, b in spans]
    if "attention_mask" not in out:
        out["attention_mask"] = [[[1] * len(s) for s in item] for item in out["input_ids"]]
    out["labels"] = list(batch["label"])
    out["length"] = [max(len(s) for s in item) for item in out["input_ids"]]
    out["truncated"] = [any(cut[a:b]) for a, b in spans]
    return out


def tokenize_mc(dataset: Dataset, tokenizer, max_length: int, batch_size: int = 1000, desc: str = "tokenize") -> Dataset:
    """Tokenized features of an MC dataset (columns input_ids, attention_mask, labels, length).

    Cached by ``datasets`` next to the source Arrow files, under a fingerprint made of the data's
    fingerprint, the tokenizer's hash and ``max_length``.
    """
    fingerprint = hashlib.sha256(
        f"{dataset._fingerprint}|{tokenizer_fingerprint(tokenizer)}|{max_length}|{FEATURES_VERSION}".encode()
    ).hexdigest()[:16]
    return dataset.map(
        encode_batch,
        batched=True,
        batch_size=batch_size,
        fn_kwargs={"tokenizer": tokenizer, "max_length": max_length},
        remove_columns=dataset.column_names,
        new_fingerprint=fingerprint,
        desc=desc,
    )


class MCCollator:
    """Pads a list of MC features to the longest sequence in the batch: tensors of shape (B, C, L).

    ``C`` is the batch's number of options, the same for every item of a batch: transformers' collator
    takes the first item's count for all (it would silently drop options or fail on an index), so a
    batch mixing counts is refused; :class:`xlt.scoring.mc.MCScorer` batches items by option count.
    Training items all have 4 options.

    transformers' ``DataCollatorForMultipleChoice`` does the padding (with the tokenizer's pad id, pad side
    and ``pad_token_type_id``; ``pad_to_multiple_of`` on GPU). It flattens every key of a feature, so only
    the model inputs and ``labels`` are handed to it: the ``length`` and ``truncated`` columns, kept for the
    length-grouped sampler and the truncation count, are not nested per option. Features without labels
    (benchmark scoring) get no ``labels`` tensor.
    """

    def __init__(self, tokenizer, pad_to_multiple_of: int | None = None):
        from transformers import DataCollatorForMultipleChoice

        self.inner = DataCollatorForMultipleChoice(tokenizer, pad_to_multiple_of=pad_to_multiple_of)

    def __call__(self, features: list[dict[str, Any]]) -> dict[str, torch.Tensor]:
        counts = sorted({len(f["input_ids"]) for f in features})
        if len(counts) > 1:
            raise ValueError(f"MCCollator: one batch mixes items with {counts} options; batch items by their "
                             "number of options (as MCScorer does)")
        labelled = "labels" in features[0]
        batch = self.inner([{**{k: f[k] for k in MODEL_INPUTS if k in f}, "labels": f["labels"] if labelled else -100}
                            for f in features])
        if not labelled:
            del batch["labels"]
        return dict(batch)

"""Multiple-choice features: each question becomes 4 (passage, question + option) pairs.

Only the passage is truncated (``only_first``). Items without a passage (Global-MMLU) become
(question, option) pairs. Before tokenization every text is cut to :func:`max_chars` characters
(``CHARS_PER_TOKEN`` x ``max_length``, far more than ``max_length`` tokens can hold), so one
pathological row (a 10 MB passage) cannot blow up memory; the token ids do not change. Tokenization is batched and cached per (tokenizer, max length, data
fingerprint); padding is dynamic (per batch) in :class:`MCCollator`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

import torch
from datasets import Dataset

from xlt.data.schema import NUM_OPTIONS

FEATURES_VERSION = "2"
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


def _encode_pair(tokenizer, first: str, second: str, max_length: int) -> list[int]:
    """One pair, truncating the passage only when that suffices, else both sides (longest first)."""
    try:
        return tokenizer(first, second, truncation="only_first", max_length=max_length)["input_ids"]
    except Exception:
        return tokenizer(first, second, truncation="longest_first", max_length=max_length)["input_ids"]


def encode_batch(batch: dict[str, list[Any]], tokenizer, max_length: int) -> dict[str, list[Any]]:
    """Tokenize a batch of MC items into per-item lists of 4 sequences (no padding)."""
    first, second = _pairs(batch["passage"], batch["question"], batch["options"], max_chars(max_length))
    try:
        ids = tokenizer(first, second, truncation="only_first", max_length=max_length, padding=False)["input_ids"]
    except Exception:  # tokenizers refuses `only_first` when a (question + option) alone is too long
        ids = [_encode_pair(tokenizer, a, b, max_length) for a, b in zip(first, second, strict=True)]
    n = len(batch["passage"])
    input_ids = [ids[i * NUM_OPTIONS : (i + 1) * NUM_OPTIONS] for i in range(n)]
    return {
        "input_ids": input_ids,
        "attention_mask": [[[1] * len(s) for s in item] for item in input_ids],
        "labels": list(batch["label"]),
        # Padded length of the item (its longest option): what batches are grouped and sorted by.
        "length": [max(len(s) for s in item) for item in input_ids],
    }


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
    """Pads a list of MC features to the longest sequence in the batch: tensors of shape (B, 4, L)."""

    def __init__(self, tokenizer, pad_to_multiple_of: int | None = None):
        self.pad_id = tokenizer.pad_token_id
        self.multiple = pad_to_multiple_of

    def __call__(self, features: list[dict[str, Any]]) -> dict[str, torch.Tensor]:
        longest = max(len(seq) for f in features for seq in f["input_ids"])
        if self.multiple:
            longest = -(-longest // self.multiple) * self.multiple
        b = len(features)
        input_ids = torch.full((b, NUM_OPTIONS, longest), self.pad_id, dtype=torch.long)
        attention = torch.zeros((b, NUM_OPTIONS, longest), dtype=torch.long)
        for i, f in enumerate(features):
            for j, seq in enumerate(f["input_ids"]):
                input_ids[i, j, : len(seq)] = torch.tensor(seq, dtype=torch.long)
                attention[i, j, : len(seq)] = 1
        batch = {"input_ids": input_ids, "attention_mask": attention}
        if "labels" in features[0]:
            batch["labels"] = torch.tensor([f["labels"] for f in features], dtype=torch.long)
        return batch

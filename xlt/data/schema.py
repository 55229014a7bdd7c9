"""The uniform multiple-choice record shared by the training set, translations and benchmarks.

Every stage after loading speaks this shape, so features, scoring and reporting are written once:

* training set (build_data):  ``TRAIN_FEATURES`` — dataset, split, passage_id, question_id, passage,
  question, options (``TRAIN_OPTIONS`` = 4 strings), label (0-based), license.
* translated training set:    ``TRAIN_FEATURES`` + ``language`` (FLORES-200 code).
* benchmark items (evaluate): ``EVAL_FEATURES`` — id, language, passage, question, options, label,
  plus benchmark metadata columns (subject, subject_category, cultural_sensitivity_label, ...).

Features, scoring and reports only rely on ``passage``, ``question``, ``options`` and ``label``. The
number of options is a property of each benchmark item (``len(item["options"])``, between
``MIN_OPTIONS`` and ``MAX_OPTIONS``; :func:`option_counts`), so a benchmark may have 2, 3, 5 or mixed
counts; option ``i`` is answer letter ``LETTERS[i]``. Scores are ``(n, max options)`` arrays with
``-inf`` in the slots an item does not have (:func:`xlt.scoring.scorers.check_scores`).
"""

from __future__ import annotations

import string
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from datasets import Features, Value
from datasets import Sequence as HFSequence

from xlt.errors import DataError

# Options per training item: the English training set and its translations are 4-option (the shape of Bandarkar et al., 2024).
TRAIN_OPTIONS = 4
# Answer letters: option i of an item is LETTERS[i] (LLM prompts, answer fields of the sources).
LETTERS = string.ascii_uppercase
TRAIN_LETTERS = LETTERS[:TRAIN_OPTIONS]
# A benchmark item has at least two options (fewer is unscorable) and at most one per answer letter.
MIN_OPTIONS = 2
MAX_OPTIONS = len(LETTERS)

TRAIN_FEATURES = Features(
    {
        "dataset": Value("string"),
        "split": Value("string"),
        "passage_id": Value("string"),
        "question_id": Value("string"),
        "passage": Value("string"),
        "question": Value("string"),
        "options": HFSequence(Value("string"), length=TRAIN_OPTIONS),
        "label": Value("int64"),
        "license": Value("string"),
    }
)

TRANSLATED_FEATURES = Features({**TRAIN_FEATURES, "language": Value("string")})

EVAL_FEATURES = Features(
    {
        "id": Value("string"),
        "language": Value("string"),
        "passage": Value("string"),
        "question": Value("string"),
        "options": HFSequence(Value("string")),  # any number per item (MIN_OPTIONS..MAX_OPTIONS)
        "label": Value("int64"),
    }
)


def option_counts(items: Any) -> np.ndarray:
    """The number of options of each item (a Dataset, or a batch dict with an ``options`` column)."""
    return np.fromiter((len(o) for o in items["options"]), dtype=np.int64)


class RecordError(DataError):
    """A record that violates the multiple-choice invariants. The message names where and which field."""


def check_record(rec: Mapping[str, Any], where: str, answer_text: str | None = None) -> None:
    """Check the invariants of one built training row; raise :class:`RecordError` naming ``where`` and the field.

    Invariants: exactly ``TRAIN_OPTIONS`` (4) distinct, non-empty string options; label an int in 0..3; and, when the
    source's correct answer text is given, ``options[label] == answer_text``.
    """
    options = rec.get("options")
    if not isinstance(options, Sequence) or isinstance(options, str) or len(options) != TRAIN_OPTIONS:
        raise RecordError(f"{where}: field 'options' must hold {TRAIN_OPTIONS} strings, got {options!r}")
    for i, opt in enumerate(options):
        if not isinstance(opt, str) or not opt.strip():
            raise RecordError(f"{where}: field 'options[{i}]' is empty or not a string: {opt!r}")
    if len(set(options)) != TRAIN_OPTIONS:
        raise RecordError(f"{where}: field 'options' has duplicate options: {list(options)!r}")
    label = rec.get("label")
    if not isinstance(label, int) or isinstance(label, bool) or not 0 <= label < TRAIN_OPTIONS:
        raise RecordError(f"{where}: field 'label' must be an int in 0..{TRAIN_OPTIONS - 1}, got {label!r}")
    if answer_text is not None and options[label] != answer_text:
        raise RecordError(
            f"{where}: field 'label' points at {options[label]!r}, but the source's answer is {answer_text!r}"
        )

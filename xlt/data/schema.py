"""The uniform multiple-choice record shared by the training set, translations and benchmarks.

Every stage after loading speaks this shape, so features, scoring and reporting are written once:

* training set (build_data):  ``TRAIN_FEATURES`` — dataset, split, passage_id, question_id, passage,
  question, options (4 strings), label (0-based), license.
* translated training set:    ``TRAIN_FEATURES`` + ``language`` (FLORES-200 code).
* benchmark items (evaluate): ``EVAL_FEATURES`` — id, language, passage, question, options, label,
  plus benchmark metadata columns (subject, subject_category, cultural_sensitivity_label, ...).

Features, scoring and reports only rely on ``passage``, ``question``, ``options`` and ``label``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from datasets import Features, Value
from datasets import Sequence as HFSequence

from xlt.errors import DataError

NUM_OPTIONS = 4
LETTERS = "ABCD"

TRAIN_FEATURES = Features(
    {
        "dataset": Value("string"),
        "split": Value("string"),
        "passage_id": Value("string"),
        "question_id": Value("string"),
        "passage": Value("string"),
        "question": Value("string"),
        "options": HFSequence(Value("string"), length=NUM_OPTIONS),
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
        "options": HFSequence(Value("string")),  # any number >= 2: each item has its own
        "label": Value("int64"),
    }
)


class RecordError(DataError):
    """A record that violates the multiple-choice invariants. The message names where and which field."""


def check_record(rec: Mapping[str, Any], where: str, answer_text: str | None = None) -> None:
    """Check the invariants of one built row; raise :class:`RecordError` naming ``where`` and the field.

    Invariants: exactly 4 distinct, non-empty string options; label an int in 0..3; and, when the
    source's correct answer text is given, ``options[label] == answer_text``.
    """
    options = rec.get("options")
    if not isinstance(options, Sequence) or isinstance(options, str) or len(options) != NUM_OPTIONS:
        raise RecordError(f"{where}: field 'options' must hold {NUM_OPTIONS} strings, got {options!r}")
    for i, opt in enumerate(options):
        if not isinstance(opt, str) or not opt.strip():
            raise RecordError(f"{where}: field 'options[{i}]' is empty or not a string: {opt!r}")
    if len(set(options)) != NUM_OPTIONS:
        raise RecordError(f"{where}: field 'options' has duplicate options: {list(options)!r}")
    label = rec.get("label")
    if not isinstance(label, int) or isinstance(label, bool) or not 0 <= label < NUM_OPTIONS:
        raise RecordError(f"{where}: field 'label' must be an int in 0..{NUM_OPTIONS - 1}, got {label!r}")
    if answer_text is not None and options[label] != answer_text:
        raise RecordError(
            f"{where}: field 'label' points at {options[label]!r}, but the source's answer is {answer_text!r}"
        )

"""Export the built training set as the reference script's TSV (one row per question).

Columns: ``dataset, split, passage_id, question_id, passage, question, answer1..answer4,
correct_answer, correct_answer_num`` (1-based), as written by ``assemble_training_set.py``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

import pandas as pd

from xlt.run.files import atomic_write_text

TSV_COLUMNS = [
    "dataset",
    "split",
    "passage_id",
    "question_id",
    "passage",
    "question",
    "answer1",
    "answer2",
    "answer3",
    "answer4",
    "correct_answer",
    "correct_answer_num",
]


def to_reference_frame(rows: Iterable[dict[str, Any]]) -> pd.DataFrame:
    """The reference columns for uniform records (``options`` list, 0-based ``label``)."""
    out = []
    for r in rows:
        opts = r["options"]
        out.append(
            {
                "dataset": r["dataset"],
                "split": r["split"],
                "passage_id": r["passage_id"],
                "question_id": r["question_id"],
                "passage": r["passage"],
                "question": r["question"],
                **{f"answer{i + 1}": o for i, o in enumerate(opts)},
                "correct_answer": opts[r["label"]],
                "correct_answer_num": r["label"] + 1,
            }
        )
    return pd.DataFrame(out, columns=TSV_COLUMNS)


def write_tsv(rows: Iterable[dict[str, Any]], path: str | os.PathLike[str]) -> int:
    """Write ``rows`` as the reference TSV at ``path`` (atomically); return the number of rows.

    Fields with tabs, newlines or quotes are quoted (CSV rules). Read it back exactly with :func:`read_tsv`,
    i.e. ``pandas.read_csv(path, sep="\\t", keep_default_na=False, dtype=str)``: without
    ``keep_default_na=False`` pandas turns option texts such as ``None``, ``nan`` or ``NA`` into NaN, and
    without ``dtype=str`` ids such as ``007`` into numbers.
    """
    frame = to_reference_frame(rows)
    atomic_write_text(path, frame.to_csv(sep="\t", index=False, lineterminator="\n"))
    return len(frame)


def read_tsv(path: str | os.PathLike[str]) -> pd.DataFrame:
    """The TSV written by :func:`write_tsv`, every field exactly as written (all columns as strings)."""
    return pd.read_csv(path, sep="\t", keep_default_na=False, dtype=str)

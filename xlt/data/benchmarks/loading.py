"""The helpers the benchmark loaders share: reading a local file, converting upstream rows, checking the items.

Anomaly policy (see :mod:`xlt.data.anomalies`): a wrong file (missing column, wrong type, bytes that
are not UTF-8, empty file, truncated last line) is a :class:`DataError` naming the file, the 1-based
row/line and the field. Odd items are kept and counted per language (:func:`data_checks`: duplicate
ids, duplicate / empty / placeholder options, empty passages and questions); items that cannot be scored
at all (fewer than two distinct non-empty options, or neither passage nor question) are left out and
counted (``unscorable``); a language with no scorable item is an error. The counts go into each
evaluation result (``data_checks``) and the report. Items may have any number of options (at most
:data:`xlt.data.schema.MAX_OPTIONS`, one per answer letter); a label that is not one of its item's
options, or more options than answer letters, is a wrong file (:func:`check_items`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
from datasets import Dataset, Features, load_dataset

from xlt.data.anomalies import PLACEHOLDERS
from xlt.data.schema import MAX_OPTIONS, option_counts
from xlt.data.sources.files import check_readable, iter_jsonl
from xlt.errors import DataError

CHECKS = ("duplicate_ids", "duplicate_options", "empty_options", "placeholder_options", "empty_passages",
          "empty_questions", "unscorable")


def check_items(ds: Dataset, where: str) -> None:
    """Raise :class:`DataError` naming the first row whose ``label`` is not one of its own options (0-based)
    or that has more options than answer letters (:data:`~xlt.data.schema.MAX_OPTIONS`)."""
    import numpy as np

    if len(ds) == 0:
        return
    counts = option_counts(ds)
    labels = np.asarray(ds["label"], dtype=np.int64)
    bad_label = np.flatnonzero((labels < 0) | (labels >= counts))
    if bad_label.size:
        i = int(bad_label[0])
        raise DataError(f"{where}: row {i + 1}: field 'label' is {labels[i]}, not one of the item's {counts[i]} "
                        f"options (0..{counts[i] - 1})")
    too_many = np.flatnonzero(counts > MAX_OPTIONS)
    if too_many.size:
        i = int(too_many[0])
        raise DataError(f"{where}: row {i + 1}: field 'options' holds {counts[i]} options; at most {MAX_OPTIONS} "
                        "(one per answer letter A-Z)")


def data_checks(ds: Dataset, has_passage: bool = True) -> tuple[dict[str, int], list[int]]:
    """Counts of odd items (see the module docstring) and the indices of the scorable ones."""
    counts = dict.fromkeys(CHECKS, 0)
    seen: set[str] = set()
    keep: list[int] = []
    cols = ds.select_columns(["id", "passage", "question", "options"]).to_dict()
    for i, (id_, passage, question, options) in enumerate(
        zip(cols["id"], cols["passage"], cols["question"], cols["options"], strict=True)
    ):
        counts["duplicate_ids"] += id_ in seen
        seen.add(id_)
        filled = [o for o in options if o.strip()]
        counts["empty_options"] += len(filled) < len(options)
        counts["duplicate_options"] += len(set(filled)) < len(filled)
        counts["placeholder_options"] += any(o.strip() in PLACEHOLDERS for o in options)
        counts["empty_passages"] += has_passage and not passage.strip()
        counts["empty_questions"] += not question.strip()
        if len(set(filled)) < 2 or not (question.strip() or passage.strip()):
            counts["unscorable"] += 1
        else:
            keep.append(i)
    return counts, keep


def load_local_file(path: Path) -> Dataset:
    """Read one local JSONL or Parquet file as a Dataset; unreadable files raise :class:`DataError`.

    JSONL goes through the training sources' line reader (:func:`xlt.data.sources.files.iter_jsonl`), so
    both name the same 1-based line for undecodable bytes, truncated lines and empty files, and both
    accept a leading BOM.
    """
    check_readable(path)
    if path.suffix != ".parquet":
        read = list(iter_jsonl(path))
        rows = [row.data for row in read]
        columns: dict[str, list[Any]] = {}
        for row in rows:
            for key in row:
                columns.setdefault(key, [])
        for row in read:  # a field absent from one line (not null: absent) is a wrong file
            if len(row.data) < len(columns):
                missing = next(k for k in columns if k not in row.data)
                raise DataError(f"{row.where}: missing field '{missing}' (other lines have it); "
                                "write null for a missing value")
        for key in columns:
            columns[key] = [row.get(key) for row in rows]
            try:
                pa.array(columns[key])
            except (pa.ArrowInvalid, pa.ArrowTypeError):
                line = _first_odd_type(columns[key])
                raise DataError(f"{path}: field {key!r} mixes types (row {line} differs from row 1); "
                                "use one type for the field in every line") from None
        return Dataset.from_dict(columns)
    try:
        ds = load_dataset("parquet", data_files=str(path), split="train")
    except Exception as err:  # datasets raises many types for malformed files
        raise DataError(f"{path}: could not read as parquet: {str(err).splitlines()[0]}") from None
    if len(ds) == 0:
        raise DataError(f"{path}: no rows (the Parquet file is empty)")
    return ds


def _first_odd_type(values: list[Any]) -> int:
    first = next((type(v) for v in values if v is not None), type(None))
    return next((i + 1 for i, v in enumerate(values) if v is not None and type(v) is not first), 1)


def require_columns(ds: Dataset, required: Sequence[str], where: str) -> None:
    """Raise :class:`DataError` if a required field is missing from every row of ``ds``."""
    missing = [c for c in required if c not in ds.column_names]
    if missing:
        raise DataError(f"{where}: missing field(s) {missing} (row 1 onwards); found {ds.column_names}")


def text(value: Any) -> str:
    """A text field of an item; a null (missing) text reads as "" (counted by :func:`data_checks`)."""
    return "" if value is None else str(value)


def check_not_null(batch: dict[str, list], fields: Sequence[str], where: str, start: int) -> None:
    """Raise :class:`DataError` naming the first row with a null (missing) value in ``fields``."""
    for name in fields:
        for i, v in enumerate(batch[name]):
            if v is None:
                raise DataError(f"{where}: row {start + i + 1}: field {name!r} is missing")


def convert_split(raw: Dataset, language: str, where: str, *, fields: Sequence[str], features: Features,
                  convert_row: Callable[..., dict[str, Any]], key_fields: Sequence[str] = (), desc: str) -> Dataset:
    """Convert a raw upstream split to the evaluation schema, validating every row.

    ``convert_row(row, *, language, where)`` turns one upstream row (a dict) into one record of
    ``features``; ``where`` names the file and the 1-based row for its errors. A null in one of
    ``key_fields`` is an error naming the row before the row is converted.
    """
    require_columns(raw, fields, where)
    if len(raw) == 0:
        raise DataError(f"{where}: no rows")
    names = list(features)

    def convert_batch(batch: dict[str, list], indices: list[int], *, language: str, where: str) -> dict[str, list]:
        check_not_null(batch, key_fields, where, indices[0] if indices else 0)
        out: dict[str, list] = {k: [] for k in names}
        for i, idx in enumerate(indices):
            rec = convert_row({c: v[i] for c, v in batch.items()}, language=language, where=f"{where}: row {idx + 1}")
            for k in names:
                out[k].append(rec[k])
        return out

    return raw.map(
        convert_batch,
        batched=True,
        with_indices=True,
        remove_columns=raw.column_names,
        features=features,
        fn_kwargs={"language": language, "where": where},
        desc=desc,
        load_from_cache_file=False,
    )

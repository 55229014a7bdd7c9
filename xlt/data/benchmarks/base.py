"""What every evaluation benchmark provides, and the helpers the loaders share.

A benchmark turns its upstream rows (Hub or a local copy in the Hub's layout) into the uniform
evaluation record (:data:`xlt.data.schema.EVAL_FEATURES`) plus metadata columns. Two calls make the API:

* ``bench.languages(bcfg) -> list[str]``: the language codes the source really has (read at run time);
* ``bench.load(bcfg, language, split="test") -> datasets.Dataset``
  (``bench.load_checked`` also returns the data checks below).

``bench.select_languages(bcfg)`` validates the user's selection (``bcfg.languages``) against them.

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

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
from datasets import Dataset, Features, load_dataset

from xlt import languages as langtab
from xlt.data.anomalies import PLACEHOLDERS
from xlt.data.schema import MAX_OPTIONS, option_counts
from xlt.errors import ConfigError, DataError


class Benchmark(ABC):
    """One benchmark, one definition: everything xlt needs to know about it (see the module docstring).

    The loader half (:meth:`languages`, :meth:`load_all`) is abstract. The rest are declarations with
    defaults that suit a plain multiple-choice benchmark, overridden where a benchmark differs:
    prompts and few-shot rules for causal LLMs (:meth:`doc_to_text`, :meth:`fewshot_indices`, ...),
    subsets (:meth:`subset_masks`) and how results are summarised and shown (the reporting block at the
    end). No other module names a benchmark: they ask its definition.
    """

    kind: str = ""
    default_hub_id: str = ""
    # Bump whenever a change to this definition (loading, prompts, few-shot rule, subsets) can change a
    # result: the version enters every result's job hash, so exactly this benchmark's results are
    # recomputed (lm-evaluation-harness's per-task ``version``).
    version: int = 1
    # The paper that introduced the benchmark (cited by the findings it declares).
    paper: str = ""
    has_passage: bool = True  # items have a passage (Belebele) or not (Global-MMLU)
    # The English (pivot) language in this benchmark's own spelling: translate-test scores English few-shot
    # examples from it, and it is the source side of transfer.
    pivot_language: str = "eng_Latn"
    # The split LLM few-shot examples come from (None: the evaluated split itself, other items of the same
    # language, the question itself skipped).
    fewshot_split: str | None = None
    # Subsets of a language's items (beside "full", all items) reported with their own accuracy; the
    # metadata columns their masks are computed from (see :meth:`subset_masks`).
    subsets: tuple[str, ...] = ()
    subset_columns: tuple[str, ...] = ()

    def subset_masks(self, meta: Any) -> dict[str, Any]:
        """Boolean masks (numpy arrays) of the subsets over one language's items.

        ``meta`` is a pandas DataFrame of the items' :attr:`subset_columns`. The default has no subsets.
        Keys are the names in :attr:`subsets`, plus any finer ones (e.g. ``category/<name>``).
        """
        return {}

    def item_subsets(self, items: Any) -> dict[str, Any]:
        """``{"full": all items, **subset_masks}`` over a Dataset or DataFrame of one language's items
        (empty when the benchmark declares no subsets)."""
        if not self.subsets:
            return {}
        import numpy as np
        import pandas as pd

        meta = items if isinstance(items, pd.DataFrame) else items.select_columns(list(self.subset_columns)).to_pandas()
        return {"full": np.ones(len(meta), dtype=bool), **self.subset_masks(meta)}

    def job_identity(self) -> dict[str, Any]:
        """What of the definition enters a result's job hash: its kind and version."""
        return {"kind": self.kind, "version": int(self.version)}

    def known_languages(self) -> tuple[str, ...]:
        """Every language of the benchmark per xlt's language table (empty: ask the source)."""
        return ()

    def hub_id(self, bcfg: Any) -> str:
        return bcfg.hub_id or self.default_hub_id

    def local_path(self, bcfg: Any) -> Path | None:
        if not bcfg.path:
            return None
        path = Path(str(bcfg.path)).expanduser()
        if not path.is_dir():
            raise ConfigError(f"{self.kind}: local copy {path} does not exist or is not a folder (path=)")
        return path

    @abstractmethod
    def languages(self, bcfg: Any) -> list[str]:
        """Language codes available in the configured source (sorted)."""

    @abstractmethod
    def load_all(self, bcfg: Any, language: str, split: str = "test") -> tuple[Dataset, str]:
        """Every item of one language in the evaluation schema, and where it was read (for errors)."""

    def load_checked(self, bcfg: Any, language: str, split: str = "test") -> tuple[Dataset, dict[str, int]]:
        """The scorable items of one language (at most ``max_questions``) and their data checks."""
        ds, where = self.load_all(bcfg, language, split)
        check_items(ds, where)
        checks, keep = data_checks(ds, self.has_passage)
        if not keep:
            raise DataError(f"{where}: none of the {len(ds)} items can be scored (every item has fewer than two "
                            "distinct non-empty options, or no question); check the file")
        if len(keep) < len(ds):
            ds = ds.select(keep)
        if bcfg.max_questions is not None:
            ds = ds.select(range(min(int(bcfg.max_questions), len(ds))))
        return ds, checks

    def load(self, bcfg: Any, language: str, split: str = "test") -> Dataset:
        """The scorable items of one language in the evaluation schema (see :meth:`load_checked`)."""
        return self.load_checked(bcfg, language, split)[0]

    def canonical(self, code: str) -> str:
        """The benchmark's own spelling of ``code`` (e.g. Global-MMLU ``de`` for ``deu_Latn``)."""
        return code

    def select_languages(self, bcfg: Any, available: Sequence[str] | None = None) -> list[str]:
        """The languages to evaluate: ``bcfg.languages`` (validated) or all available ones.

        An unknown code raises :class:`ConfigError` naming the closest valid code; an empty selection
        (no languages in the source, or an explicit empty list) raises too.
        """
        available = list(self.languages(bcfg) if available is None else available)
        if not available:
            raise ConfigError(f"{self.kind}: the source has no languages (check the path / hub_id)")
        wanted = bcfg.languages
        if wanted is None:
            return sorted(available)
        if len(wanted) == 0:
            raise ConfigError(f"{self.kind}: empty language selection (languages: []); use null for all")
        out: list[str] = []
        for code in wanted:
            code = str(code)
            canon = self.canonical(code)
            if canon not in available:
                raise langtab.unknown_code_error(code, available, f"{self.kind} language code")
            if canon not in out:
                out.append(canon)
        return out


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
    if path.suffix != ".parquet":
        from xlt.data.sources.files import iter_jsonl

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
                  convert_batch: Callable[..., dict[str, list]], desc: str) -> Dataset:
    """Convert a raw upstream split to the evaluation schema with ``convert_batch``, validating every row."""
    require_columns(raw, fields, where)
    if len(raw) == 0:
        raise DataError(f"{where}: no rows")
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

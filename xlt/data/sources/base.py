"""What every training source shares: reading (Hub or local copy), field checks, drop counting, records.

A source module subclasses :class:`Source`, names its upstream splits and output dataset name, and
implements :meth:`Source.convert_split` (upstream rows -> uniform records, counting every dropped row
under a reason). Reading, progress bars, ``max_rows`` and error messages are handled here, and so is
the anomaly policy of :mod:`xlt.data.anomalies`: :meth:`Source.record` repairs stray BOMs/CRLF and
returns a drop reason for odd rows (empty or placeholder texts, duplicate options, absurd lengths);
:class:`OddRow` raised while reading a row (a null text field) drops that row. Every repair and drop is
counted per split in :class:`SourceStats`.
"""

from __future__ import annotations

import hashlib
import logging
import random
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from xlt.config.data import SourceConfig
from xlt.data.anomalies import MAX_PASSAGE_CHARS, clean_text, row_problem
from xlt.data.anomalies import option_problem as option_problem
from xlt.data.schema import TRAIN_LETTERS, TRAIN_OPTIONS, check_record
from xlt.data.sentences import count_sentences, max_sentences
from xlt.data.sources.files import Row, iter_local_split
from xlt.errors import ConfigError, DataError
from xlt.hub import hub_resource
from xlt.progress import progress_bar

log = logging.getLogger(__name__)

# Upstream split -> split of the built set.
OUTPUT_SPLIT = {"train": "train", "validation": "dev"}


@dataclass
class SourceStats:
    """Counts for one source: upstream rows read, candidate questions, kept and dropped (by reason)."""

    name: str
    dataset: str
    read: Counter = field(default_factory=Counter)  # output split -> upstream rows read
    candidates: Counter = field(default_factory=Counter)  # output split -> questions formed from them
    kept: Counter = field(default_factory=Counter)
    dropped: dict[str, Counter] = field(default_factory=dict)  # output split -> reason -> count
    repaired: dict[str, Counter] = field(default_factory=dict)  # output split -> repair -> count
    longest: Counter = field(default_factory=Counter)  # output split -> longest passage seen (characters)
    notes: Counter = field(default_factory=Counter)  # informational counters (not drops)

    def drop(self, split: str, reason: str, n: int = 1) -> None:
        self.dropped.setdefault(split, Counter())[reason] += n

    def repairs(self, split: str) -> Counter:
        return self.repaired.setdefault(split, Counter())

    def saw_passage(self, split: str, text: str) -> None:
        self.longest[split] = max(self.longest[split], len(text))

    def to_dict(self) -> dict[str, Any]:
        found = set(self.read) | set(self.candidates) | set(self.kept) | set(self.dropped)
        splits = [s for s in ("train", "dev") if s in found] + sorted(found - {"train", "dev"})
        return {
            "dataset": self.dataset,
            "splits": {
                s: {
                    "read": self.read[s],
                    "candidates": self.candidates[s],
                    "kept": self.kept[s],
                    "dropped": dict(sorted(self.dropped.get(s, Counter()).items())),
                    "repaired": dict(sorted(self.repaired.get(s, Counter()).items())),
                    "longest_passage_chars": self.longest[s],
                }
                for s in splits
            },
            "notes": dict(sorted(self.notes.items())),
        }


@dataclass
class BuildContext:
    """Settings shared by all sources during one build."""

    seed: int = 1234
    max_passage_sentences: int = 25
    _sentence_cache: dict[str, int] = field(default_factory=dict, repr=False)

    def sentences(self, text: str) -> int:
        n = self._sentence_cache.get(text)
        if n is None:
            n = self._sentence_cache[text] = count_sentences(text)
        return n

    def passage_problem(self, text: str) -> str | None:
        """``field_too_long`` (absurd, not split), ``passage_too_long`` (> max sentences) or None."""
        if len(text) > MAX_PASSAGE_CHARS:
            return "field_too_long"
        if max_sentences(text) <= self.max_passage_sentences:  # exact: no splitter can find more
            return None
        return "passage_too_long" if self.sentences(text) > self.max_passage_sentences else None

    def rng(self, source: str, *key: object) -> random.Random:
        """A generator seeded from (seed, source, row key): independent of processing order."""
        return random.Random(":".join([str(self.seed), source, *map(str, key)]))


class OddRow(Exception):
    """Raised while reading an odd row (see :mod:`xlt.data.anomalies`): the row is dropped under ``reason``."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def text_id(text: str) -> str:
    """A short stable id for a text (e.g. a passage without an upstream id)."""
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:12]


# ---- field access with clear errors ---------------------------------------------------------------


def get(row: Row, name: str, types: type | tuple[type, ...], what: str | None = None) -> Any:
    """``row.data[name]``, checked to be of ``types``; otherwise a :class:`DataError` naming row and field."""
    if name not in row.data:
        raise DataError(
            f"{row.where}: missing field '{name}' (columns: {sorted(row.data)}); "
            "the file does not have the upstream layout (a renamed column?)"
        )
    value = row.data[name]
    if not isinstance(value, types) or (isinstance(value, bool) and bool not in _as_tuple(types)):
        expected = what or " or ".join(t.__name__ for t in _as_tuple(types))
        raise DataError(f"{row.where}: field '{name}' must be {expected}, got {type(value).__name__} {value!r:.80}")
    return value


def _as_tuple(types: type | tuple[type, ...]) -> tuple[type, ...]:
    return types if isinstance(types, tuple) else (types,)


def get_str(row: Row, name: str) -> str:
    """A text field; a null value makes the row odd (:class:`OddRow` ``null_field``: dropped)."""
    if row.data.get(name, "") is None:
        raise OddRow("null_field")
    return get(row, name, str)


def get_str_list(row: Row, name: str, length: int | None = TRAIN_OPTIONS) -> list[str]:
    if row.data.get(name, "") is None:
        raise OddRow("null_field")
    value = get(row, name, (list, tuple), "a list of strings")
    if length is not None and len(value) != length:
        raise DataError(f"{row.where}: field '{name}' must hold {length} options, got {len(value)}")
    for i, v in enumerate(value):
        if v is None:
            raise OddRow("null_field")
        if not isinstance(v, str):
            raise DataError(f"{row.where}: field '{name}[{i}]' must be a string, got {type(v).__name__}")
    return list(value)


def get_letter(row: Row, name: str) -> int:
    """A 0-based label from an answer letter A-D."""
    value = get_str(row, name)
    letter = value.strip()
    if len(letter) != 1 or letter not in TRAIN_LETTERS:
        raise DataError(f"{row.where}: field '{name}' must be an answer letter A-D, got {value!r}")
    return TRAIN_LETTERS.index(letter)


def is_cloze(question: str) -> bool:
    return "_" in question


# ---- sources ----------------------------------------------------------------------------------------


class Source:
    """A training source. Subclasses set the class attributes and implement :meth:`convert_split`."""

    name: str = ""  # config key under data.sources
    dataset: str = ""  # dataset name in the built set (as in the reference script)
    default_license: str = ""
    splits: tuple[str, ...] = ("train", "validation")  # upstream splits used
    needs_passage: bool = True  # an empty passage drops the row

    def __init__(self, source_cfg: SourceConfig):
        self.cfg = source_cfg  # this source's entry of data.sources
        self.license = source_cfg.license or self.default_license
        self.stats = SourceStats(self.name, self.dataset)

    # -- reading --
    def rows(self, split: str) -> Iterator[Row]:
        """Upstream rows of ``split`` from the local copy (``path``) or the Hub (``hub_id``)."""
        cfg = self.cfg
        if cfg.path:
            yield from iter_local_split(cfg.path, split, cfg.config_name)
            return
        if not cfg.hub_id:
            raise ConfigError(f"data.sources.{self.name}: set 'path' (a local copy) or 'hub_id'")
        ds = self.load_hub_split(split)
        label = f"{cfg.hub_id}" + (f"/{cfg.config_name}" if cfg.config_name else "") + f" [{split}]"
        for i, obj in enumerate(ds, start=1):
            yield Row(obj, f"{label} row {i}")

    def load_hub_split(self, split: str) -> Iterable[dict[str, Any]]:
        from datasets import load_dataset

        cfg = self.cfg
        with hub_resource("dataset", cfg.hub_id, cfg.revision, config_key=f"data.sources.{self.name}.path"):
            return load_dataset(cfg.hub_id, cfg.config_name, revision=cfg.revision, split=split)

    def limited_rows(self, split: str, stats: SourceStats) -> Iterator[Row]:
        """Rows of ``split`` with a progress bar, at most ``max_rows``; counts them in ``stats.read``."""
        out = OUTPUT_SPLIT[split]
        bar = progress_bar(desc=f"{self.dataset} {split}", unit=" rows", disable=None, leave=False)
        try:
            for i, row in enumerate(self.rows(split)):
                if self.cfg.max_rows is not None and i >= self.cfg.max_rows:
                    break
                stats.read[out] += 1
                bar.update()
                yield row
        finally:
            bar.close()

    # -- converting --
    def load(self, ctx: BuildContext) -> tuple[dict[str, list[dict[str, Any]]], SourceStats]:
        """Read and convert every split; return records per output split and the counts."""
        stats = self.stats = SourceStats(self.name, self.dataset)
        out: dict[str, list[dict[str, Any]]] = {}
        for split in self.splits:
            o = OUTPUT_SPLIT[split]
            records = self.convert_split(o, self.limited_rows(split, stats), ctx, stats)
            stats.kept[o] += len(records)
            out[o] = records
        if not any(stats.read.values()):
            where = self.cfg.path or self.cfg.hub_id or self.cfg.url
            raise DataError(f"data.sources.{self.name}: the source is enabled but {where} yielded 0 rows; "
                            f"check the copy or disable it (data.sources.{self.name}.enabled=false)")
        return out, stats

    def convert_split(self, split: str, rows: Iterable[Row], ctx: BuildContext, stats: SourceStats) -> list[dict[str, Any]]:
        """Convert the rows of one split. The default calls :meth:`begin_split`, then :meth:`convert_row`
        per row with the row's index in the split; a source whose records need several rows at once (a
        question spread over rows) overrides this instead."""
        self.begin_split(split)
        records: list[dict[str, Any]] = []
        for index, row in enumerate(rows):
            stats.candidates[split] += 1
            try:
                result = self.convert_row(split, index, row, ctx)
            except OddRow as odd:
                result = odd.reason
            self.keep(split, result, records)
        return records

    def begin_split(self, split: str) -> None:
        """Called before the first row of a split (e.g. to reset per-split numbering); does nothing."""

    def convert_row(self, split: str, index: int, row: Row, ctx: BuildContext) -> dict[str, Any] | str:
        """One record, or the reason the row is dropped; ``index`` is the row's position in the split."""
        raise NotImplementedError(f"{type(self).__name__} must implement convert_row or convert_split")

    def keep(self, split: str, result: dict[str, Any] | str, records: list[dict[str, Any]]) -> None:
        """Append a converted record to ``records``, or count the drop when ``result`` is its reason."""
        if isinstance(result, str):
            self.stats.drop(split, result)
        else:
            records.append(result)

    def passage_problem(self, split: str, text: str, ctx: BuildContext) -> str | None:
        """The sentence filter (and the absurd-length check) for a passage; notes its length."""
        self.stats.saw_passage(split, text)
        return ctx.passage_problem(text)

    def record(
        self,
        split: str,
        where: str,
        passage_id: str,
        question_id: str,
        passage: str,
        question: str,
        options: list[str],
        label: int,
        answer_text: str | None = None,
    ) -> dict[str, Any] | str:
        """Build one record (by field name) and check its invariants; errors name source, split and row.

        Applies the row part of the anomaly policy: repairs (counted in ``stats.repaired``) or returns
        the reason to drop the row.
        """
        stats: SourceStats = self.stats
        fixes = stats.repairs(split)
        stats.saw_passage(split, passage)
        passage, question = clean_text(passage, fixes), clean_text(question, fixes)
        options = [clean_text(o, fixes) for o in options]
        if answer_text is not None:
            answer_text = clean_text(answer_text, Counter())
        problem = row_problem(passage, question, options, needs_passage=self.needs_passage)
        if problem:
            return problem
        if "None" in options:
            stats.notes["option_text_None"] += 1
        rec = {
            "dataset": self.dataset,
            "split": split,
            "passage_id": passage_id,
            "question_id": question_id,
            "passage": passage,
            "question": question,
            "options": options,
            "label": label,
            "license": self.license,
        }
        check_record(rec, f"{self.dataset} {split} {where}", answer_text)
        return rec

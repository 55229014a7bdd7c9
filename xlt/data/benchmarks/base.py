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

import random
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
from datasets import Dataset, Features, get_dataset_config_names, load_dataset

from xlt import languages as langtab
from xlt.data.anomalies import PLACEHOLDERS
from xlt.data.schema import LETTERS, MAX_OPTIONS, option_counts
from xlt.data.sources.files import check_readable, iter_jsonl
from xlt.errors import ConfigError, DataError
from xlt.hub import hub_resource, offline
from xlt.metrics import summarize
from xlt.registry import BENCHMARKS


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

    # --- causal LLMs: prompts and few-shot examples (as an lm-evaluation-harness task) ---------------
    # The harness's multiple-choice prompt of one item (``doc_to_text``), its answer continuations
    # (``doc_to_choice``; each is scored after TARGET_DELIMITER) and the gold one (``doc_to_target``).
    # The default is the harness's lettered template: the passage (if any), the question, ``A. option``
    # lines, ``Answer:``; the continuations are the letters.

    def doc_to_text(self, rec: Mapping[str, Any]) -> str:
        passage = (rec.get("passage") or "").strip()
        lines = [passage] if passage else []
        lines += [rec["question"].strip(), *(f"{LETTERS[i]}. {o}" for i, o in enumerate(rec["options"])), "Answer:"]
        return "\n".join(lines)

    def doc_to_choice(self, rec: Mapping[str, Any]) -> list[str]:
        return list(LETTERS[: len(rec["options"])])

    def doc_to_target(self, rec: Mapping[str, Any]) -> str:
        return self.doc_to_choice(rec)[int(rec["label"])]

    # The zero-shot instruction of the Belebele paper's prompt for instruction-tuned models (generation
    # mode), with and without a passage; the prompt itself is :func:`xlt.scoring.llm.prompts.instruction_prompt`.
    def instruction(self) -> str:
        if self.has_passage:
            return ("Given the following passage, query, and answer choices, output the letter corresponding to "
                    "the correct answer.")
        return "Given the following query and answer choices, output the letter corresponding to the correct answer."

    # Few-shot sampling: "first_n" (the first k rows of the pool, as the harness's ``first_n`` sampler) or
    # "random" (``Random(seed).sample(pool, k)`` drawn question after question, one generator per group,
    # as its default sampler). ``fewshot_group``: the column the harness splits a language into tasks by
    # (one pool and one generator per value; None: the whole language is one task).
    fewshot_samplers: tuple[str, ...] = ("first_n", "random")

    def default_fewshot_sampler(self, bcfg: Any) -> str:
        return "first_n"

    def fewshot_group(self, sampler: str) -> str | None:
        return None

    # How the harness splits a language into tasks, for the note on a capped run (None: one task per
    # language, so ``max_questions`` is the harness's ``--limit``).
    harness_task_unit: str | None = None

    def fewshot_indices(self, items: Dataset, pool: Dataset, k: int, *, sampler: str = "first_n",
                        seed: int = 1234, same_split: bool | None = None) -> list[list[int]]:
        """For each row of ``items``, the indices into ``pool`` of its ``k`` few-shot examples.

        When the pool is the evaluated split itself (``same_split``; default: ``fewshot_split`` is None)
        the harness draws ``k + 1`` and drops the question itself (matched by ``id``).
        """
        if k <= 0:
            return [[] for _ in range(len(items))]
        if sampler not in self.fewshot_samplers:
            raise ConfigError(f"{self.kind}: unknown few-shot sampler '{sampler}'; choose one of "
                              f"{list(self.fewshot_samplers)}")
        same = self.fewshot_split is None if same_split is None else same_split
        key = self.fewshot_group(sampler)
        for name, ds in (("items", items), ("few-shot pool", pool)):
            if key is not None and key not in ds.column_names:
                raise DataError(f"{self.kind} {name}: column '{key}' is missing (needed to pick few-shot examples)")
        groups: dict[Any, list[int]] = {}
        for i, g in enumerate(pool[key] if key is not None else [None] * len(pool)):
            groups.setdefault(g, []).append(i)
        pool_ids = pool["id"]
        rngs: dict[Any, random.Random] = {}
        draw = k + 1 if same else k
        out = []
        for row, (qid, g) in enumerate(zip(items["id"], items[key] if key is not None else [None] * len(items),
                                          strict=True)):
            group = groups.get(g, [])
            if len(group) < draw:
                unit = f"{key} '{g}'" if key is not None else "the pool"
                raise DataError(f"{self.kind} row {row} (id {qid}): {unit} has {len(group)} few-shot rows in the "
                                f"{self.fewshot_split or 'evaluated'} split, {draw} needed")
            if sampler == "first_n":
                picked = group[:draw]
            else:
                picked = rngs.setdefault(g, random.Random(seed)).sample(group, draw)
            out.append([i for i in picked if not (same and pool_ids[i] == qid)][:k])
        return out

    def item_subsets(self, items: Any) -> dict[str, Any]:
        """``{"full": all items, **subset_masks}`` over a Dataset or DataFrame of one language's items
        (empty when the benchmark declares no subsets)."""
        if not self.subsets:
            return {}
        import numpy as np
        import pandas as pd

        meta = items if isinstance(items, pd.DataFrame) else items.select_columns(list(self.subset_columns)).to_pandas()
        return {"full": np.ones(len(meta), dtype=bool), **self.subset_masks(meta)}

    def contamination_texts(self, bcfg: Any) -> list[str]:
        """The texts the training set is checked against for overlap (decontamination): the passages and
        questions of every selected language of the local copy (``bcfg.path``), each once. Without a
        local copy there is nothing to read offline: empty."""
        if not bcfg.path:
            return []
        texts: dict[str, None] = {}
        for language in self.select_languages(bcfg):
            ds, _ = self.load_all(bcfg, language, bcfg.split)
            for passage, question in zip(ds["passage"], ds["question"], strict=True):
                for t in (passage, question):
                    if t.strip():
                        texts.setdefault(t)
        return list(texts)

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
        """The scorable items of one language and their data checks.

        ``max_questions`` is lm-evaluation-harness's ``--limit``: the first n documents of the file, the
        unscorable ones among them dropped (and counted in the checks), so a capped run scores the same
        questions, and draws the same first-n few-shot rows, as the harness with that limit."""
        ds, where = self.load_all(bcfg, language, split)
        check_items(ds, where)
        items = f"{len(ds)} items"
        if bcfg.max_questions is not None and int(bcfg.max_questions) < len(ds):
            ds = ds.select(range(int(bcfg.max_questions)))
            items = f"first {len(ds)} items (max_questions={len(ds)})"
        checks, keep = data_checks(ds, self.has_passage)
        if not keep:
            raise DataError(f"{where}: none of the {items} can be scored (every item has fewer than two "
                            "distinct non-empty options, or no question); check the file")
        if len(keep) < len(ds):
            ds = ds.select(keep)
        return ds, checks

    def load(self, bcfg: Any, language: str, split: str = "test") -> Dataset:
        """The scorable items of one language in the evaluation schema (see :meth:`load_checked`)."""
        return self.load_checked(bcfg, language, split)[0]

    def canonical(self, code: str) -> str:
        """The benchmark's own spelling of ``code`` (e.g. Global-MMLU ``de`` for ``deu_Latn``)."""
        return code

    def table_code(self, code: str) -> str:
        """The code of one of the benchmark's languages in xlt's language table (FLORES-200), which
        gives its name, script, family and resource level in reports; itself when the table lacks it."""
        lang = langtab.lookup(code)
        return lang.code if lang is not None else code

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

    # --- reporting ---------------------------------------------------------------------------------------
    # How results are grouped, summarised, shown and checked against the paper. xlt/reporting asks these
    # declarations and names no benchmark; the defaults suit a benchmark with no subsets.

    # The name reports and findings use (empty: the kind).
    title: str = ""
    # Per-language columns (from the language table, see :meth:`language_info`) results are grouped by:
    # summaries, grouped plots, the results pages' filters and compare's tables.
    language_groupings: tuple[str, ...] = ("script", "family", "resource")
    # Accuracies (%) for which the summary counts the languages at or above (``n_ge_<t>``).
    thresholds: tuple[float, ...] = (50.0, 70.0)
    # Display names of columns and subsets (a missing key shows as itself).
    labels: dict[str, str] = {"resource": "resource level"}
    # Subsets (``"full"`` and names of :attr:`subsets`) systems are ranked on in ``report --compare``, and
    # the pairs of them whose rank changes are counted; none: no rankings section.
    rank_subsets: tuple[str, ...] = ()
    rank_pairs: tuple[tuple[str, str], ...] = ()
    # Two subsets shown side by side per language (a plot ``<name>_<a>_vs_<b>.png``); None: no such plot.
    contrast: tuple[str, str] | None = None
    # The claims of :attr:`paper` checked on every comparison (:mod:`xlt.reporting.findings` holds the
    # check kinds); a finding's id is ``<finding_prefix>_<claim id>``.
    findings: tuple[Claim, ...] = ()

    @property
    def display_title(self) -> str:
        return self.title or self.kind

    def heading(self, name: str) -> str:
        """How reports and plots name the config entry ``name`` of this benchmark: its title, and the entry's
        name beside it where that says more (e.g. "Belebele (belebele_tt)" for a translate-test entry)."""
        return self.display_title if name in (self.kind, self.display_title) else f"{self.display_title} ({name})"

    @property
    def finding_prefix(self) -> str:
        return self.kind

    def label(self, key: str) -> str:
        return self.labels.get(key, key)

    def language_info(self, code: str, groups: dict[str, str] | None = None) -> dict[str, Any]:
        """The per-language columns of the report for one of this benchmark's codes, from the language
        table: ``code`` (the table's), ``name``, ``script``, ``family`` and ``resource`` (the user's grouping
        file ``groups`` or the table's default taxonomy). A code the table lacks gets ``n/a``."""
        table = self.table_code(code)
        lang = langtab.lookup(table)
        return {"code": lang.code if lang else code, "name": lang.name if lang else code,
                "script": lang.script if lang else langtab.UNGROUPED,
                "family": lang.family if lang else langtab.UNGROUPED,
                "resource": langtab.resource_level(table, groups)}

    def report_columns(self) -> list[str]:
        """The columns of the per-language table in ``report.md`` / ``report.tex`` (those present)."""
        return ["language", "name", *self.language_groupings, "accuracy", "ci_low", "ci_high",
                *(f"acc_{s}" for s in self.subsets), "n", "truncated"]

    def summary(self, per_lang: Any, groups: dict[str, str] | None = None) -> dict[str, Any]:
        """Headline numbers over languages (:func:`xlt.metrics.summarize`: ``mean`` always, the
        threshold counts, each subset's mean, the means per grouping); ``resource_taxonomy`` says where
        the resource levels come from when results are grouped by them."""
        out = summarize(per_lang, self.language_groupings, self.subsets, self.thresholds)
        if "resource" in self.language_groupings:
            out["resource_taxonomy"] = langtab.resource_taxonomy(groups)
        return out

    def summary_frames(self, summary: dict[str, Any]) -> dict[str, Any]:
        """Small DataFrames of a :meth:`summary`, one per table of ``report.md`` (title -> frame)."""
        import pandas as pd

        overview = {"mean accuracy": summary["mean"], "languages": summary["n_languages"],
                    **{f"languages >= {t:g}": summary.get(f"n_ge_{t:g}") for t in self.thresholds}}
        if summary.get("chance") is not None:
            overview["chance"] = summary["chance"]
        frames = {"overview": pd.DataFrame([overview])}
        if self.subsets:
            frames["subsets"] = pd.DataFrame([{"subset": s, "mean accuracy": summary.get(s)} for s in ("full", *self.subsets)])
        for key, value in summary.items():  # finer subsets, e.g. by_category
            by = key.removeprefix("by_")
            if key.startswith("by_") and by not in self.language_groupings and isinstance(value, dict):
                frames[f"by {self.label(by)}"] = pd.DataFrame([{self.label(by): k, "mean accuracy": v} for k, v in value.items()])
        for by in self.language_groupings:
            if f"by_{by}" in summary:
                frames[f"by {self.label(by)}"] = pd.DataFrame([
                    {self.label(by): g, "mean accuracy": v["mean"], "languages": v["n_languages"],
                     **{s: v.get(s) for s in self.subsets}} for g, v in summary[f"by_{by}"].items()])
        return frames

    def headline(self, summary: dict[str, Any]) -> list[tuple[str, Any]]:
        """The few numbers a results page shows first: (label, value) pairs."""
        out: list[tuple[str, Any]] = [("languages", summary["n_languages"]), ("mean accuracy", summary["mean"])]
        out += [(f"languages >= {t:g}", summary.get(f"n_ge_{t:g}")) for t in self.thresholds]
        out += [(self.label(s), summary.get(s)) for s in self.subsets]
        if summary.get("chance") is not None:
            out.append(("chance", summary["chance"]))
        if summary.get("resource_taxonomy"):
            out.append(("resource levels", summary["resource_taxonomy"]))
        return out


class ConfigPerLanguage(Benchmark):
    """A benchmark published as one Hub config per language, each with named splits (Global-MMLU, XCOPA).

    Local copy in the Hub's layout: ``<path>/<config>/<split>-00000-of-00001.parquet`` (also
    ``<split>.parquet`` or ``<split>.jsonl``). A subclass declares its upstream ``fields`` (all
    required), the ``key_fields`` that may not be null, the ``features`` of its converted items and
    ``convert_row`` (``(row, *, language, where) -> record``, see :func:`convert_split`).
    """

    fields: tuple[str, ...] = ()
    features: Features | None = None
    key_fields: tuple[str, ...] = ()
    convert_row: Callable[..., dict[str, Any]]

    def offline_languages(self) -> list[str]:
        """The configs to assume offline (datasets then answers the config list as ["default"])."""
        return sorted(self.known_languages())

    def languages(self, bcfg: Any) -> list[str]:
        root = self.local_path(bcfg)
        if root is not None:
            # Hidden and private folders (".cache", "__pycache__") are not configs.
            return sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))
        hub_id = self.hub_id(bcfg)
        if offline():
            return self.offline_languages()
        with hub_resource("dataset", hub_id, bcfg.revision, f"eval.benchmarks.{self.kind}.path"):
            return sorted(get_dataset_config_names(hub_id, revision=bcfg.revision))

    @staticmethod
    def split_file(folder: Path, split: str) -> Path | None:
        """The file of ``split`` in one config's folder of a local copy (None: there is none)."""
        for name in (f"{split}-00000-of-00001.parquet", f"{split}.parquet", f"{split}.jsonl"):
            if (folder / name).is_file():
                return folder / name
        shards = sorted(folder.glob(f"{split}-*.parquet"))
        return shards[0] if len(shards) == 1 else None

    def load_all(self, bcfg: Any, language: str, split: str = "test") -> tuple[Dataset, str]:
        code = self.canonical(language)
        root = self.local_path(bcfg)
        if root is not None:
            if not (root / code).is_dir():
                raise langtab.unknown_code_error(code, self.languages(bcfg), f"{self.kind} language code (in {root})")
            file = self.split_file(root / code, split)
            if file is None:
                raise DataError(f"{root / code}: no '{split}' split file ({split}-00000-of-00001.parquet, "
                                f"{split}.parquet or {split}.jsonl)")
            raw = load_local_file(file)
            where = str(file)
        else:
            hub_id = self.hub_id(bcfg)
            with hub_resource("dataset", hub_id, bcfg.revision, f"eval.benchmarks.{self.kind}.path"):
                raw = load_dataset(hub_id, code, split=split, revision=bcfg.revision)
            where = f"{hub_id}[{code}/{split}]"
        ds = convert_split(raw, code, where, fields=self.fields, features=self.features,
                           convert_row=self.convert_row, key_fields=self.key_fields, desc=f"{self.kind} {code}")
        return ds, where


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


@dataclass(frozen=True)
class Claim:
    """A finding of a benchmark's paper, declared as data on its definition (:attr:`Benchmark.findings`).

    ``check`` names one of the generic check kinds of :mod:`xlt.reporting.findings` (which runs it on
    the systems of a comparison), ``id`` the finding within the benchmark (its id in reports is
    ``<finding_prefix>_<id>``), ``text`` the claim in words, ``params`` what the check compares (see
    the check kind). What the paper says: ``quote`` (its sentence, with ``section`` where it stands);
    ``verbatim`` says whether it is the paper's own words, checked against its text, or a paraphrase (a
    statement whose wording could not be checked is never passed off as a quote). ``needs``: the
    systems and languages the check needs.
    """

    check: str
    id: str
    text: str
    params: dict[str, Any] = field(default_factory=dict)
    quote: str = ""
    section: str = ""
    verbatim: bool = False
    needs: str = ""

    def cited(self) -> str:
        """The paper's sentence as reports show it: quoted (verbatim) or marked as a paraphrase."""
        if not self.quote:
            return ""
        where = f" ({self.section})" if self.section else ""
        return f"\u201c{self.quote}\u201d{where}" if self.verbatim else f"paraphrase{where}: {self.quote}"


BENCHMARKS.base = Benchmark  # a definition file's subclasses with a kind register (xlt.registry.include)

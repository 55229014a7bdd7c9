"""What every evaluation benchmark provides: the :class:`Benchmark` base class (loading as code, prompt and report as data).

A benchmark turns its upstream rows (Hub or a local copy in the Hub's layout) into the uniform
evaluation record (:data:`xlt.data.schema.EVAL_FEATURES`) plus metadata columns. Two calls make the API:

* ``bench.languages(bcfg) -> list[str]``: the language codes the source really has (read at run time);
* ``bench.load(bcfg, language, split="test") -> datasets.Dataset``
  (``bench.load_checked`` also returns the data checks).

``bench.select_languages(bcfg)`` validates the user's selection (``bcfg.languages``) against them.

The helpers the loaders share (reading a local file, converting upstream rows, the data checks and the
anomaly policy) are in :mod:`xlt.data.benchmarks.loading`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from datasets import Dataset, Features, get_dataset_config_names, load_dataset

from xlt import languages as langtab
from xlt.config.eval import BenchmarkConfig
from xlt.data.benchmarks.declarations import Claim, HarnessTasks, Prompt, Report, Subset
from xlt.data.benchmarks.loading import (
    check_items,
    convert_split,
    data_checks,
    load_local_file,
    require_columns,
    text,
)
from xlt.errors import ConfigError, DataError
from xlt.hub import hub_resource, offline

# The members a definition declared before prompts and reports were data, and what replaced each.
MOVED = {
    "doc_to_text": "prompt = Prompt(text=..., option=..., raw=...)",
    "doc_to_choice": "prompt = Prompt(choices=...)", "doc_to_target": "prompt = Prompt(choices=...)",
    "instruction": "prompt = Prompt(instruction=...)",
    "fewshot_samplers": "prompt = Prompt(samplers=...)", "default_fewshot_sampler": "prompt = Prompt(sampler=...)",
    "fewshot_group": "prompt = Prompt(fewshot_groups=...)", "harness_task_unit": "prompt = Prompt(harness_task_unit=...)",
    "fewshot_indices": "drawn by xlt.scoring.llm.task.HarnessTask from prompt = Prompt(...)",
    **{n: f"report = Report({n}=...)" for n in ("title", "language_groupings", "thresholds", "labels", "rank_subsets",
                                                 "rank_pairs", "contrast", "finding_prefix")},
    "display_title": "report = Report(title=...)", "findings": "report = Report(claims=...)",
    **{n: "report = Report(subsets=(Subset(name, column, value), ...))" for n in ("subsets", "subset_columns", "subset_masks")},
    **{n: "built by xlt.reporting.tables from report = Report(...)" for n in
       ("summary", "summary_frames", "headline", "report_columns", "heading", "label")},
}


def datasets_rows(path: Path) -> Dataset:
    """A local JSONL or Parquet file's rows as the datasets library reads them (``load_dataset("json" |
    "parquet", data_files=...)``: lm-evaluation-harness's reading of a task with that ``dataset_path``, its
    type inference included); unreadable: a :class:`DataError` naming the file."""
    kind = "parquet" if path.suffix == ".parquet" else "json"
    try:
        return load_dataset(kind, data_files=str(path), split="train")
    except Exception as err:  # noqa: BLE001 - the datasets library's parse and schema errors
        raise DataError(f"{path}: the datasets library cannot read it ({type(err).__name__}: "
                        f"{str(err).splitlines()[0] if str(err) else ''})") from None


class Benchmark(ABC):
    """One benchmark, one definition: everything xlt needs to know about it (see the module docstring).

    The loader half (:meth:`languages`, :meth:`load_all`) is abstract; its defaults suit a plain
    multiple-choice benchmark. The rest is declared as data (:mod:`xlt.data.benchmarks.declarations`):
    ``prompt`` (how a causal LLM is prompted, formatted by :mod:`xlt.scoring.llm.task`) and ``report`` (its
    subsets, how results are grouped, summarised and shown, its paper's claims; built by
    :mod:`xlt.reporting`). No other module names a benchmark: they ask its definition.
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
    pivot_language: str | None = "eng_Latn"
    # The split LLM few-shot examples come from (None: the evaluated split itself, other items of the same
    # language, the question itself skipped).
    fewshot_split: str | None = None
    prompt: Prompt = Prompt()
    report: Report = Report()
    # lm-evaluation-harness's names of its tasks, their targets, metrics and groups (None: the harness has no
    # such task; xlt neither writes nor reads its files for this benchmark: xlt.reporting.harness).
    harness: HarnessTasks | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A definition written before prompts and reports were declared as data is refused, naming the
        declaration that replaces each old member (docs/adding-a-benchmark.md)."""
        super().__init_subclass__(**kwargs)
        old = [name for name in cls.__dict__ if name in MOVED]
        if old:
            raise TypeError(f"benchmark definition {cls.__qualname__}: " + "; ".join(f"{n} is now {MOVED[n]}" for n in old)
                            + " (see docs/adding-a-benchmark.md)")

    @property
    def title(self) -> str:
        """The name reports, plots and findings give this benchmark: its declared ``report.title``, else its kind."""
        return self.report.title or self.kind

    def item_subsets(self, items: Any) -> dict[str, Any]:
        """``{"full": all items, <subset>: mask, ...}`` (numpy boolean arrays) over a Dataset or DataFrame of
        one language's items, for the subsets ``report.subsets`` declares (empty when there are none)."""
        subsets = self.report.subsets
        if not subsets:
            return {}
        import numpy as np
        import pandas as pd

        columns = list(self.report.subset_columns)
        meta = items if isinstance(items, pd.DataFrame) else items.select_columns(columns).to_pandas()
        masks = {"full": np.ones(len(meta), dtype=bool)}
        for s in subsets:
            if s.per_value:
                masks.update({f"{s.name}/{v}": (meta[s.column] == v).to_numpy() for v in sorted(meta[s.column].unique())})
            else:
                masks[s.name] = (meta[s.column] == s.value).to_numpy(dtype=bool)
        return masks

    def contamination_texts(self, bcfg: BenchmarkConfig) -> list[str]:
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

    def hub_id(self, bcfg: BenchmarkConfig) -> str:
        return bcfg.hub_id or self.default_hub_id

    def local_path(self, bcfg: BenchmarkConfig) -> Path | None:
        if not bcfg.path:
            return None
        path = Path(str(bcfg.path)).expanduser()
        if not path.is_dir():
            raise ConfigError(f"{self.kind}: local copy {path} does not exist or is not a folder (path=)")
        return path

    @abstractmethod
    def languages(self, bcfg: BenchmarkConfig) -> list[str]:
        """Language codes available in the configured source (sorted)."""

    @abstractmethod
    def load_all(self, bcfg: BenchmarkConfig, language: str, split: str = "test") -> tuple[Dataset, str]:
        """Every item of one language in the evaluation schema, and where it was read (for errors)."""

    def upstream_rows(self, bcfg: BenchmarkConfig, language: str, split: str = "test", *,
                      as_datasets_reads: bool = True) -> tuple[Dataset, str]:
        """One language's rows as the source holds them (before conversion; :meth:`load_all` converts the same
        rows in the same order), and where they were read: what lm-evaluation-harness logs as each sample's
        ``doc`` (:mod:`xlt.reporting.harness`). ``as_datasets_reads``: a local file is read by the datasets
        library (:func:`datasets_rows`), as the harness reads ``dataset_path: json`` or ``parquet``, with its
        type inference (a date string becomes a timestamp); else by xlt's own checked reader
        (:func:`load_local_file`, what :meth:`load_all` converts). A definition that does not give them cannot
        be exported."""
        raise DataError(f"{self.kind}: its definition does not give its upstream rows (upstream_rows), which the "
                        "harness's sample logs hold")

    def convert_upstream(self, raw: Dataset, language: str, where: str) -> Dataset:
        """Upstream rows (as :meth:`upstream_rows` gives them, or as another tool logged them) in the evaluation
        schema, each row checked; errors name ``where`` and the 1-based row."""
        raise DataError(f"{self.kind}: its definition does not convert upstream rows (convert_upstream)")

    def load_checked(self, bcfg: BenchmarkConfig, language: str, split: str = "test") -> tuple[Dataset, dict[str, int]]:
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

    def load(self, bcfg: BenchmarkConfig, language: str, split: str = "test") -> Dataset:
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

    def select_languages(self, bcfg: BenchmarkConfig, available: Sequence[str] | None = None) -> list[str]:
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

    def languages(self, bcfg: BenchmarkConfig) -> list[str]:
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

    def load_all(self, bcfg: BenchmarkConfig, language: str, split: str = "test") -> tuple[Dataset, str]:
        code = self.canonical(language)
        raw, where = self.upstream_rows(bcfg, language, split, as_datasets_reads=False)
        return self.convert_upstream(raw, code, where), where

    def convert_upstream(self, raw: Dataset, language: str, where: str) -> Dataset:
        return convert_split(raw, language, where, fields=self.fields, features=self.features,
                             convert_row=self.convert_row, key_fields=self.key_fields, desc=f"{self.kind} {language}")

    def upstream_rows(self, bcfg: BenchmarkConfig, language: str, split: str = "test", *,
                      as_datasets_reads: bool = True) -> tuple[Dataset, str]:
        code = self.canonical(language)
        root = self.local_path(bcfg)
        if root is not None:
            if not (root / code).is_dir():
                raise langtab.unknown_code_error(code, self.languages(bcfg), f"{self.kind} language code (in {root})")
            file = self.split_file(root / code, split)
            if file is None:
                raise DataError(f"{root / code}: no '{split}' split file ({split}-00000-of-00001.parquet, "
                                f"{split}.parquet or {split}.jsonl)")
            raw = datasets_rows(file) if as_datasets_reads else load_local_file(file)
            where = str(file)
        else:
            hub_id = self.hub_id(bcfg)
            with hub_resource("dataset", hub_id, bcfg.revision, f"eval.benchmarks.{self.kind}.path"):
                raw = load_dataset(hub_id, code, split=split, revision=bcfg.revision)
            where = f"{hub_id}[{code}/{split}]"
        return raw, where


# What a definition file imports beside the base class: the declarations (xlt.data.benchmarks.declarations).
__all__ = ["Benchmark", "Claim", "ConfigPerLanguage", "HarnessTasks", "datasets_rows", "Prompt", "Report", "Subset", "check_items", "convert_split",
           "data_checks", "load_local_file", "require_columns", "text"]

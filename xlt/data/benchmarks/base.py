"""What every evaluation benchmark provides, and the helpers the loaders share.

A benchmark turns its upstream rows (Hub or a local copy in the Hub's layout) into the uniform
evaluation record (:data:`xlt.data.schema.EVAL_FEATURES`) plus metadata columns. Two calls make the API:

* ``bench.languages(bcfg) -> list[str]``: the language codes the source really has (read at run time);
* ``bench.load(bcfg, language, split="test") -> datasets.Dataset``.

``bench.select_languages(bcfg)`` validates the user's selection (``bcfg.languages``) against them.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from datasets import Dataset, Features, load_dataset

from xlt import languages as langtab
from xlt.errors import ConfigError, DataError


class Benchmark(ABC):
    """Base class of the benchmark loaders (see the module docstring for the API)."""

    kind: str = ""
    default_hub_id: str = ""
    # What the rest of xlt needs to know about a benchmark, in one place (as a task definition in
    # lm-evaluation-harness): the prompt/few-shot family its variants share, whether items carry the
    # metadata of MA/CS/CA and category subsets, and the split LLM few-shot examples come from (None:
    # the evaluated split itself, other items of the same language).
    family: str = ""
    has_subsets: bool = False
    fewshot_split: str | None = None

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
    def load(self, bcfg: Any, language: str, split: str = "test") -> Dataset:
        """Items of one language in the evaluation schema."""

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


def load_local_file(path: Path) -> Dataset:
    """Read one local JSONL or Parquet file as a Dataset; unreadable files raise :class:`DataError`."""
    builder = "parquet" if path.suffix == ".parquet" else "json"
    try:
        return load_dataset(builder, data_files=str(path), split="train")
    except Exception as err:  # datasets raises many types for malformed files
        raise DataError(f"{path}: could not read as {builder}: {str(err).splitlines()[0]}") from None


def require_columns(ds: Dataset, required: Sequence[str], where: str) -> None:
    """Raise :class:`DataError` if a required field is missing from every row of ``ds``."""
    missing = [c for c in required if c not in ds.column_names]
    if missing:
        raise DataError(f"{where}: missing field(s) {missing} (row 1 onwards); found {ds.column_names}")


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

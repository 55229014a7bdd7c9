"""The training data of the train stage: the built set, or its translate-train-all union when the recipe
configures translations (:func:`translate_train_all`), tokenized."""

from __future__ import annotations

import logging
from collections import Counter
from pathlib import Path
from typing import Any

from datasets import DatasetDict

from xlt.config.training import TrainingConfig
from xlt.config.translate import translate_train_all  # noqa: F401  (re-exported: whether the union is used)
from xlt.errors import DataError
from xlt.modeling.features import tokenize_mc
from xlt.run.layout import RunDir

log = logging.getLogger("xlt.training")


def load_training_set(training: TrainingConfig, run: RunDir, ds: DatasetDict) -> DatasetDict:
    """The training set ``ds`` the stage read, checked and cut to ``training.max_train_rows`` / ``max_dev_rows``:
    the translate-train-all union when the recipe configures translations (:func:`translate_train_all`;
    :func:`xlt.translation.union.build_train_all`), else the English training set checked against what the
    build_data stage wrote (:func:`xlt.run.artifacts.checked_train_set`)."""
    for split in ("train", "dev"):
        if split not in ds:
            raise DataError(f"{run.train_set}: split '{split}' is missing (found {sorted(ds)})")
        if len(ds[split]) == 0:
            raise DataError(f"{run.train_set}: split '{split}' is empty")
    limits = {"train": training.max_train_rows, "dev": training.max_dev_rows}
    return DatasetDict(
        {s: ds[s].select(range(min(n, len(ds[s])))) if n is not None else ds[s] for s, n in limits.items()}
    )


def rows_by_language(ds: DatasetDict) -> dict[str, dict[str, int]]:
    """``{"train_rows_by_language": {code: n}, "dev_rows_by_language": ...}`` for a multilingual set, else {}."""
    if "language" not in ds["train"].column_names:
        return {}
    return {f"{s}_rows_by_language": dict(sorted(Counter(ds[s]["language"]).items())) for s in ("train", "dev")}


def tokenized_splits(ds: DatasetDict, tokenizer, max_length: int) -> DatasetDict:
    """Features of both splits (cached by data fingerprint, tokenizer and max_length)."""
    return DatasetDict({s: _tokenized(ds[s], tokenizer, max_length, s) for s in ("train", "dev")})


def _damaged_caches(split: Any) -> list[tuple[Path, str]]:
    """The ``datasets`` map caches (``cache-*.arrow``) beside ``split``'s data that cannot be read through."""
    import pyarrow as pa

    folders = {Path(f["filename"]).parent for f in split.cache_files}
    out = []
    for cache in sorted(p for folder in folders for p in folder.glob("cache-*.arrow")):
        try:
            with pa.memory_map(str(cache)) as source:
                pa.ipc.open_stream(source).read_all()
        except (OSError, ValueError) as err:  # pyarrow: ArrowInvalid (a ValueError), OSError
            out.append((cache, f"{type(err).__name__}: {str(err)[:160]}"))
    return out


def _tokenized(split: Any, tokenizer, max_length: int, name: str) -> Any:
    """:func:`tokenize_mc` of one split. Its cache lives beside the training set (a node crash on a shared file
    system can leave it truncated): a damaged cache is derived data, removed (named in the log) and
    recomputed; data that still cannot be read is a :class:`DataError` naming the folder."""
    for attempt in range(2):
        try:
            return tokenize_mc(split, tokenizer, max_length, desc=f"tokenize {name}")
        except (OSError, ValueError) as err:
            damaged = _damaged_caches(split) if attempt == 0 else []
            if not damaged:
                where = ", ".join(sorted({str(Path(f["filename"]).parent) for f in split.cache_files})) or "memory"
                raise DataError(f"the {name} split of the training set ({where}) cannot be read ({type(err).__name__}: "
                                f"{str(err)[:200]}); rebuild it: python -m xlt.build_data with the same recipe and "
                                "overrides plus force=true") from None
            for cache, why in damaged:
                log.warning("damaged tokenization cache %s (%s): removed, the %s split is tokenized again", cache, why, name)
                cache.unlink(missing_ok=True)
    raise AssertionError("unreachable")  # pragma: no cover

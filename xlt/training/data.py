"""The training data of the train stage: the built set, or its translate-train-all union when the recipe
configures translations (:func:`translate_train_all`), tokenized."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from typing import Any

from datasets import DatasetDict

from xlt.config.translate import translate_train_all
from xlt.errors import DataError
from xlt.modeling.features import tokenize_mc
from xlt.run import RunDir
from xlt.state import Damaged, load_dataset_dir
from xlt.translation.union import build_train_all

log = logging.getLogger("xlt.training")


def load_training_set(cfg: Any, run: RunDir, sealed_problems: Callable[[], list[str]]) -> DatasetDict:
    """The translate-train-all union when the recipe configures translations, else ``run.train_set``, which
    ``sealed_problems`` (from the stage: what changed in the build_data stage's outputs since it wrote them)
    must find sound."""
    if translate_train_all(cfg):
        ds = build_train_all(cfg, run)
    else:
        if not (run.train_set / "dataset_dict.json").exists():
            raise DataError(
                f"no training set at {run.train_set}: run the build_data stage first "
                "(python -m xlt.build_data with the same recipe and overrides)"
            )
        try:
            changed = sealed_problems()
            if changed:
                raise Damaged(run.train_set, changed[0])
            ds = load_dataset_dir(run.train_set)
        except Damaged as err:
            raise DataError(f"{err}; rerun the build_data stage (python -m xlt.build_data with the same recipe "
                            "and overrides: it rebuilds the damaged set)") from None
    for split in ("train", "dev"):
        if split not in ds:
            raise DataError(f"{run.train_set}: split '{split}' is missing (found {sorted(ds)})")
        if len(ds[split]) == 0:
            raise DataError(f"{run.train_set}: split '{split}' is empty")
    limits = {"train": cfg.training.max_train_rows, "dev": cfg.training.max_dev_rows}
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
    return DatasetDict({s: tokenize_mc(ds[s], tokenizer, max_length, desc=f"tokenize {s}") for s in ("train", "dev")})

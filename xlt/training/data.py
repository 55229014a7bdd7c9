"""The training data of the train stage: the built set (or its translate-train-all union), tokenized."""

from __future__ import annotations

import logging
from typing import Any

from datasets import DatasetDict, load_from_disk

from xlt.errors import ConfigError, DataError
from xlt.modeling.features import tokenize_mc
from xlt.run import RunDir

log = logging.getLogger("xlt.training")

SETTINGS = ("english", "translate_train_all")


def load_training_set(cfg: Any, run: RunDir) -> DatasetDict:
    """``run.train_set`` (setting ``english``) or the translate-train-all union, as train/dev."""
    setting = cfg.training.setting
    if setting not in SETTINGS:
        raise ConfigError(f"training.setting must be one of {list(SETTINGS)}, got {setting!r}")
    if setting == "translate_train_all":
        from xlt.translation.union import build_train_all

        ds = build_train_all(cfg, run)
    else:
        if not (run.train_set / "dataset_dict.json").exists():
            raise DataError(
                f"no training set at {run.train_set}: run the build_data stage first "
                "(python -m xlt.build_data with the same recipe and overrides)"
            )
        ds = load_from_disk(str(run.train_set))
    for split in ("train", "dev"):
        if split not in ds:
            raise DataError(f"{run.train_set}: split '{split}' is missing (found {sorted(ds)})")
        if len(ds[split]) == 0:
            raise DataError(f"{run.train_set}: split '{split}' is empty")
    limits = {"train": cfg.training.max_train_rows, "dev": cfg.training.max_dev_rows}
    return DatasetDict(
        {s: ds[s].select(range(min(n, len(ds[s])))) if n is not None else ds[s] for s, n in limits.items()}
    )


def tokenized_splits(ds: DatasetDict, tokenizer, max_length: int) -> DatasetDict:
    """Features of both splits (cached by data fingerprint, tokenizer and max_length)."""
    return DatasetDict({s: tokenize_mc(ds[s], tokenizer, max_length, desc=f"tokenize {s}") for s in ("train", "dev")})

"""Fixtures of the translation tests: a small English training set in a run directory, and configs."""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("WANDB_MODE", "disabled")

from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import pytest  # noqa: E402
from datasets import Dataset, DatasetDict  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402

from xlt.config import XltConfig  # noqa: E402
from xlt.data.schema import TRAIN_FEATURES  # noqa: E402
from xlt.run.layout import RunDir  # noqa: E402

PASSAGES = [
    "Tom went to the market. He bought three apples!\n\nThen he walked home. It was late.",
    "The river is long. Many fish live in it.",
    "Mr. Smith teaches science. His students like him? Yes, they do.",
    "Anna plays the violin. She practises every day.",
]


def english_rows(n: int, split: str) -> list[dict[str, Any]]:
    """``n`` rows in TRAIN_FEATURES; passages shared by several questions, one option repeated everywhere."""
    rows = []
    for i in range(n):
        p = i % len(PASSAGES)
        rows.append(
            {
                "dataset": "RACE" if i % 2 == 0 else "sciQ",
                "split": split,
                "passage_id": f"{split}-p{p}",
                "question_id": f"{split}-q{i}",
                "passage": PASSAGES[p],
                "question": f"What is true about item {i}?",
                "options": [f"Answer {i} one", f"Answer {i} two", "None of the above", f"Answer {i} four"],
                "label": i % 4,
                "license": "test",
            }
        )
    return rows


def make_train_set(n_train: int = 14, n_dev: int = 5) -> DatasetDict:
    return DatasetDict(
        {
            "train": Dataset.from_list(english_rows(n_train, "train"), features=TRAIN_FEATURES),
            "dev": Dataset.from_list(english_rows(n_dev, "dev"), features=TRAIN_FEATURES),
        }
    )


def make_run(path: Path, n_train: int = 14, n_dev: int = 5) -> RunDir:
    run = RunDir(path)
    make_train_set(n_train, n_dev).save_to_disk(str(run.train_set))
    return run


def make_cfg(**translate: Any) -> Any:
    """The validated root config with ``translate`` overrides (echo translator, two languages by default)."""
    base = {"kind": "echo", "languages": ["fra_Latn", "deu_Latn"], "batch_size": 4, "rows_per_unit": 5}
    cfg = OmegaConf.merge(OmegaConf.structured(XltConfig), {"translate": {**base, **translate}})
    return cfg


@pytest.fixture
def run(tmp_path: Path) -> RunDir:
    return make_run(tmp_path / "run")

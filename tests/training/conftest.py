"""Fixtures for the training tests: a small train/dev set in TRAIN_FEATURES built from the bundled
RACE-schema demo file, and a validated config for the tiny model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from datasets import Dataset, DatasetDict
from omegaconf import OmegaConf

from xlt import config as xcfg
from xlt.data.schema import TRAIN_FEATURES
from xlt.run.layout import RunDir

RACE = Path(__file__).resolve().parents[2] / "xlt" / "assets" / "demo" / "race"


def race_rows(split: str, n: int) -> list[dict[str, Any]]:
    """The first ``n`` rows of the demo RACE file, converted to the training record."""
    rows = []
    for i, line in enumerate((RACE / f"{split}.jsonl").read_text(encoding="utf-8").splitlines()[:n]):
        r = json.loads(line)
        rows.append({
            "dataset": "race", "split": split, "passage_id": r["example_id"], "question_id": f"{split}-{i}",
            "passage": r["article"], "question": r["question"], "options": r["options"],
            "label": "ABCD".index(r["answer"]), "license": "demo",
        })
    return rows


def write_train_set(run: RunDir, n_train: int, n_dev: int) -> DatasetDict:
    ds = DatasetDict({
        "train": Dataset.from_list(race_rows("train", n_train), features=TRAIN_FEATURES),
        "dev": Dataset.from_list(race_rows("validation", n_dev), features=TRAIN_FEATURES),
    })
    ds.save_to_disk(str(run.train_set))
    return ds


def make_cfg(**overrides: Any):
    """A validated root config (tiny model) with dotted-key overrides."""
    base = {
        "recipe_name": "test", "seed": 7,
        "model": {"max_length": 64},
        "training": {
            "learning_rate": 2e-3, "num_train_epochs": 1, "per_device_train_batch_size": 16,
            "per_device_eval_batch_size": 64, "warmup_ratio": 0.1, "logging_steps": 5,
            "eval_steps": 10, "save_total_limit": 2, "stop_on_collapse": False,
        },
    }
    cfg = OmegaConf.create(base)
    for key, value in overrides.items():
        OmegaConf.update(cfg, key, value, force_add=True)
    return xcfg.validate(cfg)


@pytest.fixture
def run_dir(tmp_path) -> RunDir:
    return RunDir(tmp_path / "run")

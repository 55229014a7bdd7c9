"""Translate-train-all is decided by the recipe: configured translations are trained on, or rejected."""

from __future__ import annotations

import json

import pytest

from tests.training.conftest import make_cfg, write_train_set
from xlt.errors import ConfigError
from xlt.stages import call_stage
from xlt.training.data import translate_train_all

ECHO = {"translate.kind": "echo", "translate.languages": ["fra_Latn", "deu_Latn"], "translate.batch_size": 64}
SHORT = {"training.max_steps": 4, "training.eval_steps": 2}


def test_the_recipe_decides():
    assert not translate_train_all(make_cfg())
    assert translate_train_all(make_cfg(**ECHO))
    assert translate_train_all(make_cfg(**{"translate.import_dir": "/some/dir"}))
    assert translate_train_all(make_cfg(stages=["build_data", "translate", "train"]))


def test_trains_on_english_and_every_translation(run_dir):
    write_train_set(run_dir, 40, 12)
    cfg = make_cfg(**ECHO, **SHORT)
    call_stage("translate", cfg, run_dir)
    summary = call_stage("train", cfg, run_dir)
    metrics = json.loads((run_dir.path / "train_metrics.json").read_text())
    expected = {"deu_Latn": 40, "eng_Latn": 40, "fra_Latn": 40}
    assert metrics["train_rows_by_language"] == expected and summary["train_rows"] == 120
    assert metrics["dev_rows_by_language"] == {"deu_Latn": 12, "eng_Latn": 12, "fra_Latn": 12}
    assert "translate-train-all" in (run_dir.model / "README.md").read_text()


def test_configured_but_not_translated_is_rejected(run_dir):
    write_train_set(run_dir, 40, 12)
    with pytest.raises(ConfigError, match=r"'fra_Latn'.*run the translate stage first"):
        call_stage("train", make_cfg(**ECHO, **SHORT), run_dir)


def test_translate_stage_without_languages_is_rejected(run_dir):
    write_train_set(run_dir, 40, 12)
    with pytest.raises(ConfigError, match="translate.languages is empty"):
        call_stage("train", make_cfg(stages=["build_data", "translate", "train"], **SHORT), run_dir)

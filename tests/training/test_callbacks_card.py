"""Collapse detector, crash simulator and model card, without training."""

from __future__ import annotations

import pytest
from transformers import TrainerControl, TrainerState, TrainingArguments

from tests.training.conftest import make_cfg
from tests.training.helpers import CrashAtStep, SimulatedCrash
from xlt.config.translate import translate_train_all
from xlt.training.callbacks import CollapseDetector
from xlt.training.card import EVAL_BEGIN, EVAL_END, fill_evaluation_section, render_card


def _evaluate(cb, args, step, acc, max_steps=100):
    state = TrainerState(global_step=step, max_steps=max_steps)
    control = TrainerControl()
    cb.on_evaluate(args, state, control, metrics={"eval_accuracy": acc})
    return control


@pytest.fixture
def args(tmp_path):
    return TrainingArguments(output_dir=str(tmp_path), warmup_steps=0.2, use_cpu=True, report_to="none")


def test_collapse_ignored_during_warmup(args):
    cb = CollapseDetector(margin=0.03, patience=1)
    assert not _evaluate(cb, args, step=20, acc=0.25).should_training_stop  # warmup = 20 steps
    assert cb.collapsed is None


def test_collapse_needs_patience_evaluations_in_a_row(args):
    cb = CollapseDetector(margin=0.03, patience=2, stop=True)
    assert not _evaluate(cb, args, 30, 0.26).should_training_stop
    assert not _evaluate(cb, args, 40, 0.40).should_training_stop  # learning: streak resets
    assert not _evaluate(cb, args, 50, 0.24).should_training_stop
    assert _evaluate(cb, args, 60, 0.27).should_training_stop
    assert cb.collapsed == {"step": 60, "accuracy": 0.27, "evaluations": 2}


def test_collapse_warns_without_stopping(args, caplog):
    cb = CollapseDetector(margin=0.03, patience=1, stop=False)
    assert not _evaluate(cb, args, 30, 0.25).should_training_stop
    assert cb.collapsed and "collapsed" in caplog.text


def test_crash_at_step():
    cb = CrashAtStep(3)
    cb.on_step_end(None, TrainerState(global_step=2), TrainerControl())
    with pytest.raises(SimulatedCrash):
        cb.on_step_end(None, TrainerState(global_step=3), TrainerControl())


def _card(cfg, summary, data_info):
    """:func:`render_card` given the sections the train stage passes it."""
    return render_card(cfg.model, cfg.training, cfg.data, cfg.eval, summary, data_info, seed=cfg.seed,
                       recipe_name=cfg.recipe_name, description=cfg.description, train_all=translate_train_all(cfg))


def test_card_and_evaluation_section(tmp_path):
    cfg = make_cfg(**{"recipe_name": "xlmr_zeroshot", "model.name_or_path": "FacebookAI/xlm-roberta-base",
                      "model.revision": "abc123"})
    summary = {"best_dev_accuracy": 0.6123, "best_step": 400, "effective_batch_size": 32, "precision": "bf16",
               "dev_accuracy_history": [{"step": 200, "accuracy": 0.5}, {"step": 400, "accuracy": 0.6123}]}
    text = _card(cfg, summary, {"train": 1000, "dev": 100})
    assert text.startswith("---\nlibrary_name: transformers")
    assert "base_model: FacebookAI/xlm-roberta-base" in text and "`abc123`" in text
    assert "**0.6123** at step 400" in text and "| 200 | 0.5000 |" in text and "train: 1000 rows" in text
    path = tmp_path / "README.md"
    path.write_text(text)
    fill_evaluation_section(path, "| lang | acc |\n|---|---|\n| eng_Latn | 0.7 |")
    new = path.read_text()
    assert "eng_Latn | 0.7" in new and "Not evaluated yet" not in new
    assert new.index(EVAL_BEGIN) < new.index("eng_Latn") < new.index(EVAL_END)
    fill_evaluation_section(path, "second")  # idempotent: replaces, never appends
    assert "eng_Latn" not in path.read_text() and path.read_text().count(EVAL_BEGIN) == 1


def test_card_lora_front_matter():
    cfg = make_cfg(**{"model.lora.enabled": True})
    text = _card(cfg, {"best_dev_accuracy": 0.3, "best_step": 10}, {"train": 1, "dev": 1})
    assert "library_name: peft" in text and "r=8" in text and "base_model" not in text.split("---")[1]

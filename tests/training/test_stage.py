"""The train stage on the tiny model: it learns, keeps the best checkpoint, resumes, trains LoRA."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from datasets import load_from_disk

from tests.training.conftest import make_cfg, write_train_set
from tests.training.helpers import CrashAtStep, SimulatedCrash
from xlt.errors import DataError
from xlt.modeling.features import MCCollator, tokenize_mc
from xlt.modeling.load import load_trained
from xlt.stages import call_stage
from xlt.training.callbacks import TrainingCollapsedError


def dev_logits(model, tokenizer, run, n: int = 32) -> torch.Tensor:
    dev = load_from_disk(str(run.train_set))["dev"].select(range(n))
    feats = tokenize_mc(dev, tokenizer, 64).remove_columns(["length"])
    batch = MCCollator(tokenizer)([feats[i] for i in range(n)])
    batch.pop("labels")
    model.eval()
    with torch.no_grad():
        return model(**batch).logits


def test_training_lowers_loss_and_beats_chance(run_dir):
    write_train_set(run_dir, 800, 120)
    cfg = make_cfg(**{"training.num_train_epochs": 3, "training.eval_steps": 20})
    summary = call_stage("train", cfg, run_dir)

    metrics = json.loads((run_dir.path / "train_metrics.json").read_text())
    losses = [h["loss"] for h in metrics["train_loss_history"]]
    assert np.mean(losses[-3:]) < losses[0] - 0.08
    # The scalar mean training loss stays a number; the dev history has each evaluation once (the best
    # checkpoint's final re-evaluation is not logged again at the last step).
    assert isinstance(metrics["train_loss"], float) and metrics["train_loss"] == pytest.approx(summary["train_loss"])
    assert [h["step"] for h in metrics["dev"]] == [*range(20, 150, 20), 150]  # the Trainer also evaluates the last step
    assert metrics["world_size"] == 1 and metrics["launch_warnings"] == []
    assert "train_rows_by_language" not in metrics  # English-only training set
    assert summary["best_dev_accuracy"] > 0.35
    # The best checkpoint is the one restored: its step is in the history with the best accuracy.
    best = max(metrics["dev"], key=lambda h: h["accuracy"])
    assert summary["best_step"] == best["step"]
    assert summary["final_dev_accuracy"] == pytest.approx(summary["best_dev_accuracy"])
    assert summary["global_step"] == 150  # 800 rows / 16 x 3 epochs

    model_dir = run_dir.model
    assert (model_dir / "model.safetensors").exists() and not (model_dir / "pytorch_model.bin").exists()
    card = (model_dir / "README.md").read_text()
    assert "xlt:evaluation:begin" in card and f"{summary['best_dev_accuracy']:.4f}" in card
    # The saved model is the best one: reloaded, it scores the reported dev accuracy.
    model, tok = load_trained(model_dir)
    dev = load_from_disk(str(run_dir.train_set))["dev"]
    logits = dev_logits(model, tok, run_dir, n=len(dev))
    acc = float((logits.argmax(-1).numpy() == np.array(dev["label"])).mean())
    assert acc == pytest.approx(summary["final_dev_accuracy"])


def test_kill_and_resume_gives_the_same_result(tmp_path):
    from xlt.run.layout import RunDir

    settings = {"training.max_steps": 30, "training.eval_steps": 10}
    one = RunDir(tmp_path / "one")
    write_train_set(one, 320, 48)
    full = call_stage("train", make_cfg(**settings), one)

    two = RunDir(tmp_path / "two")
    write_train_set(two, 320, 48)
    with pytest.raises(SimulatedCrash):
        call_stage("train", make_cfg(**settings), two, extra_callbacks=[CrashAtStep(15)])
    assert (two.checkpoints / "checkpoint-10").exists() and not two.model.exists()
    resumed = call_stage("train", make_cfg(**settings), two)

    assert resumed["resumed_from"].endswith("checkpoint-10")
    for key in ("best_dev_accuracy", "best_step", "final_dev_accuracy", "global_step"):
        assert resumed[key] == full[key], key
    h1 = json.loads((one.path / "train_metrics.json").read_text())
    h2 = json.loads((two.path / "train_metrics.json").read_text())
    assert [h["loss"] for h in h2["train_loss_history"]] == pytest.approx([h["loss"] for h in h1["train_loss_history"]], abs=1e-4)
    m1, tok = load_trained(one.model)
    m2, _ = load_trained(two.model)
    assert torch.allclose(dev_logits(m1, tok, one), dev_logits(m2, tok, two), atol=1e-5)


def test_lora_trains_saves_head_and_reloads(run_dir):
    write_train_set(run_dir, 320, 48)
    cfg = make_cfg(**{"model.lora.enabled": True, "model.lora.merge_and_save": True, "training.max_steps": 20,
                      "training.eval_steps": 10, "model.lora.r": 4})
    summary = call_stage("train", cfg, run_dir)
    assert summary["lora"] and (run_dir.model / "adapter_config.json").exists()
    assert (run_dir.model / "base_model" / "model.safetensors").exists()
    model, tok = load_trained(run_dir.model)
    # The head was trained and saved (modules_to_save): it differs from the base's random head.
    base = model.get_base_model()
    trained_head = base.classifier.modules_to_save["default"].weight
    assert not torch.allclose(trained_head, base.classifier.original_module.weight)
    # Reloading gives the reported dev accuracy, and the merged plain model gives the same logits.
    lg = dev_logits(model, tok, run_dir, n=48)
    labels = np.array(load_from_disk(str(run_dir.train_set))["dev"]["label"][:48])
    assert float((lg.argmax(-1).numpy() == labels).mean()) == pytest.approx(summary["final_dev_accuracy"])
    merged, _ = load_trained(run_dir.path / "model_merged")
    assert not (run_dir.path / "model_merged" / "adapter_config.json").exists()
    assert torch.allclose(dev_logits(merged, tok, run_dir, n=48), lg, atol=1e-5)


def test_collapse_stops_the_run_with_a_clear_error(run_dir):
    write_train_set(run_dir, 160, 48)
    # lr 0: the model cannot learn; a margin of 0.3 makes any accuracy up to 0.55 count as chance.
    cfg = make_cfg(**{"training.learning_rate": 0.0, "training.max_steps": 30, "training.eval_steps": 10,
                      "training.stop_on_collapse": True, "training.collapse_margin": 0.3,
                      "training.collapse_patience": 2})
    with pytest.raises(TrainingCollapsedError, match="collapsed"):
        call_stage("train", cfg, run_dir)
    metrics = json.loads((run_dir.path / "train_metrics.json").read_text())
    assert metrics["collapsed"]["step"] == 20  # warmup is 3 steps: evaluations at 10 and 20
    assert metrics["global_step"] == 20  # stopped early
    assert not run_dir.model.exists()


def test_missing_training_set_is_a_clear_error(run_dir):
    with pytest.raises(DataError, match="build_data"):
        call_stage("train", make_cfg(), run_dir)


def test_early_stopping_when_dev_accuracy_stalls(run_dir):
    write_train_set(run_dir, 160, 48)
    cfg = make_cfg(**{"training.learning_rate": 0.0, "training.max_steps": 50, "training.eval_steps": 10,
                      "training.early_stopping_patience": 2})
    summary = call_stage("train", cfg, run_dir)
    # lr 0: the first evaluation stays best; two more without improvement end the run at step 30.
    assert summary["global_step"] == 30 and summary["best_step"] == 10


def test_no_evaluation_before_the_end_keeps_the_final_model(run_dir):
    write_train_set(run_dir, 64, 16)
    summary = call_stage("train", make_cfg(**{"training.max_steps": 3, "training.eval_steps": 100}), run_dir)
    assert summary["best_step"] == 3 and summary["best_dev_accuracy"] == summary["final_dev_accuracy"]
    assert "at step 3" in (run_dir.model / "README.md").read_text()


def test_rerun_resumes_finished_run_and_force_starts_over(run_dir):
    write_train_set(run_dir, 64, 16)
    settings = {"training.max_steps": 4, "training.eval_steps": 2}
    first = call_stage("train", make_cfg(**settings), run_dir)
    again = call_stage("train", make_cfg(**settings), run_dir)  # e.g. killed while saving: nothing is retrained
    assert again["resumed_from"].endswith("checkpoint-4") and again["best_dev_accuracy"] == first["best_dev_accuracy"]
    forced = call_stage("train", make_cfg(**settings, force=True), run_dir)
    assert forced["resumed_from"] is None and forced["global_step"] == 4


def test_batches_are_grouped_by_length(run_dir):
    """The Trainer's sampler must see the `length` column (the Trainer drops unused columns before
    building it; without the column every item would have length 4 = its number of options)."""
    from xlt.modeling.load import load_model, load_tokenizer
    from xlt.training.args import build_training_arguments
    from xlt.training.data import tokenized_splits
    from xlt.training.trainer import make_trainer

    ds = write_train_set(run_dir, 320, 16)
    # Spread the lengths: prepend i % 6 copies of another passage.
    ds["train"] = ds["train"].map(lambda r, i: {"passage": " ".join([r["passage"]] * (1 + i % 6))}, with_indices=True)

    def padding_share(group: bool) -> float:
        cfg = make_cfg(**{"model.max_length": 256, "training.group_by_length": group})
        tok = load_tokenizer(cfg.model)
        trainer = make_trainer(build_training_arguments(cfg.training, cfg.logger, run_dir, seed=cfg.seed), load_model(cfg.model, tok), tok,
                               tokenized_splits(ds, tok, 256))
        real = total = 0
        for batch in trainer.get_train_dataloader():
            real += int(batch["attention_mask"].sum())
            total += batch["attention_mask"].numel()
        return 1 - real / total

    grouped, random = padding_share(True), padding_share(False)
    print(f"padding share: grouped {grouped:.3f}, random {random:.3f}")
    assert grouped < random / 2


def test_warning_signal_checkpoints_mid_interval_and_resumes(run_dir, monkeypatch):
    """SLURM's USR1 (see xlt.cluster): a full checkpoint at the current step, then Preempted; the rerun
    resumes from that step."""
    from transformers import TrainerCallback

    from xlt.cluster import signals

    class SignalAt(TrainerCallback):
        def on_step_begin(self, args, state, control, **kwargs):
            if state.global_step == 6:
                monkeypatch.setitem(signals._requested, "signal", "SIGUSR1")

    write_train_set(run_dir, 160, 16)
    settings = {"training.max_steps": 10, "training.eval_steps": 5}
    with pytest.raises(signals.Preempted):
        call_stage("train", make_cfg(**settings), run_dir, extra_callbacks=[SignalAt()])
    assert (run_dir.checkpoints / "checkpoint-7" / "optimizer.pt").exists()
    monkeypatch.setitem(signals._requested, "signal", None)
    # One resume, one verification: every file of the checkpoint resumed from is hashed once (settle() in
    # set-up), not again when training starts (minutes of every GPU's time for gigabytes of Adam state).
    from xlt.training import checkpoints as ck

    hashed: list[str] = []
    real = ck.file_sha256
    monkeypatch.setattr(ck, "file_sha256", lambda path: hashed.append(str(path)) or real(path))
    summary = call_stage("train", make_cfg(**settings), run_dir)
    assert summary["resumed_from"].endswith("checkpoint-7") and summary["global_step"] == 10
    resumed = sorted(h for h in hashed if "checkpoint-7/" in h)
    assert resumed and sorted(set(resumed)) == resumed, resumed  # each file of checkpoint-7 once

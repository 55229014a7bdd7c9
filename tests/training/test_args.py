"""TrainingArguments from the config, DeepSpeed config lookup and the shipped DeepSpeed files."""

from __future__ import annotations

import json

import pytest
import torch

from tests.training.conftest import make_cfg
from xlt.errors import ConfigError
from xlt.training.args import DEEPSPEED_DIR, build_training_arguments, resolve_deepspeed, resolve_precision


def test_v5_arguments_from_config(run_dir):
    cfg = make_cfg(**{"training.warmup_ratio": 0.1, "training.eval_steps": 50, "seed": 3})
    args = build_training_arguments(cfg.training, cfg.logger, run_dir, seed=cfg.seed)
    assert args.output_dir == str(run_dir.checkpoints)
    assert args.train_sampling_strategy == "group_by_length" and args.length_column_name == "length"
    assert args.average_tokens_across_devices is False  # the MC loss would be multiplied by world size
    # Without CUDA, multi-process runs must use gloo (not independent jobs); with CUDA, the GPUs.
    assert args.use_cpu == (not torch.cuda.is_available())
    assert args.warmup_steps == pytest.approx(0.1) and args.get_warmup_steps(1000) == 100
    assert args.eval_strategy == "steps" and args.save_steps == args.eval_steps == 50
    assert args.load_best_model_at_end and args.metric_for_best_model == "accuracy" and args.greater_is_better
    assert args.seed == 3 and args.bf16 == (resolve_precision("auto") == "bf16") and not args.fp16
    assert args.report_to == []  # logger.kind none: no tracking integration


def test_group_by_length_can_be_turned_off(run_dir):
    cfg = make_cfg(**{"training.group_by_length": False})
    args = build_training_arguments(cfg.training, cfg.logger, run_dir, seed=cfg.seed)
    assert args.train_sampling_strategy == "random"


def test_precision():
    bf16_gpu = torch.cuda.is_available() and torch.cuda.is_bf16_supported()
    assert resolve_precision("auto") == ("bf16" if bf16_gpu else "fp32")
    assert resolve_precision("fp32") == "fp32"
    assert resolve_precision("fp16") == "fp16"
    with pytest.raises(ConfigError, match="precision"):
        resolve_precision("half")


def test_deepspeed_by_name_or_path(tmp_path):
    assert resolve_deepspeed("zero2") == str((DEEPSPEED_DIR / "zero2.json").resolve())
    assert resolve_deepspeed("zero3_offload.json").endswith("zero3_offload.json")
    own = tmp_path / "mine.json"
    own.write_text('{"zero_optimization": {"stage": 1}}')
    assert resolve_deepspeed(str(own)) == str(own.resolve())
    assert resolve_deepspeed(None) is None
    with pytest.raises(ConfigError, match="zero2"):  # the message lists the valid names
        resolve_deepspeed("zero5")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ConfigError, match="not valid JSON"):
        resolve_deepspeed(str(bad))


@pytest.mark.parametrize("name,stage,offload", [
    ("zero2", 2, False), ("zero2_offload", 2, True), ("zero3", 3, False), ("zero3_offload", 3, True),
])
def test_shipped_deepspeed_configs(name, stage, offload):
    ds = json.loads((DEEPSPEED_DIR / f"{name}.json").read_text())
    zero = ds["zero_optimization"]
    assert zero["stage"] == stage
    assert ("offload_optimizer" in zero) == offload
    # Batch sizes, accumulation, clipping, precision and lr are left to the Trainer ("auto"), so the
    # xlt config stays the one source of truth.
    for key in ("train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps", "gradient_clipping"):
        assert ds[key] == "auto", key
    assert ds["bf16"]["enabled"] == "auto" and ds["fp16"]["enabled"] == "auto"
    assert ds["optimizer"]["params"]["lr"] == "auto"
    assert "scheduler" not in ds  # the Trainer's scheduler (training.lr_scheduler_type + warmup) applies
    if stage == 3:
        assert zero["stage3_gather_16bit_weights_on_model_save"] is True  # save_pretrained gets full weights


@pytest.mark.parametrize("name", ["zero2", "zero2_offload", "zero3", "zero3_offload"])
def test_deepspeed_config_accepted_by_trainer_arguments(run_dir, name):
    """TrainingArguments parses each shipped DeepSpeed file and fills every "auto" value from the xlt config
    (zero2_offload is not launched end to end; see tests/training/test_distributed.py)."""
    pytest.importorskip("deepspeed")
    from transformers.integrations.deepspeed import HfTrainerDeepSpeedConfig

    xcfg = make_cfg(**{"training.deepspeed": name, "training.per_device_train_batch_size": 4,
                       "training.gradient_accumulation_steps": 8})
    args = build_training_arguments(xcfg.training, xcfg.logger, run_dir, seed=xcfg.seed)
    hf_ds = HfTrainerDeepSpeedConfig(args.deepspeed)
    hf_ds.trainer_config_process(args)
    cfg = hf_ds.config
    assert cfg["train_micro_batch_size_per_gpu"] == 4 and cfg["gradient_accumulation_steps"] == 8
    assert cfg["train_batch_size"] == 4 * 8 * args.world_size
    assert cfg["optimizer"]["params"]["lr"] == pytest.approx(make_cfg().training.learning_rate)
    assert hf_ds.is_zero3() == name.startswith("zero3") and hf_ds.is_offload() == name.endswith("_offload")

"""Schema of the ``training`` group (conf/training/*.yaml): optimisation and checkpointing."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class TrainingConfig:
    # Which training data: "english" (zero-shot) or "translate_train_all".
    setting: str = "english"
    learning_rate: float = 2e-5
    num_train_epochs: float = 3.0
    max_steps: int = -1
    per_device_train_batch_size: int = 16
    per_device_eval_batch_size: int = 32
    gradient_accumulation_steps: int = 1
    warmup_ratio: float = 0.1
    weight_decay: float = 0.01
    lr_scheduler_type: str = "linear"
    logging_steps: int = 20
    eval_steps: int = 200
    save_steps: int = 200
    save_total_limit: int = 2
    early_stopping_patience: int | None = None
    # "auto": bf16 where the GPU supports it, fp32 otherwise. "bf16", "fp16" or "fp32" to force.
    precision: str = "auto"
    group_by_length: bool = True
    # Path to a DeepSpeed JSON config (conf/deepspeed/*.json) or None.
    deepspeed: str | None = None
    dataloader_num_workers: int = 0

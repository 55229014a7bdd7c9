"""Schema of the ``training`` group (conf/training/*.yaml): optimisation, dev evaluation, checkpointing.

Values map onto ``transformers.TrainingArguments`` in :mod:`xlt.training.args`.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class TrainingConfig:
    learning_rate: float = 2e-5
    num_train_epochs: float = 3.0
    # Stop after this many optimizer steps (-1: train num_train_epochs).
    max_steps: int = -1
    per_device_train_batch_size: int = 16
    per_device_eval_batch_size: int = 32
    gradient_accumulation_steps: int = 1
    # Fraction of the optimizer steps spent warming the learning rate up.
    warmup_ratio: float = 0.1
    weight_decay: float = 0.01
    max_grad_norm: float = 1.0
    lr_scheduler_type: str = "linear"
    optim: str = "adamw_torch"
    logging_steps: int = 20
    # Evaluate on the dev split every eval_steps and checkpoint at the same steps (save_steps: None or
    # equal to eval_steps), so the best dev checkpoint is always a saved one, restored at the end.
    eval_steps: int = 200
    save_steps: int | None = None
    # Training checkpoints kept (plus the best one); each holds optimizer, scheduler and RNG state.
    save_total_limit: int = 2
    # Stop when dev accuracy has not improved for this many evaluations (None: never).
    early_stopping_patience: int | None = None
    # "auto": bf16 where the GPU supports it, fp32 otherwise. "bf16", "fp16" or "fp32" to force.
    precision: str = "auto"
    # Batch examples of similar length together (less padding, same results in expectation).
    group_by_length: bool = True
    # DeepSpeed config: a name in conf/deepspeed ("zero2", "zero3_offload"), or a path to a JSON file.
    deepspeed: str | None = None
    dataloader_num_workers: int = 0
    gradient_checkpointing: bool = False
    # Resume from the last checkpoint in <run>/checkpoints when there is one.
    resume: bool = True
    # Collapse detector: after warmup, a dev accuracy within collapse_margin of chance (1/4) for
    # collapse_patience evaluations in a row is a collapse; warn loudly, and stop the run with an
    # error when stop_on_collapse.
    collapse_margin: float = 0.03
    collapse_patience: int = 2
    stop_on_collapse: bool = True
    # Train/evaluate on at most this many rows of each split (debugging); None: all.
    max_train_rows: int | None = None
    max_dev_rows: int | None = None

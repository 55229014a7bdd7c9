"""``transformers.TrainingArguments`` from the xlt config (v5 names), plus DeepSpeed config lookup."""

from __future__ import annotations

import dataclasses
from typing import Any

import torch

from xlt.config.logger import LoggerConfig
from xlt.config.training import DEEPSPEED_DIR, TrainingConfig, resolve_deepspeed  # noqa: F401  (re-exported)
from xlt.errors import ConfigError
from xlt.run.layout import RunDir

PRECISIONS = ("auto", "bf16", "fp16", "fp32")


def resolve_precision(precision: str) -> str:
    """``"auto"`` -> ``"bf16"`` on a GPU that supports it, else ``"fp32"``; fp16 only on request."""
    if precision not in PRECISIONS:
        raise ConfigError(f"training.precision must be one of {list(PRECISIONS)}, got {precision!r}")
    if precision == "auto":
        return "bf16" if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else "fp32"
    return precision


def build_training_arguments(training: TrainingConfig, logger: LoggerConfig, run: RunDir, *, seed: int,
                             report_to: list[str] | None = None, **overrides: Any):
    """TrainingArguments for the ``training`` section writing checkpoints under ``run.checkpoints``; ``seed``:
    the run's seed (model initialisation and data order); ``logger``: the W&B run name (``logger.name``)."""
    from transformers import TrainingArguments

    t = training
    precision = resolve_precision(t.precision)
    kwargs: dict[str, Any] = dict(
        output_dir=str(run.checkpoints),
        seed=seed,
        data_seed=seed,
        learning_rate=t.learning_rate,
        num_train_epochs=t.num_train_epochs,
        max_steps=t.max_steps,
        per_device_train_batch_size=t.per_device_train_batch_size,
        per_device_eval_batch_size=t.per_device_eval_batch_size,
        gradient_accumulation_steps=t.gradient_accumulation_steps,
        warmup_steps=float(t.warmup_ratio),  # v5: a float < 1 is a ratio of the total steps
        weight_decay=t.weight_decay,
        max_grad_norm=t.max_grad_norm,
        lr_scheduler_type=t.lr_scheduler_type,
        optim=t.optim,
        logging_strategy="steps",
        logging_steps=t.logging_steps,
        logging_first_step=True,
        eval_strategy="steps",
        eval_steps=t.eval_steps,
        save_strategy="steps",
        save_steps=t.eval_steps,
        # xlt rotates (training.save_total_limit), after the new checkpoint's completeness record is
        # written: the Trainer's own rotation deletes old checkpoints before it (xlt.training.checkpoints).
        save_total_limit=None,
        load_best_model_at_end=True,
        metric_for_best_model="accuracy",
        greater_is_better=True,
        bf16=precision == "bf16",
        fp16=precision == "fp16",
        train_sampling_strategy="group_by_length" if t.group_by_length else "random",
        length_column_name="length",
        # Keep the `length` column: the Trainer drops unused columns *before* building the sampler, and
        # without it LengthGroupedSampler measures len(input_ids) = 4 options for every item (no grouping).
        # MCCollator hands only the model inputs and labels to DataCollatorForMultipleChoice.
        remove_unused_columns=False,
        dataloader_num_workers=t.dataloader_num_workers,
        deepspeed=resolve_deepspeed(t.deepspeed),
        # The MC head ignores num_items_in_batch, so token averaging would multiply the loss by the
        # number of processes.
        average_tokens_across_devices=False,
        # Without CUDA, multi-process runs must be told to use CPU + gloo, or each rank trains alone.
        use_cpu=not torch.cuda.is_available(),
        report_to=report_to or ["none"],
        run_name=getattr(logger, "name", None) or str(run.path),
        disable_tqdm=False,
        ddp_find_unused_parameters=False,
    )
    # transformers >= 5.23 calls it activation_checkpointing (gradient_checkpointing is the deprecated alias).
    names = {f.name for f in dataclasses.fields(TrainingArguments)}
    kwargs["activation_checkpointing" if "activation_checkpointing" in names else "gradient_checkpointing"] = (
        t.gradient_checkpointing)
    kwargs.update(overrides)
    return TrainingArguments(**kwargs)

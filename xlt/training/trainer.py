"""The Trainer xlt trains with, and what it reads back from it: MC features with dynamic padding,
accuracy on the dev split, the loss / dev-accuracy history, and freeing the training state afterwards.

Training runs through the Hugging Face ``Trainer`` rather than a hand-written loop, because it
already gives what a research run needs and that would otherwise be re-implemented (and re-debugged):

* resumable checkpoints holding model, optimizer, scheduler and RNG state, and ``resume_from_checkpoint``
  that skips the batches already seen, so a killed run ends with the same metrics as an uninterrupted one;
* DeepSpeed (ZeRO-2/3, offload) and multi-process data parallelism through accelerate, from one config;
* length-grouped batches (``train_sampling_strategy="group_by_length"`` over the ``length`` column), so
  dynamic padding (:class:`xlt.modeling.features.MCCollator`, transformers' DataCollatorForMultipleChoice) pads little;
* callbacks for periodic dev evaluation, keeping the best checkpoint, early stopping, the collapse
  detector and W&B logging (``report_to``).

One thing it gets wrong for multiple-choice heads, corrected by :class:`MCTrainer`: gradient accumulation
(see its docstring). The train stage (:mod:`xlt.stages.train`) puts these together.
"""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import numpy as np
import torch
from transformers import Trainer


class MCTrainer(Trainer):
    """The Trainer with gradient accumulation that averages the micro-batches' losses, as one batch would.

    transformers decides whether to divide each micro-batch's loss by the accumulation steps from the model's
    ``forward`` signature: one that accepts ``**kwargs`` is taken to normalise its loss by
    ``num_items_in_batch`` (the items of the whole accumulated batch) itself, and its loss is not divided
    (``Trainer.training_step``; huggingface/transformers#37766). The multiple-choice heads (``*ForMultipleChoice``,
    also behind peft's wrapper) accept ``**kwargs`` but return the mean over their own micro-batch, so the
    gradient, the logged loss, ``train_loss`` and the gradient norm clipped by ``max_grad_norm`` came out
    ``gradient_accumulation_steps`` times too large. ``loss_is_scaled_for_ga = False`` is the Trainer's own
    switch for a per-micro-batch mean: ``training_step`` divides the loss by the accumulation steps (the
    current ones: the last, shorter window of an epoch included) before ``backward``, on every path, since it
    is the one place the loss is scaled: plain and DDP (``accelerate`` is given ``num_steps=1`` and does not
    divide again) and DeepSpeed (the Trainer passes ``scale_wrt_gas=False``, so the engine does not either).
    The logged loss sums the divided losses of a step: their mean. With one micro-batch per step the loss is
    divided by 1, bit for bit what it was; with more, the train stage's hash holds
    :data:`xlt.stages.train.GRADIENT_ACCUMULATION`, so models trained before this fix are retrained.
    """

    loss_is_scaled_for_ga = False


def compute_metrics(eval_pred) -> dict[str, float]:
    """Accuracy of the argmax over the option scores."""
    logits, labels = eval_pred.predictions, eval_pred.label_ids
    logits = logits[0] if isinstance(logits, tuple) else logits
    return {"accuracy": float((np.asarray(logits).argmax(-1) == np.asarray(labels)).mean())}


def make_trainer(args, model, tokenizer, feats, callbacks: list[Any] | None = None):
    """The Trainer of the stage (:class:`MCTrainer`): MC features with dynamic padding, accuracy on the dev split."""
    from xlt.modeling.features import MCCollator  # lazy: start-up time

    return MCTrainer(
        model=model,
        args=args,
        train_dataset=feats["train"],
        eval_dataset=feats["dev"],
        # Tensor-core friendly lengths on GPU; exact lengths on CPU, where padding only costs time.
        data_collator=MCCollator(tokenizer, pad_to_multiple_of=8 if torch.cuda.is_available() else None),
        processing_class=tokenizer,
        compute_metrics=compute_metrics,
        callbacks=callbacks or [],
    )


def metrics_history(log_history: list[dict[str, Any]]) -> dict[str, Any]:
    """Train loss curve and dev accuracy history from the Trainer's log history."""
    train = [
        {"step": h["step"], "loss": h["loss"], "grad_norm": h.get("grad_norm"), "learning_rate": h.get("learning_rate"),
         "epoch": h.get("epoch")}
        for h in log_history
        if "loss" in h and "step" in h
    ]
    dev = [
        {"step": h["step"], "accuracy": h["eval_accuracy"], "loss": h.get("eval_loss"), "epoch": h.get("epoch")}
        for h in log_history
        if "eval_accuracy" in h
    ]
    # "train_loss" (the scalar mean training loss) stays a number in train_metrics.json; the curve is this.
    return {"train_loss_history": train, "dev": dev}


def mean_train_loss(log_history: list[dict[str, Any]], global_step: int, since_resume: float, resumed_at: int) -> float:
    """The mean training loss over every step of the run, also when it resumed at step ``resumed_at``.

    The Trainer's ``training_loss`` (``since_resume``) averages only the steps it ran itself. The steps before
    the resume are in the checkpoint's log history: xlt logs the loss at every save, so its windows end at
    ``resumed_at`` (each entry is the mean loss since the previous one)."""
    if resumed_at <= 0 or global_step <= 0:
        return since_resume
    before, last = 0.0, 0
    for h in log_history:
        if "loss" in h and "step" in h and last < h["step"] <= resumed_at:
            before += h["loss"] * (h["step"] - last)
            last = h["step"]
    return (before + since_resume * (global_step - resumed_at)) / global_step


def best_step(state) -> int | None:
    """The step of the best dev checkpoint the Trainer kept (None: no evaluation during training)."""
    ckpt = state.best_model_checkpoint
    if ckpt:
        return int(Path(ckpt).name.split("-")[-1])
    return None


def release_training_state() -> None:
    """Free the (already dereferenced) trainer and model and leave the process as it was before training,
    so the stages after ``train`` (evaluate, report) run in a clean state on rank 0.

    * The HF DeepSpeed config is a module global (a weak reference kept alive by accelerate's state):
      while it is set, ``from_pretrained`` builds every model inside ``deepspeed.zero.Init`` (ZeRO-3) with
      the training world's batch sizes, and evaluation fails DeepSpeed's batch-size check.
    * accelerate's ``AcceleratorState``/``PartialState``/``GradientState`` singletons still describe the
      training run (DeepSpeed plugin, process group).
    * In distributed runs the ranks sync and the process group is destroyed (gloo aborts at exit otherwise).
    """
    import torch.distributed as dist
    from accelerate.state import AcceleratorState, GradientState
    from transformers.integrations.deepspeed import unset_hf_deepspeed_config

    gc.collect()
    if dist.is_available() and dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()
    unset_hf_deepspeed_config()
    AcceleratorState._reset_state(reset_partial_state=True)
    GradientState._reset_state()
    gc.collect()

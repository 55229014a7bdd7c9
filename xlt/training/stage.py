"""The "train" stage: fine-tune a multiple-choice encoder (full or LoRA) on the training set.

Training runs through the Hugging Face ``Trainer`` rather than a hand-written loop, because it
already gives what a research run needs and that would otherwise be re-implemented (and re-debugged):

* resumable checkpoints holding model, optimizer, scheduler and RNG state, and ``resume_from_checkpoint``
  that skips the batches already seen, so a killed run ends with the same metrics as an uninterrupted one;
* DeepSpeed (ZeRO-2/3, offload) and multi-process data parallelism through accelerate, from one config;
* length-grouped batches (``train_sampling_strategy="group_by_length"`` over the ``length`` column), so
  dynamic padding (:class:`xlt.modeling.features.MCCollator`, transformers' DataCollatorForMultipleChoice) pads little;
* callbacks for periodic dev evaluation, keeping the best checkpoint, early stopping, the collapse
  detector and W&B logging (``report_to``).

Inputs: ``run.train_set`` (or the translate-train-all union). Outputs: ``run.checkpoints`` (resumable),
``run.model`` (final model or LoRA adapter, tokenizer, README.md model card; written atomically),
``run/train_metrics.json`` (mean train loss, loss curve, dev accuracy history, best step, world size and
launch warnings, rows per language) and, with
``model.lora.merge_and_save``, ``run/model_merged`` (a plain model with the adapters merged in).
"""

from __future__ import annotations

import gc
import logging
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import torch

from xlt import tracking
from xlt.cluster import checkpoint_callback
from xlt.config.model import TINY_MODEL_ID
from xlt.contract import record_inputs, recorded_inputs
from xlt.modeling.features import MCCollator
from xlt.modeling.load import load_model, load_tokenizer
from xlt.run import RunDir, atomic_dir, atomic_write_json, atomic_write_text
from xlt.training.args import build_training_arguments, resolve_precision
from xlt.training.callbacks import CollapseDetector, TrainingCollapsedError, collapse_message
from xlt.training.card import render_card
from xlt.training.checkpoints import completeness_callback, newest_complete, settle
from xlt.training.data import load_training_set, rows_by_language, tokenized_splits
from xlt.training.launch import quiet_deepspeed_deprecations, report_launch
from xlt.training.lora import BASE_SUBDIR, merge_and_save, point_adapter_at_base, wrap_lora

log = logging.getLogger("xlt.training")

MERGED_DIR = "model_merged"


def compute_metrics(eval_pred) -> dict[str, float]:
    """Accuracy of the argmax over the 4 option scores."""
    logits, labels = eval_pred.predictions, eval_pred.label_ids
    logits = logits[0] if isinstance(logits, tuple) else logits
    return {"accuracy": float((np.asarray(logits).argmax(-1) == np.asarray(labels)).mean())}


def last_checkpoint(folder: Path) -> str | None:
    """The newest complete ``checkpoint-N`` folder (:mod:`xlt.training.checkpoints`), or None."""
    return newest_complete(folder)


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


def _best_step(state) -> int | None:
    ckpt = state.best_model_checkpoint
    if ckpt:
        return int(Path(ckpt).name.split("-")[-1])
    return None


def make_trainer(args, model, tokenizer, feats, callbacks: list[Any] | None = None):
    """The Trainer of the stage: MC features with dynamic padding, accuracy on the dev split."""
    from transformers import Trainer

    return Trainer(
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


def usable_checkpoints(run: RunDir, ctx: Any, main: bool) -> bool:
    """Whether ``run.checkpoints`` may be resumed: they were written under the stage's current inputs.

    Checkpoints of other inputs (a changed recipe value, a rebuilt training set) or, with ``force``, any
    checkpoints are moved out of the way to ``run/stale/checkpoints-<their inputs>`` (the previous stale
    set is deleted), and training starts fresh. Called inside ``main_process_first``: rank 0 decides.
    """
    folder = run.checkpoints
    stored = recorded_inputs(folder)
    ok = folder.exists() and stored == ctx.inputs and not ctx.force
    if main and folder.exists() and not ok and any(folder.iterdir()):
        why = "force=true" if ctx.force else ("they were written under other inputs" if stored else "they record no inputs")
        dest = run.path / "stale" / f"checkpoints-{stored or 'unknown'}"
        shutil.rmtree(run.path / "stale", ignore_errors=True)
        dest.parent.mkdir(parents=True)
        os.replace(folder, dest)
        log.warning("not resuming from %s (%s): moved to %s; training starts fresh", folder, why, dest)
    if main and not ok:
        record_inputs(folder, ctx)
    return ok


def run_stage(cfg: Any, run: RunDir, extra_callbacks: list[Any] | None = None, ctx: Any = None) -> dict[str, Any] | None:
    """Train, keep the best dev checkpoint, save the final model + card; see the module docstring.

    ``extra_callbacks`` are added to the Trainer's (tests use it to simulate a crash). ``ctx``
    (:class:`xlt.contract.StageContext`) holds the stage's inputs: checkpoints are resumed only when
    they were written under the same inputs, and the provenance goes into ``train_metrics.json`` and the
    model folder (``xlt_provenance.json``).
    """
    from transformers import EarlyStoppingCallback

    from xlt.contract import context

    ctx = ctx or context(cfg, run, "train")

    t = cfg.training
    args = build_training_arguments(cfg, run, report_to=tracking.report_to(cfg))
    tracking.init(cfg, run, job_type="train")
    main = args.process_index == 0
    launch = report_launch(args, t)

    tokenizer = load_tokenizer(cfg.model)
    with args.main_process_first(desc="training data"):
        raw = load_training_set(cfg, run)
        feats = tokenized_splits(raw, tokenizer, cfg.model.max_length)
        usable_checkpoints(run, ctx, main)
        if main and t.resume:  # incomplete or damaged checkpoints (a kill during a save) go to stale/
            settle(run.checkpoints, run.path / "stale")

    if args.deepspeed:
        quiet_deepspeed_deprecations()
        # ZeRO-3 builds the model partitioned (zero.Init) before the engine exists: DeepSpeed's comm layer
        # must already know the process group, or it sizes batches for a world of one.
        import deepspeed

        deepspeed.init_distributed()
    model = load_model(cfg.model, tokenizer, seed=cfg.seed)
    new_weights = list(getattr(model, "xlt_new_weights", []))
    if cfg.model.lora.enabled:
        model = wrap_lora(model, cfg.model.lora)
        if main:
            model.print_trainable_parameters()

    collapse = CollapseDetector(margin=t.collapse_margin, patience=t.collapse_patience, stop=t.stop_on_collapse)
    # A scheduler's warning signal (SLURM USR1) -> full checkpoint at the end of the step, then stop.
    # The completeness record first: it must be written before the signal callback stops the run in on_save.
    callbacks: list[Any] = [completeness_callback(), collapse, checkpoint_callback()]
    if t.early_stopping_patience:
        callbacks.append(EarlyStoppingCallback(early_stopping_patience=t.early_stopping_patience))
    trainer = make_trainer(args, model, tokenizer, feats, callbacks + list(extra_callbacks or []))
    # Rank 0 has settled the folder above: its recorded inputs are this stage's unless it must start fresh.
    ok = recorded_inputs(run.checkpoints) == ctx.inputs
    resume = last_checkpoint(run.checkpoints) if t.resume and ok else None
    if resume:
        log.info("resuming from %s", resume)
    train_out = trainer.train(resume_from_checkpoint=resume)
    # Dev accuracy of the model that is saved (the best checkpoint, reloaded by load_best_model_at_end).
    # Through the evaluation loop, not trainer.evaluate(): that would log the best step's accuracy again
    # at the final step, in the history and in W&B.
    dev = trainer.evaluation_loop(trainer.get_eval_dataloader(), description="best checkpoint").metrics

    state = trainer.state
    history = metrics_history(state.log_history)
    summary: dict[str, Any] = {
        # No evaluation during training (max_steps < eval_steps): the final model is the one kept.
        "best_dev_accuracy": state.best_metric if state.best_metric is not None else dev.get("eval_accuracy"),
        "best_step": _best_step(state) or state.global_step,
        "final_dev_accuracy": dev.get("eval_accuracy"),
        "global_step": state.global_step,
        "train_loss": train_out.training_loss,
        "train_rows": len(raw["train"]),
        "dev_rows": len(raw["dev"]),
        **rows_by_language(raw),
        **launch,
        "precision": resolve_precision(t.precision),
        "lora": bool(cfg.model.lora.enabled),
        "resumed_from": resume,
        "collapsed": collapse.collapsed,
        "new_weights": new_weights,  # not in the checkpoint: initialised (seeded) before training
        "dev_accuracy_history": history["dev"],
    }
    if main:
        atomic_write_json(run.path / "train_metrics.json", {**{k: v for k, v in summary.items() if k != "dev_accuracy_history"},
                                                            **history, "provenance": ctx.record()})
        tracking.summarize({k: summary[k] for k in ("best_dev_accuracy", "best_step", "train_loss")})

    if collapse.collapsed and t.stop_on_collapse:
        del trainer, model
        _cleanup()
        tracking.finish()
        c = collapse.collapsed
        raise TrainingCollapsedError(
            collapse_message(c["step"], c["accuracy"], c["evaluations"])
            + f"\nStopped (training.stop_on_collapse=true); no model was saved. Metrics: {run.path / 'train_metrics.json'}"
        )

    _save_final(cfg, run, trainer, tokenizer, summary, {s: len(raw[s]) for s in ("train", "dev")}, ctx)
    del trainer, model
    _cleanup()
    if main and cfg.model.lora.enabled and cfg.model.lora.merge_and_save:
        from xlt.modeling.load import load_trained

        peft_model, tok = load_trained(run.model)
        with atomic_dir(run.path / MERGED_DIR) as tmp:
            merge_and_save(peft_model, tmp, tok)
        summary["merged_model"] = str(run.path / MERGED_DIR)
    tracking.finish()
    summary["model"] = str(run.model)
    del summary["dev_accuracy_history"]
    return summary


def _save_final(cfg: Any, run: RunDir, trainer, tokenizer, summary: dict[str, Any], data_info: dict[str, int],
                ctx: Any) -> None:
    """Save the (best) model, tokenizer and card into ``run.model`` atomically.

    Every rank calls ``save_model`` (ZeRO-3 gathers the weights collectively); rank 0 alone writes, into
    a fixed partial folder that replaces ``run.model`` in one rename.
    """
    main = trainer.args.process_index == 0
    partial = run.path / ".model.partial"
    with trainer.args.main_process_first(desc="clear partial model"):
        if main:
            shutil.rmtree(partial, ignore_errors=True)
    trainer.save_model(str(partial))  # writes on rank 0 only; includes the tokenizer (processing_class)
    if not main:
        return
    tokenizer.save_pretrained(partial)
    (partial / "training_args.bin").unlink(missing_ok=True)  # a pickle; the card and config.yaml say it all
    if cfg.model.lora.enabled and cfg.model.name_or_path == TINY_MODEL_ID:
        # The tiny base is a seeded random init with no Hub id: store it with the adapter.
        load_model(cfg.model, tokenizer, seed=cfg.seed).save_pretrained(partial / BASE_SUBDIR)
        point_adapter_at_base(partial, BASE_SUBDIR)
    atomic_write_text(partial / "README.md", render_card(cfg, summary, data_info))
    from xlt.fingerprint import path_fingerprint

    atomic_write_json(partial / "xlt_provenance.json", {**ctx.record(), "fingerprint": path_fingerprint(partial)})
    with atomic_dir(run.model) as tmp:
        os.rmdir(tmp)
        os.replace(partial, tmp)


def _cleanup() -> None:
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

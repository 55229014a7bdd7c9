"""The ``train`` stage: fine-tune a multiple-choice encoder (full or LoRA) on the training set.

It reads as its steps, in order (the Trainer and the pieces it is built from are :mod:`xlt.training`):

1. :func:`setup`: W&B, training arguments, the training data (and which checkpoints may be resumed),
   DeepSpeed, the model (LoRA-wrapped if configured), callbacks, the Trainer;
2. :func:`train`: resume from the newest complete checkpoint written under the same inputs, train, score
   the kept (best) model on dev, write ``train_metrics.json``; a collapse stops here if configured;
3. :func:`save`: the model (or LoRA adapter), tokenizer, model card and provenance into ``run.model``,
   atomically;
4. :func:`cleanup`: free the trainer and model, reset the process's training state, close W&B;
5. :func:`merge`: with ``model.lora.merge_and_save``, a plain model with the adapters merged in, in
   ``run/model_merged`` (after clean-up: loaded in a process without the DeepSpeed state).

Inputs: ``run.train_set`` (or the translate-train-all union). Outputs: ``run.checkpoints`` (resumable),
``run.model`` (final model or LoRA adapter, tokenizer, README.md model card; written atomically),
``run/train_metrics.json`` (mean train loss, loss curve, dev accuracy history, best step, world size and
launch warnings, rows per language). :data:`STAGE` declares it to the contract; its file inputs are
:func:`xlt.stages.inputs.train_stage_files` (the evaluate and report stages identify the untrained model by them);
later stages refuse a model that is not what training saved with :func:`xlt.run.artifacts.check_model`.
"""

from __future__ import annotations

import logging
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xlt import tracking
from xlt.cluster.signals import checkpoint_callback
from xlt.config.model import PACKAGED_MODEL_IDS, TINY_MODEL_ID
from xlt.config.translate import translate_train_all
from xlt.contract import StageContext, StageSpec, json_problems, record_inputs, recorded_inputs
from xlt.modeling.load import load_model, load_tokenizer, load_trained
from xlt.run.artifacts import check_model, checked_train_set
from xlt.run.files import atomic_dir, atomic_write_json, atomic_write_text, remove_path
from xlt.run.fingerprint import path_fingerprint
from xlt.run.layout import MODEL_CARD, MODEL_DIR, MODEL_PROVENANCE_FILE, TRAIN_METRICS_FILE, RunDir
from xlt.run.state import TRAIN_METRICS, StateError
from xlt.stages.inputs import train_stage_files
from xlt.training.card import render_card
from xlt.training.checkpoints import best_problem, completeness_callback, settle
from xlt.training.launch import quiet_deepspeed_deprecations, report_launch
from xlt.training.lora import BASE_SUBDIR, merge_and_save, point_adapter_at_base, wrap_lora
from xlt.translation.union import build_train_all

log = logging.getLogger("xlt.training")

# How the losses of accumulated micro-batches are combined (xlt.training.trainer.MCTrainer): their mean, as
# one batch of their size would give. Before xlt's fix of issue 41 the Trainer summed them (the gradient, the
# loss and the norm clipped were x gradient_accumulation_steps); this version enters the train stage's hash
# of every run with gradient_accumulation_steps > 1, so a model trained the old way is retrained and its
# results recomputed. Runs without accumulation trained bit for bit as they do now: their hash is unchanged.
GRADIENT_ACCUMULATION = "mean"

def run_stage(cfg: Any, run: RunDir, ctx: StageContext, extra_callbacks: list[Any] | None = None) -> dict[str, Any]:
    """Train, keep the best dev checkpoint, save the final model + card; see the module docstring.

    ``ctx`` (built by the contract) holds the stage's inputs: checkpoints are resumed only when they were
    written under the same inputs, and the provenance goes into ``train_metrics.json`` and the model
    folder (``xlt_provenance.json``). ``extra_callbacks`` are added to the Trainer's (tests use it to
    simulate a crash).
    """
    session = setup(cfg, run, ctx, extra_callbacks or [])
    summary = train(session)  # a collapse with training.stop_on_collapse stops here (cleaned up)
    save(session, summary)
    cleanup(session)
    merge(session, summary)
    summary["model"] = str(run.model)
    del summary["dev_accuracy_history"]
    return summary


@dataclass
class Session:
    """What :func:`setup` builds for the later steps."""

    cfg: Any
    run: RunDir
    ctx: StageContext
    args: Any  # transformers.TrainingArguments
    main: bool  # rank 0 (the one that writes); fixed here: the process state is reset by clean-up
    launch: dict[str, Any]  # world size and launch warnings (train_metrics.json)
    tokenizer: Any
    raw: Any  # the training set, a DatasetDict {train, dev}
    model: Any
    new_weights: list[str]  # weights not in the base checkpoint: initialised (seeded) before training
    collapse: Any  # xlt.training.callbacks.CollapseDetector
    trainer: Any
    settled: str | None = None  # rank 0: the newest complete checkpoint, verified (hashed) once in set-up


# --- 1. set-up ----------------------------------------------------------------------------------------

def setup(cfg: Any, run: RunDir, ctx: StageContext, extra_callbacks: list[Any]) -> Session:
    """W&B, arguments, data and checkpoint policy, DeepSpeed, model and LoRA, callbacks, the Trainer."""
    # torch, transformers and peft load here, not when the stage table is imported (every command does that)
    from transformers import EarlyStoppingCallback

    from xlt.training.args import build_training_arguments  # lazy: start-up time
    from xlt.training.callbacks import CollapseDetector, LockGuard  # lazy: start-up time
    from xlt.training.data import load_training_set, tokenized_splits  # lazy: start-up time
    from xlt.training.trainer import make_trainer  # lazy: start-up time

    t = cfg.training
    args = build_training_arguments(t, cfg.logger, run, seed=cfg.seed, report_to=tracking.report_to(cfg.logger))
    tracking.init(cfg.logger, run, cfg, job_type="train")
    main = args.process_index == 0
    launch = report_launch(args, t)

    tokenizer = load_tokenizer(cfg.model)
    with args.main_process_first(desc="training data"):
        raw = load_training_set(t, run, read_training_set(cfg, run))
        feats = tokenized_splits(raw, tokenizer, cfg.model.max_length)
        usable_checkpoints(run, ctx, main)
        settled = None
        if main and t.resume:  # incomplete or damaged checkpoints (a kill during a save) go to stale/
            settled = settle(run.checkpoints, run.stale)  # the one verification (hash) of this resume

    if args.deepspeed:
        quiet_deepspeed_deprecations()
        # ZeRO-3 builds the model partitioned (zero.Init) before the engine exists: DeepSpeed's comm layer
        # must already know the process group, or it sizes batches for a world of one.
        import deepspeed

        deepspeed.init_distributed()
    model = load_model(cfg.model, tokenizer, seed=cfg.seed)
    new_weights = list(getattr(model, "xlt_new_weights", []))
    if t.freeze_word_embeddings:  # the Trainer's optimizer takes only the parameters that require grad
        model.get_input_embeddings().weight.requires_grad_(False)
    if cfg.model.lora.enabled:
        model = wrap_lora(model, cfg.model.lora, new_weights)
        if main:
            model.print_trainable_parameters()

    collapse = CollapseDetector(margin=t.collapse_margin, patience=t.collapse_patience, stop=t.stop_on_collapse)
    # A scheduler's warning signal (SLURM USR1) -> full checkpoint at the end of the step, then stop.
    # The completeness record first: it must be written before the signal callback stops the run in on_save.
    # The lock's guard first: a run whose lock is lost saves no checkpoint.
    callbacks: list[Any] = [LockGuard(), completeness_callback(t.save_total_limit), collapse, checkpoint_callback()]
    if t.early_stopping_patience:
        callbacks.append(EarlyStoppingCallback(early_stopping_patience=t.early_stopping_patience))
    trainer = make_trainer(args, model, tokenizer, feats, callbacks + list(extra_callbacks))
    return Session(cfg, run, ctx, args, main, launch, tokenizer, raw, model, new_weights, collapse, trainer, settled)


def read_training_set(cfg: Any, run: RunDir) -> Any:
    """The training set: the translate-train-all union when the recipe configures translations
    (:func:`translate_train_all`), else the English set checked against what the build_data stage wrote."""
    if translate_train_all(cfg):
        return build_train_all(cfg.translate, run, seed=cfg.data.seed, stages=cfg.stages)
    return checked_train_set(run)


def usable_checkpoints(run: RunDir, ctx: StageContext, main: bool) -> bool:
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
        dest = run.stale / f"checkpoints-{stored or 'unknown'}"
        remove_path(run.stale)  # the previous stale set (or a file found where the folder belongs)
        dest.parent.mkdir(parents=True)
        os.replace(folder, dest)
        log.warning("not resuming from %s (%s): moved to %s; training starts fresh", folder, why, dest)
    if main and not ok:
        record_inputs(folder, ctx)
    return ok


def rank0_decides(value: Any) -> Any:
    """Rank 0's ``value`` on every rank (``broadcast_object_list``; the value itself when not distributed)."""
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1):
        return value
    box = [value]
    dist.broadcast_object_list(box, src=0)
    return box[0]


# --- 2. train -----------------------------------------------------------------------------------------

def train(s: Session) -> dict[str, Any]:
    """Resume (checkpoints of the same inputs only) and train; the summary, also in ``train_metrics.json``.

    A collapse (dev accuracy at chance, :class:`~xlt.training.callbacks.CollapseDetector`) with
    ``training.stop_on_collapse`` cleans up and raises :class:`TrainingCollapsedError`: no model is saved.
    """
    from xlt.training.args import resolve_precision  # lazy: start-up time
    from xlt.training.callbacks import TrainingCollapsedError, collapse_message  # lazy: start-up time
    from xlt.training.data import rows_by_language  # lazy: start-up time
    from xlt.training.trainer import best_step, mean_train_loss, metrics_history  # lazy: start-up time

    cfg, run, t = s.cfg, s.run, s.cfg.training
    # Rank 0 has settled the folder in setup (verified every checkpoint once): its recorded inputs are this
    # stage's unless it must start fresh. Rank 0 chooses the checkpoint (its view of the file system), the
    # other ranks follow it.
    resume = rank0_decides(s.settled if s.main and t.resume
                           and recorded_inputs(run.checkpoints) == s.ctx.inputs else None)
    if resume:
        log.info("resuming from %s", resume)
        import json

        problem = best_problem(run.checkpoints, json.loads((Path(resume) / "trainer_state.json").read_text())
                               .get("best_model_checkpoint"))
        if problem:
            log.warning("the best checkpoint so far cannot be loaded (%s): unless a later evaluation beats it, "
                        "training ends without a model (retrain with force=true)", problem)
    train_out = s.trainer.train(resume_from_checkpoint=resume)
    state = s.trainer.state
    problem = best_problem(run.checkpoints, state.best_model_checkpoint)
    if problem:  # load_best_model_at_end only warns: the model saved would not be the one measured
        cleanup(s)
        raise StateError(
            f"the best checkpoint (dev accuracy {state.best_metric}) cannot be loaded ({problem}), so the model "
            "that best_dev_accuracy describes cannot be saved; train_metrics.json and the model are not written.\n"
            "  Retrain: add force=true 'stages=[train,evaluate,report]' to the command.")
    # Dev accuracy of the model that is saved (the best checkpoint, reloaded by load_best_model_at_end).
    # Through the evaluation loop, not trainer.evaluate(): that would log the best step's accuracy again
    # at the final step, in the history and in W&B.
    dev = s.trainer.evaluation_loop(s.trainer.get_eval_dataloader(), description="best checkpoint").metrics

    history = metrics_history(state.log_history)
    summary: dict[str, Any] = {
        # No evaluation during training (max_steps < eval_steps): the final model is the one kept.
        "best_dev_accuracy": state.best_metric if state.best_metric is not None else dev.get("eval_accuracy"),
        "best_step": best_step(state) or state.global_step,
        "final_dev_accuracy": dev.get("eval_accuracy"),
        "global_step": state.global_step,
        # over every step, also after a resume (the Trainer's own value averages the steps since the resume)
        "train_loss": mean_train_loss(state.log_history, state.global_step, train_out.training_loss,
                                      int(Path(resume).name.split("-")[1]) if resume else 0),
        "train_rows": len(s.raw["train"]),
        "dev_rows": len(s.raw["dev"]),
        **rows_by_language(s.raw),
        **s.launch,
        "precision": resolve_precision(t.precision),
        "lora": bool(cfg.model.lora.enabled),
        "resumed_from": resume,
        "collapsed": s.collapse.collapsed,
        "new_weights": s.new_weights,  # not in the checkpoint: initialised (seeded) before training
        "dev_accuracy_history": history["dev"],
    }
    if s.main:
        atomic_write_json(run.train_metrics, {**{k: v for k, v in summary.items() if k != "dev_accuracy_history"},
                                                            **history, "provenance": s.ctx.record()})
        tracking.summarize({k: summary[k] for k in ("best_dev_accuracy", "best_step", "train_loss")})
    if s.collapse.collapsed and t.stop_on_collapse:
        cleanup(s)
        c = s.collapse.collapsed
        raise TrainingCollapsedError(
            collapse_message(c["step"], c["accuracy"], c["evaluations"])
            + f"\nStopped (training.stop_on_collapse=true); no model was saved. Metrics: {run.train_metrics}"
        )
    return summary


# --- 3. save ------------------------------------------------------------------------------------------

def save(s: Session, summary: dict[str, Any]) -> None:
    """Save the (best) model, tokenizer, card and provenance into ``run.model`` atomically.

    Every rank calls ``save_model`` (ZeRO-3 gathers the weights collectively); rank 0 alone writes, into
    a fixed partial folder that replaces ``run.model`` in one rename.
    """
    cfg, run, trainer = s.cfg, s.run, s.trainer
    partial = run.model_partial
    with trainer.args.main_process_first(desc="clear partial model"):
        if s.main:
            shutil.rmtree(partial, ignore_errors=True)
    trainer.save_model(str(partial))  # writes on rank 0 only; includes the tokenizer (processing_class)
    if not s.main:
        return
    s.tokenizer.save_pretrained(partial)
    (partial / "training_args.bin").unlink(missing_ok=True)  # a pickle; the card and config.yaml say it all
    if cfg.model.lora.enabled and cfg.model.name_or_path == TINY_MODEL_ID:
        # The tiny base is a seeded random init with no Hub id: store it with the adapter.
        load_model(cfg.model, s.tokenizer, seed=cfg.seed).save_pretrained(partial / BASE_SUBDIR)
        point_adapter_at_base(partial, BASE_SUBDIR)
    elif cfg.model.lora.enabled and cfg.model.name_or_path in PACKAGED_MODEL_IDS:
        # Named by its id, not by this machine's cache folder: load_trained converts it again where needed.
        point_adapter_at_base(partial, cfg.model.name_or_path)
    data_info = {split: len(s.raw[split]) for split in ("train", "dev")}
    atomic_write_text(partial / MODEL_CARD, render_card(
        cfg.model, cfg.training, cfg.data, cfg.eval, summary, data_info, seed=cfg.seed, recipe_name=cfg.recipe_name,
        description=cfg.description, train_all=translate_train_all(cfg)))

    atomic_write_json(partial / MODEL_PROVENANCE_FILE, {**s.ctx.record(), "fingerprint": path_fingerprint(partial)})
    with atomic_dir(run.model) as tmp:
        os.rmdir(tmp)
        os.replace(partial, tmp)


# --- 4. clean-up --------------------------------------------------------------------------------------

def cleanup(s: Session) -> None:
    """Drop the trainer and model, reset the training state of the process (:func:`release_training_state`)
    and close the W&B run."""
    from xlt.training.trainer import release_training_state  # lazy: start-up time

    s.trainer = s.model = None
    release_training_state()
    tracking.finish()


# --- 5. merge -----------------------------------------------------------------------------------------

def merge(s: Session, summary: dict[str, Any]) -> None:
    """With ``model.lora.merge_and_save``: the adapters merged into a plain model in ``run/model_merged``."""
    cfg, run = s.cfg, s.run
    if not (s.main and cfg.model.lora.enabled and cfg.model.lora.merge_and_save):
        return

    peft_model, tok = load_trained(run.model)
    with atomic_dir(run.merged_model) as tmp:
        merge_and_save(peft_model, tmp, tok)
    summary["merged_model"] = str(run.merged_model)



# --- the stage's declaration (xlt.contract.StageSpec) -------------------------------------------------

def upstream(cfg: Any) -> tuple[str, ...]:
    return ("build_data", "translate") if translate_train_all(cfg) else ("build_data",)


def code_versions(cfg: Any) -> dict[str, str]:
    """The versions of training code that enter the stage's hash for these settings (xlt.contract.StageSpec.code)."""
    if cfg.training.gradient_accumulation_steps > 1:
        return {"training.gradient_accumulation": GRADIENT_ACCUMULATION}
    return {}


def check(cfg: Any, run: RunDir, ctx: Any) -> list[str]:
    check_model(run)
    return json_problems(run, {run.train_metrics: TRAIN_METRICS})


STAGE = StageSpec("train", run_stage, upstream=upstream, files=train_stage_files, outputs=(MODEL_DIR, TRAIN_METRICS_FILE),
                  check=check, code=code_versions)

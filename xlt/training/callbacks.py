"""Trainer callbacks: the collapse detector and the run lock's guard (the crash simulator of the resume tests is
in tests/training/helpers.py)."""

from __future__ import annotations

import logging

from transformers import TrainerCallback

from xlt.errors import XltError
from xlt.run.lock import check_held

log = logging.getLogger("xlt.training")

CHANCE = 0.25


class TrainingCollapsedError(XltError):
    """Dev accuracy stayed at chance after warmup: the run collapsed (see the message for fixes)."""


def collapse_message(step: int, accuracy: float, evals: int) -> str:
    return (
        f"dev accuracy {accuracy:.3f} at step {step} is still at chance (1/4) after warmup, "
        f"{evals} evaluation(s) in a row: the run has collapsed.\n"
        "Known remedies (see evaluation.md): a lower learning rate (base 1e-5, large 5e-6), a larger "
        "effective batch (gradient_accumulation_steps), a longer warmup, or another seed."
    )


class LockGuard(TrainerCallback):
    """Stops training at a step's end when this run's lock is lost (:func:`xlt.run.lock.check_held` raises
    :class:`xlt.run.lock.LockLost`), before the step's checkpoint is saved; the lock file is read back only on
    steps that save."""

    def on_step_end(self, args, state, control, **kwargs):
        check_held(io=bool(control.should_save))
        return control


class CollapseDetector(TrainerCallback):
    """Flags a run whose dev accuracy is within ``margin`` of 1/4 after warmup.

    After ``patience`` such evaluations in a row it warns loudly and, when ``stop`` is set, ends
    training; the stage then raises :class:`TrainingCollapsedError` (non-zero exit).
    """

    def __init__(self, margin: float = 0.03, patience: int = 2, stop: bool = True, metric: str = "eval_accuracy"):
        self.margin = margin
        self.patience = patience
        self.stop = stop
        self.metric = metric
        self.streak = 0
        self.collapsed: dict | None = None

    def on_evaluate(self, args, state, control, metrics=None, **kwargs):
        if not metrics or self.metric not in metrics:
            return
        warmup = args.get_warmup_steps(state.max_steps) if state.max_steps else 0
        if state.global_step <= warmup:
            return
        acc = float(metrics[self.metric])
        self.streak = self.streak + 1 if abs(acc - CHANCE) <= self.margin else 0
        if self.streak >= self.patience and self.collapsed is None:
            self.collapsed = {"step": state.global_step, "accuracy": acc, "evaluations": self.streak}
            msg = collapse_message(state.global_step, acc, self.streak)
            if state.is_world_process_zero:
                _loud(msg)
            if self.stop:
                control.should_training_stop = True
        return control


def _loud(msg: str) -> None:
    log.error(msg)
    from rich.console import Console
    from rich.panel import Panel

    Console(stderr=True).print(Panel(msg, title="TRAINING COLLAPSED", style="bold red"))


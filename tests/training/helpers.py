"""Test helpers for training: a callback that kills a run at a given step."""

from __future__ import annotations

from transformers import TrainerCallback


class SimulatedCrash(RuntimeError):
    """Raised by :class:`CrashAtStep` (tests only)."""


class CrashAtStep(TrainerCallback):
    """Raise at the end of optimizer step ``step``, like a killed job (used by resume tests)."""

    def __init__(self, step: int):
        self.step = step

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step >= self.step:
            raise SimulatedCrash(f"simulated crash at step {state.global_step}")

"""The run directory (:class:`RunDir`): its folders and stage markers, plus the rank helpers every stage
uses (:func:`shard`, :func:`is_main_process`, :func:`world_size`). Its name comes from
:func:`xlt.config.keys.run_name`, its files are written through :mod:`xlt.files` (re-exported here) and read
back through :mod:`xlt.state`; what each stage reads and writes is declared in :mod:`xlt.contract`.

A run directory is derived from the recipe and the command-line overrides (never the clock), so the
same command finds the same directory: finished stages are skipped, interrupted ones resume.

Layout::

    <run_root>/<recipe>/<overrides or "default">/
        .hydra/             resolved config (written by Hydra)
        config.yaml         the validated config of this run (secrets removed)
        stages/<stage>.json done-markers with a short summary per finished stage
        data/               build_data and translate outputs
        checkpoints/        resumable Trainer checkpoints
        model/              final model (safetensors) + model card
        eval/<benchmark>/   per-language results and predictions
        report.*, plots/    the report
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from xlt.config.keys import run_name  # noqa: F401  (re-exported: the run directory's name)
from xlt.files import (  # noqa: F401  (re-exported: the run directory is written through them)
    WriteError,
    atomic_dir,
    atomic_write_json,
    atomic_write_text,
    remove_path,
)
from xlt.state import MARKER, read_state


def shard(items: list, index: int, num: int) -> list:
    """Shard ``index`` (0-based) of ``num``: every ``num``-th item starting at ``index``, in the given order.

    The one rule both sharded stages use (translation units, evaluation jobs); the config checks
    ``0 <= index < num`` before any stage runs.
    """
    if num < 1 or not 0 <= index < num:
        raise ValueError(f"shard {index} of {num}: need 0 <= index < num")
    return items[index::num]


def is_main_process() -> bool:
    """True on rank 0 of a multi-process launch (and in a plain single process): the one that writes."""
    return int(os.environ.get("RANK", "0")) == 0


def world_size() -> int:
    return int(os.environ.get("WORLD_SIZE", "1"))


class RunDir:
    """Paths and stage bookkeeping of one run directory."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)

    def __truediv__(self, other: str) -> Path:
        return self.path / other

    def __repr__(self) -> str:
        return f"RunDir({str(self.path)!r})"

    @property
    def data(self) -> Path:
        return self.path / "data"

    @property
    def train_set(self) -> Path:
        return self.path / "data" / "train_set"

    @property
    def checkpoints(self) -> Path:
        return self.path / "checkpoints"

    @property
    def model(self) -> Path:
        return self.path / "model"

    @property
    def eval(self) -> Path:
        return self.path / "eval"

    def marker(self, stage: str) -> Path:
        return self.path / "stages" / f"{stage}.json"

    def is_done(self, stage: str) -> bool:
        return self.marker(stage).exists()

    def done_info(self, stage: str) -> dict[str, Any]:
        """The stage's done-marker, checked (:func:`xlt.state.read_state`): {} when absent;
        :class:`xlt.state.Damaged` when it is not a marker xlt wrote."""
        return read_state(self.marker(stage), MARKER) or {}

    def mark_done(self, stage: str, info: dict[str, Any] | None = None) -> None:
        atomic_write_json(self.marker(stage), info or {})

    def clear(self, stage: str) -> None:
        remove_path(self.marker(stage))

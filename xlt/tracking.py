"""Experiment tracking with Weights & Biases (``logger.kind: wandb``); a no-op for ``logger.kind: none``.

* :func:`init` starts (or resumes) the run's W&B run on rank 0 only, with a stable id derived from the
  run directory, so a resumed training run and the later report stage log into the same W&B run. The
  resolved config is logged with secrets removed.
* Train/dev metrics reach W&B through the Trainer's own ``report_to=["wandb"]`` callback, which reuses
  the run :func:`init` started (:func:`report_to`).
* :func:`log_report` uploads evaluation tables, plots and the HTML results page (an ``Html`` panel, and
  with the other report files in the ``report-<id>`` artifact; used by the report stage).
"""

from __future__ import annotations

import hashlib
import logging
import sys
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from xlt.config.logger import LoggerConfig
from xlt.errors import ConfigError
from xlt.run.layout import RunDir, is_main_process
from xlt.secrets import redact_config

log = logging.getLogger("xlt.tracking")

KINDS = ("none", "wandb")
MODES = ("online", "offline", "disabled")


def enabled(logger: LoggerConfig) -> bool:
    kind = logger.kind
    if kind not in KINDS:
        raise ConfigError(f"logger.kind must be one of {list(KINDS)}, got {kind!r}")
    return kind == "wandb"


def run_id(run: RunDir) -> str:
    """A W&B run id that is the same for every rank, stage and rerun of one run directory."""
    return "xlt-" + hashlib.sha1(str(Path(run.path).resolve()).encode()).hexdigest()[:16]


def _display_name(logger: LoggerConfig, run: RunDir) -> str:
    return logger.name or "/".join(Path(run.path).parts[-2:])


def init(logger: LoggerConfig, run: RunDir, record: DictConfig, job_type: str = "train"):
    """Start or resume the W&B run of ``run`` on rank 0; returns it, or None when tracking is off.

    ``record``: the config the W&B run records (the run's whole config: only recorded, with its secrets
    removed by :func:`xlt.secrets.redact_config`, never read for a setting)."""
    if not enabled(logger) or not is_main_process():
        return None
    import wandb
    from omegaconf import OmegaConf

    lg = logger
    if lg.mode not in MODES:
        raise ConfigError(f"logger.mode must be one of {list(MODES)}, got {lg.mode!r}")
    if wandb.run is not None and wandb.run.id == run_id(run):
        return wandb.run
    config = OmegaConf.to_container(redact_config(record), resolve=True)
    return wandb.init(
        project=lg.project,
        entity=lg.entity,
        group=lg.group,
        tags=list(lg.tags),
        name=_display_name(logger, run),
        id=run_id(run),
        resume="allow",
        dir=str(run.path),
        config=config,
        job_type=job_type,
        mode=lg.mode,
    )


def report_to(logger: LoggerConfig) -> list[str]:
    """The Trainer's ``report_to``: ``["wandb"]`` when W&B tracking is on (rank 0 only), else ``["none"]``."""
    return ["wandb"] if enabled(logger) else ["none"]


def _active_run():
    """The active W&B run on rank 0 (None elsewhere, or when no run is active).

    A run is active only in a process that imported wandb (:func:`init`, or the Trainer's W&B callback): one that
    never did has none, and does not pay wandb's import (a second or more) to learn it."""
    if not is_main_process():
        return None
    wandb = sys.modules.get("wandb")
    return getattr(wandb, "run", None)


def summarize(values: dict[str, Any]) -> None:
    """Set run-level summary values (best dev accuracy, mean train loss) of the active W&B run on rank 0,
    instead of logging them as one more step of the curves."""
    wb_run = _active_run()
    if wb_run is not None:
        wb_run.summary.update(values)


def finish() -> None:
    wb_run = _active_run()
    if wb_run is not None:
        wb_run.finish()


def log_report(logger: LoggerConfig, run: RunDir, record: DictConfig, files: list[Path], tables: dict[str, Any]) -> None:
    """Log evaluation tables (pandas DataFrames) and report files (plots as images, the rest as an
    artifact) to the run's W&B run (``record``: as for :func:`init`). No-op when ``logger.kind == "none"``
    or on ranks other than 0."""
    wb_run = init(logger, run, record, job_type="report")
    if wb_run is None:
        return
    import wandb

    payload: dict[str, Any] = {f"report/{name}": wandb.Table(dataframe=df) for name, df in tables.items()}
    others = []
    for f in map(Path, files):
        if not f.exists():
            raise FileNotFoundError(f"log_report: {f} does not exist")
        if f.suffix.lower() in (".png", ".jpg", ".jpeg"):
            payload[f"plots/{f.stem}"] = wandb.Image(str(f))
        else:
            if f.suffix.lower() == ".html":  # the self-contained results page, shown in the W&B UI too
                payload[f"report/{f.stem}_page"] = wandb.Html(f, inject=False)
            others.append(f)
    if payload:
        wb_run.log(payload)
    if others:
        art = wandb.Artifact(name=f"report-{run_id(run)}", type="report")
        for f in others:
            art.add_file(str(f), name=f.name)
        wb_run.log_artifact(art)
    wb_run.finish()

"""Schema of the ``logger`` group (conf/logger/*.yaml): experiment tracking (see :mod:`xlt.tracking`)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class LoggerConfig:
    # "none" (offline default) or "wandb".
    kind: str = "none"
    project: str = "xlt"
    entity: str | None = None
    # Runs of one recipe (e.g. a seed sweep) share a group.
    group: str | None = None
    tags: list[str] = field(default_factory=list)
    # wandb mode: "online", "offline" or "disabled". The API key comes from `wandb login` or
    # WANDB_API_KEY, never from the config.
    mode: str = "online"
    # W&B run name (None: the run directory's name, e.g. "xlmr_zeroshot/seed=2").
    name: str | None = None

"""Schema of the ``logger`` group (conf/logger/*.yaml): experiment tracking (see :mod:`xlt.tracking`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from xlt.config.fields import opt


@dataclass
class LoggerConfig:
    # "none" (offline default) or "wandb".
    kind: str = opt("none", choices=("none", "wandb"))
    project: str = "xlt"
    entity: str | None = None
    # Runs of one recipe (e.g. a seed sweep) share a group.
    group: str | None = None
    tags: list[str] = field(default_factory=list)
    # wandb mode: "online", "offline" or "disabled". The API key comes from `wandb login` or
    # WANDB_API_KEY, never from the config.
    mode: str = opt("online", choices=("online", "offline", "disabled"))
    # W&B run name (None: the run directory's name, e.g. "xlmr_zeroshot/seed=2").
    name: str | None = None

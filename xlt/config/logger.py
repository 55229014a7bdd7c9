"""Schema of the ``logger`` group (conf/logger/*.yaml): experiment tracking."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class LoggerConfig:
    # "none" (offline default) or "wandb".
    kind: str = "none"
    project: str = "xlt"
    entity: str | None = None
    group: str | None = None
    tags: list[str] = field(default_factory=list)
    # wandb mode: "online", "offline" or "disabled".
    mode: str = "online"

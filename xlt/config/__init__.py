"""Structured (dataclass) config schemas, registered in Hydra's ConfigStore.

The root schema :class:`XltConfig` holds one section per config group in ``conf/``; each section's
dataclass lives in a module of this package named like the group. Unknown or misspelled keys are
rejected by Hydra for ordinary overrides and by :func:`validate` for ``+key=value`` additions, which
bypass the schema.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig, OmegaConf

from xlt.config.data import DataConfig
from xlt.config.eval import EvalConfig
from xlt.config.logger import LoggerConfig
from xlt.config.model import ModelConfig
from xlt.config.training import TrainingConfig
from xlt.config.translate import TranslateConfig
from xlt.errors import ConfigError

STAGES = ("build_data", "translate", "train", "evaluate", "report")


@dataclass
class XltConfig:
    """The whole configuration of one xlt run."""

    # The stages `python -m xlt.train` runs, in this order (a subset of STAGES).
    stages: list[str] = field(default_factory=lambda: ["build_data", "train", "evaluate", "report"])
    seed: int = 42
    # Root folder of run directories; each run's folder is derived from the recipe and its overrides.
    run_root: str = "runs"
    # Set by the recipe file (its own name); used to name the run directory.
    recipe_name: str = "none"
    description: str = ""
    # Re-run stages even if marked done.
    force: bool = False
    model: ModelConfig = field(default_factory=ModelConfig)
    data: DataConfig = field(default_factory=DataConfig)
    translate: TranslateConfig = field(default_factory=TranslateConfig)
    training: TrainingConfig = field(default_factory=TrainingConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    logger: LoggerConfig = field(default_factory=LoggerConfig)


def register() -> None:
    """Register the root schema (as ``xlt_schema``) so ``conf/config.yaml`` can extend it."""
    ConfigStore.instance().store(name="xlt_schema", node=XltConfig)


def validate(cfg: DictConfig | dict[str, Any]) -> DictConfig:
    """Merge ``cfg`` into the schema; raise :class:`ConfigError` naming any unknown key or bad value.

    Hydra checks ordinary overrides against the schema, but ``+key=value`` additions bypass it;
    this catches those too. Hydra's own ``hydra`` node is ignored.
    """
    container = OmegaConf.to_container(cfg, resolve=False) if isinstance(cfg, DictConfig) else dict(cfg)
    container.pop("hydra", None)
    schema = OmegaConf.structured(XltConfig)
    try:
        merged = OmegaConf.merge(schema, container)
    except Exception as err:  # omegaconf raises several error types; all mean "bad key or value"
        key = getattr(err, "full_key", None) or ""
        msg = str(err).splitlines()[0]
        raise ConfigError(f"invalid config key '{key}': {msg}") from None
    bad = [s for s in merged.stages if s not in STAGES]
    if bad:
        raise ConfigError(f"unknown stage(s) {bad}; valid stages are {list(STAGES)}")
    return merged

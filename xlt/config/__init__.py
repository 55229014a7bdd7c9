"""Structured (dataclass) config schemas, registered in Hydra's ConfigStore.

The root schema :class:`XltConfig` holds one section per config group in ``conf/``; each section's
dataclass lives in a module of this package named like the group. Unknown or misspelled keys are
rejected by Hydra for ordinary overrides and by :func:`validate` for ``+key=value`` additions, which
bypass the schema.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig, OmegaConf

from xlt.config.data import DataConfig
from xlt.config.eval import EvalConfig
from xlt.config.fields import check_values, neutral, opt
from xlt.config.logger import LoggerConfig
from xlt.config.model import ModelConfig
from xlt.config.paths import CONF_DIR  # noqa: F401  (re-exported)
from xlt.config.training import TrainingConfig
from xlt.config.translate import TranslateConfig
from xlt.errors import ConfigError

STAGES = ("build_data", "translate", "train", "evaluate", "report")


@dataclass
class XltConfig:
    """The whole configuration of one xlt run."""

    # The stages `python -m xlt.train` runs, in this order (a subset of STAGES).
    stages: list[str] = neutral(why="which stages run now, not what any of them computes", default_factory=lambda: ["build_data", "train", "evaluate", "report"])
    seed: int = opt(42, affects="train", ge=0, le=2**32 - 1)  # numpy seeds take 0..2**32-1
    # Root folder of run directories; each run's folder is derived from the recipe and its overrides.
    run_root: str = neutral("runs", why="where run directories go")
    # Set by the recipe file (its own name); used to name the run directory.
    recipe_name: str = neutral("none", why="names the run directory only")
    description: str = neutral("", why="free text for the report")
    # Redo the stages that run (and so everything downstream of them): see xlt/contract.py.
    force: bool = neutral(False, why="redoes stages; what they compute is unchanged")
    # Hydra multirun (-m): stop the sweep at the first job that fails (default: report it, run the rest).
    multirun_fail_fast: bool = neutral(False, why="how a sweep reacts to a failed job")
    model: ModelConfig = opt(default_factory=ModelConfig, affects="train")
    data: DataConfig = opt(default_factory=DataConfig, affects="build_data")
    translate: TranslateConfig = opt(default_factory=TranslateConfig, affects="translate")
    training: TrainingConfig = opt(default_factory=TrainingConfig, affects="train")
    eval: EvalConfig = opt(default_factory=EvalConfig, affects="evaluate")
    logger: LoggerConfig = neutral(default_factory=LoggerConfig, why="experiment tracking only")


def _mt_languages(model: str, languages: str, exclude: str = "") -> list[str]:
    from xlt.languages import mt_codes

    return mt_codes(model, languages, [exclude] if exclude else [])


def register() -> None:
    """Register the root schema (as ``xlt_schema``) so ``conf/config.yaml`` can extend it, and the
    resolvers the config files use (``xlt_assets``, ``xlt_run_root``, ``xlt_run_name``, ``xlt_model_name``,
    ``xlt_languages``)."""
    from xlt.config.keys import run_name
    from xlt.config.overrides import checked_run_root

    resolvers = {
        "xlt_run_name": lambda overrides: run_name(list(overrides)),
        "xlt_run_root": checked_run_root,
        "xlt_assets": lambda: str(Path(__file__).resolve().parent.parent / "assets"),
        # A short model name from a checkpoint: its folder name or the last part of its Hub id.
        "xlt_model_name": lambda name_or_path: Path(str(name_or_path).rstrip("/")).name or str(name_or_path),
        # ${xlt_languages:nllb,<table column>,eng_Latn}: the languages of the table an MT model covers, without
        # the source (xlt.languages.mt_codes): the translate configs' target lists come from the table.
        "xlt_languages": _mt_languages,
    }
    for name, fn in resolvers.items():
        if not OmegaConf.has_resolver(name):
            OmegaConf.register_new_resolver(name, fn)
    ConfigStore.instance().store(name="xlt_schema", node=XltConfig)


def validate(cfg: DictConfig | dict[str, Any], stages: Sequence[str] | None = None) -> DictConfig:
    """Merge ``cfg`` into the schema and check every value; raise :class:`ConfigError` naming each problem.

    Hydra checks ordinary overrides against the schema, but ``+key=value`` additions bypass it; the merge
    catches those. Then every field's rule (choices, ranges: :mod:`xlt.config.fields`) and the
    cross-field rules (:mod:`xlt.config.rules`) are checked, so a bad value stops the run before any
    stage starts; given the ``stages`` about to run, also what those stages need (sources, benchmarks,
    languages to translate, an LLM to score). Hydra's own ``hydra`` node is ignored.
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
    from xlt.config.rules import cross_field_errors

    errors = check_values(XltConfig, merged) + cross_field_errors(merged, stages)
    if errors:
        raise ConfigError("invalid config:\n  " + "\n  ".join(errors))
    return merged

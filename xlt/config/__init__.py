"""Structured (dataclass) config schemas, registered in Hydra's ConfigStore.

The root schema :class:`XltConfig` holds one section per config group in ``conf/``; each section's
dataclass lives in a module of this package named like the group. Unknown or misspelled keys are
rejected by Hydra for ordinary overrides and by :func:`validate` for ``+key=value`` additions, which
bypass the schema.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig, OmegaConf

from xlt.config.fields import check_values
from xlt.config.keys import run_name
from xlt.config.overrides import checked_run_root
from xlt.config.paths import CONF_DIR
from xlt.config.rules import STAGES, cross_field_errors
from xlt.config.schema import XltConfig
from xlt.config.translate import normalize_engine
from xlt.errors import ConfigError
from xlt.languages import mt_codes
from xlt.registry import include

__all__ = ["CONF_DIR", "STAGES", "XltConfig", "register", "validate"]


def _mt_languages(model: str, languages: str, exclude: str = "") -> list[str]:
    return mt_codes(model, languages, [exclude] if exclude else [])


def register(entries: Sequence[tuple[str, str]] = ()) -> None:
    """Register the root schema (as ``xlt_schema``) so ``conf/config.yaml`` can extend it, and the
    resolvers the config files use (``xlt_assets``, ``xlt_run_root``, ``xlt_run_name``, ``xlt_model_name``,
    ``xlt_languages``). ``entries``: ``(section, name)`` of dict entries the command line adds
    (:func:`xlt.config.overrides.new_entries`), held in the schema with their defaults."""
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
    schema = OmegaConf.structured(XltConfig)
    for section, name in entries:
        node = OmegaConf.select(schema, section)
        if name not in node:
            node[name] = OmegaConf.structured(node._metadata.element_type)
    ConfigStore.instance().store(name="xlt_schema", node=schema)


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
    # Definition files register their kinds before the kinds are checked; the folders are kept absolute, so
    # the run's config.yaml finds them from anywhere (report --compare reads them there).
    merged.eval.include_path = [str(Path(str(p)).expanduser().resolve()) for p in merged.eval.include_path]
    include(merged.eval.include_path)
    normalize_engine(merged.translate)
    errors = check_values(XltConfig, merged) + cross_field_errors(merged, stages)
    if errors:
        raise ConfigError("invalid config:\n  " + "\n  ".join(errors))
    return merged

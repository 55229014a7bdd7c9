"""A config composed as the entry points compose it (Hydra's compose API), outside a Hydra app: for tools that
read a run's config from its recipe and overrides (``xlt.prefetch``, the sweep tools of :mod:`xlt.cluster`, tests).

New dict entries named on the command line (``+eval.benchmarks.x=...``) are held in the schema for this composition
only (:func:`xlt.config.overrides.new_entries`); the result is validated (:func:`xlt.config.validate`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from omegaconf import DictConfig

from xlt import config as xcfg
from xlt.config.overrides import entry_overrides, new_entries
from xlt.config.paths import CONF_DIR
from xlt.errors import ConfigError


def compose(recipe: str | None, overrides: Sequence[str] = (), stages: Sequence[str] | None = None) -> DictConfig:
    """The validated config of ``+recipe=<recipe> overrides...``, composed as the entry points do (validated
    for ``stages``; None: the stages it lists)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.errors import HydraException

    args = [o for o in overrides if not o.lstrip("+").startswith("recipe=")]
    if recipe is None:
        recipe = next((o.partition("=")[2] for o in overrides if o.lstrip("+").startswith("recipe=")), None)
    if recipe:
        args.insert(0, f"+recipe={recipe}")
    args = entry_overrides(args)
    entries = new_entries(args)
    xcfg.register(entries)
    if GlobalHydra.instance().is_initialized():
        GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(Path(CONF_DIR).resolve()), version_base="1.3"):
            cfg = hydra_compose(config_name="config", overrides=args)
    except HydraException as err:
        raise ConfigError(f"cannot compose {' '.join(args) or '(no overrides)'}: {err}") from None
    finally:
        if entries:  # the entries belong to this composition only: the next one starts from the plain schema
            xcfg.register()
    return xcfg.validate(cfg, stages)

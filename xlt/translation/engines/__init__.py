"""The MT engines and the translator a ``translate`` config selects, through the registry
``xlt.registry.MT_ENGINES`` (an installed package adds an engine with an entry point in the group
``xlt.mt_engines``, a definition file of ``eval.include_path`` with a subclass of
:class:`~xlt.translation.engines.base.Engine`).

``translate.kind`` names the translator: ``hf``, an NLLB / M2M100 checkpoint run by the engine
``translate.engine`` names (``auto``: :func:`xlt.translation.engines.ct2.resolve_engine`), or an engine that
translates on its own (``echo``, a plug-in's).

* :mod:`~xlt.translation.engines.base` the translator interface, the :class:`Engine` interface,
  :class:`EngineSettings` (the settings both checkpoint engines take), language tokens, length-sorted
  batching, the deterministic ``echo`` engine;
* :mod:`~xlt.translation.engines.hf`   ``translate.engine=transformers``: transformers' ``generate``;
* :mod:`~xlt.translation.engines.ct2`  ``translate.engine=ctranslate2``: the converted checkpoint.
"""

from __future__ import annotations

import logging
from typing import Any

from xlt.config.translate import TranslateConfig
from xlt.errors import ConfigError
from xlt.registry import MT_ENGINES
from xlt.translation.engines import ct2
from xlt.translation.engines.base import Engine, Translator

log = logging.getLogger(__name__)


def select_engine(tcfg: TranslateConfig) -> Engine:
    """The MT engine ``translate`` config ``tcfg`` selects: ``translate.kind``'s, or for ``kind=hf`` the one
    ``translate.engine`` names (``auto`` resolved); an unknown name, or one of the wrong sort, is a
    :class:`ConfigError`."""
    if tcfg.kind != "hf":
        engine = MT_ENGINES.get_entry(str(tcfg.kind))
        if engine.checkpoint:
            raise ConfigError(f"translate.kind={tcfg.kind} is an engine for checkpoints: use translate.kind=hf "
                              f"translate.engine={tcfg.kind}")
        return engine
    name = ct2.resolve_engine(str(tcfg.engine), tcfg.model_name_or_path, tcfg.revision)
    engine = MT_ENGINES.get_entry(name)
    if not engine.checkpoint:
        raise ConfigError(f"translate.engine={name} does not run checkpoints: use translate.kind={name}")
    return engine


def build_translator(tcfg: TranslateConfig) -> Translator:
    """The translator that ``translate`` config ``tcfg`` selects (:func:`select_engine`)."""
    engine = select_engine(tcfg)
    if tcfg.kind == "hf":
        log.info("translate: engine %s (translate.engine=%s)", engine.name, tcfg.engine)
    return engine.build(tcfg)


def resolved_settings(tcfg: TranslateConfig) -> dict[str, Any]:
    """What the translator ``tcfg`` selects runs as, found without loading it (:meth:`Engine.resolved`): for a
    checkpoint, the engine (``auto`` resolved) and the dtype (transformers) or CTranslate2 compute type
    (``auto`` resolved on this machine's device); for a plug-in engine, also its code's identity (its
    distribution's version, or its definition file's content). These enter the hashes of what it
    translates: installing ctranslate2, or moving to a GPU, is another translator under the same settings."""
    engine = select_engine(tcfg)
    out = engine.resolved(tcfg)
    identity = MT_ENGINES.identity(engine.name)  # None for xlt's own engines: their hashes stay as they were
    return {**out, "definition": identity} if identity else out


def reads_checkpoint(tcfg: TranslateConfig) -> bool:
    """Whether the translator reads ``translate.model_name_or_path`` (its fingerprint enters the hashes)."""
    return tcfg.kind == "hf"


def stored_identity(tcfg: TranslateConfig) -> str:
    """The translator identity a translation report records when no translator was built in this process."""
    return select_engine(tcfg).stored_identity(tcfg)

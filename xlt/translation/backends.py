"""The translator a ``translate`` config selects: echo, or an NLLB / M2M100 checkpoint on the engine that
``translate.engine`` names (``auto``: :func:`xlt.translation.ct2.resolve_engine`)."""

from __future__ import annotations

import logging
from typing import Any

from xlt.errors import ConfigError
from xlt.translation import ct2
from xlt.translation.translator import EchoTranslator, HFSeq2SeqTranslator, Translator, engine_settings

log = logging.getLogger(__name__)


def build_translator(tcfg: Any) -> Translator:
    """The translator that ``translate`` config ``tcfg`` selects (``kind``: "hf" or "echo"; for "hf",
    ``engine``: "hf", "ctranslate2" or "auto", see :func:`xlt.translation.ct2.resolve_engine`)."""
    kind = tcfg.kind
    if kind == "echo":
        return EchoTranslator(batch_size=tcfg.batch_size, max_batch_tokens=tcfg.max_batch_tokens)
    if kind == "hf":
        engine = ct2.resolve_engine(tcfg.engine, tcfg.model_name_or_path, tcfg.revision)
        log.info("translate: engine %s (translate.engine=%s)", engine, tcfg.engine)
        if engine == "ctranslate2":
            return ct2.build_ct2_translator(tcfg)
        if tcfg.compute_type != "auto":
            raise ConfigError(f"translate.compute_type={tcfg.compute_type} needs engine ctranslate2, but "
                              f"translate.engine={tcfg.engine} resolved to hf (is ctranslate2 installed?)")
        return HFSeq2SeqTranslator(tcfg.model_name_or_path, **engine_settings(tcfg))
    raise ConfigError(f"translate.kind must be 'hf' or 'echo', got {kind!r}")

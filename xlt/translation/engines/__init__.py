"""The MT engines and the translator a ``translate`` config selects: echo, or an NLLB / M2M100 checkpoint
on the engine that ``translate.engine`` names (``auto``: :func:`xlt.translation.engines.ct2.resolve_engine`).

* :mod:`~xlt.translation.engines.base` the translator interface, :class:`EngineSettings` (the settings
  both engines take), language tokens, length-sorted batching, the deterministic ``echo`` translator;
* :mod:`~xlt.translation.engines.hf`   ``translate.engine=hf``: transformers' ``generate``;
* :mod:`~xlt.translation.engines.ct2`  ``translate.engine=ctranslate2``: the converted checkpoint.
"""

from __future__ import annotations

import logging
from typing import Any

from xlt.config.translate import TranslateConfig
from xlt.errors import ConfigError
from xlt.translation.engines import ct2
from xlt.translation.engines.base import EchoTranslator, EngineSettings, Translator, pick_device, pick_dtype
from xlt.translation.engines.hf import HFSeq2SeqTranslator

log = logging.getLogger(__name__)


def build_translator(tcfg: TranslateConfig) -> Translator:
    """The translator that ``translate`` config ``tcfg`` selects (``kind``: "hf" or "echo"; for "hf",
    ``engine``: "hf", "ctranslate2" or "auto", see :func:`xlt.translation.engines.ct2.resolve_engine`)."""
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
        return HFSeq2SeqTranslator(tcfg.model_name_or_path, EngineSettings.from_cfg(tcfg))
    raise ConfigError(f"translate.kind must be 'hf' or 'echo', got {kind!r}")


def resolved_settings(tcfg: TranslateConfig) -> dict[str, Any]:
    """What the translator ``tcfg`` selects runs as, found without loading it: the engine (``auto``
    resolved) and the dtype (hf) or CTranslate2 compute type (``auto`` resolved on this machine's device).
    These enter the hashes of what it translates: installing ctranslate2, or moving to a GPU, is another
    translator under the same settings."""
    if tcfg.kind != "hf":
        return {"kind": str(tcfg.kind)}
    engine = ct2.resolve_engine(tcfg.engine, tcfg.model_name_or_path, tcfg.revision)
    if engine == "ctranslate2":
        if not ct2.available():  # the translator says how to install it
            return {"engine": engine, "compute_type": str(tcfg.compute_type)}
        import ctranslate2

        device, ids = ct2.parse_device(str(tcfg.device))
        compute = ct2.resolve_compute_type(tcfg.compute_type, tcfg.precision, device, ids[0])
        return {"engine": engine, "compute_type": compute, "ctranslate2": ctranslate2.__version__}
    dtype = pick_dtype(tcfg.precision, pick_device(str(tcfg.device)))
    return {"engine": engine, "dtype": str(dtype).replace("torch.", "")}

"""The transformers engine (``translate.engine=transformers``, formerly ``hf``) for NLLB and M2M100 checkpoints."""

from __future__ import annotations

import json
import logging
from typing import Any

from xlt.config.translate import TranslateConfig
from xlt.errors import ConfigError
from xlt.hub import hub_resource
from xlt.translation.engines.base import Engine, EngineSettings, LanguageTokens, pick_device, pick_dtype
from xlt.weights import from_pretrained_kwargs, log_weights

log = logging.getLogger(__name__)


class HFSeq2SeqTranslator(LanguageTokens):
    """NLLB / M2M100 (any ``AutoModelForSeq2SeqLM`` with language tokens) through transformers.

    The source language is set on the tokenizer (``tokenizer.src_lang``) and the target forced as the
    first generated token (``forced_bos_token_id``): the FLORES code's token for NLLB, ``get_lang_id``
    for M2M100 (FLORES codes mapped to its ISO codes). Greedy or beam search, never sampling.
    """

    def __init__(self, model_name_or_path: str, settings: EngineSettings | None = None, *,
                 model: Any = None, tokenizer: Any = None) -> None:
        super().__init__()
        import torch  # noqa: F401  (fail early with a clear import error)
        from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

        self.settings = s = settings or EngineSettings()
        s.check()
        self.device = pick_device(s.device)
        self.dtype = pick_dtype(s.precision, self.device)
        if tokenizer is None:
            with hub_resource("tokenizer", model_name_or_path, s.revision, "translate.model_name_or_path"):
                tokenizer = AutoTokenizer.from_pretrained(model_name_or_path, revision=s.revision)
        if model is None:
            with hub_resource("model", model_name_or_path, s.revision, "translate.model_name_or_path"):
                model = AutoModelForSeq2SeqLM.from_pretrained(
                    model_name_or_path, revision=s.revision, dtype=self.dtype,
                    **from_pretrained_kwargs(model_name_or_path, s.revision)
                )
            log_weights("translate model", model_name_or_path, s.revision)
        self.tokenizer = tokenizer
        self.model = model.to(device=self.device, dtype=self.dtype).eval()
        self.batch_size = s.batch_size
        self.max_batch_tokens = s.max_batch_tokens
        identity = s.identity(model_name_or_path, dtype=str(self.dtype).replace("torch.", ""))
        if s.num_beams > 1:  # greedy identities (and their cached translations) stay as they were
            identity.update(length_penalty=s.length_penalty, early_stopping=True)
        self.identity = "hf/" + json.dumps(identity, sort_keys=True)

    def _generate(self, texts: list[str], src_lang: str, tgt_lang: str) -> list[str]:
        import torch

        s = self.settings
        self.tokenizer.src_lang = self._model_code(src_lang)
        enc = self.tokenizer(
            texts, return_tensors="pt", padding=True, truncation=True, max_length=s.max_input_tokens
        ).to(self.device)
        with torch.inference_mode():
            out = self.model.generate(
                **enc,
                forced_bos_token_id=self.lang_token_id(tgt_lang),
                max_new_tokens=s.generation_limit(enc["input_ids"].shape[1]),
                num_beams=s.num_beams,
                do_sample=False,
                # Beam search: stop once num_beams hypotheses are finished (CTranslate2's patience=1).
                **({"early_stopping": True, "length_penalty": s.length_penalty} if s.num_beams > 1 else {}),
            )
        return [t.strip() for t in self.tokenizer.batch_decode(out, skip_special_tokens=True)]


class TransformersEngine(Engine):
    """``translate.engine=transformers``: :class:`HFSeq2SeqTranslator`. In the hashes it is ``hf``, its old name
    (the translations made under it keep their hashes)."""

    name = "transformers"
    checkpoint = True

    def build(self, tcfg: TranslateConfig) -> HFSeq2SeqTranslator:
        if tcfg.compute_type != "auto":
            raise ConfigError(f"translate.compute_type={tcfg.compute_type} needs engine ctranslate2, but "
                              f"translate.engine={tcfg.engine} resolved to transformers (is ctranslate2 installed?)")
        return HFSeq2SeqTranslator(tcfg.model_name_or_path, EngineSettings.from_cfg(tcfg))

    def resolved(self, tcfg: TranslateConfig) -> dict[str, Any]:
        dtype = pick_dtype(tcfg.precision, pick_device(str(tcfg.device)))
        return {"engine": "hf", "dtype": str(dtype).replace("torch.", "")}

    def stored_identity(self, tcfg: TranslateConfig) -> str:
        return f"hf/{tcfg.model_name_or_path}@{tcfg.revision or 'default'}"

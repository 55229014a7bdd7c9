"""What every MT engine shares: the translator interface, the engine settings, language tokens.

A :class:`Translator` turns a list of texts from one language into another. It exposes:

* ``identity``: everything that changes its outputs (model, revision, generation settings), used in
  cache keys so a different model or setting never reuses stale translations;
* ``translate_batches(texts, src, tgt)``: yields ``(indices, outputs)`` per batch, so the caller can
  commit each batch to the cache before the next one starts (a killed run loses at most one batch).

Batches are made from length-sorted texts (:func:`length_sorted_batches`), so a batch pads little and
stops generating early. An MT engine (:class:`Engine`, registered in :data:`xlt.registry.MT_ENGINES`)
builds a translator from the ``translate`` section. Translators:
:class:`~xlt.translation.engines.hf.HFSeq2SeqTranslator` (NLLB, M2M100 through transformers),
:class:`~xlt.translation.engines.ct2.CT2Translator` (the same models through CTranslate2), both configured
by one :class:`EngineSettings` and sharing :class:`LanguageTokens`; and :class:`EchoTranslator`
(deterministic, no model: ``"[<lang>] " + text``).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from xlt import languages as langtab
from xlt.batching import AdaptiveBatcher
from xlt.config.translate import TranslateConfig
from xlt.errors import ConfigError

log = logging.getLogger(__name__)


def length_sorted_batches(
    lengths: Sequence[int], batch_size: int, max_batch_tokens: int | None = None
) -> list[list[int]]:
    """Indices grouped into batches of similar length, longest first (OOM shows up at once).

    A batch holds at most ``batch_size`` items and, if ``max_batch_tokens`` is set, at most that many
    padded tokens (items x longest item); an item longer than the budget gets a batch of its own.
    Ties keep input order, so batching is deterministic.
    """
    if batch_size < 1:
        raise ConfigError(f"translate.batch_size must be >= 1, got {batch_size}")
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    batches: list[list[int]] = []
    cur: list[int] = []
    for i in order:
        longest = lengths[cur[0]] if cur else lengths[i]
        too_many = len(cur) >= batch_size
        too_big = max_batch_tokens is not None and cur and (len(cur) + 1) * longest > max_batch_tokens
        if cur and (too_many or too_big):
            batches.append(cur)
            cur = []
        cur.append(i)
    if cur:
        batches.append(cur)
    return batches


class Translator:
    """Base class: subclasses set ``identity`` and implement ``lengths`` and ``_generate``."""

    identity: str = ""
    batch_size: int = 32
    max_batch_tokens: int | None = None

    def __init__(self) -> None:
        # Counters the quality report picks up (e.g. inputs truncated to max_input_tokens).
        self.stats: dict[str, int] = {"truncated_inputs": 0, "generate_calls": 0}

    def lengths(self, texts: Sequence[str]) -> list[int]:
        return [len(t) for t in texts]

    def _generate(self, texts: list[str], src_lang: str, tgt_lang: str) -> list[str]:
        raise NotImplementedError

    def translate_batches(
        self, texts: Sequence[str], src_lang: str, tgt_lang: str
    ) -> Iterator[tuple[list[int], list[str]]]:
        """Yield ``(indices into texts, translations)`` per length-sorted batch."""
        if not texts:
            return
        # On out-of-memory a batch is split (halving, kept for the next batches); its finished parts are kept.
        oom = getattr(self, "_oom", None) or AdaptiveBatcher(max(self.batch_size, 1), what="translation")
        self._oom = oom
        for batch in length_sorted_batches(self.lengths(texts), self.batch_size, self.max_batch_tokens):
            self.stats["generate_calls"] += 1
            yield batch, oom.map(lambda chunk: self._generate(chunk, src_lang, tgt_lang), [texts[i] for i in batch])

    def translate(self, texts: Sequence[str], src_lang: str, tgt_lang: str) -> list[str]:
        """Translate all of ``texts`` (in order); no cache."""
        out: list[str] = [""] * len(texts)
        for idx, outs in self.translate_batches(texts, src_lang, tgt_lang):
            for i, o in zip(idx, outs, strict=True):
                out[i] = o
        return out


class EchoTranslator(Translator):
    """Deterministic test translator: ``"[<tgt_lang>] " + text``. Needs no model."""

    def __init__(self, batch_size: int = 32, max_batch_tokens: int | None = None) -> None:
        super().__init__()
        self.identity = "echo/v1"
        self.batch_size = batch_size
        self.max_batch_tokens = max_batch_tokens

    def _generate(self, texts: list[str], src_lang: str, tgt_lang: str) -> list[str]:
        return [f"[{tgt_lang}] {t}" for t in texts]


class Engine:
    """An MT engine (:data:`xlt.registry.MT_ENGINES`): builds the translator a ``translate`` section selects
    and says, without loading it, what of it enters the hashes of what it translates.

    A subclass sets ``name`` (its name in the registry) and ``checkpoint``: True for an engine that runs
    the checkpoint ``translate.model_name_or_path`` of ``translate.kind=hf`` (selected by
    ``translate.engine``, like transformers and CTranslate2; the checkpoint's fingerprint enters the
    hashes), False for one that translates on its own (selected by ``translate.kind``, like echo). It
    implements :meth:`build`, and may refine :meth:`resolved` and :meth:`stored_identity`. The translator's
    ``identity`` (cache keys, the translation report) is the translator's own (:class:`Translator`).
    """

    name: str = ""
    checkpoint: bool = False

    def build(self, tcfg: TranslateConfig) -> Translator:
        """The translator for ``translate`` section ``tcfg``."""
        raise NotImplementedError

    def resolved(self, tcfg: TranslateConfig) -> dict[str, Any]:
        """What the translator runs as on this machine, found without loading it (e.g. a dtype resolved from
        ``auto``): it enters the hashes of what it translates, beside the ``translate`` settings."""
        return {"kind": str(tcfg.kind)}

    def stored_identity(self, tcfg: TranslateConfig) -> str:
        """The identity the translation report records when every part was translated by earlier processes
        (no translator was built in this one)."""
        return f"{self.name}/{tcfg.model_name_or_path}@{tcfg.revision or 'default'}" if self.checkpoint else self.name


class EchoEngine(Engine):
    """``translate.kind=echo``: :class:`EchoTranslator` (deterministic, no model)."""

    name = "echo"

    def build(self, tcfg: TranslateConfig) -> Translator:
        return EchoTranslator(batch_size=tcfg.batch_size, max_batch_tokens=tcfg.max_batch_tokens)

    def stored_identity(self, tcfg: TranslateConfig) -> str:
        return "echo/v1"


def pick_device(device: str) -> str:
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


def pick_dtype(precision: str, device: str) -> Any:
    import torch

    if precision == "auto":
        if device.startswith("cuda") and torch.cuda.is_bf16_supported():
            return torch.bfloat16
        return torch.float32
    table = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
    if precision not in table:
        raise ConfigError(f"translate.precision must be one of auto, {', '.join(table)}; got {precision!r}")
    return table[precision]


@dataclass(frozen=True)
class EngineSettings:
    """The ``translate`` settings both NLLB / M2M100 engines take: the checkpoint's revision, batching
    limits, decoding and device (``translate.engine``, ``compute_type`` and threads are the CTranslate2
    engine's own arguments)."""

    revision: str | None = None
    batch_size: int = 32
    max_batch_tokens: int | None = None
    max_input_tokens: int = 256
    max_new_tokens: int = 256
    max_new_tokens_ratio: float | None = 2.0
    num_beams: int = 1
    length_penalty: float = 1.0
    precision: str = "auto"
    device: str = "auto"
    lang_code_map: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_cfg(cls, tcfg: TranslateConfig) -> EngineSettings:
        """The settings of ``translate`` config ``tcfg``."""
        return cls(revision=tcfg.revision, batch_size=tcfg.batch_size, max_batch_tokens=tcfg.max_batch_tokens,
                   max_input_tokens=tcfg.max_input_tokens, max_new_tokens=tcfg.max_new_tokens,
                   max_new_tokens_ratio=tcfg.max_new_tokens_ratio, num_beams=tcfg.num_beams,
                   length_penalty=tcfg.length_penalty, precision=tcfg.precision, device=str(tcfg.device),
                   lang_code_map=dict(tcfg.lang_code_map or {}))

    def check(self) -> None:
        if self.max_new_tokens < 1:
            raise ConfigError(f"translate.max_new_tokens must be >= 1, got {self.max_new_tokens}")

    def generation_limit(self, input_tokens: int) -> int:
        """New tokens a batch whose longest input has ``input_tokens`` tokens may generate."""
        if self.max_new_tokens_ratio is None:
            return self.max_new_tokens
        return min(self.max_new_tokens, math.ceil(self.max_new_tokens_ratio * input_tokens) + 10)

    def identity(self, model_name_or_path: str, **engine: Any) -> dict[str, Any]:
        """What enters a translator's identity (its cache key): the checkpoint, the decoding settings and
        ``engine``'s own; a language-code map only when one is set, so identities without one stay as
        they were."""
        settings = {
            "model": str(model_name_or_path),
            "revision": self.revision,
            "max_input_tokens": self.max_input_tokens,
            "max_new_tokens": self.max_new_tokens,
            "max_new_tokens_ratio": self.max_new_tokens_ratio,
            "num_beams": self.num_beams,
            **engine,
        }
        if self.lang_code_map:
            settings["lang_code_map"] = dict(sorted(self.lang_code_map.items()))
        return settings


class LanguageTokens(Translator):
    """What both NLLB / M2M100 engines share: their settings, language codes and tokens, input lengths,
    truncation. Subclasses set ``tokenizer`` and ``settings``."""

    tokenizer: Any
    settings: EngineSettings

    # Language codes ---------------------------------------------------------------------------------
    def _model_code(self, code: str) -> str:
        """The tokenizer's spelling of FLORES ``code`` (unchanged for NLLB, mapped for M2M100)."""
        if code in self.settings.lang_code_map:
            return self.settings.lang_code_map[code]
        if hasattr(self.tokenizer, "get_lang_id"):
            if code in getattr(self.tokenizer, "lang_code_to_token", {}):
                return code
            m2m100 = langtab.m2m100_code(code)  # the language table (xlt/languages.tsv)
            if m2m100 is not None:
                return m2m100
            raise ConfigError(
                f"language {code!r} has no M2M100 code in xlt/languages.tsv; add it with "
                f"translate.lang_code_map.{code}=<code>"
            )
        return code

    def _vocab_codes(self) -> set[str]:
        vocab = getattr(self, "_vocab_cache", None)
        if vocab is None:
            vocab = self._vocab_cache = set(self.tokenizer.get_vocab())
        return vocab

    def lang_token_id(self, code: str) -> int:
        """Token id forced as the first generated token for FLORES ``code``; ConfigError if unknown."""
        mcode = self._model_code(code)
        if hasattr(self.tokenizer, "get_lang_id"):
            return int(self.tokenizer.get_lang_id(mcode))
        tid = self.tokenizer.convert_tokens_to_ids(mcode)
        if tid is None or tid == self.tokenizer.unk_token_id or mcode not in self._vocab_codes():
            raise ConfigError(
                f"language {code!r} is not a language token of the MT tokenizer; "
                "use a FLORES-200 code the model knows (see conf/translate/*.yaml)"
            )
        return int(tid)

    def check_languages(self, codes: Sequence[str]) -> None:
        for code in codes:
            self.lang_token_id(code)

    # Batching -------------------------------------------------------------------------
    def lengths(self, texts: Sequence[str]) -> list[int]:
        enc = self.tokenizer(list(texts), add_special_tokens=True, truncation=False)
        lens = [len(ids) for ids in enc["input_ids"]]
        limit = self.settings.max_input_tokens
        self.stats["truncated_inputs"] += sum(n > limit for n in lens)
        return [min(n, limit) for n in lens]

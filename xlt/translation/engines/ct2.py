"""The CTranslate2 engine (``translate.engine=ctranslate2``) for NLLB and M2M100 checkpoints.

The checkpoint is converted once per (checkpoint fingerprint, quantization, CTranslate2 version) into
``$XLT_CACHE/ct2/<key>``: converted into a temporary folder and renamed into place under a file lock,
so shards starting together convert once and never see a half-written model. Tokenization, language
codes, truncation and the per-batch generation limit are the transformers engine's
(:class:`~xlt.translation.engines.base.LanguageTokens`), and decoding is mapped setting by setting:

* greedy / beam search: ``beam_size=num_beams``; sampling is never used (``sampling_topk=1``);
* beam search stops when ``num_beams`` hypotheses are finished (``patience=1``), the rule the hf engine
  asks transformers for (``early_stopping=True``); CTranslate2's own default is the same, stated here so
  a changed default cannot slip in;
* ``length_penalty`` divides scores by ``length ** length_penalty`` in both;
* the target language is forced as the first target token (``target_prefix``, transformers'
  ``forced_bos_token_id``);
* ``max_new_tokens``: transformers counts the forced language token as generated and, for M2M100 /
  NLLB (``forced_eos_token_id``), spends the last step on a forced ``</s>``; CTranslate2's
  ``max_decoding_length`` counts the prefix too but forces no end token, so it gets one step less.

Greedy output is identical to transformers' in float32 (``benchmarks/translate_bench.py`` measures the
share); beam search can differ where hypotheses tie or finish in another order (README).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import shutil
from collections import deque
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from xlt.config.translate import OLD_ENGINE_NAMES, TranslateConfig, device_error
from xlt.errors import ConfigError
from xlt.hub import hub_resource
from xlt.run.files import follow_umask
from xlt.run.fingerprint import resource_fingerprint
from xlt.translation.engines.base import Engine, EngineSettings, LanguageTokens, length_sorted_batches
from xlt.weights import log_weights, snapshot

log = logging.getLogger(__name__)

MODEL_TYPES = ("m2m_100",)  # NLLB checkpoints are M2M100ForConditionalGeneration
_PRECISION = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}


def available() -> bool:
    """Whether the ``ctranslate2`` package can be imported (``pip install 'xlt[ct2]'``)."""
    import importlib.util

    return importlib.util.find_spec("ctranslate2") is not None


def model_type(model_name_or_path: str, revision: str | None = None) -> str | None:
    """The checkpoint's ``config.model_type`` (None if its config cannot be read)."""
    try:
        from transformers import AutoConfig

        return str(AutoConfig.from_pretrained(model_name_or_path, revision=revision).model_type)
    except (OSError, ValueError):
        return None


def resolve_engine(engine: str, model_name_or_path: str, revision: str | None = None) -> str:
    """The MT engine ``translate.engine`` names: ``auto`` -> ``ctranslate2`` when it is installed and the
    model is NLLB / M2M100, else ``transformers``; an old spelling (``hf``) -> its name."""
    engine = OLD_ENGINE_NAMES.get(engine, engine)
    if engine != "auto":
        return engine
    if available() and model_type(model_name_or_path, revision) in MODEL_TYPES:
        return "ctranslate2"
    return "transformers"


def parse_device(device: str) -> tuple[str, list[int]]:
    """``(ctranslate2 device, device_index list)`` for ``translate.device``."""
    import ctranslate2

    err = device_error(device)
    if err:
        raise ConfigError(err)
    gpus = ctranslate2.get_cuda_device_count()
    if device == "auto":
        device = "cuda" if gpus else "cpu"
    if device == "cpu":
        return "cpu", [0]
    if not gpus:
        raise ConfigError(f"translate.device={device}: CTranslate2 sees no CUDA GPU")
    ids = list(range(gpus)) if device == "cuda" else [int(i) for i in device[5:].split(",")]
    if max(ids) >= gpus:
        raise ConfigError(f"translate.device={device}: only {gpus} GPU(s) visible")
    return "cuda", ids


def resolve_compute_type(compute_type: str, precision: str, device: str, device_index: int = 0) -> str:
    """``auto``: ``precision`` if set, else int8 on CPU and bfloat16 (float16 without bf16) on GPU;
    an explicit type must be supported on the device."""
    import ctranslate2

    supported = set(ctranslate2.get_supported_compute_types(device, device_index))
    if compute_type == "auto":
        if precision != "auto":
            compute_type = _PRECISION[precision]
        elif device == "cpu":
            compute_type = "int8" if "int8" in supported else "float32"
        else:
            compute_type = "bfloat16" if "bfloat16" in supported else "float16"
    if compute_type not in supported:
        raise ConfigError(f"translate.compute_type={compute_type} is not supported on {device} by this "
                          f"CTranslate2 build; supported: {sorted(supported)}")
    return compute_type


def _cache_root() -> Path:
    return Path(os.environ.get("XLT_CACHE", Path.home() / ".cache" / "xlt")).expanduser() / "ct2"


def _local_checkpoint(model_name_or_path: str, revision: str | None) -> str:
    if Path(model_name_or_path).exists():
        return model_name_or_path
    with hub_resource("model", model_name_or_path, revision, "translate.model_name_or_path"):
        return snapshot(model_name_or_path, revision)


def converted_model(model_name_or_path: str, revision: str | None, quantization: str) -> Path:
    """The CTranslate2 conversion of the checkpoint in ``quantization``, converted on first use."""
    import ctranslate2
    from filelock import FileLock

    fingerprint = resource_fingerprint(model_name_or_path, revision)
    key = hashlib.sha256(json.dumps([fingerprint, quantization, ctranslate2.__version__]).encode()).hexdigest()[:20]
    root = _cache_root()
    target = root / key
    if (target / "model.bin").exists():
        return target
    root.mkdir(parents=True, exist_ok=True)
    with FileLock(str(root / f"{key}.lock")):
        if (target / "model.bin").exists():  # another shard converted it while we waited
            return target
        tmp = root / f".{key}.{os.getpid()}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        local = _local_checkpoint(model_name_or_path, revision)
        log.info("translate: converting %s to CTranslate2 (%s) in %s", model_name_or_path, quantization, target)
        try:
            converter = ctranslate2.converters.TransformersConverter(local, copy_files=None)
            converter.convert(str(tmp), quantization=quantization, force=True)
            (tmp / "xlt_conversion.json").write_text(json.dumps(
                {"source": str(model_name_or_path), "revision": revision, "fingerprint": fingerprint,
                 "quantization": quantization, "ctranslate2": ctranslate2.__version__}, indent=2))
            follow_umask(tmp)  # a shared XLT_CACHE: the converted model is the group's as any file the user writes
            os.replace(tmp, target)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return target


def _generation_config(model_name_or_path: str, revision: str | None, config: Any) -> Any:
    """The generation defaults transformers' ``generate`` would use for this checkpoint."""
    from transformers import GenerationConfig

    try:
        return GenerationConfig.from_pretrained(model_name_or_path, revision=revision)
    except OSError:
        return GenerationConfig.from_model_config(config)


def cpu_thread_plan(threads: int, intra_threads: int | None = None,
                    inter_threads: int | None = None) -> tuple[int, int]:
    """``(inter_threads, intra_threads)`` for CTranslate2 on a CPU with ``threads`` threads (torch's count:
    ``OMP_NUM_THREADS``): from 2 threads on, two batches at once (two workers, ``inter_threads=2``) with
    ``threads // 2`` threads each; one thread, one batch. An explicit ``intra_threads`` alone keeps one
    batch at a time on that many threads; an explicit ``inter_threads`` alone shares the threads out.

    Measured (``benchmarks/translate_bench.py --stage``, docs/speed-benchmarks.md): on the 600M shape two
    one-thread workers spend the CPU time of one thread on the same work (int8 24.6 vs 24.4 CPU-s, float32
    94.8 vs 87.1) where one batch on two threads spends more (float32 114 CPU-s: its threads wait on each
    other inside every small decoder product); xlt's length-sorted batches keep two workers fed from two
    batches on (20 rows: 5 batches, both workers busy for 1.9x of one's share of the work).
    """
    if threads < 1:
        raise ConfigError(f"CTranslate2 needs at least one CPU thread, got {threads}")
    if inter_threads is not None and inter_threads < 1:
        raise ConfigError(f"CTranslate2 inter_threads must be >= 1, got {inter_threads}")
    if inter_threads is None:
        inter_threads = 2 if intra_threads is None and threads >= 2 else 1
    if intra_threads is None:
        intra_threads = max(1, threads // inter_threads)
    return inter_threads, intra_threads


def split_for_workers(batch_len: int, batches: int, workers: int) -> int:
    """CTranslate2's ``max_batch_size`` for one of ``batches`` batches of ``batch_len`` texts on ``workers``
    workers: a batch whole while there are at least as many batches as workers; with fewer (a short input:
    one batch of up to ``batch_size`` texts) each batch in ``workers`` parts, so that no worker idles. The
    parts keep their batch's generation limit, so the output is the same."""
    if batches >= workers or batch_len <= 1:
        return batch_len
    return math.ceil(batch_len / min(workers, batch_len))


class CT2Translator(LanguageTokens):
    """NLLB / M2M100 through CTranslate2 (see the module docstring for how settings map)."""

    def __init__(self, model_name_or_path: str, settings: EngineSettings | None = None, *,
                 compute_type: str = "auto", tokenizer: Any = None, intra_threads: int | None = None,
                 inter_threads: int | None = None) -> None:
        super().__init__()
        if not available():
            raise ConfigError("translate.engine=ctranslate2 needs the ctranslate2 package: pip install 'xlt[ct2]'")
        import ctranslate2
        from transformers import AutoConfig, AutoTokenizer

        self.settings = s = settings or EngineSettings()
        s.check()
        with hub_resource("model", model_name_or_path, s.revision, "translate.model_name_or_path"):
            config = AutoConfig.from_pretrained(model_name_or_path, revision=s.revision)
            if tokenizer is None:
                tokenizer = AutoTokenizer.from_pretrained(model_name_or_path, revision=s.revision)
        if config.model_type not in MODEL_TYPES:
            raise ConfigError(f"translate.engine=ctranslate2 supports NLLB / M2M100 checkpoints (model_type "
                              f"{'/'.join(MODEL_TYPES)}); {model_name_or_path} is {config.model_type!r}: use engine=transformers")
        self.tokenizer = tokenizer
        self.device, self.device_index = parse_device(s.device)
        self.compute_type = resolve_compute_type(compute_type, s.precision, self.device, self.device_index[0])
        path = converted_model(model_name_or_path, s.revision, self.compute_type)
        log_weights("translate model (ctranslate2)", model_name_or_path, s.revision)
        if self.device != "cpu":
            inter_threads, intra_threads = 1, 0 if intra_threads is None else intra_threads
        else:
            import torch

            inter_threads, intra_threads = cpu_thread_plan(torch.get_num_threads(), intra_threads, inter_threads)
        self.inter_threads = inter_threads
        self.model = ctranslate2.Translator(str(path), device=self.device, device_index=self.device_index,
                                            compute_type=self.compute_type, intra_threads=intra_threads,
                                            inter_threads=self.inter_threads)
        # One of our batches feeds every GPU: CTranslate2 splits it into max_batch_size pieces.
        replicas = len(self.device_index) if self.device == "cuda" else 1
        self.batch_size = s.batch_size * replicas
        self.max_batch_tokens = s.max_batch_tokens * replicas if s.max_batch_tokens else None
        self.sub_batch = (s.max_batch_tokens, "tokens") if s.max_batch_tokens else (s.batch_size, "examples")
        self.forced_eos = _generation_config(model_name_or_path, s.revision, config).forced_eos_token_id is not None
        identity = s.identity(model_name_or_path, length_penalty=s.length_penalty, compute_type=self.compute_type,
                              ctranslate2=ctranslate2.__version__)
        self.identity = "ct2/" + json.dumps(identity, sort_keys=True)

    def _submit(self, texts: list[str], src_lang: str, tgt_lang: str, asynchronous: bool = False,
                parts: int = 0) -> Any:
        """Tokenize ``texts`` and hand them to CTranslate2 (its results, or with ``asynchronous`` its async
        results: the call returns at once and a free worker translates them); ``parts``: CTranslate2's
        ``max_batch_size`` for this batch instead of the settings' (:func:`split_for_workers`)."""
        s = self.settings
        tok = self.tokenizer
        tok.src_lang = self._model_code(src_lang)
        ids = tok(texts, truncation=True, max_length=s.max_input_tokens)["input_ids"]
        limit = s.generation_limit(max(map(len, ids)))
        prefix = tok.convert_ids_to_tokens(self.lang_token_id(tgt_lang))
        size, kind = (parts, "examples") if parts else self.sub_batch
        return self.model.translate_batch(
            [tok.convert_ids_to_tokens(x) for x in ids],
            target_prefix=[[prefix]] * len(texts),
            max_batch_size=size,
            batch_type=kind,
            beam_size=s.num_beams,
            patience=1,
            length_penalty=s.length_penalty,
            sampling_topk=1,
            max_decoding_length=max(1, limit - 1) if self.forced_eos else limit,
            return_scores=False,
            asynchronous=asynchronous,
        )

    def _decode(self, results: list[Any]) -> list[str]:
        tok = self.tokenizer
        out = [tok.convert_tokens_to_ids(r.hypotheses[0]) for r in results]
        return [t.strip() for t in tok.batch_decode(out, skip_special_tokens=True)]

    def _generate(self, texts: list[str], src_lang: str, tgt_lang: str) -> list[str]:
        return self._decode(self._submit(texts, src_lang, tgt_lang))

    def translate_batches(
        self, texts: Sequence[str], src_lang: str, tgt_lang: str
    ) -> Iterator[tuple[list[int], list[str]]]:
        """As :meth:`Translator.translate_batches`; with ``inter_threads`` > 1 up to that many batches are
        translated at once (each by one of CTranslate2's workers), still yielded in order, each batch with
        its own generation limit; an input of fewer batches than workers has each batch split among them
        (:func:`split_for_workers`)."""
        if self.inter_threads <= 1 or not texts:
            yield from super().translate_batches(texts, src_lang, tgt_lang)
            return
        batches = length_sorted_batches(self.lengths(texts), self.batch_size, self.max_batch_tokens)
        window: deque[tuple[list[int], list[Any]]] = deque()
        for batch in batches:
            self.stats["generate_calls"] += 1
            parts = split_for_workers(len(batch), len(batches), self.inter_threads)
            parts = parts if parts < len(batch) else 0  # 0: the settings' sub-batches
            window.append((batch, self._submit([texts[i] for i in batch], src_lang, tgt_lang, asynchronous=True,
                                               parts=parts)))
            if len(window) > self.inter_threads:
                done, pending = window.popleft()
                yield done, self._decode([r.result() for r in pending])
        while window:
            done, pending = window.popleft()
            yield done, self._decode([r.result() for r in pending])


def build_ct2_translator(tcfg: TranslateConfig, **kw: Any) -> CT2Translator:
    """The CTranslate2 translator for ``translate`` config ``tcfg``."""
    return CT2Translator(tcfg.model_name_or_path, EngineSettings.from_cfg(tcfg), compute_type=tcfg.compute_type, **kw)


class CT2Engine(Engine):
    """``translate.engine=ctranslate2``: :class:`CT2Translator`; its resolved compute type and CTranslate2's
    version enter the hashes."""

    name = "ctranslate2"
    checkpoint = True

    def build(self, tcfg: TranslateConfig) -> CT2Translator:
        return build_ct2_translator(tcfg)

    def resolved(self, tcfg: TranslateConfig) -> dict[str, Any]:
        if not available():  # the translator says how to install it
            return {"engine": self.name, "compute_type": str(tcfg.compute_type)}
        import ctranslate2

        device, ids = parse_device(str(tcfg.device))
        compute = resolve_compute_type(tcfg.compute_type, tcfg.precision, device, ids[0])
        return {"engine": self.name, "compute_type": compute, "ctranslate2": ctranslate2.__version__}

    def stored_identity(self, tcfg: TranslateConfig) -> str:
        return f"hf/{tcfg.model_name_or_path}@{tcfg.revision or 'default'}"  # as before engines were plug-ins

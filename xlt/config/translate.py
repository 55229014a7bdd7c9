"""Schema of the ``translate`` group (conf/translate/*.yaml): machine translation of the training set.

See :mod:`xlt.translation` for what each stage does with these settings.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

from xlt.config.fields import neutral, opt
from xlt.errors import ConfigError
from xlt.registry import MT_ENGINES


@dataclass
class TranslationQualityConfig:
    """Rules applied to translated rows (documented in :mod:`xlt.translation.quality`)."""

    # Drop a row when one of its translated fields shows runaway repetition (else only count it).
    drop_runaway: bool = True
    # A substring repeated this many times in a row (consecutively) counts as runaway repetition.
    runaway_min_repeats: int = opt(4, ge=2)
    # ... and so does an output longer than this many times its source (in characters) + 20.
    runaway_max_length_ratio: float = opt(4.0, gt=0)


@dataclass
class TranslationSamplingConfig:
    """How the translate-train-all set mixes English and the translations (:mod:`xlt.translation.union`)."""

    # "all": every row of every language; "cap": at most max_rows_per_language per language;
    # "temperature": rows per language proportional to n_l ** (1 / temperature) (seeded, with
    # replacement when a language has fewer rows than its share).
    strategy: str = opt("all", choices=("all", "cap", "temperature"))
    max_rows_per_language: int | None = opt(None, ge=1)
    temperature: float = opt(5.0, gt=0)
    # Total training rows for "temperature" (None: the sum of all languages' rows).
    total_rows: int | None = opt(None, ge=1)
    # Include the English source set as language eng_Latn.
    include_english: bool = True
    # At most this many dev rows per language (None: all). Dev rows are never upsampled.
    max_dev_rows_per_language: int | None = opt(None, ge=1)


@dataclass
class TranslateConfig:
    # The translator: "hf" (an NLLB or M2M100 checkpoint, model_name_or_path, run by the MT engine
    # `engine` names) or the name of an MT engine that translates on its own: "echo" (deterministic test
    # translator: "[<lang>] " + text; no model) or a plug-in's (xlt.registry.MT_ENGINES; docs/adding-a-benchmark.md).
    kind: str = opt("hf", choices=lambda: ("hf", *engine_names(checkpoint=False)), translator=True,
                    hint="a new MT engine is an installed package's entry point (group xlt.mt_engines) or a "
                         "definition file in a folder given by eval.include_path=[folder]")
    model_name_or_path: str = opt("facebook/nllb-200-distilled-600M", translator=True)
    revision: str | None = opt(None, translator=True)
    # Language of the training set (FLORES-200 code).
    source_language: str = opt("eng_Latn", why="translate-test translates each item from its own language into English")
    # FLORES-200 target codes.
    languages: list[str] = opt(default_factory=list, why="translate-test translates the benchmark's languages")
    # Segments per generate() call; batches are formed from length-sorted segments.
    batch_size: int = neutral(32, ge=1, why="segments per generate() call; padding is masked, so each segment's output is its own (up to float rounding of the batch shape, which no hash tracks)")
    # Optional budget of padded input tokens per batch (batch_size x longest input); None: no budget.
    max_batch_tokens: int | None = neutral(None, ge=1, why="batch size budget; padding is masked")
    # Inputs longer than this (tokens) are truncated, and counted in the report.
    max_input_tokens: int = opt(256, ge=1, translator=True)
    # Hard cap of generated tokens per segment (NLLB's default of 200 would silently cut long ones).
    max_new_tokens: int = opt(256, ge=1, translator=True)
    # Per batch, generate at most ceil(ratio x longest input) + 10 tokens (None: always max_new_tokens).
    max_new_tokens_ratio: float | None = opt(2.0, gt=0, translator=True)
    num_beams: int = opt(1, ge=1, translator=True)
    # Beam search only: scores are divided by length ** length_penalty (the same rule in both engines).
    length_penalty: float = opt(1.0, translator=True)
    # The MT engine that runs a kind=hf checkpoint: "transformers" (transformers' generate; "hf" is its old
    # name, still accepted with a warning), "ctranslate2" (CTranslate2, NLLB / M2M100 only;
    # pip install 'xlt[ct2]'), a plug-in engine that runs checkpoints, or "auto": ctranslate2 when it is
    # installed and the model is NLLB / M2M100, else transformers (see README, "Translation engines").
    # "transformers" enters the hashes as "hf", its old name: translations made under it keep their hashes.
    engine: str = opt("auto", choices=lambda: ("auto", *engine_names(checkpoint=True)), translator=True,
                      hash_as={"transformers": "hf"})
    # engine=transformers: "auto": bf16 on a GPU that supports it, else fp32; or "bf16", "fp16", "fp32".
    precision: str = opt("auto", choices=("auto", "bf16", "fp16", "fp32"), translator=True)
    # engine=ctranslate2: "auto": int8 on CPU, bfloat16 (else float16) on GPU; or any CTranslate2 type.
    compute_type: str = opt("auto", choices=("auto", "int8", "int8_float32", "int8_float16", "int8_bfloat16",
                                             "int16", "float16", "bfloat16", "float32"), translator=True)
    # "auto" (cuda if available), "cpu", "cuda", "cuda:1", ...; engine=ctranslate2 also takes a GPU list,
    # "cuda:0,1", and translates on all of them ("cuda" there means every visible GPU).
    device: str = neutral("auto", why="where the model runs; the dtype / compute type that ran enters the hashes")
    # Extra FLORES -> model language code mappings (M2M100 uses ISO codes like "fr").
    lang_code_map: dict[str, str] = opt(default_factory=dict, translator=True)
    # Folder of the translation segment cache (translation_cache/ in it; safe on a network filesystem, shared
    # between runs and hosts); None: <run>/data.
    cache_dir: str | None = neutral(None, why="where the translation cache lives (its keys hold the translator identity)")
    # Commit the cache after this many generate() batches (a killed run loses at most this many).
    commit_every: int = neutral(1, ge=1, why="how often the cache is committed")
    # Work is cut into units of (language, split, row range of this many rows); shard `shard_index`
    # of `num_shards` translates every num_shards-th unit. Parts do not depend on num_shards, so any
    # mix of shard settings produces the same merged result.
    rows_per_unit: int = neutral(5000, ge=1, why="how the work is cut into resumable parts")
    shard_index: int = neutral(0, ge=0, split=True, why="which share of the parts this process runs")
    num_shards: int = neutral(1, ge=1, split=True, why="how the parts are split between processes")
    # Import ready translations from this folder instead of translating (one folder or JSONL per language).
    import_dir: str | None = opt(None, why="translate-test always translates with the model")
    quality: TranslationQualityConfig = opt(default_factory=TranslationQualityConfig,
                                             why="translate-test keeps every item; its quality counts are reported only")
    # How the union is sampled is decided when training reads it: it affects the train stage only.
    sampling: TranslationSamplingConfig = opt(default_factory=TranslationSamplingConfig, affects="train",
                                              why="how training mixes the translations; translate-test does not read it")


# translate.engine's old spelling of "transformers" (it clashed with translate.kind=hf, another axis).
OLD_ENGINE_NAMES = {"hf": "transformers"}


def engine_names(*, checkpoint: bool) -> tuple[str, ...]:
    """The registered MT engines (:data:`xlt.registry.MT_ENGINES`) that run a ``kind=hf`` checkpoint
    (``checkpoint=True``: ``translate.engine``'s values) or translate on their own (``translate.kind``'s).
    An engine that cannot be loaded is listed with those on their own (using it names the error)."""
    out = []
    for name in MT_ENGINES.names():
        try:
            runs = bool(getattr(MT_ENGINES[name], "checkpoint", False))
        except ConfigError:
            runs = False
        if runs == checkpoint:
            out.append(name)
    return tuple(out)


def normalize_engine(tcfg: Any) -> None:
    """Replace an old spelling of ``translate.engine`` (``hf``) by its name (``transformers``), with a
    deprecation warning; the hashes take the old spelling still (``hash_as``), so nothing is recomputed."""
    old = str(tcfg.engine)
    if old in OLD_ENGINE_NAMES:
        warnings.warn(f"translate.engine={old} is deprecated: it is now translate.engine={OLD_ENGINE_NAMES[old]} "
                      "(the same engine; hashes and results unchanged)", FutureWarning, stacklevel=2)
        tcfg.engine = OLD_ENGINE_NAMES[old]


def translate_train_all(cfg: Any) -> bool:
    """Whether the recipe asks for translate-train-all: translations are configured (``translate.languages``
    or ``translate.import_dir``) or ``translate`` is one of its stages. Training then uses the union, and
    the train stage's upstream includes the translate stage (:func:`xlt.stages.train.upstream`)."""
    tcfg = cfg.translate
    return bool(tcfg.languages) or bool(tcfg.import_dir) or "translate" in list(cfg.stages)


def device_error(device: str) -> str | None:
    """A config error message for ``translate.device`` under this engine, or None."""
    if device in ("auto", "cpu", "cuda"):
        return None
    if device.startswith("cuda:"):
        ids = device[5:].split(",")
        if all(i.strip().isdigit() for i in ids) and len(set(ids)) == len(ids):
            return None
    return f"translate.device={device!r}: use auto, cpu, cuda (every visible GPU), cuda:N or a list cuda:0,1"

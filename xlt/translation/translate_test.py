"""Translate-test: benchmark items translated into English before scoring.

:func:`translate_items` uses the same machinery as translate-train (sentence segmentation, unique
segments, cache, length-sorted batches). The items keep every column (including ``language``, the
language the item was written in, so results still join per language) and their row order; only
``passage``, ``question`` and ``options`` are replaced by their English translations. No item is ever
dropped: an evaluation set must not shrink. Empty outputs fall back to the source text, and items whose
options become identical or that show runaway repetition are counted (``flagged_*``) in ``stats``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import numpy as np
from datasets import Dataset, concatenate_datasets

from xlt import languages
from xlt.config.translate import TranslateConfig
from xlt.errors import ConfigError
from xlt.run.files import atomic_write_json
from xlt.run.layout import MACHINE_TRANSLATED_DIR, TRANSLATE_TEST_DIR, RunDir
from xlt.translation import resolution
from xlt.translation.cache import TranslationCache
from xlt.translation.dataset import QualityRules, translate_dataset
from xlt.translation.engines import build_translator
from xlt.translation.engines.base import Translator
from xlt.translation.quality import QualityStats

_FLORES = re.compile(r"^[a-z]{3}_[A-Z][a-z]{3}$")


def to_flores(code: str, lang_map: Mapping[str, str] | None = None) -> str:
    """The FLORES-200 code of a benchmark language code (``de`` -> ``deu_Latn``; FLORES codes unchanged)."""
    if lang_map and code in lang_map:
        return lang_map[code]
    if _FLORES.match(code):
        return code

    lang = languages.lookup(code)
    if lang is None:
        raise ConfigError(f"no FLORES-200 code known for language {code!r}; pass it in lang_map")
    return lang.code


def translate_items(
    items: Dataset,
    translator: Translator,
    cache: TranslationCache | None,
    target: str = "eng_Latn",
    lang_map: Mapping[str, str] | None = None,
    stats: dict[str, QualityStats] | None = None,
    commit_every: int = 1,
) -> Dataset:
    """``items`` (EVAL_FEATURES + metadata) with passage, question and options translated into ``target``.

    Items are grouped by their ``language`` column (one translation source language per group) and
    returned in their original order. Items already in ``target`` are returned unchanged.
    ``stats``, if given, receives the quality counts per language.
    """
    if items.num_rows == 0:
        return items
    langs = np.asarray(items["language"])
    pieces = []
    positions = []
    for lang in dict.fromkeys(langs.tolist()):
        idx = np.flatnonzero(langs == lang)
        sub = items.select(idx)
        src = to_flores(str(lang), lang_map)
        if src == target:
            pieces.append(sub)
        else:
            result = translate_dataset(
                sub,
                translator,
                cache,
                src,
                target,
                rules=QualityRules(drop_runaway=False),
                features=items.features,
                commit_every=commit_every,
                desc=f"translate-test {lang} -> {target}",
                keep_all_rows=True,
            )
            pieces.append(result.dataset)
            if stats is not None:
                stats.setdefault(str(lang), QualityStats()).merge(result.stats)
        positions.append(idx)
    out = concatenate_datasets(pieces) if len(pieces) > 1 else pieces[0]
    order = np.concatenate(positions)
    if not np.array_equal(order, np.arange(items.num_rows)):
        out = out.select(np.argsort(order, kind="stable"))
    return out


class TranslateTestRunner:
    """Test-set translation for the evaluate stage: one translator (loaded on first use) and one cache per run.

    ``runner(items, benchmark, language)`` returns the items in English (translate-test) and writes their
    quality counts to ``run/data/translate_test/<benchmark>/<language>.json``;
    ``runner.into(items, benchmark, language)`` translates items of another language (an entry's
    ``machine_translate_from``) into ``language`` instead: the machine-translated version of a test set,
    its counts under ``run/data/machine_translated/``. The translator comes from the ``translate`` config
    group (model, batch size, limits; its ``languages`` are not used), the cache from
    :meth:`xlt.run.layout.RunDir.translation_cache`, so reruns only score.
    """

    def __init__(self, translate: TranslateConfig, run: RunDir, translator: Translator | None = None,
                 target: str = "eng_Latn", resolved: dict[str, Any] | None = None):
        self.translate = translate  # the ``translate`` section: the translator and its cache
        self.run = run
        self.target = target
        self._translator = translator
        self.resolved = resolved  # the run's translator as resolved once (xlt.translation.resolution)

    @property
    def translator(self) -> Translator:
        if self._translator is None:
            tcfg = self.translate
            if self.resolved is not None:
                resolution.check_machine(tcfg, self.resolved, self.run)
                tcfg = resolution.pinned_config(tcfg, self.resolved)
            self._translator = build_translator(tcfg)
        return self._translator

    def __call__(self, items: Dataset, benchmark: str, language: str) -> Dataset:
        return self._translate(items, benchmark, language, self.target, TRANSLATE_TEST_DIR)

    def into(self, items: Dataset, benchmark: str, language: str) -> Dataset:
        """``items`` (of the entry's source language) translated into ``language`` (the benchmark's code;
        its FLORES-200 code from the language table), with ``language`` as their ``language`` column."""
        out = self._translate(items, benchmark, language, to_flores(language), MACHINE_TRANSLATED_DIR)
        return out.map(lambda _: {"language": language}, desc=None)

    def _translate(self, items: Dataset, benchmark: str, language: str, target: str, record: str) -> Dataset:
        stats: dict[str, QualityStats] = {}
        with TranslationCache(self.run.translation_cache(self.translate.cache_dir)) as cache:
            out = translate_items(items, self.translator, cache, target, stats=stats,
                                  commit_every=int(self.translate.commit_every))
        merged = QualityStats()
        for st in stats.values():
            merged.merge(st)
        atomic_write_json(
            self.run.item_translations(record, benchmark, language),
            {"translator": self.translator.identity, "target": target,
             "sources": sorted(stats), **merged.to_json()},
        )
        return out

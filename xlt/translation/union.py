"""The translate-train-all training set: the English set plus every translation, with sampling options.

:func:`build_train_all` is what the training stage calls when the recipe configures translations
(``translate.languages``, ``translate.import_dir``, or ``translate`` in ``stages``; see
:func:`xlt.config.translate.translate_train_all`): the languages are ``translate.languages``, else those
found in ``translate.import_dir``. Everything stays memory-mapped Arrow: each language's dataset is loaded from
disk, sampled by index (``Dataset.select``), and the languages are joined with
``datasets.concatenate_datasets``, so memory stays flat as languages are added.

Sampling (``translate.sampling``), per language ``l`` with ``n_l`` train rows:

* ``all``: every row;
* ``cap``: at most ``max_rows_per_language`` rows (a seeded random subset);
* ``temperature``: ``round(total * q_l)`` rows with ``q_l = n_l**(1/T) / sum_k n_k**(1/T)``
  (``total``: ``total_rows`` or the sum of the n_l); without replacement up to ``n_l``, and with
  replacement beyond it (upsampling); a cap, if set, applies afterwards.

Dev rows are never upsampled; ``max_dev_rows_per_language`` caps them. The seed is ``data.seed``, so
a training-seed sweep trains on the same rows. The result is shuffled (seeded) so languages are mixed.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from datasets import Dataset, DatasetDict, concatenate_datasets

from xlt.config.translate import TranslateConfig
from xlt.data.schema import TRANSLATED_FEATURES
from xlt.errors import ConfigError, DataError
from xlt.run.artifacts import checked_train_set, checked_translation
from xlt.run.layout import RunDir
from xlt.translation.importer import find_languages

log = logging.getLogger(__name__)

STRATEGIES = ("all", "cap", "temperature")


def language_sizes(sizes: dict[str, int], strategy: str, cap: int | None, temperature: float, total: int | None) -> dict[str, int]:
    """Rows to take per language (see the module docstring)."""
    # Strategy, cap and temperature were checked with the whole config before any stage (xlt/config).
    if strategy == "all":
        return dict(sizes)
    if strategy == "cap":
        return {k: min(n, cap) for k, n in sizes.items()}
    weights = {k: float(n) ** (1.0 / temperature) if n else 0.0 for k, n in sizes.items()}
    norm = sum(weights.values()) or 1.0
    total = sum(sizes.values()) if total is None else total
    out = {k: (round(total * w / norm) if sizes[k] else 0) for k, w in weights.items()}
    return {k: min(v, cap) for k, v in out.items()} if cap is not None else out


def sample_indices(n: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """``k`` indices into ``n`` rows: all of them if k == n, a subset if k < n, upsampled if k > n."""
    if k == n:
        return np.arange(n)
    if k < n:
        return np.sort(rng.choice(n, size=k, replace=False))
    return np.concatenate([np.arange(n), rng.choice(n, size=k - n, replace=True)])


def english_with_language(ds: Dataset, language: str = "eng_Latn") -> Dataset:
    """``ds`` restricted to the training-set columns, plus a constant ``language`` column (no copy of the data)."""
    ds = ds.select_columns([c for c in TRANSLATED_FEATURES if c != "language"])
    return ds.add_column("language", [language] * ds.num_rows, feature=TRANSLATED_FEATURES["language"])


def union_languages(translate: TranslateConfig, stages: Sequence[str]) -> list[str]:
    """The translated languages of the union: ``translate.languages``, else those in ``translate.import_dir``
    (none while ``stages``, the run's, include ``translate`` is a :class:`ConfigError`)."""
    tcfg = translate
    languages = [str(c) for c in tcfg.languages]
    if not languages and tcfg.import_dir and Path(tcfg.import_dir).expanduser().is_dir():
        languages = find_languages(Path(tcfg.import_dir).expanduser())
    if not languages and "translate" in list(stages):
        raise ConfigError(
            "stages include `translate` but translate.languages is empty and translate.import_dir is unset: "
            "nothing to translate for translate-train-all (pick a translate group, e.g. translate=nllb, or "
            "remove `translate` from stages)"
        )
    return languages


def load_languages(translate: TranslateConfig, stages: Sequence[str], run: RunDir) -> dict[str, DatasetDict]:
    """The English set (as ``eng_Latn``, if included: the training set checked against what the build_data
    stage wrote) and each translated language (:func:`union_languages`; checked against its seal),
    memory-mapped (:mod:`xlt.run.artifacts`)."""
    sources: dict[str, DatasetDict] = {}
    scfg = translate.sampling
    if scfg.include_english:
        eng = checked_train_set(run)
        sources[translate.source_language] = DatasetDict(
            {s: english_with_language(eng[s], translate.source_language) for s in eng}
        )
    for lang in union_languages(translate, stages):
        sources[lang] = checked_translation(run, lang)
    if not sources:
        raise ConfigError("translate-train-all has no data: translate.languages is empty and include_english=false")
    return sources


def build_train_all(translate: TranslateConfig, run: RunDir, *, seed: int, stages: Sequence[str]) -> DatasetDict:
    """English + translations as one DatasetDict train/dev (TRANSLATED_FEATURES), sampled and shuffled;
    ``seed``: ``data.seed`` (sampling and shuffling); ``stages``: the run's (:func:`union_languages`)."""
    scfg = translate.sampling
    sources = load_languages(translate, stages, run)
    seed = int(seed)
    rng = np.random.default_rng(seed)
    train_sizes = language_sizes(
        {k: dd["train"].num_rows for k, dd in sources.items()},
        scfg.strategy,
        scfg.max_rows_per_language,
        scfg.temperature,
        scfg.total_rows,
    )
    out: dict[str, Dataset] = {}
    for split in ("train", "dev"):
        parts = []
        for lang, dd in sources.items():
            if split not in dd or dd[split].num_rows == 0:
                continue
            n = dd[split].num_rows
            if split == "train":
                k = train_sizes[lang]
            else:
                k = min(n, scfg.max_dev_rows_per_language) if scfg.max_dev_rows_per_language is not None else n
            if k:
                parts.append(dd[split].select(sample_indices(n, k, rng)))
        if not parts:
            raise DataError(f"translate-train-all: no {split} rows in any language")
        out[split] = concatenate_datasets(parts).shuffle(seed=seed)
    log.info(
        "translate-train-all: %d train / %d dev rows over %d languages (%s)",
        out["train"].num_rows,
        out["dev"].num_rows,
        len(sources),
        scfg.strategy,
    )
    return DatasetDict(out)

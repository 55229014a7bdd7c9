"""Where translations live in a run directory (shared by the translate stage, the importer, the
translate-train-all union and translate-test): the names are :mod:`xlt.run.layout`'s."""

from __future__ import annotations

from pathlib import Path

from xlt.config.translate import TranslateConfig
from xlt.run.layout import MERGED_FILE, TRANSLATION_CACHE, RunDir

# MERGED_FILE (re-exported): the record that seals a merged (or imported) language folder: its units,
# quality counts and the fingerprint of its Arrow data (xlt.run.state.seal / read_sealed).
__all__ = ["MERGED_FILE", "cache_path", "language_dir", "translated_dir"]


def translated_dir(run: RunDir) -> Path:
    return run.translated


def language_dir(run: RunDir, language: str) -> Path:
    """Where the merged translation of ``language`` lives (``run/data/translated/<code>``)."""
    return run.translated_language(language)


def cache_path(translate: TranslateConfig, run: RunDir) -> Path:
    """The SQLite translation cache: in ``translate.cache_dir`` (shared between runs), else in ``run/data``."""
    base = Path(translate.cache_dir).expanduser() if translate.cache_dir else run.data
    return base / TRANSLATION_CACHE

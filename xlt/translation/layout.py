"""Where translations live in a run directory (shared by the translate stage, the importer, the
translate-train-all union and translate-test)."""

from __future__ import annotations

from pathlib import Path

from xlt.config.translate import TranslateConfig
from xlt.run import RunDir

# The record that seals a merged (or imported) language folder: its units, quality counts and the
# fingerprint of its Arrow data (xlt.state.seal / read_sealed).
MERGED_FILE = "xlt_translation.json"


def translated_dir(run: RunDir) -> Path:
    return run.data / "translated"


def language_dir(run: RunDir, language: str) -> Path:
    """Where the merged translation of ``language`` lives (``run/data/translated/<code>``)."""
    return translated_dir(run) / language


def cache_path(translate: TranslateConfig, run: RunDir) -> Path:
    """The SQLite translation cache: in ``translate.cache_dir`` (shared between runs), else in ``run/data``."""
    base = Path(translate.cache_dir).expanduser() if translate.cache_dir else run.data
    return base / "translation_cache.sqlite"

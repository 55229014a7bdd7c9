"""Schema of the ``data`` group (conf/data/*.yaml): the sources of the English training set."""

from __future__ import annotations

from dataclasses import dataclass, field

from xlt.config.fields import opt
from xlt.registry import SOURCES


def source_names() -> tuple[str, ...]:
    """The training sources ``data.sources`` may name: the source registry's (read when a config is checked)."""
    return SOURCES.names()


@dataclass
class SourceConfig:
    """One training source. Set ``path`` to read a local copy instead of the Hub."""

    enabled: bool = True
    hub_id: str | None = None
    # Hub config (e.g. RACE ``all``, SuperGLUE ``multirc``); a local copy may keep its files in a
    # subfolder of this name (the Hub's Parquet layout), which is searched too.
    config_name: str | None = None
    revision: str | None = None
    # Local copy: a directory of split-named JSONL/Parquet files in the upstream schema, or the
    # original files (MCScript2.0 XML, ReClor JSON). Takes precedence over hub_id/url.
    path: str | None = None
    # Download URL for sources without a Hub copy (MCScript2.0).
    url: str | None = None
    license: str = ""
    # Read at most this many rows per split (debugging); None reads everything.
    max_rows: int | None = opt(None, ge=1)


@dataclass
class DecontaminationConfig:
    """Check training passages/questions for word n-gram overlap with the passages and questions of the
    local benchmark copies (every enabled ``eval.benchmarks.*`` with a ``path``)."""

    enabled: bool = False
    ngram: int = opt(13, ge=1)
    # Remove overlapping training rows (otherwise only report them).
    remove: bool = False


@dataclass
class DataConfig:
    sources: dict[str, SourceConfig] = field(default_factory=dict)
    # Seed of the shuffles the conversion rules prescribe (independent of the training seed, so a
    # seed sweep trains on the same data).
    seed: int = opt(1234, ge=0, le=2**32 - 1)
    # Passages with more sentences are dropped (all sources but ReClor), as in Bandarkar et al. (2024).
    max_passage_sentences: int = opt(25, ge=1)
    export_tsv: bool = True
    decontamination: DecontaminationConfig = field(default_factory=DecontaminationConfig)

"""Schema of the ``eval`` group (conf/eval/*.yaml): benchmarks, languages, scoring and sharding."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from xlt.config.fields import neutral, opt
from xlt.config.llm import LLMConfig
from xlt.registry import BENCHMARKS, SCORERS


@dataclass
class BenchmarkConfig:
    """One evaluation benchmark. ``kind`` names an entry of the benchmark registry."""

    kind: str | None = opt(None, choices=BENCHMARKS.names, hint="a new kind is a definition file in a folder given "
                           "by eval.include_path=[folder], or an installed package's entry point (group xlt.benchmarks)")
    enabled: bool = True
    hub_id: str | None = None
    revision: str | None = None
    # Local copy in the Hub's layout and schema; takes precedence over hub_id.
    path: str | None = None
    # Language codes to evaluate; None or empty means every language the benchmark has.
    languages: list[str] | None = opt(None, per_job=False,
                                        why="selects which languages are scored; each language's result does not depend on the others")
    split: str = "test"
    # Evaluate at most this many questions per language (debugging); None evaluates all.
    max_questions: int | None = opt(None, ge=1)
    # Translate-test: machine-translate the items into English (with the `translate` group's model)
    # before scoring (as Bandarkar et al., 2024 do). Use a separate entry, e.g. `<name>_tt`.
    translate_test: bool = False
    # This entry is a machine-translated version of the benchmark's languages (e.g. a local copy at `path`
    # made by machine-translating the English test set): the findings compare it with the human-translated
    # entry of the same kind, language by language (Global-MMLU's HT vs MT). A label: it changes no result.
    machine_translated: bool = opt(False, affects="report")
    # xlt makes this entry itself: the items of this language of the same source (e.g. `en`, the English
    # original) are machine-translated into each evaluated language with the `translate` group's model and
    # scored (same question ids as the human-translated entry, so questions pair). Implies
    # machine_translated; the source language itself is not evaluated. See docs/findings.md.
    machine_translate_from: str | None = None


@dataclass
class EvalConfig:
    benchmarks: dict[str, BenchmarkConfig] = field(default_factory=dict)
    # Folders of benchmark definition files (*.py) to register before the config is checked
    # (xlt/registry.py); a benchmark's own `version` enters its results' hash.
    include_path: list[str] = field(default_factory=list)
    # What to score: "run" (the run's trained model), or a local path / Hub id of an MC model.
    model: str = opt("run", names_run=True)
    # Also score the model before fine-tuning (model.name_or_path with its new head initialised from `seed`,
    # as training starts) into run/eval_before/; the report shows it beside each language (xlt/scoring/before.py).
    # Only with eval.model=run and the mc scorer.
    before_training: bool = opt(False, per_job=False,
                                why="adds the untrained model's results (their own job hashes) and changes none of the trained model's")
    # Scorer registry entry (xlt/registry.py): "mc" (encoder MC head), "gold", "fixed", "llm".
    scorer: str = opt("mc", choices=SCORERS.names, names_run=True)
    # Option index (0-based) the "fixed" scorer always picks; an item with fewer options gets no prediction.
    fixed_option: int = opt(0, ge=0, names_run=True, when=("eval.scorer", "fixed"))
    batch_size: int = opt(64, ge=1)
    bootstrap_samples: int = opt(1000, ge=1)
    # Seed of the bootstrap resampling (independent of the training seed, so seeds compare fairly).
    bootstrap_seed: int = opt(0, ge=0, le=2**32 - 1)
    # TSV of `code<TAB>group` lines grouping languages by resource level; null: the language table's tiers.
    resource_groups: str | None = opt(None, affects="report")
    # Shard the (benchmark, language) jobs: this process evaluates shard `shard_index` of `num_shards`.
    shard_index: int = neutral(0, ge=0, split=True, why="which share of the jobs this process runs")
    num_shards: int = neutral(1, ge=1, split=True, why="how the jobs are split between processes")
    # Causal-LLM options, used when scorer == "llm" (schema owned by xlt/config/llm.py).
    llm: LLMConfig = opt(default_factory=LLMConfig, names_run=True, when=("eval.scorer", "llm"))


def machine_translate_source(b: Any) -> str | None:
    """The language an entry's items are machine-translated from by xlt (``machine_translate_from``), or None.
    ``b``: a benchmark entry (config node, or the dict recorded in a run's config.yaml)."""
    src = b.get("machine_translate_from") if hasattr(b, "get") else None
    return str(src) if src else None


def is_machine_translated(b: Any) -> bool:
    """Whether an entry is a machine-translated version of the benchmark's languages: one xlt makes
    (``machine_translate_from``) or a copy labelled ``machine_translated: true``."""
    return bool(b.get("machine_translated")) or machine_translate_source(b) is not None


def uses_translator(b: Any) -> bool:
    """Whether an entry's items pass through the ``translate`` group's model before scoring
    (translate-test, or a machine-translated version xlt makes): its results depend on the translator."""
    return bool(b.get("translate_test")) or machine_translate_source(b) is not None

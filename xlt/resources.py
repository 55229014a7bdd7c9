"""Every Hub model, tokenizer, dataset (configs, splits, revision) and URL a resolved config needs.

Used by ``python -m xlt.prefetch`` to fill the HF cache on a machine with network access, so that
jobs on offline compute nodes (``HF_HUB_OFFLINE=1``) find everything. Listing is pure: it reads the
config and xlt's own tables (the language table for "all languages"), never the network.

Only what the config's ``stages`` will load from the Hub is listed: local paths (``*.path``,
``model.name_or_path=/dir``), the offline tiny model and imported translations need nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from omegaconf import DictConfig

from xlt.config.data import DataConfig
from xlt.config.eval import BenchmarkConfig, EvalConfig, machine_translate_source, uses_translator
from xlt.config.model import PACKAGED_LLM_IDS, PACKAGED_MODEL_IDS, TINY_MODEL_ID, ModelConfig
from xlt.config.schema import XltConfig
from xlt.config.translate import TranslateConfig
from xlt.errors import ConfigError
from xlt.hub import is_local
from xlt.scoring import declaration

# Revision of the Hub's automatic Parquet export, used for loading-script datasets (MCTest).
PARQUET_EXPORT = "refs/convert/parquet"


@dataclass(frozen=True)
class Resource:
    """One thing to download. ``kind``: "model" (weights + tokenizer files), "tokenizer", "dataset" or "url"."""

    kind: str
    repo_id: str
    revision: str | None = None
    # Datasets: the configs to load (e.g. languages); empty means the repository's only/default config.
    configs: tuple[str, ...] = ()
    splits: tuple[str, ...] = ()
    # Datasets read with data_dir= (the Parquet export of a script dataset) instead of a config name.
    data_dir: str | None = None
    # Config keys that make a run load it (also the keys that point it at a local copy instead).
    used_by: tuple[str, ...] = field(default_factory=tuple)

    @property
    def key(self) -> tuple[str, str, str | None, str | None]:
        return (self.kind, self.repo_id, self.revision, self.data_dir)

    def describe(self) -> str:
        rev = "" if self.kind == "url" else f"@{self.revision or 'main'}"
        text = f"{self.kind:9} {self.repo_id}{rev}"
        if self.data_dir:
            text += f" data_dir={self.data_dir}"
        if self.configs:
            shown = ",".join(self.configs[:6]) + (f",... ({len(self.configs)} configs)" if len(self.configs) > 6 else "")
            text += f" configs=[{shown}]"
        if self.splits:
            text += f" splits={list(self.splits)}"
        return text


def merge(resources: Iterable[Resource]) -> list[Resource]:
    """Deduplicate by (kind, repo, revision, data_dir), uniting configs, splits and users; keep first-seen order."""
    out: dict[tuple[str, str, str | None, str | None], Resource] = {}
    for r in resources:
        old = out.get(r.key)
        if old is None:
            out[r.key] = r
            continue
        out[r.key] = replace(
            old,
            configs=tuple(dict.fromkeys(old.configs + r.configs)),
            splits=tuple(dict.fromkeys(old.splits + r.splits)),
            used_by=tuple(dict.fromkeys(old.used_by + r.used_by)),
        )
    return list(out.values())


def _on_hub(name: str | None) -> bool:
    return (bool(name) and name != TINY_MODEL_ID and not declaration.names_run_model(name) and name not in PACKAGED_MODEL_IDS
            and name not in PACKAGED_LLM_IDS and not is_local(name))


def model_resources(model: ModelConfig) -> list[Resource]:
    """The encoder (and a separate tokenizer) of ``model`` (the ``model`` config section)."""
    out: list[Resource] = []
    if _on_hub(model.name_or_path):
        out.append(Resource("model", model.name_or_path, model.revision, used_by=("model.name_or_path",)))
    if model.tokenizer and model.tokenizer != model.name_or_path and _on_hub(model.tokenizer):
        out.append(Resource("tokenizer", model.tokenizer, model.revision, used_by=("model.tokenizer",)))
    return out


def source_resources(data: DataConfig) -> list[Resource]:
    """Training sources of the build_data stage (the ``data`` section) that are read from the Hub or a URL."""
    from xlt.data.sources import SOURCES  # lazy: start-up time

    out: list[Resource] = []
    for name, src in data.sources.items():
        if not src.enabled or src.path:
            continue
        if name not in SOURCES:
            raise ConfigError(f"data.sources.{name}: unknown source; known sources: {sorted(SOURCES)}")
        splits = tuple(SOURCES[name].splits)
        key = (f"data.sources.{name}",)
        if src.hub_id:
            configs = (src.config_name,) if src.config_name else ()
            out.append(Resource("dataset", src.hub_id, src.revision, configs, splits, used_by=key))
            if name == "mctest":
                # A loading-script repository: datasets>=4 reads its Parquet export instead.
                out.append(Resource("dataset", src.hub_id, PARQUET_EXPORT, (), splits, data_dir=src.config_name,
                                    used_by=key))
        elif src.url:
            out.append(Resource("url", src.url, None, used_by=key))
    return out


def translation_resources(translate: TranslateConfig) -> list[Resource]:
    """The MT model of the translate stage (nothing when translations are imported or echoed)."""
    return [] if translate.import_dir else translator_resources(translate)


def translator_resources(translate: TranslateConfig) -> list[Resource]:
    """The ``translate`` group's MT model (nothing for the echo translator or a local folder)."""
    t = translate
    if t.kind != "hf" or not _on_hub(t.model_name_or_path):
        return []
    return [Resource("model", t.model_name_or_path, t.revision, used_by=("translate.model_name_or_path",))]


def benchmark_languages(kind: str, bcfg: BenchmarkConfig) -> tuple[str, ...]:
    """The Hub configs (languages) a benchmark is evaluated on: the selection, else all known ones.

    "All" is what the benchmark's definition knows (``known_languages``); empty for a benchmark whose
    list grows upstream, meaning "every config on the Hub".
    """
    from xlt.data.benchmarks import get_benchmark  # lazy: start-up time

    bench = get_benchmark(kind)
    if bcfg.languages:
        return tuple(dict.fromkeys(bench.canonical(str(c)) for c in bcfg.languages))
    return bench.known_languages()


def eval_resources(eval_cfg: EvalConfig, model: ModelConfig, translate: TranslateConfig) -> list[Resource]:
    """Benchmarks (configs and splits) and any model the evaluate stage loads from the Hub: ``eval_cfg``'s
    scorer's, the base of a LoRA run's ``model``, the ``translate`` group's MT model for an entry translated
    before scoring."""
    from xlt.data.benchmarks import get_benchmark  # lazy: start-up time

    e, scorer = eval_cfg, declaration.of(eval_cfg)
    out: list[Resource] = []
    for name, b in e.benchmarks.items():
        if b.enabled and uses_translator(b):  # translate-test, or a machine-translated version xlt makes
            out += translator_resources(translate)
        if not b.enabled or b.path:
            continue
        splits = [b.split]
        fewshot = get_benchmark(b.kind).fewshot_split
        if scorer.scores_llm and e.llm.num_fewshot and fewshot:
            splits.append(fewshot)  # few-shot examples come from their own split
        hub_id = b.hub_id or get_benchmark(b.kind).default_hub_id
        src = machine_translate_source(b)  # a machine-translated entry reads its source language only
        langs = (get_benchmark(b.kind).canonical(src),) if src else benchmark_languages(b.kind, b)
        out.append(Resource("dataset", hub_id, b.revision, langs, tuple(dict.fromkeys(splits)),
                            used_by=(f"eval.benchmarks.{name}",)))
    if scorer.scores_llm:
        if _on_hub(e.llm.model):
            out.append(Resource("model", e.llm.model, e.llm.revision, used_by=("eval.llm.model",)))
        if e.llm.tokenizer and e.llm.tokenizer != e.llm.model and _on_hub(e.llm.tokenizer):
            out.append(Resource("tokenizer", e.llm.tokenizer, e.llm.revision, used_by=("eval.llm.tokenizer",)))
    elif scorer.scores_encoder:
        if declaration.names_run_model(e.model):
            # The run's own model; a LoRA adapter reloads its base from the Hub id.
            if model.lora.enabled:
                out.extend(model_resources(model))
        elif _on_hub(e.model):
            out.append(Resource("model", e.model, None, used_by=("eval.model",)))
    return out


def resources_for(cfg: XltConfig | DictConfig) -> list[Resource]:
    """Everything the stages of the validated config ``cfg`` load from the Hub, deduplicated: the plan of the
    prefetch entry point, over the whole config like the stage table it follows (each stage's section)."""
    stages = set(cfg.stages)
    out: list[Resource] = []
    if "build_data" in stages:
        out += source_resources(cfg.data)
    if "translate" in stages:
        out += translation_resources(cfg.translate)
    if "train" in stages:
        out += model_resources(cfg.model)
    if "evaluate" in stages:
        out += eval_resources(cfg.eval, cfg.model, cfg.translate)
    return merge(out)


"""Cross-field rules of the config: checked with the per-field rules before any stage starts.

Each rule takes the merged config and the stages about to run (None: only the rules that hold for any
stage selection) and returns error messages (empty when it holds). Per-field rules (choices, ranges)
live on the fields themselves (:mod:`xlt.config.fields`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from xlt.config.data import source_names
from xlt.config.llm import selected as llm_selected
from xlt.config.model import UNSET_CHECKPOINT
from xlt.config.training import resolve_deepspeed
from xlt.config.translate import device_error
from xlt.registry import BENCHMARKS

STAGES = ("build_data", "translate", "train", "evaluate", "report")
_FLORES = re.compile(r"^[a-z]{3}_[A-Z][a-z]{3}$")


def _stages(cfg: Any, stages: Sequence[str] | None) -> list[str]:
    bad = [s for s in cfg.stages if s not in STAGES]
    if bad:
        return [f"unknown stage(s) {bad} in stages; valid stages are {list(STAGES)}"]
    if len(set(cfg.stages)) != len(cfg.stages):
        return [f"stages={list(cfg.stages)} lists a stage twice"]
    return []


def _shards(cfg: Any, stages: Sequence[str] | None) -> list[str]:
    out = []
    for section in ("translate", "eval"):
        s = cfg[section]
        if not 0 <= s.shard_index < s.num_shards:
            out.append(f"{section}.shard_index={s.shard_index} must be in 0..{section}.num_shards-1 "
                       f"(num_shards={s.num_shards})")
    return out


def _training(cfg: Any, stages: Sequence[str] | None) -> list[str]:
    t = cfg.training
    out = []
    if t.max_steps == 0:
        out.append("training.max_steps=0 would save an untrained model; use -1 (train num_train_epochs) or >= 1")
    if t.save_steps is not None and t.save_steps != t.eval_steps:
        # The Trainer tracks the best metric at every evaluation but can only restore a saved step.
        out.append(f"training.save_steps ({t.save_steps}) must equal training.eval_steps ({t.eval_steps}) or be null: "
                   "the best dev checkpoint must be a saved one")
    if t.deepspeed is not None:
        try:
            resolve_deepspeed(t.deepspeed)
        except Exception as err:  # ConfigError with the file or the known names
            out.append(str(err))
    return out


def _sources(cfg: Any, stages: Sequence[str] | None) -> list[str]:
    SOURCE_NAMES = source_names()

    unknown = sorted(set(cfg.data.sources) - set(SOURCE_NAMES))
    if unknown:
        return [f"data.sources: unknown source(s) {unknown}; known sources: {sorted(SOURCE_NAMES)}"]
    if stages and "build_data" in stages and not any(s.enabled for s in cfg.data.sources.values()):
        return ["data.sources lists no enabled source; pick a data config, e.g. data=six_sources"]
    return []


def _translate(cfg: Any, stages: Sequence[str] | None) -> list[str]:
    t = cfg.translate
    langs = [str(c) for c in t.languages or []]
    out = []
    bad = [c for c in langs if not _FLORES.match(c)]
    if bad:
        out.append(f"translate.languages: {bad} are not FLORES-200 codes like 'fra_Latn'")
    dup = sorted({c for c in langs if langs.count(c) > 1})
    if dup:
        out.append(f"translate.languages lists {dup} more than once")
    if t.source_language in langs:
        out.append(f"translate.languages contains the source language {t.source_language!r}")
    if stages and "translate" in stages and not langs and not t.import_dir:
        out.append("stages include translate but there is nothing to translate: pick a translate option with "
                   "languages (e.g. translate=nllb) or set translate.languages=[fra_Latn,deu_Latn]")
    if t.kind == "hf":
        out.extend(_translate_engine(t))
    s = t.sampling
    if s.strategy == "cap" and s.max_rows_per_language is None:
        out.append("translate.sampling.strategy=cap needs translate.sampling.max_rows_per_language")
    return out


def _translate_engine(t: Any) -> list[str]:
    """Settings that the chosen engine cannot honour are rejected instead of silently ignored."""
    out = []
    transformers = t.engine in ("transformers", "hf")  # "hf": its old name (xlt.config.translate.OLD_ENGINE_NAMES)
    if transformers and t.compute_type != "auto":
        out.append(f"translate.compute_type={t.compute_type} applies to engine=ctranslate2 only; with engine=transformers "
                   "use translate.precision (bf16, fp16, fp32)")
    if t.precision != "auto" and t.compute_type != "auto":
        out.append(f"translate.precision={t.precision} and translate.compute_type={t.compute_type} both set the "
                   "number format; set one (precision: both engines; compute_type: ctranslate2, e.g. int8)")
    if transformers and "," in str(t.device):
        out.append(f"translate.device={t.device}: a list of GPUs needs engine=ctranslate2 (engine=transformers uses "
                   "one device)")
    if not transformers:
        err = device_error(str(t.device))
        if err:
            out.append(err)
    return out


def _eval(cfg: Any, stages: Sequence[str] | None) -> list[str]:
    e = cfg.eval
    out = []
    if stages and ("evaluate" in stages or "report" in stages):
        if not any(b.enabled for b in e.benchmarks.values()):
            out.append("eval.benchmarks has no enabled benchmark (empty benchmark selection)")
    if llm_selected(e) and not e.llm.model and stages and "evaluate" in stages:
        out.append("eval.scorer=llm needs eval.llm.model=<Hub id or local folder of a causal LM>")
    if e.llm.protocol == "paper":
        if not llm_selected(e) or e.llm.mode != "loglikelihood":
            out.append("eval.llm.protocol=paper (the Belebele paper's few-shot protocol) applies to eval.scorer=llm "
                       f"with eval.llm.mode=loglikelihood (got scorer={e.scorer}, mode={e.llm.mode})")
        if e.llm.num_fewshot < 1:
            out.append("eval.llm.protocol=paper draws few-shot examples: eval.llm.num_fewshot must be >= 1 (the paper: 5)")
    out += _harness_output(e)
    for name, b in e.benchmarks.items():
        if b.enabled and b.kind is None:
            out.append(f"eval.benchmarks.{name} has no kind: add eval.benchmarks.{name}.kind=<one of "
                       f"{', '.join(BENCHMARKS.names())}>; a new kind is a definition file in a folder given by "
                       "eval.include_path=[folder]")
        if b.languages is not None and len(b.languages) == 0:
            out.append(f"eval.benchmarks.{name}.languages=[] selects nothing; use null for every language")
        if b.enabled and b.machine_translate_from and b.translate_test:
            out.append(f"eval.benchmarks.{name}: machine_translate_from (translate the {b.machine_translate_from} "
                       "items into each language) and translate_test (translate each language into English) "
                       "exclude each other; use two entries")
        if b.enabled and llm_selected(e) and e.llm.protocol == "paper" and b.kind is not None and b.kind != "belebele":
            out.append(f"eval.llm.protocol=paper is the Belebele paper's few-shot protocol; eval.benchmarks.{name} is "
                       f"{b.kind}: disable it (eval.benchmarks.{name}.enabled=false) or use eval.llm.protocol=harness")
        if (b.enabled and b.machine_translate_from and llm_selected(e) and e.llm.num_fewshot
                and stages and "evaluate" in stages):
            out.append(f"eval.benchmarks.{name}: few-shot examples of a machine-translated entry would come from "
                       "the human-translated dev split, not from machine translations; use eval.llm.num_fewshot=0 "
                       "for this comparison")
    return out


def _harness_output(e: Any) -> list[str]:
    """``eval.llm.harness_output``: false, true or a folder, and only where the harness has such files."""
    value = e.llm.get("harness_output", False)
    if value is None or value is False:
        return []
    if not (value is True or (isinstance(value, str) and value.strip())):
        return [f"eval.llm.harness_output={value!r}: use false, true (the run directory's harness/ folder) or a folder"]
    if not llm_selected(e) or e.llm.mode != "loglikelihood" or e.llm.protocol != "harness":
        return ["eval.llm.harness_output writes lm-evaluation-harness's output folder, whose numbers are those of "
                "eval.scorer=llm with eval.llm.mode=loglikelihood and eval.llm.protocol=harness (got scorer="
                f"{e.scorer}, mode={e.llm.mode}, protocol={e.llm.protocol})"]
    return []


def _model(cfg: Any, stages: Sequence[str] | None) -> list[str]:
    if cfg.model.name_or_path == UNSET_CHECKPOINT:  # conf/model/own.yaml asks for a checkpoint
        return ["model.name_or_path is not set: this recipe trains your own checkpoint; add "
                "model.name_or_path=/path/to/checkpoint (a local folder) or a Hub id"]
    return []


RULES: tuple[Callable[[Any, Sequence[str] | None], list[str]], ...] = (_stages, _shards, _model, _training, _sources,
                                                                        _translate, _eval)


def cross_field_errors(cfg: Any, stages: Sequence[str] | None = None) -> list[str]:
    """Messages of every broken rule; with ``stages``, also the rules of those stages."""
    return [msg for rule in RULES for msg in rule(cfg, stages)]

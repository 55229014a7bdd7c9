"""The evaluation job, resolved once: one (benchmark entry, language) pair with everything it is.

An :class:`EvalJob` carries the entry (its name under ``eval.benchmarks`` and its
:class:`~xlt.config.eval.BenchmarkConfig`), the benchmark definition, the language whose items it reads
(the source language for an entry xlt machine-translates), whether and how its items are translated
before scoring, its hash inputs (the settings its result records, the config keys of its job hash) and its
paths. The evaluate stage plans jobs here (:func:`plan_jobs`), scores and writes them, and the report reads
them back through the same object (:mod:`xlt.scoring.results`, :mod:`xlt.run.results`).

Layout under ``run/eval/<benchmark>/`` (:class:`xlt.run.layout.RunDir`)::

    plan.json                  the languages this benchmark is evaluated on (written before scoring)
    <lang>.json                per-language result: accuracy (%), n, 95% bootstrap interval, subsets;
                               its presence marks the language done
    predictions/<lang>.jsonl   one line per question: id, language, gold, prediction, scores (one per
                               option of that question; null: no score)

Jobs are sorted by (benchmark, language) and shard ``i`` of ``n`` takes every ``n``-th job starting at
``i``: deterministic, and balanced across benchmarks.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xlt import languages as langtab
from xlt.config.eval import BenchmarkConfig, EvalConfig, machine_translate_source
from xlt.config.keys import eval_job_values
from xlt.data.benchmarks import Benchmark, get_benchmark
from xlt.errors import ConfigError
from xlt.registry import BENCHMARKS, SCORERS
from xlt.run.files import atomic_write_json
from xlt.run.fingerprint import digest, language_fingerprint
from xlt.run.layout import RunDir, shard
from xlt.run.results import read_plan, result_problem, verified_result
from xlt.scoring import declaration

# How a job's items are translated before scoring (EvalJob.translation; None: read as published, in the
# original or a human translation).
TRANSLATE_TEST = "translate-test"  # each item into English (the entry's translate_test)
# the source language's items into the job's language (machine_translate_from)
MACHINE_TRANSLATED = "machine-translated"

# The evaluate stage's file input under eval.llm.protocol=paper: the training set the examples come from.
FEWSHOT_TRAIN_SET = "eval.llm.fewshot_source"


@dataclass(frozen=True, order=True)
class EvalJob:
    """One (benchmark entry, language) job, resolved from the ``eval`` section (:func:`resolve`).

    Ordered, equal and hashed by (benchmark, language, kind) only: the rest is what those resolve to.
    """

    benchmark: str  # the entry's name under eval.benchmarks
    language: str  # the benchmark's own code
    kind: str  # the benchmark definition's kind (the plan's, for a planned job)
    entry: BenchmarkConfig = field(compare=False, repr=False)
    # the language whose items are read (machine_translate_from's, else language)
    read: str = field(compare=False)
    translation: str | None = field(compare=False)  # TRANSLATE_TEST, MACHINE_TRANSLATED or None
    settings: dict[str, Any] = field(compare=False, repr=False)  # recorded in the result (job_settings)
    config: dict[str, Any] = field(compare=False, repr=False)  # the eval keys of its hash (eval_job_values)
    # protocol=paper: its draws (the training set's fingerprint joins them in hash_inputs)
    fewshot: dict[str, Any] | None = field(compare=False, repr=False)

    @property
    def key(self) -> str:
        """``benchmark/language``: how job hashes are keyed."""
        return f"{self.benchmark}/{self.language}"

    @property
    def definition(self) -> Benchmark:
        """The benchmark definition of :attr:`kind`."""
        return get_benchmark(self.kind)

    @property
    def translated(self) -> bool:
        """Whether its results depend on the translator (:func:`xlt.config.eval.uses_translator`): translate-test,
        or a machine-translated version xlt makes."""
        return self.translation is not None

    # --- paths (``run`` may be the view RunDir.before_training() gives) ---
    def result_path(self, run: RunDir) -> Path:
        return run.result(self.benchmark, self.language)

    def predictions_path(self, run: RunDir) -> Path:
        return run.predictions(self.benchmark, self.language)

    def plan_path(self, run: RunDir) -> Path:
        return run.plan(self.benchmark)

    # --- its hash ---
    def hash_inputs(self, files: dict[str, Any], upstream: dict[str, Any]) -> dict[str, Any]:
        """What its result depends on (hashed into ``provenance.job``): the code versions of the definition and
        the scorer, every evaluate key that applies to it (:attr:`config`), the fingerprint of the scored
        model (``files``: the evaluate stage's file inputs), of the files read, the translator's inputs for an
        entry translated before scoring (the data is then the source language's files), the scorer's reads of
        an external model, the paper protocol's draws, and the upstream train stage's output id."""
        e = self.entry
        data = language_fingerprint(e.path, self.read) if e.path else f"hub:{e.hub_id}@{e.revision or 'main'}"
        inputs = {
            "versions": self.settings["versions"],
            "config": self.config,
            "model": files.get("model"),
            "data": data,
            "translate_test": _settled(files.get("translate_test")) if self.translated else None,
            "upstream": upstream,
        }
        # what the scorer reads of an external eval.model's settings
        if files.get("model settings") is not None:
            inputs["model settings"] = files["model settings"]
        if self.fewshot is not None:  # the Belebele paper's few-shot draws: absent under the harness protocol
            inputs["fewshot"] = {**self.fewshot, "train_set": files.get(FEWSHOT_TRAIN_SET)}
        return inputs

    def provenance(self, ctx: Any) -> dict[str, Any]:
        """Its result's provenance under the evaluate stage's context ``ctx`` (:func:`xlt.contract.context`):
        the model and data fingerprints, the job hash of :meth:`hash_inputs`, and beside it what the translator
        resolved to and the few-shot draws."""
        files = ctx.detail["files"]
        inputs = self.hash_inputs(files, ctx.upstream)
        translator = files.get("translate_test")
        extra = {"translator": translator.get("resolved")} if self.translated and translator else {}
        if "fewshot" in inputs:  # which protocol, draws and training set made the result
            extra["fewshot"] = inputs["fewshot"]
        return ctx.record(model=inputs["model"], data=inputs["data"], job=digest(inputs), **extra)

    # --- its result, read back ---
    def verified(self, run: RunDir) -> dict[str, Any] | None:
        """Its result, checked (:func:`xlt.run.results.verified_result`)."""
        return verified_result(run, self.benchmark, self.language)

    def problem(self, run: RunDir, current: dict[str, str] | None = None) -> str | None:
        """Why it must be (re)computed (None: its result is sound and, given ``current`` job hashes, current)."""
        return result_problem(
            run, self.benchmark, self.language, current[self.key] if current is not None else None
        )


def _settled(translator: dict[str, Any] | None) -> dict[str, Any] | None:
    """The translator inputs without what they resolve to on this machine: that is recorded beside the job
    hash (``translator``) and compared by the evaluate stage only, so a report on another machine (a login
    node without the GPU) does not call results stale."""
    return {k: v for k, v in translator.items() if k != "resolved"} if translator else None


def paper_protocol(eval_cfg: EvalConfig) -> bool:
    """Whether LLM results are scored under the Belebele paper's few-shot protocol (``eval.llm.protocol=paper``)."""
    return declaration.of(eval_cfg).scores_llm and eval_cfg.llm.get("protocol", "harness") == "paper"


def job_settings(eval_cfg: EvalConfig, name: str) -> dict[str, Any]:
    """What a result of entry ``name`` depends on besides the model: stored in the result, compared on resume.

    A result computed under other settings (another local copy, question cap, split, scorer or translate-test
    choice) is stale and is recomputed instead of being silently reused. The scorer adds what it declares
    (:attr:`xlt.scoring.declaration.ScorerDeclaration.settings`).
    """
    b = eval_cfg.benchmarks[name]
    scorer = declaration.of(eval_cfg)
    # Code versions: the benchmark definition's and the scorer's (bumping one recomputes exactly the
    # results it affects).
    versions = {"benchmark": int(get_benchmark(b.kind).version), "scorer": scorer.version}
    # A definition from outside xlt's tree (a definition file of eval.include_path, an installed package's
    # entry point): its file's content or its distribution's version, so an edit without a version bump
    # recomputes its results (absent for xlt's own: their hashes are unchanged).
    for what, registry, key in (
        ("benchmark definition", BENCHMARKS, b.kind),
        ("scorer definition", SCORERS, eval_cfg.scorer),
    ):
        identity = registry.identity(key)
        if identity is not None:
            versions[what] = identity
    settings = {
        "kind": b.kind,
        "versions": versions,
        "split": b.split,
        "path": b.path,
        "hub_id": b.hub_id,
        "revision": b.revision,
        "max_questions": b.max_questions,
        "translate_test": bool(b.translate_test),
        "machine_translate_from": machine_translate_source(b),
        "model": eval_cfg.model,
        "scorer": eval_cfg.scorer,
    }
    settings.update(scorer.result_settings(eval_cfg))
    return settings


def paper_draws(eval_cfg: EvalConfig) -> dict[str, Any]:
    """The paper protocol's draws as the config gives them: the protocol, the number of examples, the draws
    with their seeds (the training set's fingerprint joins them in :meth:`EvalJob.hash_inputs`)."""
    llm = eval_cfg.llm
    seeds = [int(llm.fewshot_seed) + d for d in range(int(llm.fewshot_draws))]
    return {"protocol": "paper", "k": int(llm.num_fewshot), "draws": len(seeds), "seeds": seeds}


def resolve(eval_cfg: EvalConfig, name: str, language: str, kind: str | None = None) -> EvalJob:
    """The job of entry ``name`` (of ``eval_cfg.benchmarks``) in ``language``; ``kind``: the plan's (default:
    the entry's)."""
    return resolve_entry(eval_cfg, name)(language, kind)


def resolve_entry(eval_cfg: EvalConfig, name: str) -> Callable[[str, str | None], EvalJob]:
    """``(language, kind) -> EvalJob`` for entry ``name``: what the entry's jobs share (its settings, hashed
    keys, few-shot draws) is resolved once, here."""
    b = eval_cfg.benchmarks[name]
    src = machine_translate_source(b)
    read = get_benchmark(b.kind).canonical(src) if src else None
    translation = TRANSLATE_TEST if b.translate_test else MACHINE_TRANSLATED if src else None
    settings, config = job_settings(eval_cfg, name), eval_job_values(eval_cfg, name)
    fewshot = paper_draws(eval_cfg) if paper_protocol(eval_cfg) else None

    def job(language: str, kind: str | None = None) -> EvalJob:
        return EvalJob(
            name, language, kind or b.kind, b, read or language, translation, settings, config, fewshot
        )

    return job


def enabled_benchmarks(eval_cfg: EvalConfig) -> dict[str, Any]:
    """The enabled entries of ``eval.benchmarks``; none raises :class:`ConfigError`."""
    out = {name: b for name, b in eval_cfg.benchmarks.items() if b.enabled}
    if not out:
        raise ConfigError("empty benchmark selection: eval.benchmarks has no enabled benchmark")
    return dict(sorted(out.items()))


def entry_languages(name: str, bcfg: BenchmarkConfig) -> list[str]:
    """The languages a benchmark entry evaluates (:meth:`~xlt.data.benchmarks.base.Benchmark.select_languages`).
    An entry xlt machine-translates (``machine_translate_from``) leaves out its source language, which must be
    one of the benchmark's: its items are the originals, not a translation."""
    bench = get_benchmark(bcfg.kind)
    src = machine_translate_source(bcfg)
    if src is None:
        return bench.select_languages(bcfg)
    available = list(bench.languages(bcfg))
    source = bench.canonical(src)
    if source not in available:
        raise langtab.unknown_code_error(
            src, available, f"eval.benchmarks.{name}.machine_translate_from: {bcfg.kind} language code"
        )
    langs = [x for x in bench.select_languages(bcfg, available) if x != source]
    if not langs:
        raise ConfigError(
            f"eval.benchmarks.{name}: no language to machine-translate {source} into (languages: "
            f"{list(bcfg.languages or [])}); list the target languages"
        )
    return langs


def plan_jobs(eval_cfg: EvalConfig, run: RunDir | None = None) -> list[EvalJob]:
    """All jobs of the ``eval`` section, sorted; written to each benchmark's ``plan.json`` when ``run`` is given."""
    jobs: list[EvalJob] = []
    for name, bcfg in enabled_benchmarks(eval_cfg).items():
        langs = entry_languages(name, bcfg)
        if run is not None:
            atomic_write_json(run.plan(name), {"benchmark": name, "kind": bcfg.kind, "languages": langs})
        job = resolve_entry(eval_cfg, name)
        jobs.extend(job(lang) for lang in langs)
    return sorted(jobs)


def planned_jobs(eval_cfg: EvalConfig, run: RunDir) -> list[EvalJob]:
    """The jobs recorded by the evaluate stage (``plan.json``), else planned from the ``eval`` section."""
    jobs: list[EvalJob] = []
    for name, bcfg in enabled_benchmarks(eval_cfg).items():
        plan, job = read_plan(run, name), resolve_entry(eval_cfg, name)
        if plan is not None:
            jobs.extend(job(lang, plan["kind"]) for lang in plan["languages"])
        else:
            jobs.extend(job(lang) for lang in entry_languages(name, bcfg))
    return sorted(jobs)


def shard_jobs(jobs: list[EvalJob], index: int, num: int) -> list[EvalJob]:
    """Jobs of shard ``index`` (0-based) of ``num`` (:func:`xlt.run.layout.shard` over the sorted jobs)."""
    return shard(sorted(jobs), index, num)

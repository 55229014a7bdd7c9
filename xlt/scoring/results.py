"""Where evaluation results live in a run directory, and how jobs are planned, sharded and collected.

Layout under ``run/eval/<benchmark>/``::

    plan.json                  the languages this benchmark is evaluated on (written before scoring)
    <lang>.json                per-language result: accuracy (%), n, 95% bootstrap interval, subsets;
                               its presence marks the language done
    predictions/<lang>.jsonl   one line per question: id, language, gold, prediction, scores (one per
                               option of that question; null: no score)

A job is one (benchmark, language) pair. Jobs are sorted by (benchmark, language) and shard ``i`` of
``n`` takes every ``n``-th job starting at ``i``: deterministic, and balanced across benchmarks.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from xlt import languages as langtab
from xlt.config.eval import BenchmarkConfig, EvalConfig, machine_translate_source, uses_translator
from xlt.config.keys import eval_job_values
from xlt.config.llm import PAPER_KEYS
from xlt.data.benchmarks import get_benchmark
from xlt.errors import ConfigError, DataError
from xlt.metrics import chance_level
from xlt.registry import BENCHMARKS, SCORERS
from xlt.run.files import atomic_write_json
from xlt.run.fingerprint import digest, language_fingerprint
from xlt.run.layout import PLAN_FILE, RunDir, shard
from xlt.run.state import PLAN, PREDICTION, RESULT, Damaged, read_jsonl_state, read_or_redo, read_state, redo
from xlt.scoring.scorers import SCORER_VERSIONS

log = logging.getLogger("xlt.evaluate")


@dataclass(frozen=True, order=True)
class Job:
    benchmark: str  # the name under eval.benchmarks
    language: str  # the benchmark's own code
    kind: str = ""


def enabled_benchmarks(eval_cfg: EvalConfig) -> dict[str, Any]:
    """The enabled entries of ``eval.benchmarks``; none raises :class:`ConfigError`."""
    out = {name: b for name, b in eval_cfg.benchmarks.items() if b.enabled}
    if not out:
        raise ConfigError("empty benchmark selection: eval.benchmarks has no enabled benchmark")
    return dict(sorted(out.items()))


def bench_dir(run: RunDir, benchmark: str) -> Path:
    return run.bench_dir(benchmark)


def result_path(run: RunDir, job: Job) -> Path:
    return run.result(job.benchmark, job.language)


def predictions_path(run: RunDir, job: Job) -> Path:
    return run.predictions(job.benchmark, job.language)


def plan_path(run: RunDir, benchmark: str) -> Path:
    return run.plan(benchmark)


def plan_jobs(eval_cfg: EvalConfig, run: RunDir | None = None) -> list[Job]:
    """All (benchmark, language) jobs of the ``eval`` section, sorted; written to ``plan.json`` when ``run`` given."""
    jobs: list[Job] = []
    for name, bcfg in enabled_benchmarks(eval_cfg).items():
        langs = entry_languages(name, bcfg)
        if run is not None:
            atomic_write_json(plan_path(run, name), {"benchmark": name, "kind": bcfg.kind, "languages": langs})
        jobs.extend(Job(name, lang, bcfg.kind) for lang in langs)
    return sorted(jobs)


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
        raise langtab.unknown_code_error(src, available, f"eval.benchmarks.{name}.machine_translate_from: {bcfg.kind} language code")
    langs = [x for x in bench.select_languages(bcfg, available) if x != source]
    if not langs:
        raise ConfigError(f"eval.benchmarks.{name}: no language to machine-translate {source} into (languages: "
                          f"{list(bcfg.languages or [])}); list the target languages")
    return langs


def source_language(bcfg: BenchmarkConfig, language: str) -> str:
    """The language whose items a job of ``language`` reads: the entry's ``machine_translate_from`` (in the
    benchmark's spelling), else ``language`` itself."""
    src = machine_translate_source(bcfg)
    return get_benchmark(bcfg.kind).canonical(src) if src else language


def read_plan(run: RunDir, benchmark: str) -> dict[str, Any] | None:
    """A benchmark's ``plan.json``, checked; None when absent or damaged (logged: it is planned again)."""
    plan = read_or_redo(plan_path(run, benchmark), PLAN, what="planned again from the config")
    if plan is not None and not all(isinstance(x, str) for x in plan["languages"]):
        redo(Damaged(plan_path(run, benchmark), "field 'languages' holds a non-string"), "planned again from the config")
        return None
    return plan


def planned_jobs(eval_cfg: EvalConfig, run: RunDir) -> list[Job]:
    """The jobs recorded by the evaluate stage (``plan.json``), else planned from the ``eval`` section."""
    jobs: list[Job] = []
    for name, bcfg in enabled_benchmarks(eval_cfg).items():
        plan = read_plan(run, name)
        if plan is not None:
            jobs.extend(Job(name, lang, plan["kind"]) for lang in plan["languages"])
        else:
            langs = entry_languages(name, bcfg)
            jobs.extend(Job(name, lang, bcfg.kind) for lang in langs)
    return sorted(jobs)


def shard_jobs(jobs: list[Job], index: int, num: int) -> list[Job]:
    """Jobs of shard ``index`` (0-based) of ``num`` (:func:`xlt.run.layout.shard` over the sorted jobs)."""
    return shard(sorted(jobs), index, num)


def job_settings(eval_cfg: EvalConfig, job: Job) -> dict[str, Any]:
    """What a result depends on besides the model: stored in the result, compared on resume.

    A result computed under other settings (another local copy, question cap, split, scorer or
    translate-test choice) is stale and is recomputed instead of being silently reused.
    """
    b = eval_cfg.benchmarks[job.benchmark]
    # Code versions: the benchmark definition's and the scorer's (bumping one recomputes exactly the
    # results it affects).
    versions = {"benchmark": int(get_benchmark(b.kind).version),
                "scorer": SCORER_VERSIONS.get(eval_cfg.scorer)}
    # A definition from outside xlt's tree (a definition file of eval.include_path, an installed package's
    # entry point): its file's content or its distribution's version, so an edit without a version bump
    # recomputes its results (absent for xlt's own: their hashes are unchanged).
    for what, registry, name in (("benchmark definition", BENCHMARKS, b.kind), ("scorer definition", SCORERS,
                                                                                eval_cfg.scorer)):
        identity = registry.identity(name)
        if identity is not None:
            versions[what] = identity
    settings = {"kind": b.kind, "versions": versions, "split": b.split, "path": b.path, "hub_id": b.hub_id, "revision": b.revision,
                "max_questions": b.max_questions, "translate_test": bool(b.translate_test),
                "machine_translate_from": machine_translate_source(b), "model": eval_cfg.model, "scorer": eval_cfg.scorer}
    if eval_cfg.scorer == "llm":
        llm = OmegaConf.to_container(eval_cfg.llm, resolve=True)
        if not paper_protocol(eval_cfg):  # a harness result records what it recorded before the protocol existed
            llm = {k: v for k, v in llm.items() if k not in PAPER_KEYS}
        settings["llm"] = llm
    elif eval_cfg.scorer == "fixed":
        settings["fixed_option"] = eval_cfg.fixed_option
    return settings


def paper_protocol(eval_cfg: EvalConfig) -> bool:
    """Whether LLM results are scored under the Belebele paper's few-shot protocol (``eval.llm.protocol=paper``)."""
    return eval_cfg.scorer == "llm" and eval_cfg.llm.get("protocol", "harness") == "paper"


# The evaluate stage's file input under eval.llm.protocol=paper: the training set the examples come from.
FEWSHOT_TRAIN_SET = "eval.llm.fewshot_source"


def paper_fewshot(eval_cfg: EvalConfig, files: dict[str, Any]) -> dict[str, Any]:
    """What paper-protocol results depend on besides the config keys: the protocol, the number of examples, the
    draws with their seeds, and the training set's content fingerprint (None until there is one)."""
    llm = eval_cfg.llm
    seeds = [int(llm.fewshot_seed) + d for d in range(int(llm.fewshot_draws))]
    return {"protocol": "paper", "k": int(llm.num_fewshot), "draws": len(seeds), "seeds": seeds,
            "train_set": files.get(FEWSHOT_TRAIN_SET)}


def job_provenance(eval_cfg: EvalConfig, run: RunDir, job: Job, ctx: Any) -> dict[str, Any]:
    """What one (benchmark, language) result depends on, with its hash under ``job``.

    The code versions of the benchmark definition and the scorer, every evaluate key of the schema that
    applies to this job (:func:`xlt.config.keys.job_values`: this benchmark's entry, the scorer and its
    options, batch size, bootstrap; not the split and selection keys), the fingerprint of the scored model,
    of this language's files in a local copy, the translator's inputs
    for an entry translated before scoring (translate-test or ``machine_translate_from``:
    :func:`xlt.stages.inputs.translator_inputs`; the data is then the source language's files), and the upstream train stage's
    output id (a retrain, even to the same weights, recomputes every result).
    """
    b = eval_cfg.benchmarks[job.benchmark]
    files = ctx.detail["files"]
    # The files read: this language's, or the source language's for an entry xlt machine-translates.
    read = source_language(b, job.language)
    data = language_fingerprint(b.path, read) if b.path else f"hub:{b.hub_id}@{b.revision or 'main'}"
    translated = uses_translator(b)
    inputs = {
        "versions": job_settings(eval_cfg, job)["versions"],
        "config": eval_job_values(eval_cfg, job.benchmark),
        "model": files.get("model"),
        "data": data,
        "translate_test": _settled(files.get("translate_test")) if translated else None,
        "upstream": ctx.upstream,
    }
    if files.get("model settings") is not None:  # what the scorer reads of an external eval.model's settings
        inputs["model settings"] = files["model settings"]
    if paper_protocol(eval_cfg):  # the Belebele paper's few-shot draws: absent under the harness protocol
        inputs["fewshot"] = paper_fewshot(eval_cfg, files)
    extra = {"translator": files["translate_test"].get("resolved")} if translated and files.get("translate_test") else {}
    if "fewshot" in inputs:  # which protocol, draws and training set made the result
        extra["fewshot"] = inputs["fewshot"]
    return ctx.record(model=inputs["model"], data=data, job=digest(inputs), **extra)


def _settled(translator: dict[str, Any] | None) -> dict[str, Any] | None:
    """The translator inputs without what they resolve to on this machine: that is recorded beside the job
    hash (``translator``) and compared by the evaluate stage only, so a report on another machine (a login
    node without the GPU) does not call results stale."""
    return {k: v for k, v in translator.items() if k != "resolved"} if translator else None


def stale_translator(run: RunDir, job: Job, now: dict[str, Any] | None) -> bool:
    """Whether a sound translate-test result was translated by another engine / dtype / compute type than
    ``now`` resolves to (an older result without the record counts as the same)."""
    try:
        result = verified_result(run, job)
    except Damaged:
        return False  # recomputed anyway
    prov = (result or {}).get("provenance")
    ran = prov.get("translator") if isinstance(prov, dict) else None
    return ran is not None and now is not None and ran != now


def current_jobs(eval_cfg: EvalConfig, run: RunDir, jobs: list[Job], ctx: Any) -> dict[str, str]:
    """The job hash each of ``jobs`` would be computed under now (``benchmark/language`` -> hash), given the
    evaluate stage's context as it is now (:func:`xlt.contract.context`, passed in by the stage)."""
    return {f"{j.benchmark}/{j.language}": job_provenance(eval_cfg, run, j, ctx)["job"] for j in jobs}


def verified_result(run: RunDir, job: Job) -> dict[str, Any] | None:
    """The job's result file, checked (:mod:`xlt.run.state`): None when there is none.

    Raises :class:`xlt.run.state.Damaged` when the result or its predictions file is damaged: not JSON of
    the result's shape, predictions missing, truncated or unreadable, or the result no longer agrees
    with its own predictions (count, correct, accuracy, chance level from each prediction's number of
    scores, the job hash each prediction carries). ``chance`` is optional (results of older xlt lack it).
    """
    path = result_path(run, job)
    result = read_state(path, RESULT)
    if result is None:
        return None
    preds_file = predictions_path(run, job)
    preds = read_jsonl_state(preds_file, PREDICTION)
    if preds is None:
        raise Damaged(preds_file, f"missing, while its result {path.name} exists")
    draws = result.get("draws")
    k = int(draws["k"]) if isinstance(draws, dict) and isinstance(draws.get("k"), int) else None
    if k is not None and any(not isinstance(p.get("draws"), list) or len(p["draws"]) != k for p in preds):
        raise Damaged(preds_file, f"a prediction lacks the {k} draws its result {path.name} says it was scored over")
    # Right answers: over every draw (protocol=paper), else over the predictions.
    correct = sum(right_answers(p) for p in preds)
    acc = 100.0 * correct / (len(preds) * (k or 1)) if preds else None
    if len(preds) != result["n"] or correct != result["correct"] or (
            acc is not None and not math.isclose(acc, result["accuracy"], rel_tol=1e-9, abs_tol=1e-9)):
        raise Damaged(path, f"disagrees with its predictions {preds_file.name} (result: n={result['n']}, correct="
                            f"{result['correct']}, accuracy={result['accuracy']}; predictions: n={len(preds)}, "
                            f"correct={correct})")
    if "chance" in result:
        problem = _chance_problem(result["chance"], preds)
        if problem:
            raise Damaged(path, f"disagrees with its predictions {preds_file.name}: {problem}")
    tag = (result.get("provenance") or {}).get("job") if isinstance(result.get("provenance"), dict) else None
    if tag is not None and any(p.get("job") != tag for p in preds):
        raise Damaged(preds_file, "holds predictions of another computation than its result (job hash differs)")
    return result


def right_answers(p: dict[str, Any]) -> int:
    """How many times a prediction row answered right: over its draws (``draws``: an LLM under
    ``eval.llm.protocol=paper``), else 0 or 1."""
    draws = p.get("draws")
    if isinstance(draws, list):
        return sum(d == p["gold"] for d in draws)
    return int(p["prediction"] == p["gold"])


def item_correct(p: dict[str, Any]) -> float:
    """A prediction row's correctness: 0 or 1, or the share of its draws that answered right (``draws``:
    protocol=paper, whose accuracy is the mean over draws). Paired comparisons use it."""
    draws = p.get("draws")
    if isinstance(draws, list) and draws:
        return right_answers(p) / len(draws)
    return float(p["prediction"] == p["gold"])


def _chance_problem(chance: Any, preds: list[dict[str, Any]]) -> str | None:
    """Why a result's ``chance`` does not match its predictions (each holds one score per option)."""
    counts = [len(p["scores"]) if isinstance(p.get("scores"), list) else 0 for p in preds]
    if 0 in counts:
        return "a prediction has no option scores"
    want = chance_level(counts)
    if chance is None or want is None:
        return None if chance is want else f"chance is {chance}, expected {want} ({len(preds)} predictions)"
    if isinstance(chance, bool) or not isinstance(chance, (int, float)) or not math.isclose(
            chance, want, rel_tol=1e-9, abs_tol=1e-9):
        return f"chance is {chance!r}, its predictions' option counts give {want}"
    return None


def stored_job(run: RunDir, job: Job) -> str | None:
    """The ``job`` hash recorded in a sound result file (None: no result, damaged, or written by an older xlt)."""
    try:
        result = verified_result(run, job)
    except Damaged:
        return None
    prov = (result or {}).get("provenance")
    return prov.get("job") if isinstance(prov, dict) else None


def result_problem(run: RunDir, job: Job, current: dict[str, str] | None = None) -> str | None:
    """Why the job must be (re)computed: None when its result is sound (and, given ``current`` job hashes,
    was computed under the current one)."""
    try:
        result = verified_result(run, job)
    except Damaged as err:
        return f"damaged: {err}"
    if result is None:
        return "missing"
    if current is not None:
        prov = result.get("provenance")
        if not isinstance(prov, dict) or prov.get("job") != current[job.benchmark + "/" + job.language]:
            return "computed for another model, data or settings"
    return None


def is_done(run: RunDir, job: Job, current: dict[str, str] | None = None) -> bool:
    """A job is done when its result is sound (:func:`verified_result`) and, given ``current`` job hashes,
    was computed under its current hash."""
    return result_problem(run, job, current) is None


def _read_or_name_the_fix(read: Any, path: Path, damaged_fix: str, missing: str) -> Any:
    """``read()``, or a :class:`DataError` naming ``path`` and the fix when it is damaged or missing (None)."""
    try:
        value = read()
    except Damaged as err:
        raise DataError(f"{err}; {damaged_fix}") from None
    if value is None:
        raise DataError(f"{path}: {missing}")
    return value


def read_result(run: RunDir, job: Job) -> dict[str, Any]:
    return _read_or_name_the_fix(lambda: verified_result(run, job), result_path(run, job),
                                 "rerun the evaluate stage (it recomputes exactly this result)",
                                 "missing; rerun the evaluate stage")


def first_result(run_path: str | Path, benchmark: str) -> tuple[str, dict[str, Any]] | None:
    """``(language, result)`` of the first sound result of ``benchmark`` in a run folder (checked by
    :func:`verified_result`; damaged ones are skipped), for reports that show one language's provenance."""
    run = RunDir(run_path)
    folder = bench_dir(run, benchmark)
    for lang in sorted(f.stem for f in folder.glob("*.json") if f.name != PLAN_FILE):
        try:
            result = verified_result(run, Job(benchmark, lang))
        except Damaged:
            continue
        if result is not None:
            return lang, result
    return None


def read_predictions(run: RunDir, job: Job) -> list[dict[str, Any]]:
    path = predictions_path(run, job)
    fix = f"rerun the evaluate stage for {job.benchmark}/{job.language}"
    return _read_or_name_the_fix(lambda: read_jsonl_state(path, PREDICTION), path, fix, f"predictions missing; {fix}")


def missing_jobs(run: RunDir, jobs: list[Job], current: dict[str, str] | None = None,
                 log_damage: bool = False) -> list[Job]:
    """Jobs without a sound result (without a current one, given the ``current`` job hashes); with
    ``log_damage`` each damaged result is logged with the reason it is recomputed."""
    out = []
    for j in jobs:
        problem = result_problem(run, j, current)
        if problem is None:
            continue
        if log_damage and problem.startswith("damaged"):
            log.warning("%s/%s: result %s; it is recomputed", j.benchmark, j.language, problem)
        out.append(j)
    return out


def missing_message(missing: list[Job], num_shards: int = 1) -> str:
    by_bench: dict[str, list[str]] = {}
    for j in missing:
        by_bench.setdefault(j.benchmark, []).append(j.language)
    parts = [f"{b}: {', '.join(langs)}" for b, langs in sorted(by_bench.items())]
    hint = (f" Run the remaining shards (eval.shard_index=0..{num_shards - 1}) or"
            if num_shards > 1 else "")
    return (f"evaluation incomplete: {len(missing)} (benchmark, language) result(s) missing: "
            + "; ".join(parts) + f".{hint} rerun the evaluate stage (it resumes) before the report.")


def check_outputs(eval_cfg: EvalConfig, run: RunDir, ctx: Any) -> list[str]:
    """The evaluate stage's outputs that are missing, damaged or stale (its check, :mod:`xlt.stages.evaluate`):
    the plans and every planned result, sound and current (the run's model is checked by the stage's guard)."""
    if not any(b.enabled for b in eval_cfg.benchmarks.values()):
        return []  # nothing planned (the config check refuses this before a real evaluation)
    out = []
    for name in enabled_benchmarks(eval_cfg):
        rel = plan_path(run, name).relative_to(run.path).as_posix()
        try:
            if read_state(plan_path(run, name), PLAN) is None:
                out.append(f"{rel} missing")
        except Damaged as err:
            out.append(f"{rel} damaged ({err.why})")
    jobs = plan_jobs(eval_cfg)
    current = current_jobs(eval_cfg, run, jobs, ctx)
    for job in jobs:
        problem = result_problem(run, job, current)
        if problem:
            out.append(f"{result_path(run, job).relative_to(run.path)} {problem}")
    return out

"""The ``evaluate`` stage: score every (benchmark, language) job of this shard, resumably.

For each job not already done: load the items (:mod:`xlt.data.benchmarks`), score them with the
configured scorer (:mod:`xlt.scoring.scorers`), write the per-question predictions, then the
per-language result (accuracy in %, n, chance, seeded 95% bootstrap interval; for a benchmark that
declares subsets also each subset's; the scorer's tokenizer measured on the items:
:mod:`xlt.scoring.tokenizer_measures`). Both files are written atomically and the result last, so a result file
means the language is complete: a rerun skips it, a killed run resumes at the next language.

With ``eval.num_shards > 1`` each process takes its share of the jobs (:func:`shard_jobs`); the stage
returns None (not done) until every job of every shard has its result, so the last shard to finish (or
a rerun of any shard) marks the stage done. The report stage merges everything. :data:`STAGE` declares
it to the contract.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
from omegaconf import OmegaConf

from xlt.config.eval import uses_translator
from xlt.contract import StageContext, StageSpec
from xlt.data.schema import option_counts
from xlt.metrics import accuracy_with_ci, chance_level, draws_accuracy_with_ci, spread
from xlt.progress import progress_bar
from xlt.run.artifacts import check_model
from xlt.run.files import atomic_write_json, atomic_write_text, json_text
from xlt.run.fingerprint import path_fingerprint
from xlt.run.layout import EVAL_BEFORE_DIR, EVAL_DIR, RunDir
from xlt.run.results import read_result, result_record
from xlt.scoring import before, declaration
from xlt.scoring.jobs import (
    FEWSHOT_TRAIN_SET,
    TRANSLATE_TEST,
    EvalJob,
    enabled_benchmarks,
    paper_protocol,
    plan_jobs,
    shard_jobs,
)
from xlt.scoring.llm import paper
from xlt.scoring.results import check_outputs, missing_jobs, missing_message, stale_translator
from xlt.scoring.scorers import build_scorer, check_scores
from xlt.scoring.tokenizer_measures import benchmark_measures
from xlt.stages.inputs import local_fingerprint, model_fingerprint, train_stage_files, translator_inputs
from xlt.translation import resolution
from xlt.translation.translate_test import TranslateTestRunner

log = logging.getLogger("xlt.evaluate")


def evaluate_job(cfg: Any, run: RunDir, job: EvalJob, scorer: Any, translate_test: Any = None,
                 provenance: dict[str, Any] | None = None) -> dict[str, Any]:
    """Score one job (:class:`xlt.scoring.jobs.EvalJob`) and write its predictions and result files into ``run``
    (or its ``eval_before/`` view).

    With ``translate_test`` (a :class:`xlt.translation.translate_test.TranslateTestRunner`) and a translate-test
    job, the items are machine-translated into English first; for a job of an entry with
    ``machine_translate_from``, the source language's items (``job.read``) are machine-translated into the
    job's language (the machine-translated version of its test set).
    """
    bcfg, definition = job.entry, job.definition
    items, data_checks = definition.load_checked(bcfg, job.read, split=bcfg.split)
    if job.translation == TRANSLATE_TEST:
        items = translate_test(items, job.benchmark, job.language)
    elif job.read != job.language:
        items = translate_test.into(items, job.benchmark, job.language)
    where = f"{job.benchmark}/{job.language}"
    counts = option_counts(items)  # each item's own number of options
    scores = check_scores(scorer.score(items, benchmark=job.benchmark, language=job.language), counts, where)
    gold = np.asarray(items["label"], dtype=int)
    pred, ties = predictions(scores)
    correct = pred == gold
    # Several draws of few-shot examples (an LLM under eval.llm.protocol=paper): each draw scored, and the
    # accuracy is the mean over draws (xlt/scoring/llm/paper.py).
    draws_fn = getattr(scorer, "draw_scores", None)
    draws = draws_fn(job.benchmark, job.language) if callable(draws_fn) else None
    if draws:
        draw_scores = [check_scores(d, counts, f"{where} draw {i}") for i, d in enumerate(draws)]
        draw_preds = [predictions(d) for d in draw_scores]
        draw_correct = np.stack([p == gold for p, _ in draw_preds])
        ties = sum(t for _, t in draw_preds)
    # Per option, whether its continuation is the LLM's greedy one (lm-evaluation-harness's is_greedy; the harness
    # protocol): kept in the predictions so that the harness's sample logs can be written from them.
    greedy_fn = getattr(scorer, "greedy", None)
    greedy = greedy_fn(job.benchmark, job.language) if callable(greedy_fn) else None
    ids = items["id"]
    tag = (provenance or {}).get("job")  # ties each prediction to its result's provenance
    masks = definition.item_subsets(items)  # "full" and the benchmark's own subsets, if any
    # Each item's own subsets (Global-MMLU: MA, CS, CA, category/...): what a bootstrap over questions
    # within a subset resamples (the findings' per-language rank changes).
    own = {name: m for name, m in masks.items() if name != "full"}
    lines = [
        # Strict JSON: a score that is not finite (an LLM answer naming no option) is null.
        json_text({"id": ids[i], "language": job.language, "gold": int(gold[i]),
                   "prediction": int(pred[i]), "scores": [float(s) for s in scores[i, :counts[i]]], "job": tag,
                   **({"subsets": [name for name, m in own.items() if m[i]]} if own else {}),
                   **({"greedy": [bool(g) for g in greedy[i, :counts[i]]]} if greedy is not None else {}),
                   # each draw's prediction and scores; `prediction`/`scores`: of the draws' mean scores
                   **({"draws": [int(p[i]) for p, _ in draw_preds],
                       "draw_scores": [[float(x) for x in d[i, :counts[i]]] for d in draw_scores]} if draws else {})},
                  indent=None)
        for i in range(len(items))
    ]
    atomic_write_text(job.predictions_path(run), "\n".join(lines) + "\n")

    samples, seed = int(cfg.eval.bootstrap_samples), int(cfg.eval.bootstrap_seed)
    result = result_record(
        benchmark=job.benchmark, kind=job.kind, language=job.language, code=definition.table_code(job.language),
        split=bcfg.split, scorer=cfg.eval.scorer, model=cfg.eval.model, translate_test=job.translation == TRANSLATE_TEST,
        machine_translated_from=job.read if job.read != job.language else None, settings=job.settings,
        accuracy=accuracy_with_ci(correct, samples, seed) if not draws else draws_accuracy_with_ci(draw_correct, samples, seed),
        chance=chance_level(counts), ties=ties,
        # Items whose passage (or question) was cut to fit the model's max_length; None: the scorer does not say.
        truncated=None, data_checks=data_checks)
    if draws:
        per_draw = [accuracy_with_ci(c, samples, seed) for c in draw_correct]
        meta = getattr(scorer, "language_meta", lambda *a: {})(job.benchmark, job.language) or {}
        seeds = (meta.get("fewshot") or {}).get("seeds")
        result["protocol"] = "paper"
        result["draws"] = {"k": len(draws), "seeds": seeds, "accuracy": [d["accuracy"] for d in per_draw],
                           "correct": [d["correct"] for d in per_draw], **spread([d["accuracy"] for d in per_draw])}
    if masks:
        result["subsets"] = {name: {**(accuracy_with_ci(correct[mask], samples, seed) if not draws else
                                       draws_accuracy_with_ci(draw_correct[:, mask], samples, seed)),
                                    "chance": chance_level(counts[mask])}
                             for name, mask in masks.items()}
    if provenance is not None:
        result["provenance"] = provenance
    tokenizer = getattr(scorer, "tokenizer", None)
    if tokenizer is not None and job.translation != TRANSLATE_TEST:  # translate-test scores English translations
        # fertility, continued words, premium against English, unknown pieces (xlt/scoring/tokenizer_measures.py)
        result["tokenizer"] = benchmark_measures(definition, bcfg, job.language, items, tokenizer)
    meta_fn = getattr(scorer, "language_meta", None)
    if callable(meta_fn):
        extra = dict(meta_fn(job.benchmark, job.language) or {})
        if "truncated" in extra:
            result["truncated"] = int(extra.pop("truncated"))
        if extra:
            result["scorer_meta"] = extra
    atomic_write_json(job.result_path(run), result)
    return result


def predictions(scores: np.ndarray) -> tuple[np.ndarray, int]:
    """Each row's prediction (the argmax; -1 where no score is finite, e.g. an LLM answer naming no option:
    wrong) and the number of predictions whose top score several options share."""
    pred = scores.argmax(axis=1)
    pred[~np.isfinite(scores).any(axis=1)] = -1
    finite = np.where(np.isfinite(scores), scores, -np.inf)
    ties = int(((finite == finite.max(axis=1, keepdims=True)).sum(axis=1) > 1)[pred >= 0].sum())
    return pred, ties


def run_stage(cfg: Any, run: RunDir, ctx: StageContext) -> dict[str, Any] | None:
    """Evaluate this shard's jobs; return a summary once every job (all shards) has a current result.

    A result is reused only when its recorded provenance (``job`` hash: settings, model fingerprint,
    language data, upstream training) matches what would be computed now; ``force`` recomputes this
    shard's jobs. With ``eval.before_training`` the untrained model scores the same jobs into
    ``eval_before/`` (:mod:`xlt.scoring.before`), through the same code.
    """
    if declaration.scores_run_model(cfg.eval):
        check_model(run)  # the weights must be the ones training saved (the user decides otherwise)
    jobs = plan_jobs(cfg.eval, run)
    mine = shard_jobs(jobs, int(cfg.eval.shard_index), int(cfg.eval.num_shards))
    # One runner for both passes (its translator loads on first use): the model before fine-tuning scores the
    # same translated items as the trained one (the run's translation cache), never untranslated ones.
    translate_test = None
    if any(j.translated for j in mine):
        translate_test = TranslateTestRunner(cfg.translate, run, resolved=resolution.resolve(cfg.translate, run))
    current = score_jobs(cfg, run, ctx, jobs, mine, lambda: build_scorer(cfg, run), translate_test)
    missing_before: list[EvalJob] = []
    if before.wanted(cfg.eval):  # the untrained model too, into eval_before/ (xlt/scoring/before.py)
        view, bctx = run.before_training(), before.context(cfg.model, cfg.seed, ctx, train_stage_files(cfg, run))
        plan_jobs(cfg.eval, view)  # eval_before/<benchmark>/plan.json
        current_before = score_jobs(cfg, view, bctx, jobs, mine, lambda: before.scorer(cfg.model, cfg.eval, cfg.seed),
                                    translate_test, what=" before fine-tuning")
        missing_before = missing_jobs(view, jobs, current_before)
    missing = missing_jobs(run, jobs, current)
    if missing or missing_before:  # every shard's results, of the trained model and of the untrained one
        if missing:
            log.info(missing_message(missing, int(cfg.eval.num_shards)))
        if missing_before:
            log.info("before fine-tuning (%s/): %s", EVAL_BEFORE_DIR,
                     missing_message(missing_before, int(cfg.eval.num_shards)))
        return None
    summary: dict[str, Any] = {}
    for name in enabled_benchmarks(cfg.eval):
        results = [read_result(run, j.benchmark, j.language) for j in jobs if j.benchmark == name]
        accs = [r["accuracy"] for r in results]
        summary[name] = {"n_languages": len(results), "mean_accuracy": float(np.mean(accs)),
                         "n_questions": int(sum(r["n"] for r in results))}
    return summary


def score_jobs(cfg: Any, run: RunDir, ctx: Any, jobs: list[EvalJob], mine: list[EvalJob], make_scorer: Any,
               translate_test: Any, what: str = "") -> dict[str, str]:
    """Score the jobs of ``mine`` (this shard's of ``jobs``) that have no sound result computed under their
    current job hash in ``run`` (or its ``eval_before/`` view), given the evaluate stage's context ``ctx`` (the
    untrained model's for that view); ``make_scorer()`` builds the scorer once there is work. Returns every
    job's current hash (``benchmark/language`` -> hash)."""
    prov = {j.key: j.provenance(ctx) for j in jobs}
    current = {k: p["job"] for k, p in prov.items()}
    todo = mine if ctx.force else missing_jobs(run, mine, current, log_damage=True)
    # Translate-test results translated by what the translator no longer resolves to (ctranslate2 installed
    # since, another device's compute type) are recomputed here, not called stale by a report elsewhere.
    todo += [j for j in mine if j not in todo and stale_translator(run, j, prov[j.key].get("translator"))]
    stale = [j for j in todo if j.result_path(run).is_file()]
    log.info("evaluate%s: %d job(s) in total, %d in shard %d/%d, %d to do (%d recomputed: %s)", what, len(jobs),
             len(mine), cfg.eval.shard_index, cfg.eval.num_shards, len(todo), len(stale),
             "force=true" if ctx.force else "their provenance no longer matches" if stale else "-")
    if todo:
        scorer = make_scorer()
        with progress_bar(total=len(todo), desc=f"evaluate{what}", unit="lang") as bar:
            for job in todo:
                bar.set_postfix_str(job.key)
                res = evaluate_job(cfg, run, job, scorer, translate_test, prov[job.key])
                log.info("%s%s: accuracy %.2f%% (n=%d, 95%% CI %.1f-%.1f)", job.key, what, res["accuracy"], res["n"],
                         res["ci_low"], res["ci_high"])
                bar.update(1)
    return current


# --- the stage's declaration (xlt.contract.StageSpec) -------------------------------------------------

def scored_model(cfg: Any, run: RunDir) -> str | None:
    """Fingerprint of the model the evaluate stage scores (weights, tokenizer, config; not the card): the one
    the scorer declares it scores (:mod:`xlt.scoring.declaration`), None for a scorer that loads none."""
    e, scorer = cfg.eval, declaration.of(cfg.eval)
    if scorer.scores_llm:
        model = model_fingerprint(e.llm.model, e.llm.revision)  # a packaged LLM: its converted folder
        tokenizer = model_fingerprint(e.llm.tokenizer, e.llm.revision)
        return f"{model}+tokenizer:{tokenizer}" if tokenizer else model
    if not scorer.scores_encoder:
        return None
    # another model than the run's is loaded at model.revision (xlt.scoring.mc): its identity is that commit
    return path_fingerprint(run.model) if scorer.scores_run_model(e) else model_fingerprint(e.model, cfg.model.revision)


def scorer_model_settings(cfg: Any) -> dict[str, Any] | None:
    """The ``model`` keys the evaluate stage's scorer reads of an external ``eval.model`` (its declaration's
    ``model_reads``; None when it scores the run's own model or reads none). These keys affect the train stage,
    so with eval.model=run they reach results through the train stage's output; for another model they are read
    by the evaluate stage itself and enter its inputs and every job hash (tests/config/test_hash_coverage.py walks them)."""
    reads = declaration.of(cfg.eval).external_model_reads(cfg.eval)
    return {key: OmegaConf.select(cfg, key) for key in reads} if reads else None


def uses_translate_test(cfg: Any) -> bool:
    """Whether an enabled benchmark translates with the ``translate`` group's model (translate-test, machine-translated entries)."""
    return any(b.enabled and uses_translator(b) for b in cfg.eval.benchmarks.values())


def translate_test_values(cfg: Any, run: RunDir | None = None) -> dict[str, Any] | None:
    """Translate-test, and the machine-translated entries xlt makes, translate with the ``translate`` group's
    model: its inputs are evaluation inputs."""
    if not uses_translate_test(cfg):
        return None
    return translator_inputs(cfg, run)


def files(cfg: Any, run: RunDir) -> dict[str, Any]:
    """The stage's file inputs: the scored model, the translator of translate-test, the local benchmark copies."""
    out: dict[str, Any] = {"model": scored_model(cfg, run), "translate_test": translate_test_values(cfg, run)}
    settings = scorer_model_settings(cfg)
    if settings is not None:  # absent otherwise: the hashes of runs that score their own model are unchanged
        out["model settings"] = settings
    if paper_protocol(cfg.eval):  # the training set the few-shot examples are drawn from (absent otherwise)
        out[FEWSHOT_TRAIN_SET] = paper.train_set_fingerprint(cfg.eval.llm.fewshot_source, run)
    for name, b in sorted(cfg.eval.benchmarks.items()):
        if b.enabled and b.path:
            out[f"eval.benchmarks.{name}.path"] = local_fingerprint(b.path)
    return out


def upstream(cfg: Any) -> tuple[str, ...]:
    """The train stage, when the scorer scores the run's own model (:mod:`xlt.scoring.declaration`)."""
    return ("train",) if declaration.scores_run_model(cfg.eval) else ()


def check(cfg: Any, run: RunDir, ctx: Any) -> list[str]:
    """The plans and results of ``eval/``, and with ``eval.before_training`` of ``eval_before/``: a missing,
    damaged or stale one of either reruns the stage (which recomputes exactly those)."""
    out = check_outputs(cfg.eval, run, ctx)
    if before.wanted(cfg.eval):
        out += check_outputs(cfg.eval, run.before_training(), before.context(cfg.model, cfg.seed, ctx, train_stage_files(cfg, run)))
    return out


def guard(cfg: Any, run: RunDir) -> None:
    """Scoring the run's own model: it must be the one training saved (the user decides otherwise). Translating
    test sets: the run's translator is resolved once (:func:`xlt.translation.resolution.pin`)."""
    if declaration.scores_run_model(cfg.eval):
        check_model(run)
    if uses_translate_test(cfg):
        resolution.pin(cfg.translate, run)


STAGE = StageSpec("evaluate", run_stage, upstream=upstream, files=files, outputs=(EVAL_DIR,), shard_section="eval",
                  check=check, guard=guard)

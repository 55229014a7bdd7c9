"""The model before fine-tuning, evaluated beside the trained one (``eval.before_training=true``).

What transfer means is "better than the same model before it saw the English task", not only "better than
chance". With ``eval.before_training`` the evaluate stage also scores every (benchmark, language) job with
the model the train stage starts from: ``model.name_or_path`` with its new weights (the multiple-choice
head, a missing pooler) initialised from ``seed`` exactly as training initialises them
(:func:`xlt.modeling.load.load_model`). Its results live in ``run/eval_before/<benchmark>/`` in the same
layout and format as ``run/eval/`` (:mod:`xlt.scoring.results`), with their own provenance: the job hash
holds the untrained model's fingerprint (:func:`untrained_fingerprint`: checkpoint, model settings, seed)
and no upstream stage (they do not depend on training). The report shows them as a column,
``before_finetuning``, next to each language's accuracy.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from omegaconf import OmegaConf

from xlt.config.eval import EvalConfig
from xlt.config.model import ModelConfig
from xlt.errors import DataError
from xlt.run.fingerprint import digest
from xlt.run.layout import EVAL_BEFORE_DIR, RunDir
from xlt.scoring.results import (
    Job,
    current_jobs,
    job_provenance,
    missing_jobs,
    plan_jobs,
    result_path,
    result_problem,
    stale_translator,
    verified_result,
)
from xlt.scoring.results import check_outputs as results_check

log = logging.getLogger("xlt.evaluate")

COLUMN = "before_finetuning"


class BeforeRun(RunDir):
    """A view of a run directory whose evaluation folder is ``eval_before/``."""

    @property
    def eval(self):
        return self.path / EVAL_BEFORE_DIR


def wanted(eval_cfg: EvalConfig) -> bool:
    """Whether this evaluation also scores the untrained model: asked for, the MC scorer, the run's model."""
    e = eval_cfg
    return bool(e.get("before_training")) and e.scorer == "mc" and e.model == "run"


def untrained_fingerprint(model: ModelConfig, seed: int, train_files: dict[str, Any]) -> str:
    """What the untrained model is: the checkpoint (``train_files``: as the train stage fingerprints it), the
    ``model`` settings (the tiny model's architecture, max_length, ...; not LoRA, which starts as the identity)
    and the run's ``seed``."""
    files = train_files
    settings = {k: v for k, v in OmegaConf.to_container(model, resolve=True).items() if k != "lora"}
    return "untrained:" + digest({"checkpoint": files.get("model.name_or_path"), "tokenizer": files.get("model.tokenizer"),
                                  "model": settings, "seed": int(seed)})


def context(model: ModelConfig, seed: int, ctx: Any, train_files: dict[str, Any]) -> Any:
    """The evaluate stage's context for the untrained model: its fingerprint as the model, no upstream."""
    detail = {**ctx.detail, "files": {**ctx.detail["files"], "model": untrained_fingerprint(model, seed, train_files)},
              "upstream": {}}
    return replace(ctx, inputs=digest(detail), detail=detail)


def scorer(model: ModelConfig, eval_cfg: EvalConfig, seed: int) -> Any:
    """The MC scorer of the untrained ``model``: its new weights initialised from ``seed``."""
    from xlt.modeling.load import load_model, load_tokenizer  # lazy: start-up time
    from xlt.scoring.mc import MCScorer  # lazy: start-up time

    tokenizer = load_tokenizer(model)
    net = load_model(model, tokenizer, seed=int(seed))
    return MCScorer(net, tokenizer, max_length=model.max_length, batch_size=eval_cfg.batch_size)


# The evaluate stage's scoring of one job: (run view, job, scorer, provenance) -> the result written.
EvaluateJob = Callable[[RunDir, Job, Any, dict[str, Any]], dict[str, Any]]


def evaluate(model: ModelConfig, eval_cfg: EvalConfig, run: RunDir, ctx: Any, jobs: list[Job],
             evaluate_job: EvaluateJob, train_files: dict[str, Any], *, seed: int) -> None:
    """Score ``jobs`` (this shard's) with the untrained model where no current result exists; ``train_files``:
    what the train stage reads (its checkpoint's fingerprint), which the untrained model is (with ``model``
    and the run's ``seed``)."""
    view, bctx = BeforeRun(run.path), context(model, seed, ctx, train_files)
    plan_jobs(eval_cfg, view)  # eval_before/<benchmark>/plan.json
    prov = {f"{j.benchmark}/{j.language}": job_provenance(eval_cfg, view, j, bctx) for j in jobs}
    current = {k: p["job"] for k, p in prov.items()}
    todo = jobs if ctx.force else missing_jobs(view, jobs, current, log_damage=True)
    # As for the trained model: a translate-test result translated by what the translator no longer resolves to.
    todo += [j for j in jobs if j not in todo and stale_translator(view, j, prov[f"{j.benchmark}/{j.language}"].get("translator"))]
    log.info("evaluate before fine-tuning (eval.before_training): %d job(s), %d to do", len(jobs), len(todo))
    if not todo:
        return
    score = scorer(model, eval_cfg, seed)
    for job in todo:
        res = evaluate_job(view, job, score, prov[f"{job.benchmark}/{job.language}"])
        log.info("%s/%s before fine-tuning: accuracy %.2f%% (n=%d)", job.benchmark, job.language, res["accuracy"], res["n"])


def missing(model: ModelConfig, eval_cfg: EvalConfig, run: RunDir, ctx: Any, jobs: list[Job],
            train_files: dict[str, Any], *, seed: int) -> list[Job]:
    """The ``jobs`` (all shards') without a sound, current result of the untrained model: the evaluate stage
    is done only when there are none (as for the trained model's)."""
    view, bctx = BeforeRun(run.path), context(model, seed, ctx, train_files)
    return missing_jobs(view, jobs, current_jobs(eval_cfg, view, jobs, bctx))


def check_outputs(model: ModelConfig, eval_cfg: EvalConfig, run: RunDir, ctx: Any, train_files: dict[str, Any], *,
                  seed: int) -> list[str]:
    """The evaluate stage's check of ``eval_before/`` (:func:`xlt.scoring.results.check_outputs` on it): its
    plans and every planned result, sound and current, so a missing or damaged one reruns the stage."""
    return results_check(eval_cfg, BeforeRun(run.path), context(model, seed, ctx, train_files))


def accuracies(model: ModelConfig, eval_cfg: EvalConfig, run: RunDir, ctx: Any, jobs: list[Job],
               train_files: dict[str, Any], *, seed: int) -> dict[tuple[str, str], float]:
    """``(benchmark, language) -> accuracy`` of the results of the untrained model (none when not asked for).
    A missing, damaged or stale one is a :class:`DataError` naming it, as for the trained model's results:
    the evaluate stage's check covers ``eval_before/``, so rerunning the stage recomputes exactly those."""
    if not wanted(eval_cfg):
        return {}
    view, bctx = BeforeRun(run.path), context(model, seed, ctx, train_files)
    current = current_jobs(eval_cfg, view, jobs, bctx)
    out, problems = {}, []
    for job in jobs:
        problem = result_problem(view, job, current)
        if problem is not None:
            problems.append(f"{result_path(view, job).relative_to(run.path)} {problem}")
            continue
        out[(job.benchmark, job.language)] = float(verified_result(view, job)["accuracy"])  # type: ignore[index]
    if problems:
        raise DataError(f"{len(problems)} result(s) of the model before fine-tuning (eval.before_training) missing, "
                        f"damaged or computed for other inputs: {'; '.join(problems[:5])}; rerun the evaluate stage "
                        "(it recomputes exactly those) before the report")
    return out

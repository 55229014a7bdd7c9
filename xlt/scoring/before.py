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
from dataclasses import replace
from typing import Any

from omegaconf import OmegaConf

from xlt.fingerprint import digest
from xlt.run import EVAL_BEFORE_DIR, RunDir
from xlt.scoring.results import Job, job_provenance, missing_jobs, plan_jobs, verified_result
from xlt.state import Damaged

log = logging.getLogger("xlt.evaluate")

COLUMN = "before_finetuning"


class BeforeRun(RunDir):
    """A view of a run directory whose evaluation folder is ``eval_before/``."""

    @property
    def eval(self):
        return self.path / EVAL_BEFORE_DIR


def wanted(cfg: Any) -> bool:
    """Whether this evaluation also scores the untrained model: asked for, the MC scorer, the run's model."""
    e = cfg.eval
    return bool(e.get("before_training")) and e.scorer == "mc" and e.model == "run"


def untrained_fingerprint(cfg: Any, train_files: dict[str, Any]) -> str:
    """What the untrained model is: the checkpoint (``train_files``: as the train stage fingerprints it), the
    model settings (the tiny model's architecture, max_length, ...; not LoRA, which starts as the identity)
    and the seed."""
    files = train_files
    model = {k: v for k, v in OmegaConf.to_container(cfg.model, resolve=True).items() if k != "lora"}
    return "untrained:" + digest({"checkpoint": files.get("model.name_or_path"), "tokenizer": files.get("model.tokenizer"),
                                  "model": model, "seed": int(cfg.seed)})


def context(cfg: Any, ctx: Any, train_files: dict[str, Any]) -> Any:
    """The evaluate stage's context for the untrained model: its fingerprint as the model, no upstream."""
    detail = {**ctx.detail, "files": {**ctx.detail["files"], "model": untrained_fingerprint(cfg, train_files)},
              "upstream": {}}
    return replace(ctx, inputs=digest(detail), detail=detail)


def scorer(cfg: Any) -> Any:
    from xlt.modeling.load import load_model, load_tokenizer  # lazy: start-up time
    from xlt.scoring.mc import MCScorer  # lazy: start-up time

    tokenizer = load_tokenizer(cfg.model)
    model = load_model(cfg.model, tokenizer, seed=int(cfg.seed))
    return MCScorer(model, tokenizer, max_length=cfg.model.max_length, batch_size=cfg.eval.batch_size)


def evaluate(cfg: Any, run: RunDir, ctx: Any, jobs: list[Job], evaluate_job: Any, train_files: dict[str, Any]) -> None:
    """Score ``jobs`` (this shard's) with the untrained model where no current result exists; ``train_files``:
    what the train stage reads (its checkpoint's fingerprint), which the untrained model is."""
    view, bctx = BeforeRun(run.path), context(cfg, ctx, train_files)
    plan_jobs(cfg, view)  # eval_before/<benchmark>/plan.json
    prov = {f"{j.benchmark}/{j.language}": job_provenance(cfg, view, j, bctx) for j in jobs}
    current = {k: p["job"] for k, p in prov.items()}
    todo = jobs if ctx.force else missing_jobs(view, jobs, current, log_damage=True)
    log.info("evaluate before fine-tuning (eval.before_training): %d job(s), %d to do", len(jobs), len(todo))
    if not todo:
        return
    score = scorer(cfg)
    for job in todo:
        res = evaluate_job(cfg, view, job, score, None, prov[f"{job.benchmark}/{job.language}"])
        log.info("%s/%s before fine-tuning: accuracy %.2f%% (n=%d)", job.benchmark, job.language, res["accuracy"], res["n"])


def accuracies(cfg: Any, run: RunDir, ctx: Any, jobs: list[Job], train_files: dict[str, Any]) -> dict[tuple[str, str], float]:
    """``(benchmark, language) -> accuracy`` of the sound, current results of the untrained model (none when
    not asked for); a missing, damaged or stale one is left out (the report shows no number for it)."""
    if not wanted(cfg):
        return {}
    view, bctx = BeforeRun(run.path), context(cfg, ctx, train_files)
    out = {}
    for job in jobs:
        try:
            result = verified_result(view, job)
        except Damaged as err:
            log.warning("%s; the report shows no number before fine-tuning for it (rerun the evaluate stage)", err)
            continue
        if result is None or (result.get("provenance") or {}).get("job") != job_provenance(cfg, view, job, bctx)["job"]:
            continue
        out[(job.benchmark, job.language)] = float(result["accuracy"])
    return out

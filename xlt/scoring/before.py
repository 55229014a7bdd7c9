"""The model before fine-tuning, evaluated beside the trained one (``eval.before_training=true``).

What transfer means is "better than the same model before it saw the English task", not only "better than
chance". With ``eval.before_training`` the evaluate stage also scores every (benchmark, language) job with
the model the train stage starts from: ``model.name_or_path`` with its new weights (the multiple-choice
head, a missing pooler) initialised from ``seed`` exactly as training initialises them
(:func:`xlt.modeling.load.load_model`). Its results live in ``run/eval_before/<benchmark>/`` in the same
layout and format as ``run/eval/`` (the view :meth:`xlt.run.layout.RunDir.before_training`), written by the
same job code (:mod:`xlt.stages.evaluate`) with their own provenance: the job hash holds the untrained
model's fingerprint (:func:`untrained_fingerprint`: checkpoint, model settings, seed) and no upstream stage
(they do not depend on training). The report shows them as a column, ``before_finetuning``, next to each
language's accuracy.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from omegaconf import OmegaConf

from xlt.config.eval import EvalConfig
from xlt.config.model import ModelConfig
from xlt.errors import DataError
from xlt.run.fingerprint import digest
from xlt.run.layout import RunDir
from xlt.scoring import declaration
from xlt.scoring.jobs import EvalJob
from xlt.scoring.results import current_jobs

COLUMN = "before_finetuning"


def wanted(eval_cfg: EvalConfig) -> bool:
    """Whether this evaluation also scores the untrained model: asked for, and a scorer of the run's own model
    (the MC scorer with ``eval.model=run``)."""
    return bool(eval_cfg.get("before_training")) and declaration.scores_run_model(eval_cfg)


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


def accuracies(model: ModelConfig, eval_cfg: EvalConfig, run: RunDir, ctx: Any, jobs: list[EvalJob],
               train_files: dict[str, Any], *, seed: int) -> dict[tuple[str, str], float]:
    """``(benchmark, language) -> accuracy`` of the results of the untrained model (none when not asked for).
    A missing, damaged or stale one is a :class:`DataError` naming it, as for the trained model's results:
    the evaluate stage's check covers ``eval_before/``, so rerunning the stage recomputes exactly those."""
    if not wanted(eval_cfg):
        return {}
    view, bctx = run.before_training(), context(model, seed, ctx, train_files)
    current = current_jobs(jobs, bctx)
    out, problems = {}, []
    for job in jobs:
        problem = job.problem(view, current)
        if problem is not None:
            problems.append(f"{job.result_path(view).relative_to(run.path)} {problem}")
            continue
        out[(job.benchmark, job.language)] = float(job.verified(view)["accuracy"])  # type: ignore[index]
    if problems:
        raise DataError(f"{len(problems)} result(s) of the model before fine-tuning (eval.before_training) missing, "
                        f"damaged or computed for other inputs: {'; '.join(problems[:5])}; rerun the evaluate stage "
                        "(it recomputes exactly those) before the report")
    return out

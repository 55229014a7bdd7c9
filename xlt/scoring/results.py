"""Where a set of evaluation jobs stands in a run directory: which results are missing, damaged or stale.

A job (:class:`xlt.scoring.jobs.EvalJob`) is done when its result is sound (:func:`xlt.run.results.verified_result`)
and was computed under its current job hash (:func:`current_jobs`, from the evaluate stage's context). The
evaluate stage resumes from these, its check lists them, and the report refuses to merge while any is left.
The same functions serve ``eval_before/`` through the view :meth:`xlt.run.layout.RunDir.before_training`.
"""

from __future__ import annotations

import logging
from typing import Any

from xlt.config.eval import EvalConfig
from xlt.run.layout import RunDir
from xlt.run.results import plan_problem
from xlt.run.state import Damaged
from xlt.scoring.jobs import EvalJob, enabled_benchmarks, plan_jobs

log = logging.getLogger("xlt.evaluate")


def current_jobs(jobs: list[EvalJob], ctx: Any) -> dict[str, str]:
    """The job hash each of ``jobs`` would be computed under now (``benchmark/language`` -> hash), given the
    evaluate stage's context as it is now (:func:`xlt.contract.context`, passed in by the stage)."""
    return {j.key: j.provenance(ctx)["job"] for j in jobs}


def stale_translator(run: RunDir, job: EvalJob, now: dict[str, Any] | None) -> bool:
    """Whether a sound translate-test result was translated by another engine / dtype / compute type than
    ``now`` resolves to (an older result without the record counts as the same)."""
    try:
        result = job.verified(run)
    except Damaged:
        return False  # recomputed anyway
    prov = (result or {}).get("provenance")
    ran = prov.get("translator") if isinstance(prov, dict) else None
    return ran is not None and now is not None and ran != now


def missing_jobs(run: RunDir, jobs: list[EvalJob], current: dict[str, str] | None = None,
                 log_damage: bool = False) -> list[EvalJob]:
    """Jobs without a sound result (without a current one, given the ``current`` job hashes); with
    ``log_damage`` each damaged result is logged with the reason it is recomputed."""
    out = []
    for j in jobs:
        problem = j.problem(run, current)
        if problem is None:
            continue
        if log_damage and problem.startswith("damaged"):
            log.warning("%s/%s: result %s; it is recomputed", j.benchmark, j.language, problem)
        out.append(j)
    return out


def missing_message(missing: list[EvalJob] | list[tuple[str, str]], num_shards: int = 1) -> str:
    """What is missing (``missing``: jobs, or (benchmark, language) pairs) and how to finish it."""
    by_bench: dict[str, list[str]] = {}
    for j in missing:
        benchmark, language = (j.benchmark, j.language) if isinstance(j, EvalJob) else j
        by_bench.setdefault(benchmark, []).append(language)
    parts = [f"{b}: {', '.join(langs)}" for b, langs in sorted(by_bench.items())]
    hint = (f" Run the remaining shards (eval.shard_index=0..{num_shards - 1}) or"
            if num_shards > 1 else "")
    return (f"evaluation incomplete: {len(missing)} (benchmark, language) result(s) missing: "
            + "; ".join(parts) + f".{hint} rerun the evaluate stage (it resumes) before the report.")


def check_outputs(eval_cfg: EvalConfig, run: RunDir, ctx: Any) -> list[str]:
    """The evaluate stage's outputs in ``run`` (or its ``eval_before/`` view) that are missing, damaged or
    stale: the plans and every planned result, sound and current (the run's model is checked by the stage's
    guard)."""
    if not any(b.enabled for b in eval_cfg.benchmarks.values()):
        return []  # nothing planned (the config check refuses this before a real evaluation)
    out = []
    for name in enabled_benchmarks(eval_cfg):
        problem = plan_problem(run, name)
        if problem:
            out.append(f"{run.plan(name).relative_to(run.path).as_posix()} {problem}")
    jobs = plan_jobs(eval_cfg)
    current = current_jobs(jobs, ctx)
    for job in jobs:
        problem = job.problem(run, current)
        if problem:
            out.append(f"{job.result_path(run).relative_to(run.path)} {problem}")
    return out


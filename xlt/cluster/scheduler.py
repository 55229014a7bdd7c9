"""What the scheduler reports about this job, and the decisions xlt takes from it, for the callers that
ask without knowing which scheduler runs them: why a ``TERM`` came (:func:`stop_cause`), how often the job was
requeued (:func:`restart_count`), whether it may be requeued once more (:func:`requeue_allowed`) and the states
of many jobs in one question (:func:`job_states`). Each asks the active scheduler
(:func:`xlt.cluster.backend.active_scheduler`: SLURM in :mod:`xlt.cluster.slurm`, Grid Engine in
:mod:`xlt.cluster.gridengine`; docs/schedulers.md).

``python -m xlt.cluster stop-cause`` prints the verdict for a batch shell; the ranks ask :func:`stop_cause`
themselves (xlt.cluster.signals).
"""

from __future__ import annotations

from typing import Any

from xlt.cluster.backend import (
    MAX_REQUEUES,
    MAX_REQUEUES_ENV,
    REQUEUE_EXIT,
    SCHEDULER_TIMEOUT_ENV,
    SCHEDULER_TIMEOUT_S,
    TERMINATED_EXIT,
    StopCause,
    active_scheduler,
    max_requeues,
    scheduler_timeout,
)
from xlt.cluster.backend import job_states as _job_states
from xlt.cluster.slurm import (
    PREEMPT_FRESH_S,
    fill_restart_count,
    fresh_preemption,
    scontrol_job,
    scontrol_restarts,
)

__all__ = ["MAX_REQUEUES", "MAX_REQUEUES_ENV", "PREEMPT_FRESH_S", "REQUEUE_EXIT", "SCHEDULER_TIMEOUT_ENV",
           "SCHEDULER_TIMEOUT_S", "TERMINATED_EXIT", "StopCause", "fill_restart_count", "fresh_preemption",
           "job_states", "max_requeues", "requeue_allowed", "restart_count", "scheduler_timeout", "scontrol_job",
           "scontrol_restarts", "stop_cause"]


def stop_cause(env: Any = None, signal_time: float | None = None) -> StopCause:
    """Why a ``TERM`` reached this job, as its scheduler says (asked once, bounded, after the checkpoint; never
    inside a signal handler). Outside a scheduler, or when it does not answer, a TERM is no preemption."""
    return active_scheduler(env).stop_cause(signal_time)


def restart_count(env: Any = None) -> int | None:
    """How many times this job has been requeued (None outside a scheduler or when it cannot be told)."""
    return active_scheduler(env).restart_count()


def requeue_allowed(env: Any = None) -> tuple[bool, str]:
    """Whether this job may be requeued once more (its restart count below :func:`max_requeues`), and why."""
    return active_scheduler(env).requeue_allowed()


def job_states(jobs: list[str], env: Any = None) -> dict[str, str]:
    """The state of each job of ``jobs`` (SLURM: ``ID`` or ``ARRAYID_TASK``), one question for all: SLURM asks one
    ``squeue -h -r`` and one ``sacct`` for the jobs squeue has forgotten."""
    return _job_states(jobs, env)

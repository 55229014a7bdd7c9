"""The scheduler seam: what xlt asks of a batch scheduler, one :class:`Scheduler` per scheduler (SLURM in
:mod:`xlt.cluster.slurm`, Grid Engine in :mod:`xlt.cluster.gridengine`, :class:`Local` outside any), registered
in ``xlt.registry.SCHEDULERS`` and chosen from the environment by :func:`active_scheduler`. docs/schedulers.md
says how to add one.

A scheduler answers, modelled on submitit's ``JobEnvironment``:

* who this job is (:meth:`Scheduler.identity`: job id, array job and task, restart count, host) and how a user
  names it in the queue (:meth:`Scheduler.job_name`);
* how often it was requeued (:meth:`Scheduler.restart_count`) and whether once more is allowed
  (:meth:`Scheduler.requeue_allowed`: one cap, ``XLT_MAX_REQUEUES``, default :data:`MAX_REQUEUES`);
* why a stop signal came (:meth:`Scheduler.stop_cause`: a preemption or a time limit, which are requeued, or a
  cancellation, which is not);
* the states of many jobs in one question (:meth:`Scheduler.job_states`, for ``xlt status``);
* a requeue, checked (:meth:`Scheduler.requeue`: the batch shell's verdict once its command stopped).

This module is on the path of ``python -m xlt.cluster after-stop``, which runs inside the scheduler's kill
wait: it imports only the standard library's light modules (no Hydra, numpy or torch, no importlib.metadata).
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from xlt.errors import ConfigError

# How many times a job may be requeued (``XLT_MAX_REQUEUES`` overrides): covers the paper sweep (docs/clusters.md:
# a large translate-train-all run, ~700 A100-h on one GPU, is ~60 incarnations of the training array's 12 h time
# limit), with room for preemptions. The one cap: the batch shells ask Python (python -m xlt.cluster after-stop).
MAX_REQUEUES = 100
MAX_REQUEUES_ENV = "XLT_MAX_REQUEUES"
# The exit status of a preempted run: EX_TEMPFAIL ("try again later").
REQUEUE_EXIT = 75
# The exit status of a run stopped by a TERM that was not a preemption (128 + SIGTERM, as a shell reports it).
TERMINATED_EXIT = 143
# How long one question to the scheduler may take (``XLT_SCHEDULER_TIMEOUT_S``): well inside the kill wait
# (SLURM's KillWait, 30 s by default), so that a silent controller leaves time to exit in order.
SCHEDULER_TIMEOUT_S = 5.0
SCHEDULER_TIMEOUT_ENV = "XLT_SCHEDULER_TIMEOUT_S"
# Forces the scheduler (a registered name, e.g. a plug-in's); else it is told from the environment.
SCHEDULER_ENV = "XLT_SCHEDULER"
# The file where the batch shell keeps this job's requeue count (the shell names it, Python reads and writes it).
COUNTER_ENV = "XLT_REQUEUE_COUNTER"


def scheduler_timeout(env: Any = None) -> float:
    """Seconds one question to the scheduler may take (``XLT_SCHEDULER_TIMEOUT_S``, default 5)."""
    value = (os.environ if env is None else env).get(SCHEDULER_TIMEOUT_ENV, "").strip()
    try:
        return float(value) if value else SCHEDULER_TIMEOUT_S
    except ValueError:
        raise ConfigError(f"{SCHEDULER_TIMEOUT_ENV}={value!r}: give seconds, e.g. 5") from None


def max_requeues(env: Any = None) -> int:
    """The cap on a job's requeues: ``XLT_MAX_REQUEUES`` (a non-negative integer), else :data:`MAX_REQUEUES`."""
    value = (os.environ if env is None else env).get(MAX_REQUEUES_ENV, "").strip()
    if not value:
        return MAX_REQUEUES
    if not value.isdigit():
        raise ConfigError(f"{MAX_REQUEUES_ENV}={value!r}: give the most requeues a job may have, a whole number >= 0")
    return int(value)


def read_count(path: str | os.PathLike[str] | None) -> int:
    """The requeue count kept in ``path`` (0 when there is none yet)."""
    if not path or not os.path.exists(path):
        return 0
    digits = "".join(ch for ch in Path(path).read_text() if ch.isdigit())
    return int(digits) if digits else 0


@dataclass(frozen=True)
class StopCause:
    """Why a stop signal reached this job, as the scheduler reports it."""

    kind: str  # "preempted", "time limit", "cancelled", "from within the job", "not under SLURM", "unknown", ...
    preemption: bool  # a stop the scheduler sent to end the job for now: checkpoint, requeue, resume
    requeued_by_scheduler: bool  # the scheduler requeues the job itself: xlt must not requeue it a second time
    why: str  # what the scheduler said

    def describe(self) -> str:
        verdict = "a preemption" if self.preemption else "not a preemption"
        return f"{self.kind}: {verdict} ({self.why})"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class JobIdentity:
    """Who this job is: the scheduler's name, the job id, the array job and task (None outside an array), how
    many times it was requeued, the host it runs on."""

    scheduler: str
    job_id: str
    array_job_id: str | None
    array_task_id: str | None
    restart_count: int
    host: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Verdict:
    """What the batch shell does once its command stopped: ``action`` in ``requeued``, ``requeued-by-slurm``
    (the scheduler's own requeue), ``done``, ``failed``; the status it exits with; the log lines."""

    action: str
    status: int
    lines: tuple[str, ...]


class Scheduler(ABC):
    """One batch scheduler (see the module docstring). ``env``: the environment it reads (``os.environ``)."""

    name: str = ""  # the registry's name attribute (xlt.registry.SCHEDULERS)
    label: str = ""  # for people: "SLURM", "Grid Engine"

    def __init__(self, env: Any = None):
        self.env = os.environ if env is None else env

    @abstractmethod
    def detects(self) -> bool:
        """Whether ``env`` is a job of this scheduler."""

    @abstractmethod
    def identity(self) -> JobIdentity | None:
        """This job (None when this process is not in one of this scheduler's jobs)."""

    def job_name(self) -> str:
        """The job as a user finds it in the scheduler's queue ("local" outside a job)."""
        ident = self.identity()
        return ident.job_id if ident is not None else "local"

    @abstractmethod
    def restart_count(self) -> int | None:
        """How many times this job was requeued (None outside a job, or when it cannot be told)."""

    def requeue_allowed(self) -> tuple[bool, str]:
        """Whether this job may be requeued once more (its restart count below :func:`max_requeues`), and why."""
        cap, count = max_requeues(self.env), self.restart_count()
        if count is None:
            return True, f"restart count unknown (cap {cap} not applied)"
        if count >= cap:
            return False, (f"job requeued {count} time(s) already, the cap ({MAX_REQUEUES_ENV}={cap}): not requeued "
                           "again; resubmit it to resume")
        return True, f"requeue {count + 1} of at most {cap}"

    @abstractmethod
    def stop_cause(self, signal_time: float | None = None) -> StopCause:
        """Why a ``TERM`` reached this job (asked once, bounded, after the checkpoint; never in a handler)."""

    @abstractmethod
    def job_states(self, jobs: list[str]) -> dict[str, str]:
        """The state of each job of ``jobs`` (as :meth:`job_name` names them), in SLURM's words (``RUNNING``,
        ``PENDING``, ``COMPLETED``, ``FAILED``, ``CANCELLED``, ``TIMEOUT``, ...), asked in one question for all;
        a job the scheduler does not know is left out."""

    @abstractmethod
    def requeue(self, status: int, count: int, cap: int, signal_time: float | None, deadline: float,
                lines: list[str], counter_path: str | None = None, say: Any = None) -> Verdict:
        """Requeue this job (requeued ``count`` times so far, below ``cap``) once its command stopped with
        ``status``; checked, within ``deadline`` (``time.monotonic()``); a requeue that happened is counted in
        ``counter_path``. ``lines``: what the verdict says so far; ``say(line)``: log lines as they come."""


class Local(Scheduler):
    """No scheduler: a run on a workstation or a login node. Nothing is requeued."""

    name = "local"
    label = "no scheduler"

    def detects(self) -> bool:
        return True

    def identity(self) -> JobIdentity | None:
        return None

    def restart_count(self) -> int | None:
        return None

    def stop_cause(self, signal_time: float | None = None) -> StopCause:
        return StopCause("not under SLURM", False, False, "not under a scheduler: a launcher, a user or the "
                         "system sent it")

    def job_states(self, jobs: list[str]) -> dict[str, str]:
        return {}

    def requeue(self, status: int, count: int, cap: int, signal_time: float | None, deadline: float,
                lines: list[str], counter_path: str | None = None, say: Any = None) -> Verdict:
        return Verdict("failed", REQUEUE_EXIT, (*lines, "preempted, but not under a scheduler: nothing to requeue; "
                       "rerun the same command to resume from the checkpoint"))


def _builtin(name: str) -> type[Scheduler]:
    """xlt's own scheduler ``name`` (without reading the installed packages' entry points: start-up time)."""
    from xlt.registry import SCHEDULERS, load_reference  # lazy: start-up time

    return load_reference(SCHEDULERS.builtin_reference(name))


# Told from the environment, in this order (the first whose ``detects`` is true); ``XLT_SCHEDULER`` forces one.
DETECTED = ("slurm", "gridengine")


def active_scheduler(env: Any = None) -> Scheduler:
    """The scheduler this process runs under: ``XLT_SCHEDULER`` names one (any registered, a plug-in's
    too), else the first of xlt's own that recognizes the environment (``SLURM_JOB_ID``: SLURM; ``JOB_ID``
    with ``SGE_TASK_ID`` or ``SGE_ROOT``: Grid Engine), else :class:`Local` ("not under a scheduler")."""
    env = os.environ if env is None else env
    forced = env.get(SCHEDULER_ENV, "").strip()
    if forced:
        from xlt.registry import SCHEDULERS  # lazy: start-up time

        return SCHEDULERS.get_entry(forced)(env)
    for name in DETECTED:
        scheduler = _builtin(name)(env)
        if scheduler.detects():
            return scheduler
    return Local(env)


def job_states(jobs: list[str], env: Any = None, scheduler: str | None = None) -> dict[str, str]:
    """The states of ``jobs`` (one question for all) as ``scheduler`` (a registered name: the one the runs'
    records name) reports them; by default the active scheduler's, and outside a job (``xlt status`` on a
    login node) the one whose client is installed here (SLURM's ``squeue`` first, then Grid Engine's ``qstat``)."""
    env = os.environ if env is None else env
    if scheduler:
        chosen = active_scheduler({**env, SCHEDULER_ENV: scheduler})
    else:
        chosen = active_scheduler(env)
        if isinstance(chosen, Local):
            import shutil  # lazy: start-up time

            name = "slurm" if shutil.which("squeue") or not shutil.which("qstat") else "gridengine"
            chosen = _builtin(name)(env)
    return chosen.job_states(jobs)



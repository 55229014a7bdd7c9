"""What the scheduler reports about this job, and the decisions xlt takes from it: why a ``TERM`` came
(:func:`stop_cause`, the one place that tells a preemption from a cancellation), how often the job was requeued
(:func:`restart_count`) and whether it may be requeued once more (:func:`requeue_allowed`).

SLURM signals every process of a job with ``TERM`` when it preempts the job, when the job reaches its time
limit and on ``scancel``; a launcher (torch-elastic, ``accelerate launch``) sends the same ``TERM`` to its
workers when one of them failed. Only the scheduler knows which it was, and ``scontrol show job`` says it while
the job is still completing (measured on SLURM 22.05, docs/preemption.md):

=====================================  ==============================  ===========================
the TERM came from                     ``scontrol show job`` says      xlt
=====================================  ==============================  ===========================
a preemption, ``PreemptMode=REQUEUE``  ``Restarts`` above the count    checkpoint, record, exit 75;
                                       the job started with            SLURM requeues it (xlt not)
a preemption, ``PreemptMode=CANCEL``   ``PreemptTime`` set             the same; xlt requeues it
the time limit                         ``Reason=TimeLimit``            the same; xlt requeues it
``scancel``                            ``COMPLETING``/``CANCELLED``,   stop, exit 143, no requeue
                                       ``Restarts`` unchanged
a launcher stopping its workers        ``JobState=RUNNING``            stop, exit 143, no requeue
=====================================  ==============================  ===========================

``python -m xlt.cluster stop-cause`` prints the verdict for the batch shell (slurm/common.sh asks it after a
``TERM``); the ranks ask :func:`stop_cause` themselves (xlt.cluster.signals).
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
import time
from dataclasses import asdict, dataclass
from typing import Any

from xlt.errors import ConfigError

log = logging.getLogger("xlt.cluster")

# How many times a job may be requeued for a preemption (``XLT_MAX_REQUEUES`` overrides; slurm/common.sh too).
# The most requeues a job may have: covers the paper sweep (docs/clusters.md: a large translate-train-all run,
# ~700 A100-h on one GPU, is ~60 incarnations of the training array's 12 h time limit), with room for preemptions.
MAX_REQUEUES = 100
MAX_REQUEUES_ENV = "XLT_MAX_REQUEUES"
# The exit status of a preempted run: EX_TEMPFAIL ("try again later"); slurm/common.sh requeues on it.
REQUEUE_EXIT = 75
# The exit status of a run stopped by a TERM that was not a preemption (128 + SIGTERM, as a shell reports it).
TERMINATED_EXIT = 143
_FIELD = re.compile(r"(?:^|\s)(\w+)=(\S*)")


# How long one question to the controller may take (``XLT_SCHEDULER_TIMEOUT_S``): well inside KillWait (30 s by
# default), so that a silent controller (overloaded, failing over, rate-limited) leaves time to exit in order.
SCHEDULER_TIMEOUT_S = 5.0
SCHEDULER_TIMEOUT_ENV = "XLT_SCHEDULER_TIMEOUT_S"
# A PreemptTime counts for a stop only when it is this recent at the signal: a gang/SUSPEND preemption leaves
# its PreemptTime set for the rest of the incarnation (SLURM 22.05-24.11, node_scheduler.c _preempt_jobs).
PREEMPT_FRESH_S = 90


def scheduler_timeout(env: Any = None) -> float:
    """Seconds one ``scontrol`` question may take (``XLT_SCHEDULER_TIMEOUT_S``, default 5)."""
    value = (os.environ if env is None else env).get(SCHEDULER_TIMEOUT_ENV, "").strip()
    try:
        return float(value) if value else SCHEDULER_TIMEOUT_S
    except ValueError:
        raise ConfigError(f"{SCHEDULER_TIMEOUT_ENV}={value!r}: give seconds, e.g. 5") from None


def scontrol_job(job_id: str, timeout: float | None = None) -> tuple[dict[str, str] | None, str]:
    """The fields of ``scontrol show job -o <job_id>`` (None when it cannot be had) and why not; the question
    is bounded (:func:`scheduler_timeout`): a silent controller is an answer too ("no answer in 5 s")."""
    timeout = scheduler_timeout() if timeout is None else timeout
    try:
        proc = subprocess.run(["scontrol", "show", "job", "-o", job_id], capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, f"the controller did not answer scontrol show job {job_id} within {timeout:g} s"
    except OSError as err:
        return None, f"scontrol could not be run ({type(err).__name__}: {err})"
    line = proc.stdout.strip().splitlines()[0] if proc.stdout.strip() else ""
    fields = dict(_FIELD.findall(line))
    if proc.returncode != 0 or not fields:
        said = (proc.stderr or proc.stdout).strip().splitlines()
        return None, f"scontrol show job {job_id} said nothing of the job ({said[-1] if said else f'status {proc.returncode}'})"
    return fields, ""


def scontrol_restarts(job_id: str) -> tuple[int | None, str]:
    """``Restarts=N`` of ``scontrol show job <job_id>`` (None when it cannot be had) and why not."""
    fields, why = scontrol_job(job_id)
    if fields is None or not fields.get("Restarts", "").isdigit():
        return None, why or f"scontrol show job {job_id} gave no restart count"
    return int(fields["Restarts"]), ""


def _started_as(env: Any) -> int:
    value = env.get("SLURM_RESTART_COUNT", "").strip()
    return int(value) if value.isdigit() else 0


@dataclass(frozen=True)
class StopCause:
    """Why a ``TERM`` reached this job, as the scheduler reports it."""

    kind: str  # "preempted", "time limit", "cancelled", "from within the job", "not under SLURM", "unknown"
    preemption: bool  # a stop the scheduler sent to end the job for now: checkpoint, requeue, resume
    requeued_by_scheduler: bool  # SLURM requeues the job itself: xlt must not requeue it a second time
    why: str  # what the scheduler said

    def describe(self) -> str:
        verdict = "a preemption" if self.preemption else "not a preemption"
        return f"{self.kind}: {verdict} ({self.why})"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _epoch(stamp: str) -> float | None:
    """A ``scontrol`` time (``2026-12-03T23:25:11``, the controller's local time) as seconds; None for
    ``None``/``Unknown``."""
    try:
        return time.mktime(time.strptime(stamp, "%Y-%m-%dT%H:%M:%S"))
    except ValueError:
        return None


def fresh_preemption(fields: dict[str, str], signal_time: float | None) -> tuple[bool, str]:
    """Whether ``PreemptTime`` is evidence of *this* stop: set, not before this incarnation's ``StartTime``, and
    (when the signal's time is known) at most :data:`PREEMPT_FRESH_S` before it. A PreemptTime left by a
    gang/SUSPEND preemption earlier in the incarnation is stale."""
    stamp = fields.get("PreemptTime", "None")
    preempted = _epoch(stamp)
    if preempted is None:
        return False, ""
    started = _epoch(fields.get("StartTime", ""))
    if started is not None and preempted < started:
        return False, f"PreemptTime={stamp} is before this incarnation's StartTime={fields.get('StartTime')}"
    if signal_time is not None and preempted < signal_time - PREEMPT_FRESH_S:
        return False, (f"PreemptTime={stamp} is {signal_time - preempted:.0f} s before the signal (an earlier "
                       "preemption, e.g. a suspension): stale")
    return True, f"PreemptTime={stamp}"


def stop_cause(env: Any = None, signal_time: float | None = None) -> StopCause:
    """Why a ``TERM`` reached this SLURM job (see the module docstring): asked once of ``scontrol show job``
    (bounded: :func:`scheduler_timeout`) after the checkpoint, never inside a signal handler. ``signal_time``:
    when the TERM came (a PreemptTime much older is another stop's). Outside SLURM, or when the scheduler
    does not answer, a TERM is no preemption (the safe default: the checkpoint is kept, the job is not
    requeued, the log says to resubmit)."""
    env = os.environ if env is None else env
    job = env.get("SLURM_JOB_ID")
    if not job:
        return StopCause("not under SLURM", False, False, "no SLURM job: a launcher, a user or the system sent it")
    fields, why = scontrol_job(job)
    if fields is None:
        return StopCause("unknown", False, False, f"{why}; taken for a termination: the checkpoint is kept, the "
                         "job is not requeued; resubmit it to resume")
    started, state, reason = _started_as(env), fields.get("JobState", ""), fields.get("Reason", "")
    restarts = int(fields["Restarts"]) if fields.get("Restarts", "").isdigit() else started
    said = f"scontrol: job {job} JobState={state} Reason={reason} Restarts={restarts}"
    if restarts > started:
        return StopCause("preempted", True, True, f"{said}, the job started as restart {started}: SLURM requeued "
                         "it (a preemption with PreemptMode=REQUEUE, or scontrol requeue)")
    fresh, evidence = fresh_preemption(fields, signal_time)
    if state == "PREEMPTED" or fresh:
        return StopCause("preempted", True, False, f"{said} {evidence or 'PREEMPTED'}: preempted, not requeued by "
                         "SLURM (yet): PreemptMode=CANCEL, or a GraceTime still running")
    if evidence:
        said = f"{said} ({evidence})"
    if state == "TIMEOUT" or reason == "TimeLimit":
        return StopCause("time limit", True, False, f"{said}: the job reached its time limit")
    if state == "RUNNING":
        return StopCause("from within the job", False, False, f"{said}: the scheduler did not stop the job (a "
                         "launcher stopping its workers after another worker failed, or a launcher that died)")
    if state in ("COMPLETING", "CANCELLED"):
        return StopCause("cancelled", False, False, f"{said}: the job was cancelled (scancel), not preempted")
    return StopCause("unknown", False, False, f"{said}; taken for a termination")


def restart_count(env: Any = None) -> int | None:
    """How many times this SLURM job has been requeued: ``SLURM_RESTART_COUNT`` (SLURM sets it from the
    first requeue on; 0 without it before), else ``scontrol show job``'s ``Restarts`` when the variable did not
    reach this process; None outside SLURM or when it cannot be told."""
    env = os.environ if env is None else env
    job = env.get("SLURM_JOB_ID")
    if not job:
        return None
    if env.get("SLURM_RESTART_COUNT", "").strip().isdigit():
        return int(env["SLURM_RESTART_COUNT"])
    return scontrol_restarts(job)[0]


def fill_restart_count() -> None:
    """A SLURM step or container without ``SLURM_RESTART_COUNT`` (``srun --export=NONE``, a container that
    passes only some variables): set it from ``scontrol show job`` (``Restarts``), so that the run lock tells a
    requeue of this job from its earlier incarnation. Without scontrol, say what cannot be told."""
    job = os.environ.get("SLURM_JOB_ID")
    if not job or os.environ.get("SLURM_RESTART_COUNT", "").strip():
        return
    count, why = scontrol_restarts(job)
    if count is not None:
        os.environ["SLURM_RESTART_COUNT"] = str(count)
        log.info("SLURM_RESTART_COUNT did not reach this process; scontrol says job %s was requeued %d time(s)",
                 job, count)
        return
    log.warning(
        "SLURM job %s: SLURM_RESTART_COUNT did not reach this process and %s. This run counts as the job's first "
        "incarnation: a lock that an earlier incarnation left on another host is taken over only when its lease "
        "expires. Pass the variable into the step or container (srun --export=ALL, or e.g. apptainer --env "
        "SLURM_RESTART_COUNT=$SLURM_RESTART_COUNT).", job, why)


def max_requeues(env: Any = None) -> int:
    """The cap on a job's requeues: ``XLT_MAX_REQUEUES`` (a non-negative integer), else :data:`MAX_REQUEUES`."""
    value = (os.environ if env is None else env).get(MAX_REQUEUES_ENV, "").strip()
    if not value:
        return MAX_REQUEUES
    if not value.isdigit():
        raise ConfigError(f"{MAX_REQUEUES_ENV}={value!r}: give the most requeues a job may have, a whole number >= 0")
    return int(value)


def requeue_allowed(env: Any = None) -> tuple[bool, str]:
    """Whether this job may be requeued once more (its restart count below :func:`max_requeues`), and why."""
    cap, count = max_requeues(env), restart_count(env)
    if count is None:
        return True, f"restart count unknown (cap {cap} not applied)"
    if count >= cap:
        return False, (f"job requeued {count} time(s) already, the cap ({MAX_REQUEUES_ENV}={cap}): not requeued "
                       "again; resubmit it to resume")
    return True, f"requeue {count + 1} of at most {cap}"



def _job_lines(command: list[str], timeout: float) -> list[str]:
    """The output lines of one scheduler query ([] where the command is missing, silent or refuses: a list
    of jobs of which some are unknown still prints the known ones, whatever its exit status)."""
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [line.strip() for line in proc.stdout.splitlines() if line.strip()]


def job_states(jobs: list[str]) -> dict[str, str]:
    """What SLURM says of each job now, asked once for all of them: ``{job: "STATE"}`` or ``"STATE (reason)"``
    (``RUNNING``, ``PENDING (BeginTime)``, ``COMPLETED``, ``CANCELLED``, ...). A job is ``<id>``, or
    ``<array id>_<task>`` for an array element (``-j ID`` alone would match every element of the array).

    One ``squeue -h -r -o "%i %T %r" -j JOBS`` for the jobs the controller still holds (``-r``: one line per
    array element, named ``ARRAYID_TASK``), then one ``sacct -n -X -P -o JobID,State -j REST`` for those squeue
    no longer lists (finished, cancelled; the accounting's last record of each). A job neither knows is left
    out; without SLURM's commands the answer is ``{}``. Each question is bounded (:func:`scheduler_timeout`)."""
    wanted = list(dict.fromkeys(j for j in jobs if j))
    if not wanted:
        return {}
    timeout = scheduler_timeout()
    out: dict[str, str] = {}
    for line in _job_lines(["squeue", "-h", "-r", "-o", "%i %T %r", "-j", ",".join(wanted)], timeout):
        job, _, rest = line.partition(" ")
        state, _, reason = rest.strip().partition(" ")
        if job in wanted and state:
            reason = reason.strip()
            out[job] = f"{state} ({reason})" if reason and reason not in ("None", "(null)") else state
    rest_jobs = [j for j in wanted if j not in out]
    if rest_jobs:
        for line in _job_lines(["sacct", "-n", "-X", "-P", "-o", "JobID,State", "-j", ",".join(rest_jobs)], timeout):
            job, _, state = line.partition("|")
            if job in rest_jobs and state.strip():
                out[job] = state.split()[0]  # "CANCELLED by 1000": the state; the last record of a job wins
    return out

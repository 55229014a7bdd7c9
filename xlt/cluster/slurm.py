"""SLURM, one :class:`~xlt.cluster.backend.Scheduler`: who the job is (``SLURM_*`` variables), why a ``TERM``
came, its restart count, the states of many jobs (one ``squeue``, one ``sacct`` for the finished), and a
checked ``scontrol requeue``.

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

The requeue (:meth:`Slurm.requeue`): before it the job's state is asked once (bounded): a job cancelled
meanwhile (``scancel`` during the warning's grace) is not requeued, so a scancel is never undone; a job SLURM
has requeued itself (``Restarts`` above the count it started with) is not requeued a second time. ``scontrol
requeue`` is checked: its exit status, then ``Restarts`` really above the count before; retried within the time
left (``XLT_REQUEUE_WAIT_S``, default 20 s: inside KillWait), except when SLURM refuses it for good
(``--no-requeue``, ``JobRequeue=0``, a job_submit plugin: "Requested operation is presently disabled"); only a
requeue that happened is counted. When the controller stays silent, or refuses, the job ends failed (exit 75,
so ``afterok`` dependents do not start on unfinished work) with the log line saying that the checkpoint is kept
and to resubmit.
"""

from __future__ import annotations

import logging
import os
import re
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

from xlt.cluster.backend import (
    REQUEUE_EXIT,
    TERMINATED_EXIT,
    JobIdentity,
    Scheduler,
    StopCause,
    Verdict,
    scheduler_timeout,
)

log = logging.getLogger("xlt.cluster")

_FIELD = re.compile(r"(?:^|\s)(\w+)=(\S*)")
# A PreemptTime counts for a stop only when it is this recent at the signal: a gang/SUSPEND preemption leaves
# its PreemptTime set for the rest of the incarnation (SLURM 22.05-24.11, node_scheduler.c _preempt_jobs).
PREEMPT_FRESH_S = 90
# scontrol's words when the controller refuses a requeue for good (ESLURM_DISABLED, ESLURM_BATCH_ONLY, ...).
_REFUSED_FOR_GOOD = ("presently disabled", "only batch jobs", "Invalid job id", "Permission denied",
                     "Access/permission denied")
# The variables SLURM sets for a job, as the lock and the records keep them ("slurm": {"job_id": ...}).
SLURM_KEYS = ("SLURM_JOB_ID", "SLURM_ARRAY_JOB_ID", "SLURM_ARRAY_TASK_ID", "SLURM_RESTART_COUNT")


def scontrol_job(job_id: str, timeout: float | None = None) -> tuple[dict[str, str] | None, str]:
    """The fields of ``scontrol show job -o <job_id>`` (None when it cannot be had) and why not; the question
    is bounded (:func:`~xlt.cluster.backend.scheduler_timeout`): a silent controller is an answer too."""
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


def slurm_stop_cause(env: Any, signal_time: float | None = None) -> StopCause:
    """Why a ``TERM`` reached this SLURM job (see the module docstring): asked once of ``scontrol show job``
    (bounded) after the checkpoint, never inside a signal handler. ``signal_time``: when the TERM came (a
    PreemptTime much older is another stop's). Outside SLURM, or when the scheduler does not answer, a TERM is
    no preemption (the safe default: the checkpoint is kept, the job is not requeued, the log says to
    resubmit)."""
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


def requeue_checked(job: str, before: int, deadline: float, sleep: float = 1.0) -> tuple[bool, str]:
    """``scontrol requeue <job>``, then ``Restarts`` above ``before``; retried until ``deadline``
    (``time.monotonic()``) unless refused for good. (True, how) or (False, why not)."""
    why = "not tried"
    while True:
        left = deadline - time.monotonic()
        try:
            proc = subprocess.run(["scontrol", "requeue", job], capture_output=True, text=True,
                                  timeout=max(1.0, min(scheduler_timeout(), left)))
            said = (proc.stderr or proc.stdout).strip().splitlines()
            why = f"scontrol requeue {job}: status {proc.returncode}" + (f" ({said[-1]})" if said else "")
            refused = proc.returncode != 0 and any(w.lower() in " ".join(said).lower() for w in _REFUSED_FOR_GOOD)
        except subprocess.TimeoutExpired:
            why, refused = f"the controller did not answer scontrol requeue {job} in time", False
        except OSError as err:
            why, refused = f"scontrol could not be run ({err})", True
        fields, asked = scontrol_job(job, max(1.0, min(scheduler_timeout(), deadline - time.monotonic())))
        restarts = fields.get("Restarts", "") if fields else ""
        if restarts.isdigit() and int(restarts) > before:
            return True, f"{why}; scontrol: JobState={fields.get('JobState')} Restarts={restarts}"
        if fields is None:
            why = f"{why}; {asked}"
        elif not refused:
            why = f"{why}; but Restarts={restarts or '?'} (not above {before}): not requeued"
        if refused or time.monotonic() + sleep >= deadline:
            return False, why
        time.sleep(sleep)


def _run(cmd: list[str], timeout: float) -> tuple[str, str]:
    """stdout of ``cmd`` ("" when it fails) and why it failed ("" when it did not)."""
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "", f"{cmd[0]} did not answer within {timeout:g} s"
    except OSError as err:
        return "", f"{cmd[0]} could not be run ({err})"
    if proc.returncode != 0:
        said = (proc.stderr or proc.stdout).strip().splitlines()
        return proc.stdout, f"{cmd[0]}: status {proc.returncode}" + (f" ({said[-1]})" if said else "")
    return proc.stdout, ""


def by_slurm(job: str, lines: list[str] | tuple[str, ...], evidence: str) -> Verdict:
    """SLURM requeued the job itself (a preemption with PreemptMode=REQUEUE, or an admin's requeue): never twice."""
    return Verdict("requeued-by-slurm", REQUEUE_EXIT, (*lines, f"preempted: job {job} is requeued by SLURM itself "
                   f"and resumes from its checkpoint ({evidence}); not requeued a second time"))


def capped(job: str, count: int, cap: int) -> str:
    return (f"preempted, but job {job} was requeued {count} time(s) already, the cap (XLT_MAX_REQUEUES={cap}): not "
            "requeued again; the job ends failed. Resubmit it to resume from its last checkpoint.")


class Slurm(Scheduler):
    """SLURM (see the module docstring)."""

    name = "slurm"
    label = "SLURM"

    def detects(self) -> bool:
        return bool(self.env.get("SLURM_JOB_ID"))

    def identity(self) -> JobIdentity | None:
        job = self.env.get("SLURM_JOB_ID")
        if not job:
            return None
        return JobIdentity("slurm", job, self.env.get("SLURM_ARRAY_JOB_ID") or None,
                           self.env.get("SLURM_ARRAY_TASK_ID") or None, _started_as(self.env), socket.gethostname())

    def record(self) -> dict[str, str] | None:
        """The job as the lock and the records keep it (their ``"slurm"`` field, unchanged since it was
        written first: old run directories read the same); the restart count is "0" before the first requeue
        (SLURM sets ``SLURM_RESTART_COUNT`` only from then on)."""
        if not self.env.get("SLURM_JOB_ID"):
            return None
        out = {k.lower().removeprefix("slurm_"): self.env[k] for k in SLURM_KEYS if self.env.get(k)}
        out.setdefault("restart_count", "0")
        return out

    def job_name(self) -> str:
        """The job as a user finds it in squeue (array elements as ``ARRAYJOB_INDEX``)."""
        if self.env.get("SLURM_ARRAY_JOB_ID"):
            return f"{self.env['SLURM_ARRAY_JOB_ID']}_{self.env.get('SLURM_ARRAY_TASK_ID', '')}"
        return self.env.get("SLURM_JOB_ID", "local")

    def restart_count(self) -> int | None:
        """``SLURM_RESTART_COUNT`` (SLURM sets it from the first requeue on; 0 without it before), else
        ``scontrol show job``'s ``Restarts`` when the variable did not reach this process; None outside SLURM."""
        job = self.env.get("SLURM_JOB_ID")
        if not job:
            return None
        if self.env.get("SLURM_RESTART_COUNT", "").strip().isdigit():
            return int(self.env["SLURM_RESTART_COUNT"])
        return scontrol_restarts(job)[0]

    def stop_cause(self, signal_time: float | None = None) -> StopCause:
        return slurm_stop_cause(self.env, signal_time)

    def job_states(self, jobs: list[str]) -> dict[str, str]:
        """One ``squeue -h -r`` for every job (array elements as ``ARRAYID_TASK``: ``-j ID`` alone would also
        match the whole array), then one ``sacct`` for those squeue has forgotten (finished)."""
        wanted = [j for j in dict.fromkeys(jobs) if j]
        if not wanted:
            return {}
        timeout = scheduler_timeout(self.env)
        out: dict[str, str] = {}
        text, _ = _run(["squeue", "-h", "-r", "-o", "%i %T %r", "-j", ",".join(wanted)], timeout)
        for line in text.splitlines():  # "STATE (reason)" where squeue gives one: PENDING (BeginTime)
            job, _, rest = line.strip().partition(" ")
            state, _, reason = rest.strip().partition(" ")
            if job in wanted and state:
                reason = reason.strip()
                out[job] = f"{state} ({reason})" if reason and reason not in ("None", "(null)") else state
        left = [j for j in wanted if j not in out]
        if left:
            text, _ = _run(["sacct", "-n", "-X", "-P", "-o", "JobID,State", "-j", ",".join(left)], timeout)
            for line in text.splitlines():
                job, _, state = line.partition("|")
                if job in left and state:
                    out[job] = state.split()[0]
        return out

    def requeue(self, status: int, count: int, cap: int, signal_time: float | None, deadline: float,
                lines: list[str], counter_path: str | None = None, say: Any = None) -> Verdict:
        """The job's state first (a scancel meanwhile is never undone; SLURM's own requeue not doubled), then
        ``scontrol requeue``, checked (see the module docstring)."""
        job, started = self.env.get("SLURM_JOB_ID", ""), _started_as(self.env)
        fields, why = scontrol_job(job)
        while fields is None and time.monotonic() + 1 < deadline:
            time.sleep(1)
            fields, why = scontrol_job(job, max(1.0, min(scheduler_timeout(), deadline - time.monotonic())))
        kept = (f"The checkpoint is kept: resubmit the same command to resume (sbatch ... the same arguments); "
                f"job {job} ends failed (exit {REQUEUE_EXIT}) so that no afterok dependent starts on unfinished work.")
        if fields is None:
            wait_s = self.env.get("XLT_REQUEUE_WAIT_S", "") or "20"
            return Verdict("failed", REQUEUE_EXIT, (*lines, f"preempted, but {why} (asked for {float(wait_s):g} s): "
                           f"not requeued. {kept}"))
        restarts = int(fields["Restarts"]) if fields.get("Restarts", "").isdigit() else started
        state, reason = fields.get("JobState", ""), fields.get("Reason", "")
        if restarts > started:
            return by_slurm(job, lines, f"Restarts={restarts}, started as {started}")
        fresh, _ = fresh_preemption(fields, signal_time)
        if state in ("COMPLETING", "CANCELLED") and not fresh and reason != "TimeLimit":
            return Verdict("failed", TERMINATED_EXIT, (*lines, f"job {job} was cancelled while it stopped (scontrol: "
                           f"JobState={state} Reason={reason}): not requeued (a scancel is never undone)"))
        count = max(restarts, count)
        if count >= cap:
            return Verdict("failed", REQUEUE_EXIT, (*lines, capped(job, count, cap)))
        if say is not None:
            for line in lines:
                say(line)
            lines = []
            say(f"requeueing job {job} (requeue {count + 1} of at most {cap}; exit status of the command: {status})")
        ok, how = requeue_checked(job, restarts, deadline)
        if not ok:
            return Verdict("failed", REQUEUE_EXIT, (*lines, f"preempted, but the requeue of job {job} did not happen: "
                           f"{how}. {kept}"))
        if counter_path:
            Path(counter_path).write_text(f"{count + 1}\n")
        return Verdict("requeued", 0, (*lines, f"requeued job {job} (requeue {count + 1} of at most {cap}): {how}"))

"""What a batch shell does once its command has stopped (``python -m xlt.cluster after-stop``, read by
slurm/common.sh): requeue the job, leave it to SLURM, or end it, from the evidence of *this* stop, and a
requeue that is checked.

The shell passes what it saw (the command's exit status, whether the scheduler's USR1 or a preemption's grace
reached it, whether a TERM reached the batch shell itself, when) and the record rank 0 left (the scheduler's
answer, when a rank asked it). Then:

* a stop that is no preemption (scancel, a crash, a launcher stopping its workers) is never requeued;
* before a requeue the job's state is asked once (bounded): a job cancelled meanwhile (``scancel`` during the
  warning's grace) is not requeued, so a scancel is never undone; a job SLURM has requeued itself
  (``Restarts`` above the count it started with) is not requeued a second time;
* ``scontrol requeue`` is checked: its exit status, then ``Restarts`` really above the count before; retried
  within the time left (``XLT_REQUEUE_WAIT_S``, default 20 s: inside KillWait), except when SLURM refuses it
  for good (``--no-requeue``, ``JobRequeue=0``, a job_submit plugin: "Requested operation is presently
  disabled"); only a requeue that happened is counted;
* when the controller stays silent, or refuses, the job ends failed (exit 75, so ``afterok`` dependents do
  not start on unfinished work) with the log line saying that the checkpoint is kept and to resubmit.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xlt.cluster.scheduler import (
    REQUEUE_EXIT,
    TERMINATED_EXIT,
    fresh_preemption,
    max_requeues,
    scheduler_timeout,
    scontrol_job,
    stop_cause,
)

REQUEUE_WAIT_S = 20.0
REQUEUE_WAIT_ENV = "XLT_REQUEUE_WAIT_S"
# scontrol's words when the controller refuses a requeue for good (ESLURM_DISABLED, ESLURM_BATCH_ONLY, ...).
_REFUSED_FOR_GOOD = ("presently disabled", "only batch jobs", "Invalid job id", "Permission denied",
                     "Access/permission denied")


@dataclass(frozen=True)
class Verdict:
    """What the batch shell does: ``action`` in ``requeued``, ``requeued-by-slurm``, ``done``, ``failed``; the
    status it returns; the log lines."""

    action: str
    status: int
    lines: tuple[str, ...]


def _read_record(path: str | None) -> dict[str, Any] | None:
    if not path or not os.path.exists(path):
        return None
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return {"preempted": True, "cause": "a record that could not be read (a preemption: rank 0 writes it "
                "only once the checkpoint is complete)"}
    return data if isinstance(data, dict) else None


def _count_file(path: str | None) -> int:
    if not path or not os.path.exists(path):
        return 0
    digits = "".join(ch for ch in Path(path).read_text() if ch.isdigit())
    return int(digits) if digits else 0


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


def after_stop(env: Any, status: int, usr1: bool, term: bool, signal_time: float | None, record_path: str | None,
               counter_path: str | None, say: Any = None) -> Verdict:
    """The verdict for the batch shell (see the module docstring). ``say(line)``: log lines as they come (SLURM
    TERMs the batch shell as soon as it accepts the requeue)."""
    job = env.get("SLURM_JOB_ID", "")
    started = int(env.get("SLURM_RESTART_COUNT", "0") or 0) if env.get("SLURM_RESTART_COUNT", "0").isdigit() else 0
    wait_s = float(env.get(REQUEUE_WAIT_ENV, "") or REQUEUE_WAIT_S)
    deadline = time.monotonic() + wait_s
    record = _read_record(record_path)
    lines: list[str] = []
    if record is not None:
        lines.append(f"preemption record {record_path}: {json.dumps(record)[:300]}")
    if record and record.get("requeued_by_scheduler"):
        lines.append(f"why the TERM came: {record.get('cause')}")
        return _by_slurm(job, lines, f"exit status {status}")
    wants = usr1 or bool(record and record.get("preempted")) or (status == REQUEUE_EXIT and not term)
    if record is not None and not record.get("preempted") and not usr1 and record.get("asked_scheduler", True):
        wants = False  # rank 0 had the scheduler's answer: no preemption
        lines.append(f"why the TERM came: {record.get('cause')}")
    elif term and not wants and job:
        cause = stop_cause(env, signal_time=signal_time)  # the one question, bounded
        lines.append(f"why the TERM came: {cause.describe()}")
        if cause.requeued_by_scheduler:
            return _by_slurm(job, lines, f"exit status {status}")
        wants = cause.preemption
    if not wants or not job:
        if status == 0:
            return Verdict("done", 0, tuple(lines))
        why = "not a preemption" if term or record is not None else "no preemption was sent to it"
        return Verdict("failed", status, (*lines, f"job {job_name(env)} stopped (exit status {status}): {why}; not "
                       "requeued" + ("" if term or record is not None else "; the error is above")))
    # A requeue: the cap first (what is known without the controller), then the job's state (a scancel
    # meanwhile is never undone; SLURM's own requeue not doubled), then the checked requeue.
    cap = max_requeues(env)
    count = max(started, _count_file(counter_path))
    if count >= cap:
        return Verdict("failed", REQUEUE_EXIT, (*lines, _capped(job, count, cap)))
    fields, why = scontrol_job(job)
    while fields is None and time.monotonic() + 1 < deadline:
        time.sleep(1)
        fields, why = scontrol_job(job, max(1.0, min(scheduler_timeout(), deadline - time.monotonic())))
    kept = (f"The checkpoint is kept: resubmit the same command to resume (sbatch ... the same arguments); "
            f"job {job} ends failed (exit {REQUEUE_EXIT}) so that no afterok dependent starts on unfinished work.")
    if fields is None:
        return Verdict("failed", REQUEUE_EXIT, (*lines, f"preempted, but {why} (asked for {wait_s:g} s): not "
                       f"requeued. {kept}"))
    restarts = int(fields["Restarts"]) if fields.get("Restarts", "").isdigit() else started
    state, reason = fields.get("JobState", ""), fields.get("Reason", "")
    if restarts > started:
        return _by_slurm(job, lines, f"Restarts={restarts}, started as {started}")
    fresh, _ = fresh_preemption(fields, signal_time)
    if state in ("COMPLETING", "CANCELLED") and not fresh and reason != "TimeLimit":
        return Verdict("failed", TERMINATED_EXIT, (*lines, f"job {job} was cancelled while it stopped (scontrol: "
                       f"JobState={state} Reason={reason}): not requeued (a scancel is never undone)"))
    count = max(restarts, count)
    if count >= cap:
        return Verdict("failed", REQUEUE_EXIT, (*lines, _capped(job, count, cap)))
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


def _by_slurm(job: str, lines: list[str], evidence: str) -> Verdict:
    """SLURM requeued the job itself (a preemption with PreemptMode=REQUEUE, or an admin's requeue): never twice."""
    return Verdict("requeued-by-slurm", REQUEUE_EXIT, (*lines, f"preempted: job {job} is requeued by SLURM itself "
                   f"and resumes from its checkpoint ({evidence}); not requeued a second time"))


def _capped(job: str, count: int, cap: int) -> str:
    return (f"preempted, but job {job} was requeued {count} time(s) already, the cap (XLT_MAX_REQUEUES={cap}): not "
            "requeued again; the job ends failed. Resubmit it to resume from its last checkpoint.")


def job_name(env: Any) -> str:
    """The job as a user finds it in squeue (array elements as ``ARRAYJOB_INDEX``)."""
    if env.get("SLURM_ARRAY_JOB_ID"):
        return f"{env['SLURM_ARRAY_JOB_ID']}_{env.get('SLURM_ARRAY_TASK_ID', '')}"
    return env.get("SLURM_JOB_ID", "local")


def main(args: list[str]) -> int:
    """``after-stop STATUS USR1 TERM SIGNAL_TIME RECORD COUNTER``: prints the action word on stdout, the log
    lines on stderr; returns the status the batch shell returns."""
    status, usr1, term, signal_time, record, counter = args

    def say(line: str) -> None:
        print(f"[xlt {time.strftime('%Y-%m-%d %H:%M:%S')}] {line}", file=sys.stderr, flush=True)

    verdict = after_stop(os.environ, int(status), usr1 == "1", term == "1",
                         float(signal_time) if signal_time not in ("", "0") else None, record or None, counter or None,
                         say)
    for line in verdict.lines:
        say(line)
    print(verdict.action, flush=True)
    return verdict.status

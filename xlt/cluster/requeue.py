"""What a batch shell does once its command has stopped (``python -m xlt.cluster after-stop``, read by
shell/forward.sh for every scheduler): requeue the job, leave it to the scheduler, or end it, from the evidence
of *this* stop, and a requeue that is checked. Python decides; the shell forwards signals and exits with the
status of the one verdict line it reads (``ACTION STATUS``).

The shell passes what it saw (the command's exit status, whether the scheduler's USR1 or a preemption's grace
reached it, whether a TERM reached the batch shell itself, when) and the record rank 0 left (the scheduler's
answer, when a rank asked it). Then:

* a command that ended without any stop (no signal, no record) returns its own status: 0 is ``done``, any
  other ``failed`` (a crash is never requeued);
* a stop that is no preemption (a cancellation, a crash, a launcher stopping its workers) is never requeued;
* a preemption or a time limit is requeued by the active scheduler (:mod:`xlt.cluster.backend`:
  :meth:`~xlt.cluster.backend.Scheduler.requeue`, checked; SLURM: xlt.cluster.slurm, Grid Engine:
  xlt.cluster.gridengine), below the one cap (``XLT_MAX_REQUEUES``, :func:`~xlt.cluster.backend.max_requeues`);
* when the scheduler stays silent, or refuses, the job ends failed (exit 75, so dependents do not start on
  unfinished work) with the log line saying that the checkpoint is kept and to resubmit.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from xlt.cluster.backend import REQUEUE_EXIT, Verdict, active_scheduler, max_requeues, read_count
from xlt.cluster.slurm import by_slurm, capped

REQUEUE_WAIT_S = 20.0
REQUEUE_WAIT_ENV = "XLT_REQUEUE_WAIT_S"

__all__ = ["REQUEUE_WAIT_S", "Verdict", "after_stop", "job_name", "main"]


def _read_record(path: str | None) -> dict[str, Any] | None:
    if not path or not os.path.exists(path):
        return None
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return {"preempted": True, "cause": "a record that could not be read (a preemption: rank 0 writes it "
                "only once the checkpoint is complete)"}
    return data if isinstance(data, dict) else None


def after_stop(env: Any, status: int, usr1: bool, term: bool, signal_time: float | None, record_path: str | None,
               counter_path: str | None, say: Any = None) -> Verdict:
    """The verdict for the batch shell (see the module docstring). ``say(line)``: log lines as they come (SLURM
    TERMs the batch shell as soon as it accepts the requeue)."""
    scheduler = active_scheduler(env)
    ident = scheduler.identity()
    job = ident.job_id if ident is not None else ""
    started = ident.restart_count if ident is not None else 0
    wait_s = float(env.get(REQUEUE_WAIT_ENV, "") or REQUEUE_WAIT_S)
    deadline = time.monotonic() + wait_s
    record = _read_record(record_path)
    lines: list[str] = []
    if record is not None:
        lines.append(f"preemption record {record_path}: {json.dumps(record)[:300]}")
    if record and record.get("requeued_by_scheduler"):
        lines.append(f"why the TERM came: {record.get('cause')}")
        return by_slurm(job, lines, f"exit status {status}")
    if not usr1 and not term and record is None and status != REQUEUE_EXIT:
        # No stop reached the job: the command's own status (a crash is never requeued).
        if status == 0:
            return Verdict("done", 0, ())
        return Verdict("failed", status, (f"job {scheduler.job_name()} failed (exit status {status}) and no "
                                          "preemption was sent to it: not requeued; the error is above",))
    wants = usr1 or bool(record and record.get("preempted")) or (status == REQUEUE_EXIT and not term)
    if record is not None and not record.get("preempted") and not usr1 and record.get("asked_scheduler", True):
        wants = False  # rank 0 had the scheduler's answer: no preemption
        lines.append(f"why the TERM came: {record.get('cause')}")
    elif term and not wants and job:
        cause = scheduler.stop_cause(signal_time)  # the one question, bounded
        lines.append(f"why the TERM came: {cause.describe()}")
        if cause.requeued_by_scheduler:
            return by_slurm(job, lines, f"exit status {status}")
        wants = cause.preemption
    if not wants or not job:
        if status == 0:
            return Verdict("done", 0, tuple(lines))
        why = "not a preemption" if term or record is not None else "no preemption was sent to it"
        return Verdict("failed", status, (*lines, f"job {scheduler.job_name()} stopped (exit status {status}): "
                       f"{why}; not requeued" + ("" if term or record is not None else "; the error is above")))
    # A requeue: the cap first (what is known without the scheduler), then the scheduler's checked requeue.
    cap = max_requeues(env)
    count = max(started, read_count(counter_path))
    if count >= cap:
        return Verdict("failed", REQUEUE_EXIT, (*lines, capped(job, count, cap)))
    return scheduler.requeue(status, count, cap, signal_time, deadline, lines, counter_path, say)


def job_name(env: Any) -> str:
    """The job as a user finds it in its scheduler's queue ("local" outside a job)."""
    return active_scheduler(env).job_name()


def main(args: list[str]) -> int:
    """``after-stop STATUS USR1 TERM SIGNAL_TIME RECORD COUNTER``: prints the one verdict line ``ACTION STATUS``
    on stdout, the log lines on stderr; returns the status too (the batch shell exits with the line's)."""
    status, usr1, term, signal_time, record, counter = args

    def say(line: str) -> None:
        print(f"[xlt {time.strftime('%Y-%m-%d %H:%M:%S')}] {line}", file=sys.stderr, flush=True)

    verdict = after_stop(os.environ, int(status), usr1 == "1", term == "1",
                         float(signal_time) if signal_time not in ("", "0") else None, record or None, counter or None,
                         say)
    for line in verdict.lines:
        say(line)
    print(f"{verdict.action} {verdict.status}", flush=True)
    return verdict.status

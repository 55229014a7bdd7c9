"""Grid Engine (Son of Grid Engine 8.1.9, Debian's ``gridengine-*``), one
:class:`~xlt.cluster.backend.Scheduler`; gridengine/common.sh is its batch shell (docs/schedulers.md).

What Grid Engine gives a job, and what xlt takes from it (measured on these machines, tests/cluster/
test_real_gridengine.py):

* who the job is: ``JOB_ID``, ``SGE_TASK_ID`` (``undefined`` outside an array), ``HOSTNAME``; ``RESTARTED`` is
  only 0 or 1 (whether this run is a rerun), so the requeue count is kept in the file the batch shell names
  (``XLT_REQUEUE_COUNTER``), written by Python at each requeue;
* the time-limit warning: ``-l s_rt=T`` sends ``SIGUSR1`` to every process of the job at T (``h_rt`` then kills
  it): the checkpoint and a requeue, as SLURM's ``--signal=B:USR1@N``;
* the requeue: the job script exits 99, and Grid Engine runs the job again (``failed 25: rescheduling`` in
  ``qacct``; the queue's ``rerun`` does not matter for exit 99). ``qmod -rj`` would do the same from outside, but
  it kills the batch shell at once, before its verdict is logged;
* a rerun is killed at its first ``s_rt`` without a warning (8.1.9's execd: "exceeded hard wallclock time"):
  ask for an ``s_rt`` that leaves each incarnation room for its work, as each SLURM incarnation has its
  ``--time``;
* ``qdel`` kills with ``SIGKILL`` (``-notify``: ``SIGUSR2`` first): no TERM of Grid Engine's own reaches the job,
  so a TERM is a user's or a launcher's, never a preemption;
* job states: one ``qstat -u *`` for the jobs it knows (``r``, ``qw``, ``Rr``, ``Rq``, ``t``, ``s``, ``E``,
  ``d``), one ``qacct`` per finished job (its last record: ``failed`` and ``exit_status``).
"""

from __future__ import annotations

import re
import socket
import subprocess
from pathlib import Path
from typing import Any

from xlt.cluster.backend import (
    COUNTER_ENV,
    REQUEUE_EXIT,
    JobIdentity,
    Scheduler,
    StopCause,
    Verdict,
    read_count,
    scheduler_timeout,
)

# The exit status that makes Grid Engine run a job again (sge_shepherd: "exit_status of job start = 99").
RERUN_EXIT = 99
# qstat's state letters -> SLURM's words (what xlt status shows for every scheduler).
_STATES = (("E", "FAILED"), ("d", "CANCELLED"), ("s", "SUSPENDED"), ("S", "SUSPENDED"), ("T", "SUSPENDED"),
           ("h", "PENDING"), ("w", "PENDING"), ("q", "PENDING"), ("r", "RUNNING"), ("t", "RUNNING"))


def state_word(letters: str) -> str:
    """A ``qstat`` state (``r``, ``qw``, ``Rr``, ``Eqw``, ``dr``, ...) in SLURM's words."""
    for letter, word in _STATES:
        if letter in letters:
            return word
    return "UNKNOWN"


def _task(value: str | None) -> str | None:
    return value if value and value.isdigit() else None


def finished_state(record: dict[str, str]) -> str:
    """A finished run's state from its ``qacct`` record: ``failed`` (0: the job ran) and ``exit_status``."""
    failed = record.get("failed", "0").split()[0] if record.get("failed") else "0"
    status = record.get("exit_status", "0").split()[0] if record.get("exit_status") else "0"
    if failed == "0":
        return "COMPLETED" if status == "0" else "FAILED"
    if failed == "25":
        return "REQUEUED"  # rescheduled: a later record (or qstat) says what came of it
    if failed in ("37", "40"):  # h_rt enforced by qmaster / by execd
        return "TIMEOUT"
    if failed == "100" or "delet" in record.get("failed", ""):
        return "CANCELLED"
    return "FAILED"


class GridEngine(Scheduler):
    """Grid Engine (see the module docstring)."""

    name = "gridengine"
    label = "Grid Engine"

    def detects(self) -> bool:
        return bool(self.env.get("JOB_ID")) and bool(self.env.get("SGE_TASK_ID") or self.env.get("SGE_ROOT"))

    def identity(self) -> JobIdentity | None:
        job = self.env.get("JOB_ID")
        if not job:
            return None
        task = _task(self.env.get("SGE_TASK_ID"))
        return JobIdentity("gridengine", job, job if task else None, task, self.restart_count() or 0,
                           self.env.get("HOSTNAME") or socket.gethostname())

    def job_name(self) -> str:
        """The job as ``qstat`` and ``qacct`` name it: ``JOB`` or ``JOB.TASK`` for an array task."""
        job = self.env.get("JOB_ID", "")
        if not job:
            return "local"
        task = _task(self.env.get("SGE_TASK_ID"))
        return f"{job}.{task}" if task else job

    def restart_count(self) -> int | None:
        """The requeues counted in ``XLT_REQUEUE_COUNTER`` (Grid Engine's ``RESTARTED`` says only whether this
        run is a rerun: at least 1 then)."""
        if not self.env.get("JOB_ID"):
            return None
        restarted = 1 if self.env.get("RESTARTED", "0").strip() == "1" else 0
        return max(restarted, read_count(self.env.get(COUNTER_ENV)))

    def stop_cause(self, signal_time: float | None = None) -> StopCause:
        """Grid Engine sends no TERM of its own (s_rt: USR1, h_rt and qdel: KILL; -notify: USR1/USR2 first): a
        TERM is a user's or a launcher's. ``qstat -j`` says whether the job is being deleted."""
        job = self.env.get("JOB_ID")
        if not job:
            return StopCause("not under Grid Engine", False, False, "no Grid Engine job: a launcher, a user or the "
                             "system sent it")
        try:
            proc = subprocess.run(["qstat", "-j", job], capture_output=True, text=True,
                                  timeout=scheduler_timeout(self.env))
        except (OSError, subprocess.TimeoutExpired) as err:
            return StopCause("unknown", False, False, f"qstat -j {job}: {type(err).__name__}: {err}; taken for a "
                             "termination: the checkpoint is kept, the job is not requeued; resubmit it to resume")
        if proc.returncode != 0:
            return StopCause("unknown", False, False, f"qstat -j {job} said nothing of the job; taken for a "
                             "termination: the checkpoint is kept; resubmit it to resume")
        if re.search(r"^(job_state|.*deletion).*\bd", proc.stdout, re.MULTILINE):
            return StopCause("cancelled", False, False, f"qstat -j {job}: the job is being deleted (qdel)")
        return StopCause("from within the job", False, False, f"qstat -j {job}: the job runs; Grid Engine sends no "
                         "TERM (s_rt: USR1, h_rt and qdel: KILL): a launcher stopping its workers, or a user")

    def job_states(self, jobs: list[str]) -> dict[str, str]:
        """One ``qstat -u *`` for every job it knows (an array's tasks as ``JOB.TASK``; pending tasks of a range
        ``1-4:1`` each), then ``qacct -j`` for each finished job (its last record per task)."""
        wanted = [j for j in dict.fromkeys(jobs) if j]
        if not wanted:
            return {}
        timeout = scheduler_timeout(self.env)
        out: dict[str, str] = {}
        try:
            text = subprocess.run(["qstat", "-u", "*"], capture_output=True, text=True, timeout=timeout).stdout
        except (OSError, subprocess.TimeoutExpired):
            text = ""
        for job, task, letters in _qstat_rows(text):
            for key in ([f"{job}.{t}" for t in task] if task else [job]) + ([job] if task else []):
                if key in wanted and key not in out:
                    out[key] = state_word(letters)
        for key in [j for j in wanted if j not in out]:
            job, _, task = key.partition(".")
            try:
                acct = subprocess.run(["qacct", "-j", job], capture_output=True, text=True, timeout=timeout).stdout
            except (OSError, subprocess.TimeoutExpired):
                continue
            records = [r for r in qacct_records(acct) if not task or r.get("taskid") == task]
            if records:
                out[key] = finished_state(records[-1])
        return out

    def requeue(self, status: int, count: int, cap: int, signal_time: float | None, deadline: float,
                lines: list[str], counter_path: str | None = None, say: Any = None) -> Verdict:
        """Exit 99: Grid Engine runs the job again (its next run reads the count, so it is written first)."""
        job = self.job_name()
        if counter_path:
            try:
                Path(counter_path).write_text(f"{count + 1}\n")
            except OSError as err:
                return Verdict("failed", REQUEUE_EXIT, (*lines, f"preempted, but the requeue count {counter_path} "
                               f"could not be written ({err}): not requeued. The checkpoint is kept: resubmit the "
                               "job to resume."))
        return Verdict("requeued", RERUN_EXIT, (*lines, f"requeued job {job} (requeue {count + 1} of at most {cap}; "
                       f"exit status of the command: {status}): the batch shell exits {RERUN_EXIT}, Grid Engine "
                       "runs the job again and it resumes from its checkpoint"))


def _qstat_rows(text: str) -> list[tuple[str, list[str], str]]:
    """``(job, tasks, state letters)`` of each ``qstat`` row (tasks: ``3`` or a pending range ``1-4:1``)."""
    rows = []
    for line in text.splitlines():
        words = line.split()
        if len(words) < 5 or not words[0].isdigit():
            continue
        placed = len(words) > 7 and "@" in words[7]  # a queue instance: running (pending jobs have none)
        column = 9 if placed else 8  # job-ID prior name user state date time [queue] slots ja-task-ID
        last = words[column] if len(words) > column else ""
        tasks: list[str] = []
        ranged = re.fullmatch(r"(\d+)-(\d+):(\d+)", last)
        if ranged:
            a, b, step = (int(x) for x in ranged.groups())
            tasks = [str(t) for t in range(a, b + 1, step)]
        elif re.fullmatch(r"\d+(,\d+)*", last):
            tasks = last.split(",")
        rows.append((words[0], tasks, words[4]))
    return rows


def qacct_records(text: str) -> list[dict[str, str]]:
    """``qacct -j`` output: one record per finished run (a rerun adds one), ``key -> value``."""
    records: list[dict[str, str]] = []
    for line in text.splitlines():
        if line.startswith("====="):
            records.append({})
        elif records and line.strip():
            key, _, value = line.partition(" ")
            records[-1][key] = value.strip()
    return records

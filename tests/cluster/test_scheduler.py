"""Why a TERM came (xlt.cluster.scheduler.stop_cause), from what `scontrol show job` says: the fields are those
SLURM 22.05 printed at the TERM of each case on the real cluster (tests/cluster/test_real_slurm.py runs them)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from xlt.cluster.scheduler import stop_cause


def _scontrol(tmp_path: Path, line: str | None) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    body = f"echo '{line}'" if line is not None else "echo 'slurm_load_jobs error: Invalid job id specified' >&2; exit 1"
    (bin_dir / "scontrol").write_text(f"#!/bin/bash\n{body}\n")
    (bin_dir / "scontrol").chmod(0o755)
    return {"PATH": f"{bin_dir}:{os.environ['PATH']}"}


JOB = "JobId=41 JobName=xlt-stage UserId=root(0) Priority=1 Nice=0 Account=root QOS=normal"


@pytest.mark.parametrize(("fields", "started", "kind", "preemption", "by_slurm"), [
    # PreemptMode=REQUEUE: SLURM has requeued the job when the TERM arrives
    ("JobState=COMPLETING Reason=None Dependency=(null) Requeue=1 Restarts=1 BatchFlag=1", "0", "preempted", True, True),
    ("JobState=COMPLETING Reason=None Dependency=(null) Requeue=1 Restarts=3 BatchFlag=1", "2", "preempted", True, True),
    # PreemptMode=CANCEL with a GraceTime: PreemptTime set, not requeued by SLURM
    ("JobState=COMPLETING Reason=None Requeue=1 Restarts=0 RunTime=00:00:44 PreemptTime=2026-12-03T23:25:11",
     "0", "preempted", True, False),
    # the time limit (no --signal)
    ("JobState=COMPLETING Reason=TimeLimit Requeue=1 Restarts=0 RunTime=00:01:12 TimeLimit=00:01:00", "0",
     "time limit", True, False),
    # scancel
    ("JobState=COMPLETING Reason=None Requeue=1 Restarts=0 RunTime=00:00:05 PreemptTime=None", "0", "cancelled",
     False, False),
    ("JobState=CANCELLED Reason=None Requeue=1 Restarts=2", "2", "cancelled", False, False),
    # a launcher stopping its workers: the scheduler did nothing
    ("JobState=RUNNING Reason=None Requeue=1 Restarts=0", "0", "from within the job", False, False),
], ids=["requeue-mode", "requeue-mode-later-incarnation", "cancel-mode", "time-limit", "scancel",
        "scancel-after-requeues", "launcher"])
def test_the_cause_of_a_term_is_what_the_scheduler_reports(tmp_path, fields, started, kind, preemption, by_slurm):
    env = {**os.environ, **_scontrol(tmp_path, f"{JOB} {fields}"), "SLURM_JOB_ID": "41", "SLURM_RESTART_COUNT": started}
    cause = _with_path(env)
    assert (cause.kind, cause.preemption, cause.requeued_by_scheduler) == (kind, preemption, by_slurm), cause
    assert "scontrol: job 41" in cause.why


def _with_path(env: dict[str, str]):
    old = os.environ["PATH"]
    os.environ["PATH"] = env["PATH"]
    try:
        return stop_cause(env)
    finally:
        os.environ["PATH"] = old


def test_outside_slurm_and_without_an_answer_a_term_is_no_preemption(tmp_path):
    cause = stop_cause({"PATH": os.environ["PATH"]})
    assert (cause.kind, cause.preemption) == ("not under SLURM", False)
    env = {**os.environ, **_scontrol(tmp_path, None), "SLURM_JOB_ID": "41"}
    cause = _with_path(env)
    assert (cause.kind, cause.preemption) == ("unknown", False) and "Invalid job id" in cause.why


def test_job_states_asks_squeue_once_and_sacct_once_for_what_squeue_forgot(tmp_path, monkeypatch):
    """An array element is named ARRAYID_TASK (-r: one line per element; -j ID alone matches the whole array);
    a job squeue no longer lists is asked of the accounting (its last record); a job neither knows is left out."""
    from xlt.cluster.scheduler import job_states

    bin_dir, calls = tmp_path / "bin", tmp_path / "calls.txt"
    bin_dir.mkdir()
    (bin_dir / "squeue").write_text(
        f"#!/bin/bash\necho \"squeue $*\" >> {calls}\n"
        "printf '20_3 RUNNING None\\n21 PENDING BeginTime\\n20_4 PENDING JobArrayTaskLimit\\n'\n"
        "echo 'slurm_load_jobs error: Invalid job id specified' >&2; exit 1\n")
    (bin_dir / "sacct").write_text(
        f"#!/bin/bash\necho \"sacct $*\" >> {calls}\nprintf '22|COMPLETED\\n22|CANCELLED by 1000\\n'\n")
    for name in ("squeue", "sacct"):
        (bin_dir / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    got = job_states(["20_3", "21", "22", "23", "20_3", ""])
    assert got == {"20_3": "RUNNING", "21": "PENDING (BeginTime)", "22": "CANCELLED"}
    assert calls.read_text().splitlines() == ["squeue -h -r -o %i %T %r -j 20_3,21,22,23",
                                              "sacct -n -X -P -o JobID,State -j 22,23"]
    assert job_states([]) == {} and len(calls.read_text().splitlines()) == 2  # nothing to ask: nothing run
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    assert job_states(["20_3"]) == {}  # no SLURM here


def test_job_states_ask_squeue_once_and_sacct_once_for_the_forgotten(tmp_path, monkeypatch):
    """One ``squeue -h -r`` for all jobs (array elements as ARRAYID_TASK), one ``sacct`` for those squeue has
    forgotten; a job neither knows is left out."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "calls.log"
    (bin_dir / "squeue").write_text(f'#!/bin/bash\necho "squeue $*" >> {log}\n'
                                    "printf '12 RUNNING None\\n10_3 PENDING JobArrayTaskLimit\\n10_4 RUNNING None\\n'\n")
    (bin_dir / "sacct").write_text(f'#!/bin/bash\necho "sacct $*" >> {log}\n'
                                   "printf '10_1|COMPLETED\\n9|CANCELLED by 0\\n'\n")
    for name in ("squeue", "sacct"):
        (bin_dir / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    from xlt.cluster.scheduler import job_states

    states = job_states(["12", "10_3", "10_1", "9", "77"], {"SLURM_JOB_ID": "5", "PATH": os.environ["PATH"]})
    assert states == {"12": "RUNNING", "10_3": "PENDING (JobArrayTaskLimit)", "10_1": "COMPLETED", "9": "CANCELLED"}
    assert log.read_text().splitlines() == ["squeue -h -r -o %i %T %r -j 12,10_3,10_1,9,77",
                                            "sacct -n -X -P -o JobID,State -j 10_1,9,77"]

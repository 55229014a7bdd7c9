"""The batch shell's verdict after a stop (xlt.cluster.requeue.after_stop), against a stub scontrol that answers
as SLURM 22.05 did on the real cluster (tests/cluster/test_real_slurm.py runs the real cases): a requeue that is
checked, refused, or asked of a silent controller; a scancel during the grace; SLURM's own requeue."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from xlt.cluster.requeue import after_stop
from xlt.cluster.scheduler import fresh_preemption, stop_cause

NOW = time.time()


def _stamp(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(t))


def _scontrol(tmp_path: Path, state: str = "RUNNING", reason: str = "None", preempt: str = "None",
              requeue: str = "ok", silent: bool = False) -> dict[str, str]:
    """A stub scontrol: ``show job`` prints the job (Restarts from a file a ``requeue`` raises); ``requeue`` ok,
    refused (--no-requeue) or accepted without effect; ``silent``: the controller never answers."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    restarts, log = tmp_path / "restarts", tmp_path / "scontrol.log"
    body = [f'echo "$@" >> {log}']
    if silent:
        body.append("sleep 60")
    body += [
        'if [[ "$1 $2" == "show job" ]]; then',
        f'  echo "JobId=41 JobName=x JobState={state} Reason={reason} Requeue=1 Restarts=$(cat {restarts} 2>/dev/null '
        f'|| echo 0) StartTime={_stamp(NOW - 600)} PreemptTime={preempt}"; exit 0; fi',
        'if [[ "$1" == requeue ]]; then',
        '  [[ "' + requeue + '" == refused ]] && { echo "Requested operation is presently disabled for job $2" >&2; exit 1; }',
        '  [[ "' + requeue + '" == ok ]] && echo $(( $(cat ' + str(restarts) + ' 2>/dev/null || echo 0) + 1 )) > '
        + str(restarts),
        "  exit 0; fi",
    ]
    (bin_dir / "scontrol").write_text("#!/bin/bash\n" + "\n".join(body) + "\n")
    (bin_dir / "scontrol").chmod(0o755)
    return {"PATH": f"{bin_dir}:{os.environ['PATH']}", "SLURM_JOB_ID": "41", "SLURM_RESTART_COUNT": "0",
            "XLT_SCHEDULER_TIMEOUT_S": "1", "XLT_REQUEUE_WAIT_S": "3"}


@pytest.fixture
def path_of(monkeypatch):
    def use(env: dict[str, str]) -> dict[str, str]:
        monkeypatch.setenv("PATH", env["PATH"])
        monkeypatch.setenv("XLT_SCHEDULER_TIMEOUT_S", env["XLT_SCHEDULER_TIMEOUT_S"])
        return env
    return use


def _record(tmp_path: Path, **fields) -> str:
    path = tmp_path / "record.json"
    path.write_text(json.dumps({"preempted": True, "cause": "the scheduler's USR1", **fields}))
    return str(path)


def _requeues(tmp_path: Path) -> int:
    log = tmp_path / "scontrol.log"
    return sum(line.startswith("requeue") for line in log.read_text().splitlines()) if log.exists() else 0


def test_a_warning_is_requeued_and_the_requeue_checked(tmp_path, path_of):
    env = path_of(_scontrol(tmp_path))
    v = after_stop(env, 75, True, False, NOW, _record(tmp_path), str(tmp_path / "count"))
    assert (v.action, v.status) == ("requeued", 0) and "Restarts=1" in v.lines[-1], v
    assert (tmp_path / "count").read_text().strip() == "1"


def test_a_refused_requeue_fails_the_job_at_once_and_is_not_counted(tmp_path, path_of):
    """--no-requeue: 'Requested operation is presently disabled': no retry, exit 75 (FAILED, dependents
    cancelled), the message says the checkpoint is kept and to resubmit."""
    env = path_of(_scontrol(tmp_path, requeue="refused"))
    v = after_stop(env, 75, True, False, NOW, _record(tmp_path), str(tmp_path / "count"))
    assert (v.action, v.status) == ("failed", 75), v
    assert "presently disabled" in v.lines[-1] and "resubmit the same command to resume" in v.lines[-1]
    assert _requeues(tmp_path) == 1 and not (tmp_path / "count").exists()


def test_a_requeue_accepted_without_effect_is_retried_then_fails(tmp_path, path_of):
    env = path_of(_scontrol(tmp_path, requeue="noop"))
    v = after_stop(env, 75, True, False, NOW, _record(tmp_path), str(tmp_path / "count"))
    assert (v.action, v.status) == ("failed", 75) and "not requeued" in v.lines[-1], v
    assert _requeues(tmp_path) >= 2  # retried within XLT_REQUEUE_WAIT_S


def test_a_silent_controller_leaves_the_checkpoint_and_fails_the_job_in_bounded_time(tmp_path, path_of):
    env = path_of(_scontrol(tmp_path, silent=True))
    t0 = time.monotonic()
    v = after_stop(env, 75, True, False, NOW, _record(tmp_path), None)
    assert time.monotonic() - t0 < 15  # XLT_REQUEUE_WAIT_S=3 with 1 s questions, whatever the machine's load
    assert (v.action, v.status) == ("failed", 75) and "did not answer" in v.lines[-1], v
    assert "resubmit" in v.lines[-1] and _requeues(tmp_path) == 0


def test_a_scancel_during_the_warning_grace_is_never_undone(tmp_path, path_of):
    env = path_of(_scontrol(tmp_path, state="COMPLETING"))
    v = after_stop(env, 75, True, True, NOW, _record(tmp_path), None)
    assert (v.action, v.status) == ("failed", 143) and "never undone" in v.lines[-1], v
    assert _requeues(tmp_path) == 0


def test_a_time_limit_reached_while_saving_is_still_requeued(tmp_path, path_of):
    env = path_of(_scontrol(tmp_path, state="COMPLETING", reason="TimeLimit"))
    v = after_stop(env, 75, True, True, NOW, _record(tmp_path), None)
    assert v.action == "requeued", v


def test_a_grace_preemption_is_requeued_by_xlt_in_requeue_mode_too(tmp_path, path_of):
    """SLURM requeues (REQUEUE) or kills (CANCEL) the job only at the grace's end: a job that stopped within
    the grace is requeued by xlt in both modes."""
    env = path_of(_scontrol(tmp_path, preempt=_stamp(NOW - 2)))
    v = after_stop(env, 1, True, False, NOW, _record(tmp_path), None)
    assert v.action == "requeued", v


def test_slurms_own_requeue_is_not_doubled(tmp_path, path_of):
    env = path_of(_scontrol(tmp_path, state="COMPLETING"))
    (tmp_path / "restarts").write_text("1\n")
    v = after_stop(env, 143, False, True, NOW, None, None)
    assert (v.action, v.status) == ("requeued-by-slurm", 75) and _requeues(tmp_path) == 0, v
    v = after_stop(env, 1, False, False, NOW, _record(tmp_path, requeued_by_scheduler=True), None)
    assert v.action == "requeued-by-slurm" and _requeues(tmp_path) == 0


def test_rank_0s_answer_is_not_asked_again(tmp_path, path_of):
    env = path_of(_scontrol(tmp_path, state="COMPLETING"))
    v = after_stop(env, 143, False, True, NOW, _record(tmp_path, preempted=False, cause="cancelled: not a preemption"),
                   None)
    assert (v.action, v.status) == ("failed", 143) and "why the TERM came: cancelled" in " ".join(v.lines), v
    assert not (tmp_path / "scontrol.log").exists()


def test_a_record_whose_rank_never_asked_is_not_the_schedulers_answer(tmp_path, path_of):
    """Rank 0 stopped because another rank was signalled (the step-end agreement) before its own TERM came: its
    record says no preemption without having asked. The batch shell, TERMed itself, asks: a preemption of the
    whole job (PreemptTime of this stop) is requeued, a scancel is named as one and not requeued."""
    unasked = {"preempted": False, "cause": "a signal to another rank: not from the scheduler", "asked_scheduler": False}
    env = path_of(_scontrol(tmp_path, state="COMPLETING", preempt=_stamp(NOW + 1)))
    v = after_stop(env, 143, False, True, NOW, _record(tmp_path, **unasked), None)
    assert v.action == "requeued" and "why the TERM came: preempted" in " ".join(v.lines), v
    other = tmp_path / "cancel"
    other.mkdir()
    env = path_of(_scontrol(other, state="CANCELLED"))
    v = after_stop(env, 143, False, True, NOW, _record(other, **unasked), None)
    assert v.action == "failed" and "why the TERM came: cancelled" in " ".join(v.lines) and _requeues(other) == 0, v


def test_a_failure_without_a_stop_is_not_requeued(tmp_path, path_of):
    env = path_of(_scontrol(tmp_path))
    assert after_stop(env, 2, False, False, None, None, None).action == "failed"
    assert after_stop(env, 0, False, False, None, None, None).action == "done"
    assert not (tmp_path / "scontrol.log").exists()


def test_the_cap_counts_only_requeues_that_happened(tmp_path, path_of):
    env = path_of(_scontrol(tmp_path, requeue="refused"))
    after_stop({**env, "XLT_MAX_REQUEUES": "1"}, 75, True, False, NOW, _record(tmp_path), str(tmp_path / "count"))
    env = path_of(_scontrol(tmp_path))
    v = after_stop({**env, "XLT_MAX_REQUEUES": "1"}, 75, True, False, NOW, _record(tmp_path), str(tmp_path / "count"))
    assert v.action == "requeued", v  # the refused one did not count towards the cap


@pytest.mark.parametrize(("ago", "fresh"), [
    (5, True),  # this stop's grace began 5 s before the TERM
    (3600, False),  # a suspension an hour ago (gang scheduling): stale
    (7200, False),  # before this incarnation started
], ids=["this-stop", "earlier-suspension", "earlier-incarnation"])
def test_only_this_stops_preempt_time_counts(ago, fresh):
    fields = {"PreemptTime": _stamp(NOW - ago), "StartTime": _stamp(NOW - 5000)}
    assert fresh_preemption(fields, NOW)[0] is fresh


def test_a_stale_preempt_time_makes_a_scancel_no_preemption(tmp_path, path_of):
    env = path_of(_scontrol(tmp_path, state="COMPLETING", preempt=_stamp(NOW - 400)))
    cause = stop_cause(env, signal_time=NOW)
    assert (cause.kind, cause.preemption) == ("cancelled", False) and "stale" in cause.why, cause

"""Which stops are preemptions, the requeue cap and the restart count (xlt.cluster, slurm/common.sh).

A TERM reaches a worker for two very different reasons: slurm/common.sh forwarding the scheduler's USR1 (a
preemption: requeue), or torch-elastic stopping the surviving workers after one worker failed (a crash:
never requeue). The workers tell them apart by slurm/common.sh's preemption notice. The real launches are
tests/training/test_fault_matrix.py (slow tier)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cli import ENV, REPO, xlt
from xlt.cluster import scheduler, signals
from xlt.errors import ConfigError

SLURM = REPO / "slurm"


@pytest.fixture
def handlers(monkeypatch):
    """xlt's handlers installed; the process's handlers and stop request restored after."""
    old = {s: signal.getsignal(getattr(signal, s)) for s in signals.SIGNALS}
    monkeypatch.setitem(signals._requested, "signal", None)
    monkeypatch.setitem(signals._requested, "preemption", False)
    monkeypatch.setitem(signals._requested, "cause", None)
    signals.install_signal_handlers()
    yield
    for s, h in old.items():
        signal.signal(getattr(signal, s), h)


def _signal(sig: signal.Signals) -> None:
    os.kill(os.getpid(), sig)
    time.sleep(1)  # the handler raises before this returns


def test_a_term_without_the_notice_is_a_termination(handlers, monkeypatch, tmp_path):
    """A launcher TERMing its workers because another one failed: not the scheduler's preemption."""
    monkeypatch.setenv(signals.NOTICE_ENV, str(tmp_path / "notice"))  # slurm/common.sh's, not written
    with pytest.raises(signals.Terminated, match="SIGTERM received"):
        _signal(signal.SIGTERM)
    assert not signals.is_preemption() and signals.preemption_requested() == "SIGTERM"


def test_a_term_after_the_notice_is_a_preemption(handlers, monkeypatch, tmp_path):
    (tmp_path / "notice").write_text("USR1\n")
    monkeypatch.setenv(signals.NOTICE_ENV, str(tmp_path / "notice"))
    with pytest.raises(signals.Preempted, match="SIGTERM received"):
        _signal(signal.SIGTERM)
    assert signals.is_preemption()


def test_usr1_is_always_a_preemption_and_wins_over_an_earlier_term(handlers, monkeypatch):
    monkeypatch.delenv(signals.NOTICE_ENV, raising=False)
    with pytest.raises(signals.Preempted, match="SIGUSR1 received"):
        _signal(signal.SIGUSR1)
    assert signals.is_preemption()
    monkeypatch.setitem(signals._requested, "signal", "SIGTERM")  # a TERM first (the agent died of the USR1)
    monkeypatch.setitem(signals._requested, "preemption", False)
    monkeypatch.setitem(signals._requested, "cause", None)
    with pytest.raises(signals.Preempted):
        _signal(signal.SIGUSR1)
    assert signals.preemption_requested() == "SIGUSR1"


def test_a_notice_seen_late_still_makes_the_exit_a_preemption(handlers, monkeypatch, tmp_path):
    """On a shared file system the notice may become visible after the TERM: asked again at the exit."""
    monkeypatch.setenv(signals.NOTICE_ENV, str(tmp_path / "notice"))
    with pytest.raises(signals.Terminated):
        _signal(signal.SIGTERM)
    (tmp_path / "notice").write_text("USR1\n")
    assert signals.is_preemption()


# --- the cap and the restart count ---------------------------------------------------------------------------


def _scontrol(tmp_path: Path, restarts: int | None) -> Path:
    """A stub scontrol: `show job -o ID` prints a job line with Restarts=N (nothing when None); logs requeues."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    # Restarts as the controller counts them: a requeue raises it (the batch shell checks that it did)
    count = tmp_path / "restarts"
    if restarts is not None:
        count.write_text(f"{restarts}\n")
    show = (f'echo "JobId=$4 JobName=x JobState=RUNNING Reason=None Restarts=$(cat {count}) BatchFlag=1"'
            if restarts is not None else "exit 1")
    (bin_dir / "scontrol").write_text(
        "#!/bin/bash\n"
        f'if [[ "$1 $2" == "show job" ]]; then {show}; exit 0; fi\n'
        f'echo "$@" >> {tmp_path / "scontrol.log"}\n'
        f'if [[ "$1" == requeue && -f {count} ]]; then echo $(( $(cat {count}) + 1 )) > {count}; fi\n'
    )
    (bin_dir / "scontrol").chmod(0o755)
    return bin_dir


@pytest.mark.parametrize(
    ("env", "allowed"),
    [
        ({"SLURM_JOB_ID": "9", "SLURM_RESTART_COUNT": "2", "XLT_MAX_REQUEUES": "3"}, True),
        ({"SLURM_JOB_ID": "9", "SLURM_RESTART_COUNT": "3", "XLT_MAX_REQUEUES": "3"}, False),
        ({"SLURM_JOB_ID": "9", "SLURM_RESTART_COUNT": "0", "XLT_MAX_REQUEUES": "0"}, False),
        ({"SLURM_JOB_ID": "9", "SLURM_RESTART_COUNT": str(scheduler.MAX_REQUEUES)}, False),
    ],
)
def test_requeues_are_capped(env, allowed):
    ok, why = scheduler.requeue_allowed(env)
    assert ok is allowed, why
    if not allowed:
        assert "not requeued again" in why and "XLT_MAX_REQUEUES" in why


def test_under_submitit_a_job_at_its_cap_does_not_requeue_itself(tmp_path, monkeypatch, caplog):
    """Hydra's slurm launcher: rank 0 requeues its own job after a preemption, within the same cap."""
    monkeypatch.setenv("SUBMITIT_EXECUTOR", "slurm")
    monkeypatch.setenv("SLURM_JOB_ID", "4243")
    monkeypatch.setenv("SLURM_RESTART_COUNT", "3")
    monkeypatch.setenv("XLT_MAX_REQUEUES", "3")
    monkeypatch.setenv("PATH", f"{_scontrol(tmp_path, 3)}:{os.environ['PATH']}")
    assert signals.requeue_under_submitit([tmp_path / "preempted.json"]) is False
    assert "requeued 3 time(s) already" in caplog.text and not (tmp_path / "scontrol.log").exists()


def test_a_cap_that_is_no_number_is_named():
    with pytest.raises(ConfigError, match="XLT_MAX_REQUEUES='many'"):
        scheduler.max_requeues({"XLT_MAX_REQUEUES": "many"})


def test_a_missing_restart_count_comes_from_scontrol(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", f"{_scontrol(tmp_path, 4)}:{os.environ['PATH']}")
    monkeypatch.setenv("SLURM_JOB_ID", "4242")
    monkeypatch.delenv("SLURM_RESTART_COUNT", raising=False)
    assert scheduler.restart_count() == 4
    scheduler.fill_restart_count()
    assert os.environ["SLURM_RESTART_COUNT"] == "4"


def test_a_missing_restart_count_that_scontrol_cannot_give_is_said(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("PATH", f"{_scontrol(tmp_path, None)}:{os.environ['PATH']}")
    monkeypatch.setenv("SLURM_JOB_ID", "4242")
    monkeypatch.delenv("SLURM_RESTART_COUNT", raising=False)
    scheduler.fill_restart_count()
    assert "SLURM_RESTART_COUNT" not in os.environ
    assert "SLURM_RESTART_COUNT did not reach this process" in caplog.text
    assert (
        "taken over only when its lease expires" in caplog.text and "--env SLURM_RESTART_COUNT" in caplog.text
    )


@pytest.mark.slow  # a full run through the CLI (about 5-12 s): the slow tier, docs/testing.md
def test_a_requeue_without_slurm_restart_count_takes_over_its_earlier_incarnations_lock(tmp_path):
    """Reproduction (issue 40): a requeued job (`srun --export=NONE`, a container) whose environment lacks
    SLURM_RESTART_COUNT found its earlier incarnation's lock on another host, counted itself restart 0 like
    its predecessor, and was refused (exit 2) until the lease ended. Now the count comes from scontrol."""
    run = tmp_path / "demo_tiny" / "default"
    (run / "locks").mkdir(parents=True)
    now = time.time()
    (run / "locks" / "run.json").write_text(
        json.dumps(
            {
                "host": "node-17",
                "pid": 4242,
                "proc_start": "123",
                "launch": "node-17:4242",
                "started": now - 60,
                "command": "+recipe=demo_tiny",
                "lease_s": 600.0,
                "heartbeat": now - 10,
                "expires": now + 590,
                "slurm": {"job_id": "4242", "restart_count": "0"},
            }
        )
    )
    assert socket.gethostname() != "node-17"
    env = {"PATH": f"{_scontrol(tmp_path, 1)}:{ENV['PATH']}", "SLURM_JOB_ID": "4242", "TMPDIR": str(tmp_path)}
    proc = xlt(
        "xlt.train",
        "+recipe=demo_tiny",
        "stages=[build_data]",
        f"run_root={tmp_path}",
        env={**{k: v for k, v in ENV.items() if k != "SLURM_RESTART_COUNT"}, **env},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "an earlier incarnation of this SLURM job 4242" in proc.stdout + proc.stderr
    assert not (run / "locks" / "run.json").exists()


# --- slurm/common.sh: the notice, the cap, the fallback count ----------------------------------------------------

CHILD = """
import os, pathlib, signal, sys, time
out = pathlib.Path(sys.argv[1])
def on_term(signum, frame):
    notice = os.environ.get("XLT_PREEMPTION_NOTICE", "")
    out.joinpath("notice_seen").write_text(str(bool(notice) and os.path.exists(notice)))
    sys.exit(75 if os.path.exists(notice) else 143)
signal.signal(signal.SIGTERM, on_term)
out.joinpath("ready").write_text("1")
time.sleep(60)
"""


def _exec(tmp_path: Path, child: str, restarts: int | None = None, **env: str) -> subprocess.Popen:
    (tmp_path / "child.py").write_text(child)
    driver = (
        f'source {SLURM}/common.sh; xlt_exec {sys.executable} {tmp_path}/child.py {tmp_path}; echo "rc=$?"'
    )
    full = {
        **os.environ,
        "PATH": f"{_scontrol(tmp_path, restarts)}:{os.environ['PATH']}",
        "SLURM_JOB_ID": "4242",
        "XLT_RECORD_DIR": str(tmp_path / "records"),
        **env,
    }
    if "SLURM_RESTART_COUNT" not in env:
        full.pop("SLURM_RESTART_COUNT", None)
    return subprocess.Popen(
        ["bash", "-c", driver], env=full, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _usr1(tmp_path: Path, proc: subprocess.Popen) -> tuple[str, str]:
    end = time.time() + 60
    while not (tmp_path / "ready").exists():
        assert time.time() < end and proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    proc.send_signal(signal.SIGUSR1)
    return proc.communicate(timeout=60)


def _requeued(tmp_path: Path) -> bool:
    log = tmp_path / "scontrol.log"
    return log.exists() and "requeue 4242" in log.read_text()


def test_the_trap_writes_the_notice_before_its_term_and_removes_it_after(tmp_path):
    out, err = _usr1(tmp_path, _exec(tmp_path, CHILD, restarts=0, SLURM_RESTART_COUNT="0"))
    assert (tmp_path / "notice_seen").read_text() == "True", err
    assert _requeued(tmp_path) and "rc=0" in out
    assert not list((tmp_path / "records").glob(".xlt-notice-*"))


def test_a_failed_command_without_a_preemption_is_not_requeued_and_says_so(tmp_path):
    """The crash: the launcher returns 1, no record, no USR1 to the batch shell."""
    proc = _exec(tmp_path, "import sys; sys.exit(1)", SLURM_RESTART_COUNT="0")
    out, err = proc.communicate(timeout=60)
    assert "rc=1" in out and not _requeued(tmp_path)
    assert "no preemption was sent to it: not requeued" in err


def test_a_job_at_its_requeue_cap_is_not_requeued(tmp_path):
    out, err = _usr1(tmp_path, _exec(tmp_path, CHILD, SLURM_RESTART_COUNT="3", XLT_MAX_REQUEUES="3"))
    assert not _requeued(tmp_path) and "rc=75" in out, err
    assert "requeued 3 time(s) already, the cap (XLT_MAX_REQUEUES=3)" in err


def test_a_batch_shell_whose_job_slurm_requeued_already_does_not_requeue_it_again(tmp_path):
    """Restarts above the count the incarnation started with (SLURM_RESTART_COUNT; SLURM sets it from the
    first requeue on, so none is 0): SLURM requeued the job itself; a second requeue would be one too many."""
    out, err = _usr1(tmp_path, _exec(tmp_path, CHILD, restarts=2, XLT_MAX_REQUEUES="5"))
    assert not _requeued(tmp_path) and "requeued by SLURM itself" in err, err


def test_a_controller_that_does_not_answer_gets_no_requeue_and_the_log_says_resubmit(tmp_path):
    """Neither scontrol's answer nor a way to check a requeue: the safe default is no requeue (a scancel is
    never undone), the job ends failed (75), the checkpoint kept; the log says to resubmit."""
    out, err = _usr1(tmp_path, _exec(tmp_path, CHILD, restarts=None, XLT_MAX_REQUEUES="1", XLT_REQUEUE_WAIT_S="2"))
    assert not _requeued(tmp_path) and "rc=75" in out, err
    assert "said nothing of the job" in err and "resubmit the same command to resume" in err, err


def test_the_scripts_own_count_of_requeues_that_happened_caps_them(tmp_path):
    """SLURM's Restarts may be reset (an administrator's resubmission): the shell's own count of the requeues
    it checked caps them too."""
    (tmp_path / "records").mkdir()
    (tmp_path / "records" / ".xlt-requeues-4242").write_text("1\n")
    out, err = _usr1(tmp_path, _exec(tmp_path, CHILD, restarts=0, XLT_MAX_REQUEUES="1", SLURM_RESTART_COUNT="0"))
    assert not _requeued(tmp_path) and "requeued 1 time(s) already" in err, err

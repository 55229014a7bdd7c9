"""Grid Engine as a scheduler (xlt.cluster.gridengine), against a fake ``qstat``/``qacct`` on PATH that prints
what Son of Grid Engine 8.1.9 printed on the real cell (tests/cluster/test_real_gridengine.py runs the real
thing), and the choice of the scheduler from the environment (xlt.cluster.backend.active_scheduler)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from xlt.cluster.backend import Local, active_scheduler, job_states
from xlt.cluster.gridengine import RERUN_EXIT, GridEngine, finished_state, state_word
from xlt.cluster.requeue import after_stop
from xlt.cluster.slurm import Slurm
from xlt.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]

# `qstat -u *` of 8.1.9: a running job, a running array task, a pending range of the same array, a rerun pending.
QSTAT = """job-ID  prior   name       user         state submit/start at     queue                          slots ja-task-ID
-----------------------------------------------------------------------------------------------------------------
     14 0.55500 gej.sh     root         r     12/05/2026 08:40:16 all.q@vm                           1
     30 0.55500 xlt-train  root         r     12/05/2026 09:01:02 all.q@vm                           1 1
     30 0.00000 xlt-train  root         qw    12/05/2026 09:00:58                                    1 2-3:1
     31 0.50000 gejA.sh    root         Rq    12/05/2026 08:41:55                                    1
"""
# `qacct -j 16`: a run rescheduled by exit 99, then its rerun killed at h_rt.
QACCT_16 = """==============================================================
qname        all.q
hostname     vm
jobnumber    16
taskid       undefined
failed       25  : rescheduling
exit_status  99
==============================================================
qname        all.q
hostname     vm
jobnumber    16
taskid       undefined
failed       37  : qmaster enforced h_rt, h_cpu, or h_vmem limit
exit_status  137                  (Killed)
"""
QACCT_29 = """==============================================================
jobnumber    29
taskid       1
failed       0
exit_status  0
==============================================================
jobnumber    29
taskid       2
failed       0
exit_status  2
"""


def _fake(tmp_path: Path, qstat_j: str = "job_state 1:    r\n") -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (tmp_path / "qstat.out").write_text(QSTAT)
    (tmp_path / "qstat_j.out").write_text(qstat_j)
    (tmp_path / "qacct_16").write_text(QACCT_16)
    (tmp_path / "qacct_29").write_text(QACCT_29)
    log = tmp_path / "calls.log"
    (bin_dir / "qstat").write_text(f'#!/bin/bash\necho "qstat $*" >> {log}\n'
                                   f'if [[ "$1" == -j ]]; then cat {tmp_path}/qstat_j.out; exit 0; fi\n'
                                   f"cat {tmp_path}/qstat.out\n")
    (bin_dir / "qacct").write_text(f'#!/bin/bash\necho "qacct $*" >> {log}\n'
                                   f'f={tmp_path}/qacct_$2; [[ -f $f ]] || {{ echo "error: job id $2 not found" >&2; '
                                   "exit 1; }\ncat $f\n")
    for name in ("qstat", "qacct"):
        (bin_dir / name).chmod(0o755)
    return {"PATH": f"{bin_dir}:{os.environ['PATH']}"}


@pytest.fixture
def fake_ge(tmp_path, monkeypatch):
    env = _fake(tmp_path)
    monkeypatch.setenv("PATH", env["PATH"])
    return tmp_path


@pytest.mark.parametrize(("env", "kind"), [
    ({"SLURM_JOB_ID": "12"}, Slurm),
    ({"JOB_ID": "30", "SGE_TASK_ID": "2"}, GridEngine),
    ({"JOB_ID": "14", "SGE_TASK_ID": "undefined", "SGE_ROOT": "/var/lib/gridengine"}, GridEngine),
    ({"JOB_ID": "14"}, Local),  # a JOB_ID alone (another program's variable) is no Grid Engine job
    ({}, Local),
    ({"JOB_ID": "14", "SGE_TASK_ID": "1", "XLT_SCHEDULER": "local"}, Local),  # forced
    ({"SLURM_JOB_ID": "12", "XLT_SCHEDULER": "gridengine", "JOB_ID": "3", "SGE_ROOT": "/x"}, GridEngine),
])
def test_the_scheduler_is_told_from_the_environment(env, kind):
    assert type(active_scheduler(env)) is kind


def test_an_unknown_forced_scheduler_is_an_error_naming_the_variable():
    with pytest.raises(ConfigError, match=r"unknown scheduler 'pbs' \(XLT_SCHEDULER\).*slurm"):
        active_scheduler({"XLT_SCHEDULER": "pbs"})


def test_outside_a_scheduler_nothing_is_requeued():
    local = active_scheduler({})
    assert local.identity() is None and local.restart_count() is None and local.job_name() == "local"
    cause = local.stop_cause(None)
    assert not cause.preemption and "not under a scheduler" in cause.why


def test_identity_and_the_requeue_count_kept_by_python(tmp_path):
    counter = tmp_path / "count"
    env = {"JOB_ID": "30", "SGE_TASK_ID": "2", "RESTARTED": "0", "HOSTNAME": "node7",
           "XLT_REQUEUE_COUNTER": str(counter)}
    ident = GridEngine(env).identity()
    assert ident is not None and ident.as_dict() == {"scheduler": "gridengine", "job_id": "30", "array_job_id": "30",
                                                     "array_task_id": "2", "restart_count": 0, "host": "node7"}
    assert GridEngine(env).job_name() == "30.2"
    assert GridEngine({**env, "RESTARTED": "1"}).restart_count() == 1  # a rerun, no count kept yet
    counter.write_text("4\n")
    assert GridEngine({**env, "RESTARTED": "1"}).restart_count() == 4
    plain = GridEngine({"JOB_ID": "14", "SGE_TASK_ID": "undefined", "SGE_ROOT": "/x"})
    assert plain.job_name() == "14" and plain.identity().array_task_id is None


def test_the_cap_is_python_s_one_cap(tmp_path):
    counter = tmp_path / "count"
    counter.write_text("3\n")
    env = {"JOB_ID": "30", "SGE_TASK_ID": "2", "XLT_REQUEUE_COUNTER": str(counter), "XLT_MAX_REQUEUES": "3"}
    ok, why = GridEngine(env).requeue_allowed()
    assert not ok and "requeued 3 time(s) already, the cap (XLT_MAX_REQUEUES=3)" in why
    ok, why = GridEngine({**env, "XLT_MAX_REQUEUES": ""}).requeue_allowed()
    assert ok and why == "requeue 4 of at most 100"


def test_job_states_in_one_qstat_and_qacct_for_the_finished(fake_ge):
    states = job_states(["14", "30.1", "30.2", "30.3", "31", "16", "29.1", "29.2", "99"], {"JOB_ID": "1",
                                                                                           "SGE_TASK_ID": "1"})
    assert states == {"14": "RUNNING", "30.1": "RUNNING", "30.2": "PENDING", "30.3": "PENDING", "31": "PENDING",
                      "16": "TIMEOUT", "29.1": "COMPLETED", "29.2": "FAILED"}
    calls = (fake_ge / "calls.log").read_text().splitlines()
    assert calls.count("qstat -u *") == 1, calls  # one question for every job qstat knows
    assert sorted(c for c in calls if c.startswith("qacct")) == ["qacct -j 16", "qacct -j 29", "qacct -j 29",
                                                                  "qacct -j 99"]


def test_job_states_asked_by_name_from_a_login_node(fake_ge):
    """``xlt status`` outside any job names the scheduler its runs' records name."""
    assert job_states(["14"], {"PATH": os.environ["PATH"]}, scheduler="gridengine") == {"14": "RUNNING"}


@pytest.mark.parametrize(("letters", "word"), [("r", "RUNNING"), ("qw", "PENDING"), ("hqw", "PENDING"),
                                               ("Rr", "RUNNING"), ("Rq", "PENDING"), ("t", "RUNNING"),
                                               ("Eqw", "FAILED"), ("dr", "CANCELLED"), ("s", "SUSPENDED")])
def test_qstat_letters_in_slurm_s_words(letters, word):
    assert state_word(letters) == word


@pytest.mark.parametrize(("failed", "status", "state"), [("0", "0", "COMPLETED"), ("0", "2", "FAILED"),
                                                         ("25  : rescheduling", "99", "REQUEUED"),
                                                         ("37  : qmaster enforced h_rt", "137", "TIMEOUT"),
                                                         ("100 : assumedly after job", "137", "CANCELLED")])
def test_a_finished_run_s_state_from_qacct(failed, status, state):
    assert finished_state({"failed": failed, "exit_status": status}) == state


def test_a_term_is_never_a_preemption_under_grid_engine(fake_ge):
    cause = GridEngine({"JOB_ID": "14", "SGE_ROOT": "/x"}).stop_cause(None)
    assert (cause.kind, cause.preemption) == ("from within the job", False), cause
    (fake_ge / "qstat_j.out").write_text("job_state 1:    dr\n")
    cause = GridEngine({"JOB_ID": "14", "SGE_ROOT": "/x"}).stop_cause(None)
    assert (cause.kind, cause.preemption) == ("cancelled", False), cause


def test_the_warning_is_requeued_by_exit_99_and_counted(fake_ge, tmp_path):
    counter = tmp_path / "requeues"
    env = {"JOB_ID": "30", "SGE_TASK_ID": "2", "XLT_REQUEUE_COUNTER": str(counter)}
    v = after_stop(env, 75, True, False, None, None, str(counter))
    assert (v.action, v.status) == ("requeued", RERUN_EXIT) and "requeued job 30.2 (requeue 1 of at most 100" in v.lines[-1]
    assert counter.read_text() == "1\n"
    v = after_stop({**env, "XLT_MAX_REQUEUES": "1"}, 75, True, False, None, None, str(counter))
    assert (v.action, v.status) == ("failed", 75) and "the cap (XLT_MAX_REQUEUES=1)" in v.lines[-1], v


def test_a_crash_and_a_success_are_the_command_s_own_status(fake_ge):
    env = {"JOB_ID": "30", "SGE_TASK_ID": "2"}
    assert after_stop(env, 0, False, False, None, None, None).action == "done"
    v = after_stop(env, 3, False, False, None, None, None)
    assert (v.action, v.status) == ("failed", 3) and "job 30.2 failed (exit status 3)" in v.lines[-1]


def _forward(tmp_path: Path, child: str, env: dict[str, str]) -> subprocess.Popen:
    (tmp_path / "child.py").write_text(child)
    driver = (f"source {REPO}/gridengine/common.sh; xlt_exec {sys.executable} {tmp_path}/child.py {tmp_path}; "
              'echo "rc=$?"')
    full = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    full.update({"XLT_RECORD_DIR": str(tmp_path / "records"), "XLT_PYTHON": sys.executable,
                 "PYTHONPATH": str(REPO), **env})
    return subprocess.Popen(["bash", "-c", driver], env=full, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)


CHILD = """
import os, pathlib, signal, sys, time
out = pathlib.Path(sys.argv[1])
def on_stop(signum, frame):
    out.joinpath("stopped").write_text(signal.Signals(signum).name)
    sys.exit(75)
signal.signal(signal.SIGTERM, on_stop)
signal.signal(signal.SIGUSR1, on_stop)
out.joinpath("ready").write_text("1")
time.sleep(60)
"""


def test_the_batch_shell_forwards_the_s_rt_warning_and_exits_99(fake_ge, tmp_path):
    """Grid Engine's s_rt: USR1 to every process of the job (here: the process group); the shell exits with
    the verdict line's status, 99, and the count is Python's."""
    proc = _forward(tmp_path, CHILD, {"JOB_ID": "30", "SGE_TASK_ID": "2", "PATH": os.environ["PATH"]})
    for _ in range(600):
        if (tmp_path / "ready").exists() or proc.poll() is not None:
            break
        subprocess.run(["sleep", "0.1"])
    os.killpg(proc.pid, 10)  # SIGUSR1 to the job's process group, as sge_execd sends it
    out, err = proc.communicate(timeout=60)
    assert "rc=99" in out, err
    assert "USR1 from the scheduler" in err and "requeued job 30.2 (requeue 1 of at most 100" in err, err
    assert (tmp_path / "records" / ".xlt-requeues-30.2").read_text() == "1\n"


def test_the_batch_shell_returns_a_crash_s_status_without_requeue(fake_ge, tmp_path):
    proc = _forward(tmp_path, "import sys; sys.exit(3)", {"JOB_ID": "30", "SGE_TASK_ID": "2",
                                                         "PATH": os.environ["PATH"]})
    out, err = proc.communicate(timeout=120)
    assert "rc=3" in out and "job 30.2 failed (exit status 3) and no preemption was sent to it" in err, err
    assert not (tmp_path / "records" / ".xlt-requeues-30.2").exists()


def test_after_stop_stays_import_light(tmp_path):
    """``python -m xlt.cluster after-stop`` runs inside the scheduler's kill wait: the seam (the registry, the
    backends) loads no Hydra, omegaconf, numpy, torch, nor importlib.metadata (the installed packages' entry
    points: xlt's own schedulers are found without them)."""
    code = ("import runpy, sys\nsys.argv = ['xlt.cluster', 'after-stop', '0', '0', '0', '0', '', '']\n"
            "try:\n    runpy.run_module('xlt.cluster', run_name='__main__')\nexcept SystemExit:\n    pass\n"
            "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('hydra', 'omegaconf', 'numpy', 'torch')"
            " or m == 'importlib.metadata')\nprint('HEAVY', heavy)\n")
    env = {**os.environ, "PYTHONPATH": str(REPO), "JOB_ID": "30", "SGE_TASK_ID": "2"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert proc.stdout.splitlines() == ["done 0", "HEAVY []"], proc.stdout + proc.stderr

"""xlt's sweep on a real Grid Engine (tests/cluster/gridengine.py: Debian's Son of Grid Engine 8.1.9 on this
host): gridengine/train_array.sh submitted with ``qsub``, the scheduler's states and accounting waited on, never
a stub. The cases are submitted side by side (the queue has several slots) and waited on together:

* a training array of two tiny runs with a throttle of one (``-t 1-2 -tc 1``): both run, never two at once;
* the time-limit warning: ``-l s_rt`` sends USR1 while the run trains, it checkpoints, the job script exits 99,
  Grid Engine runs the job again and the rerun resumes from the checkpoint to the end;
* ``xlt status`` reads the runs, and the lock of a run under way names its Grid Engine job.

Without Debian's ``gridengine-*`` the module is skipped, saying so; in CI (``XLT_REQUIRE_GRIDENGINE=1``, set by
.ci/run, which installs them) that is a failure. Only one process may drive the host's Grid Engine at a time
(run through ``flock /work/wt/gridengine.lock`` where several sessions share a machine).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from tests.cluster import gridengine
from xlt.run.lock import read_lock

pytestmark = [pytest.mark.slow, pytest.mark.gridengine]

REPO = Path(__file__).resolve().parents[2]
# Tiny runs: English and French Belebele (8 questions each), no Global-MMLU or XCOPA; light steps (batch 4, 64
# tokens, 16 dev rows), as the SLURM matrix's: the scheduler's workflows are checked, not learning.
TINY = ["training.max_steps=20", "training.eval_steps=20", "eval.benchmarks.belebele.max_questions=8",
        "eval.benchmarks.belebele.languages=[eng_Latn,fra_Latn]", "eval.benchmarks.global_mmlu.enabled=false",
        "eval.benchmarks.xcopa.enabled=false", "eval.bootstrap_samples=50", "training.per_device_train_batch_size=4",
        "model.max_length=64", "training.max_dev_rows=16"]
# The time-limit case: its warning (s_rt) comes this long after the start. Son of Grid Engine 8.1.9 kills a
# rerun at its first s_rt without a warning (gridengine/common.sh), so the rerun must finish within it: the
# rest of a tiny training, the evaluation and the report, with the interpreter's start, on a loaded machine.
# The first incarnation must also reach its training within it. Measured: ~30 s each on a quiet 2-core machine;
# in CI, beside the slow tier and the SLURM matrix (load 6-30), the first took over 120 s to reach its training
# and the rerun was killed at 120 s. Waiting costs no CPU: the first incarnation waits for the warning paused.
S_RT = 360
LIMIT_STEPS = ["training.max_steps=60", "training.eval_steps=60"]
# The first incarnation pauses at the end of optimizer step PAUSE_AT until its stop request has arrived (a
# training slower than its time limit, on any machine): a hook loaded at interpreter start (sitecustomize, on
# the limit job's PYTHONPATH). It writes PAUSED (its pid) once, and a later incarnation, seeing it, never pauses.
# Not a race with the test's polling: 60 tiny steps take 3 s, less than a heartbeat of the lock.
PAUSE_AT = 4
PAUSE_HOOK = """
import os, time
from pathlib import Path
_paused = Path(os.environ["XLT_PAUSE_FILE"])
if not _paused.exists():
    import transformers.trainer_callback as tc

    _real = tc.CallbackHandler.on_step_end

    def on_step_end(self, args, state, control):
        if state.global_step == int(os.environ["XLT_PAUSE_AT"]) and not _paused.exists():
            from xlt.cluster import signals

            early = signals.preemption_requested()
            _paused.write_text(f"{os.getpid()} {early or ''}")
            end = time.time() + int(os.environ["XLT_PAUSE_S"])
            while signals.preemption_requested() is None and time.time() < end:
                time.sleep(0.05)
        return _real(self, args, state, control)

    tc.CallbackHandler.on_step_end = on_step_end
"""
WAIT_S = 1200.0


@pytest.fixture(scope="module")
def cell():
    problems = gridengine.missing()
    if problems:
        if os.environ.get("XLT_REQUIRE_GRIDENGINE") == "1":
            pytest.fail(f"XLT_REQUIRE_GRIDENGINE=1 but Grid Engine cannot run here: missing {', '.join(problems)}")
        pytest.skip(f"no Grid Engine here (missing {', '.join(problems)}): apt-get install gridengine-master "
                    "gridengine-exec gridengine-client (with the preseed in .ci/run)")
    ge = gridengine.GridEngine().start()
    yield ge
    ge.stop()


class Cases:
    """Every case submitted at once, then waited on (see the module docstring)."""

    def __init__(self, ge: gridengine.GridEngine, work: Path):
        self.ge, self.work = ge, work
        (work / "sge-logs").mkdir(parents=True)
        self.env = {"PYTHONPATH": str(REPO), "XLT_PYTHON": sys.executable, "OMP_NUM_THREADS": "1",
                    "HF_HUB_OFFLINE": "1", "WANDB_MODE": "disabled", "XLT_HOME": str(REPO), "XLT_GRACE": "120",
                    "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
        self.results: dict[str, Any] = {}

    def qsub(self, *args: str) -> str:
        return self.ge.qsub(*args, cwd=self.work, env=self.env)

    def run_dir(self, *args: str) -> Path:
        from xlt.cluster.sweeps import run_dir

        return Path(run_dir(list(args)))

    def status(self, *paths: Path) -> list[dict[str, Any]]:
        proc = subprocess.run([sys.executable, "-m", "xlt.status", "--json", *map(str, paths)], capture_output=True,
                              text=True, env={**os.environ, **self.env}, timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
        return json.loads(proc.stdout)["runs"]  # {"summary": ..., "runs": [...]}

    def log(self, job: str) -> str:
        return "\n".join(p.read_text(errors="replace") for p in sorted((self.work / "sge-logs").glob(f"*{job}*")))


def _lock(run: Path) -> dict[str, Any] | None:
    path = run / "locks" / "run.json"
    snap = read_lock(path) if path.exists() else None
    return snap.info if snap is not None else None


@pytest.fixture(scope="module")
def cases(cell):
    tmp = tempfile.mkdtemp(prefix="xlt-ge-")  # XLT_KEEP_GE_DIR=1 keeps it (the jobs' logs) for a failure's reading
    try:
        c = Cases(cell, Path(tmp))
        # (a) two runs of a sweep, at most one at a time
        sweep = c.work / "sweep.txt"
        sweep.write_text("# two runs of the tiny recipe\n" + "".join(f"+recipe=demo_tiny seed={s} {' '.join(TINY)}\n"
                                                                     for s in (11, 12)))
        root = f"run_root={c.work / 'runs_sweep'}"
        runs = [c.run_dir(*line.split(), root) for line in sweep.read_text().splitlines()[1:]]
        array = c.qsub("-t", "1-2", "-tc", "1", "-l", "h_rt=0:40:0,s_rt=0:35:0",
                       str(REPO / "gridengine" / "train_array.sh"), str(sweep), root)
        # (b) the time-limit warning while the run trains
        limit_sweep = c.work / "limit.txt"
        limit_sweep.write_text(f"+recipe=demo_tiny seed=13 {' '.join([*TINY[2:], *LIMIT_STEPS])}\n")
        limit_root = f"run_root={c.work / 'runs_limit'}"
        limited = c.run_dir(*limit_sweep.read_text().split(), limit_root)
        hook = c.work / "pause-hook"
        hook.mkdir()
        (hook / "sitecustomize.py").write_text(PAUSE_HOOK)
        paused = c.work / "paused"
        job = c.ge.qsub("-t", "1-1", "-l", f"h_rt={S_RT + 600},s_rt={S_RT}", str(REPO / "gridengine" / "train_array.sh"),
                        str(limit_sweep), limit_root, cwd=c.work,
                        env={**c.env, "PYTHONPATH": f"{hook}:{c.env['PYTHONPATH']}", "XLT_PAUSE_FILE": str(paused),
                             "XLT_PAUSE_AT": str(PAUSE_AT), "XLT_PAUSE_S": str(S_RT + 120)})
        most, status_mid, lock_mid = 0, None, None
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            states = c.ge.running()
            most = max(most, sum(1 for k, v in states.items() if k.startswith(f"{array}.") and "r" in v.lower()
                                 and "q" not in v))
            info = _lock(limited) if status_mid is None and paused.exists() else None
            if info and ((info.get("progress") or {}).get("stage")) == "train":
                # The first incarnation waits for its warning at step PAUSE_AT (its training cannot end meanwhile),
                # and its lock's heartbeat (every 10 s at most) has told its progress.
                status_mid, lock_mid = c.status(limited), info
            if not any(k.split(".")[0] in (array, job) for k in states):
                break
            time.sleep(0.5)
        else:
            raise TimeoutError(f"Grid Engine jobs {array}, {job} still {c.ge.running()} after {WAIT_S:.0f} s\n"
                               f"{c.ge.logs()}")
        c.results = {"array": array, "runs": runs, "most": most, "job": job, "limited": limited,
                     "array_acct": c.ge.accounting(array, 2), "job_acct": c.ge.accounting(job, 2),
                     "paused": paused.read_text().split() if paused.exists() else None, "status_mid": status_mid, "lock_mid": lock_mid, "status_end": c.status(*runs, limited),
                     "array_log": c.log(array), "job_log": c.log(job)}
        yield c
    finally:
        if not os.environ.get("XLT_KEEP_GE_DIR"):
            shutil.rmtree(tmp, ignore_errors=True)


def test_a_sweep_runs_as_a_throttled_array(cases):
    res = cases.results
    acct = sorted(res["array_acct"], key=lambda r: int(r["taskid"]))
    assert [(r["taskid"], r["failed"].split()[0], r["exit_status"].split()[0]) for r in acct] == \
        [("1", "0", "0"), ("2", "0", "0")], f"{acct}\n{res['array_log'][-6000:]}"
    assert res["most"] == 1, f"-tc 1: {res['most']} tasks ran at once"
    # qacct's times are the runs' own: the second started once the first had ended
    starts = [time.mktime(time.strptime(r["start_time"], "%a %b %d %H:%M:%S %Y")) for r in acct]
    ends = [time.mktime(time.strptime(r["end_time"], "%a %b %d %H:%M:%S %Y")) for r in acct]
    assert starts[1] >= ends[0], acct
    for run in res["runs"]:
        assert (run / "report.json").exists(), (run, res["array_log"][-4000:])
    assert "running:" in res["array_log"]


def test_the_time_limit_warning_checkpoints_reruns_and_resumes(cases):
    res = cases.results
    log, job = res["job_log"], res["job"]
    assert res["paused"] and len(res["paused"]) == 1, \
        f"the first incarnation never reached step {PAUSE_AT} of its training before its warning: {res['paused']}"
    acct = res["job_acct"]
    assert [(r["failed"].split()[0], r["exit_status"].split()[0]) for r in acct] == [("25", "99"), ("0", "0")], \
        f"{acct}\n{log[-6000:]}"  # rescheduled by exit 99, then the rerun finished
    assert "USR1 from the scheduler" in log and f"requeued job {job}.1 (requeue 1 of at most 100" in log, log[-4000:]
    train = json.loads((res["limited"] / "stages" / "train.json").read_text())
    assert train["resumed_from"], ("the rerun did not resume from the checkpoint", log[-4000:])
    assert (res["limited"] / "report.json").exists()
    assert (cases.work / "sge-logs" / f".xlt-requeues-{job}.1").read_text() == "1\n"


def test_status_reads_the_runs_and_the_grid_engine_job(cases):
    res = cases.results
    mid = res["status_mid"][0]
    assert mid["state"] == "running" and mid["progress"]["stage"] == "train", mid
    end = res["status_end"]
    assert [r["state"] for r in end] == ["done", "done", "done"], end
    assert all(set(r["stages"].values()) == {"done"} for r in end), end


def test_the_lock_of_a_run_under_way_names_its_grid_engine_job(cases):
    res = cases.results
    ident = res["lock_mid"]["scheduler"]
    assert {k: ident[k] for k in ("scheduler", "job_id", "array_job_id", "array_task_id", "restart_count")} == \
        {"scheduler": "gridengine", "job_id": res["job"], "array_job_id": res["job"], "array_task_id": "1",
         "restart_count": 0}, ident
    assert res["lock_mid"]["slurm"] is None

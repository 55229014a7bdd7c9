"""The fault matrix of issue 40: real launchers (torchrun, `accelerate launch`), CPU, gloo, 2 ranks, each run
by slurm/common.sh's ``xlt_exec`` (as the sbatch scripts run it) with a stub ``scontrol`` on PATH.

{worker crash, the scheduler's USR1} x {set-up, training loop, final save} x {torchrun, accelerate launch}:

* a crash (rank 1 SIGKILLed while loading the model, as the OOM killer does; an exception in the loop or
  in the final save): torch-elastic TERMs rank 0, which stops without a preemption record; the job ends
  failed (the launcher's status), is not requeued, and its log names the failing rank and its error;
* the scheduler's USR1 to the batch shell (``#SBATCH --signal=B:USR1@N``): the trap's notice, then TERM to
  the launcher, forwarded to the workers: a preemption, recorded and requeued.

The faults are injected by a start-up hook in the workers (``sitecustomize``, test-only): both ranks stop
at the place (rank 0 waits there until its stop signal, so that the TERM finds it exactly there); rank 1
crashes there, or both wait for the preemption. The 12 launches run side by side (4 at a time), once per
module; each test checks one case."""

from __future__ import annotations

import concurrent.futures
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.fixtures.scontrol import controller_stub
from tests.training.conftest import write_train_set
from tests.training.test_distributed import ENV, ROOT, _accelerate, _torchrun
from xlt.run.layout import RunDir, run_name

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("fault_matrix")]

ARGS = [
    "+recipe=demo_tiny",
    "training.max_steps=4",
    "training.eval_steps=4",
    "training.logging_steps=1",
    "training.per_device_train_batch_size=4",
    "training.group_by_length=false",
    "training.max_dev_rows=16",
    "model.max_length=64",
    "seed=5",
]
LOOP_STEP = 2  # not a save step
PLACES = ("setup", "loop", "save")
LAUNCHERS = {"torchrun": lambda: _torchrun(2), "accelerate": lambda: _accelerate(2, "--multi_gpu")}
CASES = [
    (kind, place, launcher) for kind in ("crash", "preempt") for place in PLACES for launcher in LAUNCHERS
]

FAULT_HOOK = f"""
import os
if os.environ.get("XLT_FAULT_AT") and "RANK" in os.environ:
    import signal, time
    from pathlib import Path

    _where, _kind, _rank = os.environ["XLT_FAULT_AT"], os.environ["XLT_FAULT"], os.environ["RANK"]

    def _fault():
        from xlt.cluster import signals

        Path(os.environ["XLT_FAULT_DIR"], "at-" + _rank).write_text(str(os.getpid()))
        if _kind == "crash" and _rank == "1":
            if _where == "setup":
                os.kill(os.getpid(), signal.SIGKILL)  # the OOM killer while the model loads
            raise RuntimeError("injected crash of rank 1 in " + _where)
        end = time.time() + 300
        while signals.preemption_requested() is None and time.time() < end:
            time.sleep(0.05)

    if _where == "loop":
        import transformers.trainer_callback as tc

        _real = tc.CallbackHandler.on_step_end

        def on_step_end(self, args, state, control):
            if state.global_step == {LOOP_STEP}:
                _fault()
            return _real(self, args, state, control)

        tc.CallbackHandler.on_step_end = on_step_end
    else:
        import xlt.stages.train as _stage

        _name = "load_model" if _where == "setup" else "save"
        _orig = getattr(_stage, _name)

        def _hooked(*a, **k):
            _fault()
            return _orig(*a, **k)

        setattr(_stage, _name, _hooked)
"""


def _launch(base: Path, train_set: Path, kind: str, place: str, launcher: str, job: int) -> dict:
    """One case through slurm/common.sh; its exit, log, scontrol calls and run directory."""
    case = base / f"{kind}-{place}-{launcher}"
    hook = case / "hook"
    hook.mkdir(parents=True)
    (hook / "sitecustomize.py").write_text(FAULT_HOOK)
    args = [*ARGS, f"run_root={case}"]
    run = RunDir(case / run_name(args))
    run.path.mkdir(parents=True)
    shutil.copytree(train_set, run.train_set)
    bin_dir = controller_stub(case / "bin", case / "scontrol.log")
    env = {
        **ENV,
        "PYTHONPATH": f"{hook}{os.pathsep}{ROOT}",
        "PATH": f"{bin_dir}:{ENV['PATH']}",
        "SLURM_JOB_ID": str(job),
        "SLURM_RESTART_COUNT": "0",
        "XLT_RECORD_DIR": str(case / "records"),
        "XLT_GRACE": "120",
        "XLT_FAULT": kind,
        "XLT_FAULT_AT": place,
        "XLT_FAULT_DIR": str(case),
    }
    cmd = [
        "bash",
        "-c",
        f'source {ROOT}/slurm/common.sh; xlt_exec "$@"; echo "rc=$?"',
        "sbatch-script",
        *LAUNCHERS[launcher](),
        "-m",
        "xlt.finetune",
        *args,
    ]
    t0 = time.time()
    with open(case / "job.log", "w") as log:
        job_proc = subprocess.Popen(
            cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        if kind == "preempt":  # SLURM's warning to the batch shell once both ranks are at the place
            end = time.time() + 600
            while not all((case / f"at-{r}").exists() for r in "01") and job_proc.poll() is None:
                assert time.time() < end, "the ranks never reached " + place
                time.sleep(0.1)
            if job_proc.poll() is None:
                job_proc.send_signal(signal.SIGUSR1)
        job_proc.wait(timeout=600)
    finally:
        if job_proc.poll() is None:
            os.killpg(job_proc.pid, signal.SIGKILL)
    scontrol = case / "scontrol.log"
    return {
        "log": (case / "job.log").read_text(),
        "scontrol": scontrol.read_text() if scontrol.exists() else "",
        "run": run,
        "seconds": time.time() - t0,
        "job": job,
    }


@pytest.fixture(scope="module")
def matrix(tmp_path_factory, request) -> dict:
    """Every case the session runs (all 12, or those ``-k`` selected), launched side by side, once."""
    wanted = {
        item.callspec.params["case"]
        for item in request.session.items
        if item.module is request.module and hasattr(item, "callspec")
    }
    cases = [c for c in CASES if c in wanted]
    base = tmp_path_factory.mktemp("faults")
    data = RunDir(base / "data")
    write_train_set(data, 64, 16)  # built once, copied into every case's run directory
    t0 = time.time()
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        futures = {
            case: pool.submit(_launch, base, data.train_set, *case, 4200 + CASES.index(case))
            for case in cases
        }
        results = {case: f.result() for case, f in futures.items()}
    print(
        f"fault matrix: {len(cases)} launches in {time.time() - t0:.0f} s (4 side by side); per launch: "
        + ", ".join(f"{'-'.join(c)} {r['seconds']:.0f} s" for c, r in results.items())
    )
    return results


def _ids(cases):
    return ["-".join(c[1:]) for c in cases]


CRASHES = [c for c in CASES if c[0] == "crash"]
PREEMPTIONS = [c for c in CASES if c[0] == "preempt"]


@pytest.mark.parametrize("case", CRASHES, ids=_ids(CRASHES))
def test_a_crashed_worker_ends_the_job_failed_without_requeue(matrix, case):
    r = matrix[case]
    log, place = r["log"], case[1]
    assert "rc=1" in log, log[-4000:]  # the launcher's status: the job fails
    assert "requeue" not in r["scontrol"], log[-4000:]
    # The verdict: no stop was sent (the launcher's status alone), or rank 0's record of the TERM the launcher
    # sent says the scheduler did not stop the job (slurm/common.sh reads it; xlt/cluster/requeue.py).
    assert ("and no preemption was sent to it: not requeued" in log
            or re.search(r"job \d+ stopped \(exit status 1\): not a preemption; not requeued", log)), log[-4000:]
    assert not r["run"].preemption.exists() and "xlt: preempted" not in log
    # The failing rank and its error, in torch-elastic's summary and the worker's own traceback.
    assert re.search(r"rank\s*:\s*1 \(local_rank: 1\)", log), log[-4000:]
    if place == "setup":
        assert "Signal 9 (SIGKILL)" in log
    else:
        assert f"RuntimeError: injected crash of rank 1 in {place}" in log
    if place != "loop":  # rank 0 was outside the training loop when the TERM came: stopped, no record
        assert "xlt: stopped (SIGTERM received); " in log and ": not a preemption (" in log, log[-4000:]


@pytest.mark.parametrize("case", PREEMPTIONS, ids=_ids(PREEMPTIONS))
def test_the_schedulers_usr1_is_a_preemption_and_requeued(matrix, case):
    r = matrix[case]
    log, place = r["log"], case[1]
    assert f"requeue {r['job']}" in r["scontrol"], log[-4000:]
    assert "rc=0" in log and "requeueing job" in log
    assert r["run"].preemption.exists(), log[-4000:]  # rank 0 saw the notice: a preemption, recorded
    assert "xlt: preempted" in log and "not a preemption" not in log
    if place == "loop":
        from xlt.training.checkpoints import checkpoint_problem

        assert checkpoint_problem(r["run"].checkpoints / f"checkpoint-{LOOP_STEP}") is None

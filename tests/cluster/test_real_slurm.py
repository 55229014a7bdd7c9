"""xlt's SLURM workflows on a real SLURM cluster (tests/cluster/slurm.py: munge, slurmctld, two slurmd for the
default partition, a third for the preemption partitions, slurmdbd on MariaDB for sacct): xlt's own sbatch
scripts submitted with ``sbatch``, the scheduler's job states waited on, never a stub.

Every case is submitted at once by a module fixture (:class:`Matrix`): the scheduler runs them side by side,
and a case that must act on a running job (preempt it, cancel it, shorten its time limit, signal it) does so
from a thread of its own once the job's training is under way (the step its lock's heartbeat reports). Each
test then waits for its case and asserts the job states, the run directory and the log lines.

Without Debian's ``slurm-wlm`` and ``munge`` the module is skipped, saying so; in CI (``XLT_REQUIRE_SLURM=1``,
set by .ci/run, which installs them) that is a failure.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.cluster import slurm
from xlt.run.lock import read_lock

pytestmark = [pytest.mark.slow, pytest.mark.slurm]

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "xlt" / "assets" / "demo"
# Tiny runs: 30 steps, English and French Belebele (8 questions each), no Global-MMLU or XCOPA. Light steps (batch
# 4, 64 tokens, 16 dev rows; the demo's are 16, 128 and every dev row): these runs check the scheduler's workflows,
# not learning, and what each step costs is multiplied by every job and incarnation of the matrix.
TINY = ["training.max_steps=30", "training.eval_steps=15", "eval.benchmarks.belebele.max_questions=8",
        "eval.benchmarks.belebele.languages=[eng_Latn,fra_Latn]", "eval.benchmarks.global_mmlu.enabled=false",
        "eval.benchmarks.xcopa.enabled=false", "eval.bootstrap_samples=50", "training.per_device_train_batch_size=4",
        "model.max_length=64", "training.max_dev_rows=16"]
# Runs that must still be training when a test acts on them (a preemption, a time limit, scancel): 150 steps,
# paced (PACED), so at least 150 s of training, where the latest action comes about 60 s after step 3 (a time
# limit's warning: SLURM's next check).
LONG = [*TINY[2:], "training.max_steps=150", "training.eval_steps=75"]
# The environment of every run that must outlast SLURM's timers (LONG, and training.max_steps=100000: until the
# scheduler or the test stops it): 1 s of sleep after each step (tests/cluster/slow_steps). Its minutes of waiting
# then cost a few steps' CPU instead of a whole core's (at full speed 500 steps took 17 CPU-s a run, a fifth of
# the matrix's CPU, taken from the cases and the test tiers running beside it); a stop still lands at a step's end,
# at most 1 s later.
PACED = {"XLT_TEST_STEP_SLEEP": "1"}
TTA = ["translate=echo", "stages=[build_data,translate,train,evaluate,report]"]
FINAL = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED", "BOOT_FAIL"}
WAIT_S = 1500.0


def _log(path: Path) -> str:
    return path.read_text(errors="replace") if path.exists() else ""


class Matrix:
    """The cases, run side by side on the clusters (see the module docstring); ``result(name)`` waits for one."""

    def __init__(self, cluster: slurm.Cluster, signalling: slurm.Cluster, work: Path):
        self.cluster, self.signalling, self.work = cluster, signalling, work
        self.logs = work / "slurm-logs"
        self.logs.mkdir(parents=True)
        self.env = {"XLT_HOME": str(REPO), "XLT_PYTHON": sys.executable, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1",
                    "WANDB_MODE": "disabled", "TOKENIZERS_PARALLELISM": "false",
                    # slow_steps: XLT_TEST_STEP_SLEEP paces the runs that must outlast SLURM's timers (PACED)
                    "PYTHONPATH": f"{REPO / 'tests' / 'cluster' / 'slow_steps'}:{REPO}",
                    "XLT_GRACE": "25", "TQDM_DISABLE": "1"}
        self._threads: dict[str, threading.Thread] = {}
        self._results: dict[str, Any] = {}
        self._errors: dict[str, str] = {}
        self.events: dict[str, threading.Event] = {}
        self._compose = threading.Lock()

    # -- plumbing ---------------------------------------------------------------------------------------

    def start(self, name: str, case: Callable[[], Any]) -> None:
        def body() -> None:
            try:
                self._results[name] = case()
            except BaseException:  # noqa: BLE001 - handed to the test that waits for it
                self._errors[name] = traceback.format_exc()

        self._threads[name] = threading.Thread(target=body, name=name, daemon=True)
        self._threads[name].start()

    def result(self, name: str) -> Any:
        self._threads[name].join(WAIT_S)
        if self._threads[name].is_alive():
            raise TimeoutError(f"case {name} still running after {WAIT_S:.0f} s\n{self.cluster.logs()}")
        if name in self._errors:
            raise AssertionError(f"case {name} failed:\n{self._errors[name]}")
        return self._results[name]

    def event(self, name: str) -> threading.Event:
        return self.events.setdefault(name, threading.Event())

    def sbatch(self, *args: str, cluster: slurm.Cluster | None = None, **env: str) -> str:
        return (cluster or self.cluster).sbatch(*args, cwd=self.work, env={**self.env, **env})

    def script(self, name: str, *args: str, **env: str) -> str:
        # Generous: the scripts compose recipes (python -m xlt.cluster ...), seconds each on a loaded machine.
        proc = self.cluster.run("bash", str(REPO / "slurm" / name), *args, cwd=self.work, env={**self.env, **env},
                                timeout=900)
        return proc.stdout

    def run_dir(self, *args: str) -> Path:
        from xlt.cluster.sweeps import run_dir

        with self._compose:  # Hydra's composition is global state: one thread at a time
            return Path(run_dir(list(args)))

    def wait_training(self, run: Path, job: str, cluster: slurm.Cluster | None = None, min_step: int = 3,
                      restart: str = "0", timeout: float = WAIT_S) -> dict[str, Any]:
        """Wait until the run's lock reports its training at ``min_step`` or later, in incarnation ``restart``."""
        cluster = cluster or self.cluster
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            snap = read_lock(run / "locks" / "run.json") if (run / "locks" / "run.json").exists() else None
            info = snap.info if snap is not None else None
            prog = (info or {}).get("progress") or {}
            if info and (info.get("slurm") or {}).get("restart_count") == restart and prog.get("stage") == "train" \
                    and (prog.get("step") or 0) >= min_step:
                return info
            state = cluster.job(job).get("JobState")
            if state in FINAL:
                raise AssertionError(f"job {job} ended ({state}) before its training was under way")
            time.sleep(1)
        raise TimeoutError(f"job {job}: no training step {min_step} in {run} after {timeout:.0f} s")

    def wait(self, job: str, cluster: slurm.Cluster | None = None, until=None) -> list[dict[str, str]]:
        return (cluster or self.cluster).wait(job, WAIT_S, until)


def _ids(text: str, *labels: str) -> list[str]:
    """The job ids printed after each label (``evaluation array: 12 ...``)."""
    out = []
    for label in labels:
        found = re.search(rf"{label}:? (\d+)", text)
        assert found, f"no job id after {label!r} in {text!r}"
        out.append(found.group(1))
    return out


# -- the cases -------------------------------------------------------------------------------------------------

def case_sweep(m: Matrix) -> dict[str, Any]:
    sweep = m.work / "sweep.txt"
    sweep.write_text("# two runs of the tiny recipe\n" + "".join(f"+recipe=demo_tiny seed={s} {' '.join(TINY)}\n"
                                                                 for s in (1, 2)))
    root = f"run_root={m.work / 'runs_sweep'}"
    job = m.sbatch("--array=1-2%1", str(REPO / "slurm" / "train_array.sbatch"), str(sweep), root)
    recs = m.wait(job)
    runs = [m.run_dir("+recipe=demo_tiny", f"seed={s}", *TINY, root) for s in (1, 2)]
    return {"job": job, "records": recs, "runs": runs}


def case_eval(m: Matrix) -> dict[str, Any]:
    args = ["+recipe=demo_tiny", "seed=11", *TINY, f"run_root={m.work / 'runs_eval'}"]
    train = m.sbatch(str(REPO / "slurm" / "stage.sbatch"), "train", *args, "stages=[build_data,train]")
    assert m.wait(train)[0]["JobState"] == "COMPLETED", _log(m.logs / f"xlt-stage-{train}.err")
    run = m.run_dir(*args)
    m._results["trained"] = run
    m.event("trained").set()
    out = m.script("submit_eval.sh", "-n", "2", *args)
    array, report = _ids(out, "evaluation array", "report")
    return {"run": run, "array": m.wait(array), "report": m.wait(report), "ids": (array, report), "out": out}


def case_eval_fails(m: Matrix) -> dict[str, Any]:
    bad = m.work / "bad_belebele"
    shutil.copytree(DEMO / "belebele", bad)
    (bad / "data" / "fra_Latn.jsonl").write_bytes(b'{"link": "x", "question_number": \xff\xfe not JSON\n')
    assert m.event("trained").wait(WAIT_S)
    model = m._results["trained"] / "model"
    args = ["+recipe=demo_tiny", *TINY, f"run_root={m.work / 'runs_bad'}", f"eval.model='{model}'",  # quoted for Hydra (',' and '=' in the path)
            f"eval.benchmarks.belebele.path={bad}"]
    out = m.script("submit_eval.sh", "-n", "2", *args)
    array, report = _ids(out, "evaluation array", "report")
    recs = m.wait(array)
    report_recs = m.wait(report)
    time.sleep(3)
    pending = m.cluster.run("squeue", "-h", "-j", f"{array},{report}", "-o", "%i %T %r", check=False).stdout
    return {"array": recs, "report": report_recs, "ids": (array, report), "pending": pending.strip()}


def case_translate(m: Matrix) -> dict[str, Any]:
    args = ["+recipe=demo_tiny", "seed=12", *TINY, *TTA, f"run_root={m.work / 'runs_tta'}"]
    out = m.script("submit_translate.sh", "-n", "2", *args)
    data, tr, run_job = _ids(out, "build_data", "translation array", "train\\+evaluate\\+report")
    return {"run": m.run_dir(*args), "states": {j: m.wait(j) for j in (data, tr, run_job)}, "out": out}


def case_paper(m: Matrix) -> dict[str, Any]:
    sweep = m.work / "paper_tiny.txt"
    sweep.write_text(f"+recipe=demo_tiny seed=21 {' '.join(TINY)}\n"
                     f"+recipe=demo_tiny seed=21 {' '.join(TINY)} {' '.join(TTA)}\n")
    root = m.work / "runs_paper"
    out = m.script("paper_sweep.sh", "-n", "2", "-j", "2", f"run_root={root}", XLT_SWEEP=str(sweep),
                   XLT_TRANSLATION_CACHE=str(m.work / "translation_cache"))
    jobs = re.findall(r"(?:build_data|array|training array|comparison):? (\d+)", out)
    states = {j: m.wait(j) for j in jobs}
    # the plan names the comparison after the sweep file: <run_root>/<sweep name>_compare
    return {"out": out, "states": states, "compare": root / "paper_tiny_compare" / "compare.md"}


def case_time_limit(m: Matrix) -> dict[str, Any]:
    """A time limit: once training is under way the limit is brought near (``scontrol update TimeLimit``, as an
    admin would; the job's own ``--signal=B:USR1@110``): SLURM's warning, checkpoint, requeue; the requeued job
    gets its limit back and resumes."""
    args = ["+recipe=demo_tiny", "seed=3", *LONG]
    limited = [*args, f"run_root={m.work / 'runs_limit'}"]
    # The run directories first: composing waits for the other cases' compositions (one at a time), and a job
    # submitted before that wait could finish its training before this case looks.
    run, plain_run = m.run_dir(*limited), m.run_dir(*args, f"run_root={m.work / 'runs_plain'}")
    job = m.sbatch("--time=00:10:00", "--signal=B:USR1@110", str(REPO / "slurm" / "stage.sbatch"), "train", *limited,
                   **PACED)
    plain = m.sbatch(str(REPO / "slurm" / "stage.sbatch"), "train", *args, f"run_root={m.work / 'runs_plain'}", **PACED)
    m.wait_training(run, job)
    elapsed = _seconds(m.cluster.job(job)["RunTime"])
    minutes = math.ceil((elapsed + 70) / 60)  # the limit 70-130 s away: within the 110 s warning at the next check
    m.cluster.run("scontrol", "update", f"JobId={job}", f"TimeLimit={minutes}")
    m.wait(job, until=lambda recs: int(recs[0]["Restarts"]) >= 1)
    m.cluster.run("scontrol", "update", f"JobId={job}", "TimeLimit=00:10:00")
    return {"run": run, "plain": plain_run, "job": job,
            "records": m.wait(job), "plain_records": m.wait(plain), "limit_minutes": minutes}


def _seconds(runtime: str) -> int:
    days, _, hms = runtime.rpartition("-")
    h, mi, s = (int(x) for x in hms.split(":"))
    return int(days or 0) * 86400 + h * 3600 + mi * 60 + s


def _preempt(m: Matrix, cluster: slurm.Cluster, name: str, partition: str, node: str) -> dict[str, Any]:
    """A training in a low-priority partition, preempted once under way by a job of the ``high`` partition that
    needs its node."""
    args = ["+recipe=demo_tiny", "seed=4", *LONG, f"run_root={m.work / f'runs_{name}'}"]
    run = m.run_dir(*args)
    try:
        if name == "mode_requeue":  # the run `xlt status` sees preempted: submitted once the status case's busy
            assert m.event("busy_training").wait(WAIT_S)  # run trains (never training while it waits)
        job = m.sbatch("-p", partition, str(REPO / "slurm" / "stage.sbatch"), "train", *args, cluster=cluster, **PACED)
        m.wait_training(run, job, cluster=cluster)
        high = m.sbatch("-p", "high", "-w", node, "--exclusive", "--job-name=urgent", "--wrap", "sleep 30",
                        cluster=cluster)
        recs = m.wait(job, cluster=cluster, until=lambda r: int(r[0]["Restarts"]) >= 1)
        m._results[f"{name}_preempted"] = {"run": run, "job": job}
    finally:  # a case waiting for this one never waits for ever
        m.event(f"{name}_preempted").set()
    return {"run": run, "job": job, "high": high, "at_preemption": recs, "records": m.wait(job, cluster=cluster),
            "high_records": m.wait(high, cluster=cluster)}


# name -> (cluster: "a" plain, "b" with the user signal at preemption; partition; node). Every partition but
# lownograce has a GraceTime well above KillWait (tests/cluster/slurm.py).
PREEMPTIONS = {"mode_requeue": ("a", "low", "n3"), "mode_cancel": ("a", "lowcancel", "n4"),
               "mode_requeue_nograce": ("a", "lownograce", "n7"),
               "mode_requeue_user_signal": ("b", "low", "n3"), "mode_cancel_user_signal": ("b", "lowcancel", "n4")}


def case_cancel(m: Matrix) -> dict[str, Any]:
    args = ["+recipe=demo_tiny", "seed=5", *LONG, f"run_root={m.work / 'runs_cancel'}"]
    run = m.run_dir(*args)  # before the job: composing may wait for the other cases
    job = m.sbatch(str(REPO / "slurm" / "stage.sbatch"), "train", *args, **PACED)
    m.wait_training(run, job)
    m.cluster.run("scancel", job)
    recs = m.wait(job)
    time.sleep(20)  # a requeue would show by now (cred_expire is 10 s here)
    return {"run": run, "job": job, "records": recs, "later": m.cluster.job(job)}


def case_crash(m: Matrix) -> dict[str, Any]:
    args = ["+recipe=demo_tiny", *TINY, f"run_root={m.work / 'runs_crash'}", f"eval.model={m.work / 'no_such_model'}"]
    job = m.sbatch(str(REPO / "slurm" / "stage.sbatch"), "evaluate", *args)
    return {"run": m.run_dir(*args), "job": job, "records": m.wait(job)}


def case_cap(m: Matrix) -> dict[str, Any]:
    """The requeue cap against the scheduler's own restart count: the scheduler's USR1 twice (``scancel
    --batch --signal=USR1``), XLT_MAX_REQUEUES=1: requeued once, then not."""
    args = ["+recipe=demo_tiny", "seed=6", *LONG, f"run_root={m.work / 'runs_cap'}"]
    run = m.run_dir(*args)  # before the job: composing may wait for the other cases
    job = m.sbatch(str(REPO / "slurm" / "stage.sbatch"), "train", *args, XLT_MAX_REQUEUES="1", **PACED)
    m.wait_training(run, job)
    m.cluster.run("scancel", "--batch", "--signal=USR1", job)
    m.wait(job, until=lambda r: int(r[0]["Restarts"]) >= 1)
    m.wait_training(run, job, restart="1", min_step=1)
    m.cluster.run("scancel", "--batch", "--signal=USR1", job)
    return {"run": run, "job": job, "records": m.wait(job)}


def case_hydra(m: Matrix) -> dict[str, Any]:
    root = m.work / "runs_hydra"
    cmd = [sys.executable, "-m", "xlt.train", "-m", "+recipe=demo_tiny", "seed=31,32", *TINY, f"run_root={root}",
           "hydra/launcher=slurm", "hydra.launcher.partition=main", "hydra.launcher.cpus_per_task=1",
           "hydra.launcher.mem_gb=4", "hydra.launcher.timeout_min=20"]
    proc = subprocess.run(cmd, cwd=m.work, env={**m.cluster.env, **m.env}, capture_output=True, text=True,
                          timeout=WAIT_S)
    sacct = m.cluster.run("sacct", "-n", "-X", "-P", "-o", "JobID,JobName,State,ExitCode", check=False).stdout
    return {"proc": proc, "root": root, "sacct": sacct,
            "runs": [m.run_dir("+recipe=demo_tiny", f"seed={s}", *TINY, f"run_root={root}") for s in (31, 32)]}


def case_hydra_timeout(m: Matrix) -> dict[str, Any]:
    """Hydra's slurm launcher: an element brought near its time limit once training is under way (as in
    :func:`case_time_limit`): submitit's USR2, its requeue, and the requeued element resumes from the last
    checkpoint."""
    root = m.work / "runs_hydra_timeout"
    # 300 steps: the action comes after step 110, and about 60 s later its warning
    args = ["+recipe=demo_tiny", "seed=34", *LONG[:-2], "training.max_steps=300", "training.eval_steps=100",
            f"run_root={root}"]
    run = m.run_dir(*args)  # before the job: composing may wait for the other cases
    cmd = [sys.executable, "-m", "xlt.train", "-m", *args, "hydra/launcher=slurm", "hydra.launcher.partition=main",
           "hydra.launcher.cpus_per_task=1", "hydra.launcher.mem_gb=4", "hydra.launcher.timeout_min=10",
           "hydra.launcher.signal_delay_s=110", "hydra.launcher.name=xlt-timeout"]
    proc = subprocess.Popen(cmd, cwd=m.work, env={**m.cluster.env, **m.env, **PACED}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        job = ""
        deadline = time.monotonic() + WAIT_S
        while not job and time.monotonic() < deadline and proc.poll() is None:
            job = m.cluster.run("squeue", "-h", "-n", "xlt-timeout", "-o", "%i", check=False).stdout.strip()
            time.sleep(1)
        assert job, f"no job of the multirun in the queue: {proc.communicate()}"
        m.wait_training(run, job, min_step=110)  # past the first regular checkpoint (step 100)
        minutes = math.ceil((_seconds(m.cluster.job(job)["RunTime"]) + 70) / 60)
        m.cluster.run("scontrol", "update", f"JobId={job}", f"TimeLimit={minutes}")
        m.wait(job, until=lambda recs: int(recs[0]["Restarts"]) >= 1)
        m.cluster.run("scontrol", "update", f"JobId={job}", "TimeLimit=00:10:00")
        out, err = proc.communicate(timeout=WAIT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
    logs = "\n".join(_log(p) for p in sorted(root.rglob("*_log.err")))
    return {"returncode": proc.returncode, "stderr": err, "job": job, "records": m.wait(job), "run": run,
            "logs": logs}


# -- the production cluster's cases (issue 53) ------------------------------------------------------------------

MULTI = ["--nodes=2", "--gpus-per-node=1", "--cpus-per-task=2", "--mem=8G"]


def _affinity_python(m: Matrix, name: str) -> str:
    """An XLT_PYTHON that notes the CPUs each process may run on (its node, its step), then is python."""
    path = m.work / f"python-{name}"
    path.write_text(f"#!/bin/bash\necho \"${{SLURMD_NODENAME:-?}} ${{SLURM_STEP_ID:-batch}} $(grep Cpus_allowed_list "
                    f"/proc/self/status | cut -f2)\" >> {m.work / f'affinity-{name}.txt'}\nexec {sys.executable} \"$@\"\n")
    path.chmod(0o755)
    return str(path)


def case_multi_stop(m: Matrix, name: str) -> dict[str, Any]:
    """The multi-node script on two nodes, stopped once training is under way: the scheduler's warning
    (``scancel --batch --signal=USR1``, what ``--signal=B:USR1@N`` sends), a preemption with a GraceTime
    (lowmulti, n5+n6: TERM to the step's processes on both nodes), or scancel."""
    root = m.work / f"runs_{name}"
    args = ["+recipe=demo_tiny", "seed=14", *LONG, f"run_root={root}"]
    part = ["-p", "lowmulti"] if name == "multi_preempt" else []
    # XLT_GRACE (and torch-elastic's shutdown timeout): room for two ranks to save and exit on a loaded machine
    run = m.run_dir(*args)  # before the job: composing may wait for the other cases
    job = m.sbatch(*part, *MULTI, str(REPO / "slurm" / "train_multinode.sbatch"), *args,
                   XLT_PYTHON=_affinity_python(m, name), XLT_GRACE="150", **PACED)
    m.wait_training(run, job, min_step=3)
    high = ""
    if name == "multi_warning":
        m.cluster.run("scancel", "--batch", "--signal=USR1", job)
    elif name == "multi_preempt":
        high = m.sbatch("-p", "high", "-N2", "-w", "n5,n6", "--exclusive", "--job-name=urgent", "--wrap", "sleep 20")
    else:
        m.cluster.run("scancel", job)
    m.wait(job, until=lambda r: int(r[0]["Restarts"]) >= 1 or r[0]["JobState"] in FINAL)
    at_stop = {"preempted": json.loads((run / "preempted.json").read_text()) if (run / "preempted.json").exists()
               else None, "checkpoints": sorted(p.name for p in (run / "checkpoints").glob("checkpoint-*"))
               if (run / "checkpoints").exists() else []}
    if name == "multi_cancel":
        time.sleep(20)  # a requeue would show by now (cred_expire is 10 s here)
    return {"run": run, "job": job, "high": high, "at_stop": at_stop, "records": m.wait(job),
            "affinity": _log(m.work / f"affinity-{name}.txt")}


def case_no_requeue(m: Matrix) -> dict[str, Any]:
    """``sbatch --no-requeue`` (as a site's job_submit plugin may force), submitted from another folder without
    XLT_HOME; the scheduler's warning: SLURM refuses the requeue, the job must fail, saying what to do."""
    args = ["+recipe=demo_tiny", "seed=7", *LONG[:-2], "training.max_steps=100000", "training.eval_steps=100000",
            f"run_root={m.work / 'runs_norequeue'}"]
    job = m.sbatch("--no-requeue", str(REPO / "slurm" / "stage.sbatch"), "train", *args, XLT_HOME="",
                   **PACED)
    run = m.run_dir(*args)
    m.wait_training(run, job)
    m.cluster.run("scancel", "--batch", "--signal=USR1", job)
    return {"run": run, "job": job, "records": m.wait(job)}


def case_cancel_in_grace(m: Matrix) -> dict[str, Any]:
    """scancel while xlt checkpoints after the scheduler's warning: never undone by xlt's requeue."""
    args = ["+recipe=demo_tiny", "seed=8", *LONG[:-2], "training.max_steps=100000", "training.eval_steps=100000",
            f"run_root={m.work / 'runs_cancel_grace'}"]
    run = m.run_dir(*args)  # before the job: composing may wait for the other cases
    job = m.sbatch(str(REPO / "slurm" / "stage.sbatch"), "train", *args, **PACED)
    m.wait_training(run, job)
    m.cluster.run("scancel", "--batch", "--signal=USR1", job)
    time.sleep(0.5)
    m.cluster.run("scancel", job)
    recs = m.wait(job)
    time.sleep(20)  # a requeue would show by now
    return {"run": run, "job": job, "records": recs, "later": m.cluster.job(job)}


def case_silent_controller(m: Matrix) -> dict[str, Any]:
    """A preemption with a GraceTime while the controller is paused (SIGSTOP) for 75 s: xlt checkpoints without
    it, asks it for a bounded time, then ends the job failed, checkpoint kept, "resubmit". On the user-signal
    cluster, once its other cases are done (the pause stops them all)."""
    c = m.signalling
    args = ["+recipe=demo_tiny", "seed=9", *LONG[:-2], "training.max_steps=100000", "training.eval_steps=100000",
            f"run_root={m.work / 'runs_silent'}"]
    # n5 (lowmulti: REQUEUE with a GraceTime of 120 s) is this case's alone on this cluster; the controller is
    # back (75 s) before the grace ends, when SLURM would requeue the job itself: by then the job has ended.
    # Submitted once the cluster's other cases are done (the pause stops them all): never training while it waits.
    run = m.run_dir(*args)
    for other in ("mode_requeue_user_signal", "mode_cancel_user_signal"):
        m._threads[other].join(WAIT_S)
    job = m.sbatch("-p", "lowmulti", "-w", "n5", str(REPO / "slurm" / "stage.sbatch"), "train", *args, cluster=c,
                   XLT_REQUEUE_WAIT_S="15", **PACED)
    m.wait_training(run, job, cluster=c)
    ctld = next(p for p in c.procs if "slurmctld" in str(p.args[0]))
    high = m.sbatch("-p", "high", "-w", "n5", "--exclusive", "--job-name=urgent", "--wrap", "sleep 5", cluster=c)
    deadline = time.monotonic() + 120
    while c.job(job).get("PreemptTime", "None") == "None" and time.monotonic() < deadline:
        time.sleep(0.5)
    preempt_time = c.job(job).get("PreemptTime")
    ctld.send_signal(signal.SIGSTOP)
    try:
        time.sleep(75)
    finally:
        ctld.send_signal(signal.SIGCONT)
    return {"run": run, "job": job, "high": high, "preempt_time": preempt_time, "records": m.wait(job, cluster=c)}


MORE = {"multi_warning": lambda m: case_multi_stop(m, "multi_warning"),
        "multi_preempt": lambda m: case_multi_stop(m, "multi_preempt"),
        "multi_cancel": lambda m: case_multi_stop(m, "multi_cancel"),
        "no_requeue": case_no_requeue, "cancel_in_grace": case_cancel_in_grace,
        "silent_controller": case_silent_controller}


def case_status(m: Matrix) -> dict[str, Any]:
    """`xlt status` in the middle of it all: one run running, one preempted, one failed, one done."""
    args = ["+recipe=demo_tiny", "seed=40", *LONG[:-2], "training.max_steps=100000", f"run_root={m.work / 'runs_busy'}"]
    held, busy = "", ""
    try:
        try:
            # The finished and failed runs first, then the busy run (it trains until this case cancels it: the
            # shorter that is, the less of the machine it takes from the other cases).
            runs = [str(m.result("sweep")["runs"][0]), str(m.result("crash")["run"]), str(m.run_dir(*args))]
            busy = m.sbatch(str(REPO / "slurm" / "stage.sbatch"), "train", *args, **PACED)
            m.wait_training(Path(runs[2]), busy)
        finally:
            m.event("busy_training").set()
        assert m.event("mode_requeue_preempted").wait(WAIT_S) and "mode_requeue_preempted" in m._results
        preempted = m._results["mode_requeue_preempted"]
        # Held while `xlt status` looks (a user's `scontrol hold`): the preempted run stays pending, however long
        # the two calls take on a loaded machine; released after.
        m.cluster.run("scontrol", "hold", preempted["job"])
        held = preempted["job"]
        # A requeued job is COMPLETING until its processes are gone (KillWait on a loaded node): looked at once it
        # is back in the queue, PENDING.
        m.wait(held, until=lambda recs: recs[0]["JobState"] == "PENDING")
        runs = [runs[0], str(preempted["run"]), *runs[1:]]
        cmd = [sys.executable, "-m", "xlt", "status", *runs]
        env = {**m.cluster.env, **m.env}
        data = subprocess.run([*cmd, "--json"], env=env, capture_output=True, text=True, timeout=300)
        squeue = m.cluster.run("squeue", "-h", "-o", "%i %P %T %r").stdout
        text = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    finally:
        if busy:
            m.cluster.run("scancel", busy, check=False)
        if held:
            m.cluster.run("scontrol", "release", held, check=False)
    return {"text": text, "json": data, "runs": runs, "squeue": squeue}


CASES = {"sweep": case_sweep, "eval": case_eval, "eval_fails": case_eval_fails, "translate": case_translate,
         "paper": case_paper, "time_limit": case_time_limit, "cancel": case_cancel, "crash": case_crash,
         "cap": case_cap, "hydra": case_hydra, "hydra_timeout": case_hydra_timeout}


def cpu_by_job(cluster: slurm.Cluster) -> str:
    """What each job of the accounting cluster cost in CPU seconds (sacct's TotalCPU, every incarnation of a
    requeued job, its steps summed), the costliest first: where the matrix's share of CI's two cores goes."""
    if not cluster.has_accounting:
        return ""
    # Without -X: the allocation's own line carries no CPU (sacct sums the steps only when it lists them); the
    # steps' lines (``12.batch``, ``12.0``) are summed per incarnation (-D: a requeued job's earlier ones too).
    out = cluster.run("sacct", "-n", "-P", "-D", "-o", "JobID,JobName,TotalCPU,Elapsed,State", check=False).stdout
    jobs: dict[tuple[str, int], list] = {}
    for n, line in enumerate(out.splitlines()):
        job, name, cpu, elapsed, state = (line.split("|") + [""] * 5)[:5]
        base, dot, _ = job.partition(".")
        if not dot:
            jobs[(base, n)] = [0.0, f"{base} {name} {elapsed} {state}"]
            continue
        days, _, hms = cpu.rpartition("-")
        parts = [float(x) for x in hms.split(":")] if hms else [0.0]
        owner = max((k for k in jobs if k[0] == base), key=lambda k: k[1], default=None)
        if owner is not None:
            jobs[owner][0] += int(days or 0) * 86400 + sum(v * 60 ** i for i, v in enumerate(reversed(parts)))
    rows = sorted(jobs.values(), key=lambda r: -r[0])
    return (f"\n== CPU of the plain cluster's jobs (sacct TotalCPU; all: {sum(r[0] for r in rows):.0f} CPU-s)\n"
            + "\n".join(f"{cpu:7.1f} CPU-s  {what}" for cpu, what in rows))


@pytest.fixture(scope="module")
def matrix():
    missing = slurm.missing()
    if missing:
        why = f"SLURM is not installed here (missing {', '.join(missing)}): apt-get install slurm-wlm munge"
        if os.environ.get("XLT_REQUIRE_SLURM") == "1":
            pytest.fail(why)
        pytest.skip(why)
    # A folder of its own, not pytest's basetemp: pytest removes old basetemps while another session runs
    # (the slow tier beside this one), and the daemons live for the whole module.
    root = Path(tempfile.mkdtemp(prefix="xlt-slurm-"))
    os.chmod(root, 0o755)
    cluster = slurm.Cluster(root / "a")
    signalling = slurm.Cluster(root / "b", send_user_signal=True, accounting=False, first_job_id=50000)
    try:
        cluster.start()
        signalling.start()
        m = Matrix(cluster, signalling, root / "work")
        for name, (which, partition, node) in PREEMPTIONS.items():
            m.start(name, lambda name=name, c=cluster if which == "a" else signalling, p=partition, n=node:
                    _preempt(m, c, name, p, n))
        for name, case in {**CASES, **MORE}.items():
            m.start(name, lambda case=case: case(m))
        m.start("status", lambda: case_status(m))
        yield m
    finally:
        # What the scheduler recorded of every job of the matrix (for the closing note and a failure's reading).
        for name, c in (("the plain cluster", cluster), ("the user-signal cluster", signalling)):
            print(f"\n== SLURM jobs of the matrix, {name} (scontrol)\n" + "\n".join(
                f"{r.get('JobId')} {r.get('JobName')} {r.get('Partition')} {r.get('JobState')} {r.get('Reason')} "
                f"ExitCode={r.get('ExitCode')} Restarts={r.get('Restarts')}" for r in c.jobs("")))
        print(cpu_by_job(cluster))
        signalling.stop()
        cluster.stop()
        if not os.environ.get("XLT_KEEP_SLURM_DIR"):
            shutil.rmtree(root, ignore_errors=True)


def _state(recs: list[dict[str, str]]) -> list[str]:
    return [r["JobState"] for r in recs]


def _err(m: Matrix, pattern: str) -> str:
    return "\n".join(_log(p) for p in sorted(m.logs.glob(pattern)))


def _train(run: Path) -> dict[str, Any]:
    return json.loads((run / "stages" / "train.json").read_text())


# -- the tests -----------------------------------------------------------------------------------------------

def test_a_sweep_runs_as_a_throttled_array(matrix):
    res = matrix.result("sweep")
    recs = sorted(res["records"], key=lambda r: int(r["ArrayTaskId"]))
    assert _state(recs) == ["COMPLETED", "COMPLETED"], matrix.cluster.logs()
    assert recs[1]["StartTime"] >= recs[0]["EndTime"], "%1: the second run started before the first ended"
    for run in res["runs"]:
        assert (run / "report.json").exists(), run
    assert "running:" in _err(matrix, f"xlt-train-{res['job']}_*.err")


def test_an_evaluation_array_and_its_report(matrix):
    res = matrix.result("eval")
    assert _state(res["array"]) == ["COMPLETED", "COMPLETED"] and _state(res["report"]) == ["COMPLETED"], res["out"]
    assert {p.stem for p in (res["run"] / "eval" / "belebele").glob("*.json")} >= {"eng_Latn", "fra_Latn"}
    assert (res["run"] / "report.md").exists()


def test_a_failed_shard_leaves_no_job_of_the_chain_pending(matrix):
    res = matrix.result("eval_fails")
    array, report = res["ids"]
    states = sorted(_state(res["array"]))
    assert states == ["COMPLETED", "FAILED"], res
    assert _state(res["report"]) == ["CANCELLED"] and "Dependency" in res["report"][0]["Reason"], res["report"]
    assert res["pending"] == "", f"jobs of the chain still queued: {res['pending']}"
    failed = next(r for r in res["array"] if r["JobState"] == "FAILED")
    log = _log(matrix.logs / f"xlt-eval-{array}_{failed['ArrayTaskId']}.err")
    assert f"job {array}_{failed['ArrayTaskId']} failed (exit status 2)" in log, log[-3000:]
    assert "fra_Latn" in log and "xlt: error" in log, log[-3000:]


def test_translate_train_all_as_a_chain(matrix):
    res = matrix.result("translate")
    assert all(_state(r) and set(_state(r)) == {"COMPLETED"} for r in res["states"].values()), res
    assert (res["run"] / "report.json").exists()
    assert {p.name for p in (res["run"] / "data" / "translated").iterdir() if not p.name.startswith(".")} >= \
        {"fra_Latn", "deu_Latn"}


def test_the_paper_sweep_end_to_end(matrix):
    res = matrix.result("paper")
    assert len(res["states"]) == 4, res["out"]  # build_data, translation array, training array, comparison
    for job, recs in res["states"].items():
        assert set(_state(recs)) == {"COMPLETED"}, (job, recs)
    assert res["compare"].exists(), res["out"]


def test_a_time_limit_requeues_and_resumes_to_the_same_model(matrix):
    res = matrix.result("time_limit")
    rec = res["records"][0]
    assert rec["JobState"] == "COMPLETED" and rec["Restarts"] == "1", rec
    log = _log(matrix.logs / f"xlt-stage-{res['job']}.err")
    assert "USR1 from the scheduler" in log and f"requeueing job {res['job']} (requeue 1 of at most" in log, log[-4000:]
    assert _train(res["run"])["resumed_from"], "the requeued job did not resume from the checkpoint"
    assert res["plain_records"][0]["JobState"] == "COMPLETED"
    assert (res["run"] / "model" / "model.safetensors").read_bytes() == \
        (res["plain"] / "model" / "model.safetensors").read_bytes()


@pytest.mark.parametrize("name", list(PREEMPTIONS))
def test_a_partition_preemption_is_logged_as_one_and_resumes(matrix, name):
    """With a GraceTime (REQUEUE or CANCEL mode): SLURM's first TERM goes to the job's steps only; the sentinel
    step tells the batch shell at once (USR2), or with the user signal the job's own B:USR1 comes: xlt
    checkpoints within the grace and requeues the job itself (SLURM would kill or requeue it only at the grace's
    end). Without a grace (lownograce): TERM to every process, SLURM requeues; xlt does not requeue again."""
    res = matrix.result(name)
    rec = res["records"][0]
    log = _log(matrix.logs / f"xlt-stage-{res['job']}.err")
    assert rec["JobState"] == "COMPLETED" and rec["Restarts"] == "1", (rec, log[-4000:])  # requeued once, never twice
    assert res["high_records"][0]["JobState"] == "COMPLETED"
    if name == "mode_requeue_nograce":  # SIGTERM: the scheduler says why, and requeues the job itself
        # Rank 0 asks after its checkpoint and says why; the batch shell's verdict repeats it when it finishes
        # inside KillWait (its SIGKILL can come first on a loaded machine: the checkpoint is what must be in time).
        assert "DUE TO PREEMPTION" in log and "SLURM requeued it" in log, log[-4000:]
        assert "requeueing job" not in log, log[-4000:]
    else:
        if name.endswith("user_signal"):  # SlurmctldParameters=preempt_send_user_signal: B:USR1 at the grace's start
            assert "USR1 from the scheduler" in log, log[-4000:]
        else:
            assert "USR2 from the sentinel step: a preemption's grace time began" in log, log[-4000:]
        assert "DUE TO PREEMPTION" not in log, log[-4000:]  # stopped before the grace's end
        assert f"requeueing job {res['job']} (requeue 1 of at most" in log, log[-4000:]
    assert "not a preemption" not in log, log[-4000:]
    assert "xlt: preempted" in log
    assert _train(res["run"])["resumed_from"], "not resumed from the checkpoint saved at the signal"
    assert not (res["run"] / "preempted.json").exists()


def test_scancel_is_not_requeued(matrix):
    res = matrix.result("cancel")
    assert res["records"][0]["JobState"] == "CANCELLED" and res["later"]["JobState"] == "CANCELLED", res
    assert res["later"]["Restarts"] == "0"
    log = _log(matrix.logs / f"xlt-stage-{res['job']}.err")
    # rank 0's answer (after its checkpoint), and the batch shell's when it ran before KillWait's KILL
    assert "cancelled: not a preemption" in log and "requeueing job" not in log, log[-3000:]
    failure = json.loads((res["run"] / "failed.json").read_text())
    assert failure["exit_status"] == 143 and "cancelled" in failure["error"]


def test_a_crash_is_not_requeued_and_its_error_is_in_the_log(matrix):
    res = matrix.result("crash")
    rec = res["records"][0]
    assert rec["JobState"] == "FAILED" and rec["ExitCode"] == "2:0" and rec["Restarts"] == "0", rec
    log = _log(matrix.logs / f"xlt-stage-{res['job']}.err")
    assert "xlt: error" in log and f"job {res['job']} failed (exit status 2)" in log, log[-3000:]
    assert json.loads((res["run"] / "failed.json").read_text())["exit_status"] == 2


def test_the_requeue_cap_counts_the_schedulers_restarts(matrix):
    res = matrix.result("cap")
    rec = res["records"][0]
    assert rec["JobState"] == "FAILED" and rec["Restarts"] == "1", rec
    log = _log(matrix.logs / f"xlt-stage-{res['job']}.err")
    assert "requeue 1 of at most 1" in log and "the cap (XLT_MAX_REQUEUES=1): not requeued again" in log, log[-3000:]


def test_a_hydra_multirun_through_submitit(matrix):
    res = matrix.result("hydra")
    assert res["proc"].returncode == 0, res["proc"].stderr[-4000:]
    assert "Bypassing sacct error" not in res["proc"].stderr  # the job states are the scheduler's own (slurmdbd)
    for run in res["runs"]:
        assert (run / "report.json").exists(), run
    assert re.search(r"_0\|xlt\|COMPLETED\|0:0", res["sacct"]) and re.search(r"_1\|xlt\|COMPLETED\|0:0", res["sacct"]), \
        res["sacct"]


def test_a_hydra_element_at_its_time_limit_is_requeued_by_submitit_and_resumes(matrix):
    res = matrix.result("hydra_timeout")
    assert res["returncode"] == 0, res["stderr"][-4000:]
    rec = res["records"][0]
    assert rec["JobState"] == "COMPLETED" and rec["Restarts"] == "1", rec
    assert "Requeued job" in res["logs"] or "requeue" in res["logs"].lower(), res["logs"][-4000:]
    assert _train(res["run"])["resumed_from"], "the requeued element did not resume from a checkpoint"


def test_status_in_the_middle_of_a_sweep(matrix):
    res = matrix.result("status")
    assert res["json"].returncode == 0 and res["text"].returncode == 0, res["json"].stderr + res["text"].stderr
    data = json.loads(res["json"].stdout)
    assert data["summary"] == {"runs": 4, "states": {"failed": 1, "preempted": 1, "running": 1, "done": 1}}, data
    by_run = dict(zip(["done", "preempted", "failed", "running"], data["runs"], strict=True))
    assert by_run["done"]["state"] == "done" and by_run["done"]["accuracy"]["belebele"] >= 0, by_run["done"]
    assert set(by_run["done"]["stages"].values()) == {"done"}, by_run["done"]
    assert by_run["preempted"]["state"] == "preempted" and by_run["preempted"]["requeues"] == 1, \
        (by_run["preempted"], res["squeue"])
    assert "PENDING" in by_run["preempted"]["detail"], by_run["preempted"]
    assert by_run["failed"]["state"] == "failed" and by_run["failed"]["exit_status"] == 2, by_run["failed"]
    running = by_run["running"]
    assert running["state"] == "running" and running["progress"]["stage"] == "train" and running["progress"]["step"], running
    # alive by its process (the test's node is this host) or the scheduler's word, never by comparing clocks
    assert running["slurm"]["job_id"] and running["job"] == running["slurm"]["job_id"], running
    assert "running on this host" in running["alive"] or "scheduler says" in running["alive"], running
    assert by_run["preempted"]["scheduler"].startswith("PENDING"), by_run["preempted"]
    lines = res["text"].stdout.splitlines()
    assert lines[0] == "4 run(s): 1 failed, 1 preempted, 1 running, 1 done", res["text"].stdout
    states = [line.split()[1] for line in lines if line.startswith("/") or line.startswith("runs_")]
    assert states == ["failed", "preempted", "running", "done"], res["text"].stdout  # grouped, what needs a look first
    (REPO / "docs" / "img").mkdir(exist_ok=True)
    print(res["text"].stdout)


# -- the production cluster's tests (issue 53) ------------------------------------------------------------------

@pytest.mark.parametrize("name", ["multi_warning", "multi_preempt"])
def test_a_multinode_stop_checkpoints_on_every_node_and_resumes(matrix, name):
    """Never a TERM to srun: the warning goes to srun as USR2 (forwarded to both nodes' tasks, which TERM their
    launchers), a grace preemption's TERM reaches the step's processes on both nodes; every rank saves the same
    checkpoint, rank 0 records the preemption, xlt requeues, the requeued job resumes on two nodes.

    Also the multi-node script's plain proof (once its own job, now these): it trains on the two nodes it was
    given (world size 2) and ends with the evaluation and the report on one process."""
    res = matrix.result(name)
    rec = res["records"][0]
    log = _log(matrix.logs / f"xlt-multinode-{res['job']}.err")
    assert rec["JobState"] == "COMPLETED" and rec["Restarts"] == "1", (rec, log[-4000:])
    assert rec["NodeList"] == ("n[5-6]" if name == "multi_preempt" else "n[1-2]"), rec
    assert "forcing job termination" not in log, log[-4000:]
    assert res["at_stop"]["preempted"] is not None, (res["at_stop"], log[-4000:])  # rank 0's record at the signal
    assert res["at_stop"]["preempted"]["slurm"]["job_id"] == res["job"]
    if name == "multi_warning":
        assert "sending USR2 to srun" in log, log[-4000:]
    else:
        assert "PreemptTime=" in log and "a preemption" in log, log[-4000:]
    assert f"requeueing job {res['job']} (requeue 1 of at most" in log, log[-4000:]
    train = _train(res["run"])
    assert train["resumed_from"] and train["world_size"] == 2, train
    assert (res["run"] / "report.json").exists()


def test_scancel_of_the_multinode_script_is_not_requeued(matrix):
    res = matrix.result("multi_cancel")
    rec = res["records"][0]
    assert rec["JobState"] == "CANCELLED" and rec["Restarts"] == "0", rec
    log = _log(matrix.logs / f"xlt-multinode-{res['job']}.err")
    assert "cancelled: not a preemption" in log and "requeueing job" not in log, log[-4000:]


def test_each_step_is_bound_to_the_cpus_the_job_asked_for(matrix):
    """TaskPlugin=task/affinity: the training step's launchers get --cpus-per-task CPUs on each node (srun
    22.05/23.02 does not read SLURM_CPUS_PER_TASK: the script passes it)."""
    res = matrix.result("multi_warning")
    steps = [line.split() for line in res["affinity"].splitlines() if line.split()[1:2] not in (["batch"],)]
    assert {s[0] for s in steps} == {"n1", "n2"}, res["affinity"]
    for _node, _step, cpus in steps:
        count = sum(int(b) - int(a) + 1 for a, _, b in (r.partition("-") if "-" in r else (r, "", r)
                                                          for r in cpus.split(",")))
        assert count == min(2, os.cpu_count() or 2), res["affinity"]


def test_a_refused_requeue_fails_the_job_and_says_what_to_do(matrix):
    """--no-requeue: SLURM refuses; the job ends FAILED (dependents cancelled), not COMPLETED, and the log says
    the checkpoint is kept and to resubmit. Submitted without XLT_HOME from a folder that is no checkout."""
    res = matrix.result("no_requeue")
    rec = res["records"][0]
    assert rec["JobState"] == "FAILED" and rec["ExitCode"] == "75:0" and rec["Restarts"] == "0", rec
    log = _log(matrix.logs / f"xlt-stage-{res['job']}.err")
    assert "presently disabled" in log and "resubmit the same command to resume" in log, log[-4000:]
    assert (res["run"] / "preempted.json").exists()  # the checkpoint at the signal, for the resubmission
    assert list((res["run"] / "checkpoints").glob("checkpoint-*"))


def test_scancel_during_the_warning_grace_is_never_undone(matrix):
    res = matrix.result("cancel_in_grace")
    assert res["records"][0]["JobState"] == "CANCELLED" and res["later"]["JobState"] == "CANCELLED", res
    assert res["later"]["Restarts"] == "0", res["later"]
    log = _log(matrix.logs / f"xlt-stage-{res['job']}.err")
    # The verdict says so when the command stopped within KillWait (else SLURM's KILL ended the shell first).
    assert "requeueing job" not in log, log[-4000:]
    assert "a scancel is never undone" in log or "why the TERM came" not in log, log[-4000:]


def test_a_silent_controller_at_a_preemption_keeps_the_checkpoint_and_fails_the_job(matrix):
    """slurmctld paused (SIGSTOP) as the preemption's grace begins: xlt learns of it from the job's USR1,
    checkpoints, asks the controller for a bounded time, then ends the job failed (not requeued, never waiting
    past KillWait), the checkpoint kept; once the controller resumes the job is FAILED, Restarts=0."""
    res = matrix.result("silent_controller")
    rec = res["records"][0]
    assert res["preempt_time"] not in (None, "None"), res
    assert rec["JobState"] == "FAILED" and rec["Restarts"] == "0", rec
    log = _log(matrix.logs / f"xlt-stage-{res['job']}.err")
    # the user-signal cluster: the job's own B:USR1 at the grace's start (SlurmctldParameters=preempt_send_user_signal)
    assert "USR1 from the scheduler" in log and "did not answer" in log, log[-4000:]
    assert "resubmit the same command to resume" in log, log[-4000:]
    assert (res["run"] / "preempted.json").exists() and list((res["run"] / "checkpoints").glob("checkpoint-*"))

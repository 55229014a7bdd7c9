"""`xlt status` (xlt.status) on run directories in each state; on a real cluster in the middle of a sweep:
tests/cluster/test_real_slurm.py::test_status_in_the_middle_of_a_sweep."""

from __future__ import annotations

import json
import os
import socket
import threading
import time

import pytest

from xlt import status as status_mod
from xlt.cluster.signals import clear_preemption
from xlt.run.files import atomic_write_json
from xlt.run.layout import RunDir
from xlt.run.lock import RunLock, report_progress
from xlt.status import main, run_status, statuses


def _run(tmp_path, name: str) -> RunDir:
    run = RunDir(tmp_path / "runs" / "demo_tiny" / name)
    run.path.mkdir(parents=True)
    return run


def test_each_state_from_the_run_directorys_records(tmp_path, capsys, monkeypatch):
    failed = _run(tmp_path, "seed=1,training.max_steps=30")
    atomic_write_json(failed.failure, {"exit_status": 2, "error": "xlt: error: eval.model=/x: no model there",
                                       "time": time.time(), "slurm": {"job_id": "12", "array_job_id": "10",
                                                                      "array_task_id": "2", "restart_count": "0"}})
    preempted = _run(tmp_path, "seed=2")
    atomic_write_json(preempted.preemption, {"preempted": True, "exit_status": 75, "time": time.time(),
                                             "slurm": {"job_id": "13", "restart_count": "0"},
                                             "cause": "preempted: a preemption (scontrol: ... Restarts=1)"})
    damaged = _run(tmp_path, "seed=3")
    damaged.failure.write_text('{"exit_status": ')
    running = _run(tmp_path, "seed=4")
    monkeypatch.setenv("SLURM_JOB_ID", "14")
    monkeypatch.setenv("SLURM_RESTART_COUNT", "1")
    with RunLock(running.path) as lock:
        report_progress(stage="train", step=120, max_steps=600)
        lock.renew()
        states = {name: run_status(run.path, stages=False) for name, run in
                  (("failed", failed), ("preempted", preempted), ("damaged", damaged), ("running", running))}
        assert main([str(tmp_path / "runs"), "--no-stages"]) == 0
    report_progress(stage=None, step=None, max_steps=None)
    assert states["failed"].state == "failed" and states["failed"].exit_status == 2
    assert "exit status 2: xlt: error: eval.model=/x" in states["failed"].detail and "job 10_2" in states["failed"].detail
    assert states["preempted"].state == "preempted" and states["preempted"].requeues == 1
    assert "Restarts=1" in states["preempted"].detail
    # nothing but a damaged record: named, and with --no-stages its state cannot be told (never "not started")
    assert states["damaged"].state == "unknown" and "failed.json" in states["damaged"].problems[0]
    run = states["running"]
    assert run.state == "running" and run.progress["step"] == 120 and run.slurm["restart_count"] == "1"
    assert "train step 120/600" in run.detail and "job 14 (restart 1)" in run.detail
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "4 run(s): 1 failed, 1 preempted, 1 running, 1 unknown", out
    groups = [line.split()[0] for line in out[2:] if "(1)  stages:" in line]
    assert groups == ["failed", "preempted", "running", "unknown"], out  # what needs a look first
    assert sum(1 for line in out if line.startswith("demo_tiny/seed=")) == 4, out  # relative to the root given


def test_run_directories_named_with_equals_signs_are_paths_not_overrides(tmp_path, capsys):
    run = _run(tmp_path, "seed=1,training.max_steps=30")
    atomic_write_json(run.failure, {"exit_status": 143, "error": "stopped (SIGTERM received): cancelled"})
    assert main([str(run.path), "--json", "--no-stages"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["summary"] == {"runs": 1, "states": {"failed": 1}}
    (only,) = data["runs"]
    assert only["state"] == "failed" and only["exit_status"] == 143 and only["path"] == str(run.path)


def test_a_path_that_is_no_run_is_a_clear_error(tmp_path, capsys):
    assert main([str(tmp_path / "nowhere")]) == 2
    assert "neither a run directory, a run root nor a sweep file" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main([str(tmp_path / "empty")]) == 2
    assert "no run directory below it" in capsys.readouterr().err


def test_a_first_call_under_way_has_its_stages_from_its_config(tmp_path):
    """No call recorded yet (calls.jsonl is written when a call ends): the stages come from the config.yaml the
    call wrote at its start; with neither, the status says why it did not check them."""
    from omegaconf import OmegaConf

    from xlt import config as xcfg
    from xlt.config.compose import compose

    run = _run(tmp_path, "seed=5")
    cfg = compose(None, ["+recipe=demo_tiny", "seed=5"])
    cfg = xcfg.validate(cfg, list(cfg.stages))
    run.config.write_text(OmegaConf.to_yaml(cfg))
    status = run_status(run.path)
    assert list(status.stages) == list(cfg.stages) and set(status.stages.values()) == {"missing"}, status
    assert status.state == "not started" and not status.problems, status
    run.config.unlink()
    (run.path / "stages").mkdir()
    bare = run_status(run.path)
    assert bare.stages == {} and "no call recorded (calls.jsonl) and no config.yaml" in bare.problems[0], bare


def test_each_shard_keeps_its_own_record_and_status_shows_every_failed_shard(tmp_path, capsys):
    from xlt import cli

    run = _run(tmp_path, "seed=6")
    cli._record_failure(run, 2, "xlt: error: shard 1 broke", "evaluate-shard1-of-4")
    cli._record_failure(run, 1, "RuntimeError: shard 3 broke", "evaluate-shard3-of-4")
    atomic_write_json(run.preemption_of("evaluate-shard0-of-4"), {"exit_status": 75, "time": time.time()})
    atomic_write_json(run.preemption, {"exit_status": 75, "time": time.time()})
    assert (run.path / "failed.evaluate-shard1-of-4.json").exists() and not run.failure.exists()
    assert json.loads((run.path / "failed.evaluate-shard3-of-4.json").read_text())["shard"] == "evaluate-shard3-of-4"
    clear_preemption(run.path, "evaluate-shard0-of-4")  # shard 0 starts again: its own record only
    assert not run.preemption_of("evaluate-shard0-of-4").exists() and run.preemption.exists()
    st = run_status(run.path, stages=False)
    assert st.state == "failed" and set(st.shards) == {"evaluate-shard1-of-4", "evaluate-shard3-of-4", "run"}, st
    assert "evaluate-shard1-of-4: exit status 2: xlt: error: shard 1 broke" in st.detail, st.detail
    assert "evaluate-shard3-of-4: exit status 1: RuntimeError: shard 3 broke" in st.detail, st.detail
    assert "also: run preempted" in st.detail, st.detail
    with pytest.raises(ValueError):
        run.failure_of("../x")


def _foreign_lock(run: RunDir, name: str, **info) -> None:
    """A lock as a holder on another host writes it (its clock need not agree with this host's)."""
    (run.locks).mkdir(exist_ok=True)
    atomic_write_json(run.locks / f"{name}.json", {"host": "node-elsewhere", "pid": 4242, "lease_s": 0.4,
                                                  "beat": 0, "token": name, **info})


def test_liveness_is_judged_as_the_lock_judges_not_by_the_holders_clock(tmp_path):
    """A node whose clock is an hour behind (a live holder) is running, one an hour ahead that stopped beating
    is stopped: the heartbeat changing between two reads on this host decides, not its time stamp."""
    behind, ahead = _run(tmp_path, "seed=7"), _run(tmp_path, "seed=8")
    _foreign_lock(behind, "run", heartbeat=time.time() - 3600)
    _foreign_lock(ahead, "run", heartbeat=time.time() + 3600)
    stop = threading.Event()

    def beat() -> None:
        n = 0
        while not stop.wait(0.05):
            n += 1
            _foreign_lock(behind, "run", heartbeat=time.time() - 3600 + n, beat=n)

    beating = threading.Thread(target=beat)
    beating.start()
    try:
        t0 = time.monotonic()
        got = statuses([(str(behind.path), "behind", None), (str(ahead.path), "ahead", None)], stages=False,
                       ask=lambda jobs: {})
        took = time.monotonic() - t0
    finally:
        stop.set()
        beating.join()
    assert got[0].state == "running" and "heartbeat changed" in got[0].alive, got[0]
    assert got[1].state == "stopped" and "did not change" in got[1].detail, got[1]
    assert took < 5, took  # one watch for all locks: 1.5 heartbeat intervals of a 0.4 s lease


def test_the_schedulers_word_once_for_all_jobs(tmp_path):
    """A holder on another host that the scheduler says runs is running without a watch; one whose job the
    scheduler has pending (requeued: the holder is gone) is stopped; the scheduler is asked once, array
    elements by ARRAYID_TASK."""
    runs = [_run(tmp_path, f"seed={i}") for i in (9, 10)]
    _foreign_lock(runs[0], "run", heartbeat=0, slurm={"job_id": "31", "array_job_id": "30", "array_task_id": "3",
                                                      "restart_count": "0"})
    _foreign_lock(runs[1], "run", heartbeat=0, slurm={"job_id": "32", "restart_count": "1"})
    asked: list[list[str]] = []

    def ask(jobs):
        asked.append(jobs)
        return {"30_3": "RUNNING", "32": "PENDING (BeginTime)"}

    t0 = time.monotonic()
    got = statuses([(str(r.path), r.path.name, None) for r in runs], stages=False, ask=ask)
    assert time.monotonic() - t0 < 2  # nothing watched: the scheduler vouched for both
    assert asked == [["30_3", "32"]]
    assert got[0].state == "running" and got[0].scheduler == "RUNNING" and got[0].job == "30_3", got[0]
    assert "job 30_3 (restart 0)" in got[0].detail
    assert got[1].state == "stopped" and "PENDING (BeginTime)" in got[1].detail, got[1]


def test_no_stages_reads_what_is_recorded_never_not_started(tmp_path):
    done, half, bare = _run(tmp_path, "seed=11"), _run(tmp_path, "seed=12"), _run(tmp_path, "seed=13")
    stages = ["build_data", "train", "evaluate", "report"]
    for run, marked in ((done, stages), (half, stages[:2])):
        (run.path / "calls.jsonl").write_text(json.dumps({"overrides": ["+recipe=demo_tiny"], "stages": stages}) + "\n")
        for name in marked:
            run.mark_done(name, {"provenance": {"inputs": "x", "output_id": "y"}})
    (bare.path / "locks").mkdir()
    got = statuses([(str(r.path), r.path.name, None) for r in (done, half, bare)], stages=False, ask=lambda j: {})
    assert got[0].state == "done" and set(got[0].stages.values()) == {"recorded"}, got[0]
    assert "stages not checked" in got[0].detail
    assert got[1].state == "partial" and got[1].stages["report"] == "missing", got[1]
    assert got[2].state == "unknown", got[2]


def test_state_filter_summary_first_and_json_schema(tmp_path, capsys):
    for name, record in (("seed=1", "failure"), ("seed=2", "failure"), ("seed=3", "preemption")):
        run = _run(tmp_path, name)
        atomic_write_json(getattr(run, record), {"exit_status": 2 if record == "failure" else 75, "error": "x"})
    root = tmp_path / "runs"
    assert main([str(root), "--no-stages", "--state", "failed"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "3 run(s): 2 failed, 1 preempted", out
    assert out[2].startswith("failed (2)") and [line.split()[0] for line in out[3:]] == [
        "demo_tiny/seed=1", "demo_tiny/seed=2"], out
    assert main([str(root), "--no-stages", "--state", "preempted,failed", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [r["run"] for r in data["runs"]] == ["demo_tiny/seed=1", "demo_tiny/seed=2", "demo_tiny/seed=3"]
    assert set(data["runs"][0]) >= {"run", "path", "state", "stages", "detail", "job", "scheduler", "shards"}
    assert main([str(root), "--state", "broken"]) == 2
    assert "--state broken: not a state" in capsys.readouterr().err


def test_the_stage_check_runs_offline(tmp_path, monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    seen = []
    monkeypatch.setattr(status_mod, "_accuracy", lambda run, st: seen.append(os.environ.get("HF_HUB_OFFLINE")))
    run_status(_run(tmp_path, "seed=14").path, stages=False, ask=lambda j: {})
    assert seen == ["1"] and "HF_HUB_OFFLINE" not in os.environ


def test_a_local_holder_is_told_by_its_process(tmp_path):
    run = _run(tmp_path, "seed=15")
    _foreign_lock(run, "run", host=socket.gethostname(), pid=2**22 + 12345, heartbeat=time.time())
    got = run_status(run.path, stages=False, ask=lambda j: {})
    assert got.state == "stopped" and "is gone" in got.detail, got

"""`xlt status` (xlt.status) on run directories in each state; on a real cluster in the middle of a sweep:
tests/cluster/test_real_slurm.py::test_status_in_the_middle_of_a_sweep."""

from __future__ import annotations

import json
import time

from xlt.run.files import atomic_write_json
from xlt.run.layout import RunDir
from xlt.run.lock import RunLock, report_progress
from xlt.status import main, run_status


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
    assert states["damaged"].state == "not started" and "failed.json" in states["damaged"].problems[0]
    run = states["running"]
    assert run.state == "running" and run.progress["step"] == 120 and run.slurm["restart_count"] == "1"
    assert "train step 120/600" in run.detail and "job 14 (restart 1)" in run.detail
    out = capsys.readouterr().out.splitlines()
    assert [line.split()[1] for line in out[1:5]] == ["failed", "preempted", "not", "running"], out
    assert out[-1] == "4 run(s): 1 failed, 1 not started, 1 preempted, 1 running"


def test_run_directories_named_with_equals_signs_are_paths_not_overrides(tmp_path, capsys):
    run = _run(tmp_path, "seed=1,training.max_steps=30")
    atomic_write_json(run.failure, {"exit_status": 143, "error": "stopped (SIGTERM received): cancelled"})
    assert main([str(run.path), "--json", "--no-stages"]) == 0
    (only,) = json.loads(capsys.readouterr().out)
    assert only["state"] == "failed" and only["exit_status"] == 143


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

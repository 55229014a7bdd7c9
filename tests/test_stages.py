"""The stage loop of xlt.cli: skipping done stages, rerunning on changed inputs, ranks under a launcher."""

from __future__ import annotations

import threading

import pytest

from xlt import cli
from xlt import config as xcfg
from xlt.errors import XltError
from xlt.run import RunDir


@pytest.fixture
def calls(monkeypatch):
    seen: list[str] = []

    def fake(name):
        def stage(cfg, run):
            seen.append(name)
            return {"ok": True}
        return stage

    monkeypatch.setattr(cli, "stage_function", fake)
    return seen


def test_done_stages_are_skipped_and_changed_inputs_rerun(tmp_path, calls):
    run = RunDir(tmp_path)
    cfg = xcfg.validate({})
    cli.run_stages(cfg, run, ["build_data", "evaluate"])
    cli.run_stages(cfg, run, ["build_data", "evaluate"])
    assert calls == ["build_data", "evaluate"]
    cfg.eval.batch_size = 7  # evaluation settings changed: evaluate runs again, build_data does not
    cli.run_stages(cfg, run, ["build_data", "evaluate"])
    assert calls == ["build_data", "evaluate", "evaluate"]
    cfg.eval.shard_index = 0  # how work is split is not an input
    cfg.force = True
    cli.run_stages(cfg, run, ["build_data"])
    assert calls[-1] == "build_data"


def test_other_ranks_wait_for_rank0_before_train_and_skip_after(tmp_path, calls, monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "1")
    run = RunDir(tmp_path)
    cfg = xcfg.validate({})
    inputs = cli.stage_inputs(cfg, "build_data")
    timer = threading.Timer(0.3, lambda: run.mark_done("build_data", {"inputs": inputs}))
    timer.start()
    monkeypatch.setattr(cli, "WAIT_POLL_S", 0.05)
    cli.run_stages(cfg, run, ["build_data", "train", "evaluate", "report"])
    assert calls == ["train"]  # build_data came from rank 0; evaluate and report are rank 0's


def test_other_ranks_stop_when_rank0_fails(tmp_path, calls, monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "1")
    run = RunDir(tmp_path)
    (tmp_path / "stages").mkdir()
    (tmp_path / "stages" / "build_data.failed").write_text("failed\n")
    with pytest.raises(XltError, match="failed on rank 0"):
        cli.run_stages(xcfg.validate({}), run, ["build_data", "train"])
    assert calls == []


def test_rank0_marks_a_failed_stage_for_the_others(tmp_path, monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "0")

    def boom(cfg, run):
        raise RuntimeError("broken")

    monkeypatch.setattr(cli, "stage_function", lambda name: boom)
    run = RunDir(tmp_path)
    with pytest.raises(RuntimeError):
        cli.run_stages(xcfg.validate({}), run, ["build_data"])
    assert (tmp_path / "stages" / "build_data.failed").is_file()

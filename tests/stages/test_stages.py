"""The stage contract (xlt.contract's engine over xlt.stages' table): skipping done stages, rerunning on changed inputs and upstream
stages, force, ranks under a launcher."""

from __future__ import annotations

import dataclasses
import json
import threading

import pytest

from xlt import config as xcfg
from xlt import contract, stages
from xlt.errors import XltError
from xlt.run.layout import RunDir


def _write_outputs(run: RunDir, name: str) -> None:
    """Outputs of the shape the real stage writes (the contract checks them when it decides to skip)."""
    from datasets import Dataset, DatasetDict

    from xlt.run.files import atomic_write_json
    from xlt.run.fingerprint import path_fingerprint

    for out in stages.STAGES[name].outputs:
        path = run.path / out
        if out == "data/train_set":
            DatasetDict({"train": Dataset.from_dict({"x": [1]})}).save_to_disk(str(path))
        elif path.suffix == ".json":
            atomic_write_json(path, {"provenance": {}, "global_step": 1})
        else:
            path.mkdir(parents=True, exist_ok=True)
    if name == "train":  # what the real stage records: the saved model's fingerprint
        atomic_write_json(run.model / "xlt_provenance.json", {"fingerprint": path_fingerprint(run.model)})


@pytest.fixture
def calls(monkeypatch):
    seen: list[str] = []

    def fake(name):
        def stage(cfg, run, ctx):
            seen.append(name)
            _write_outputs(run, name)
            return {"ok": True}
        return stage

    for name, spec in list(stages.STAGES.items()):
        monkeypatch.setitem(stages.STAGES, name, dataclasses.replace(spec, run=fake(name)))
    return seen


def test_done_stages_are_skipped_and_changed_inputs_rerun(tmp_path, calls):
    run = RunDir(tmp_path)
    cfg = xcfg.validate({})
    stages.run_stages(cfg, run, ["build_data", "evaluate"])
    stages.run_stages(cfg, run, ["build_data", "evaluate"])
    assert calls == ["build_data", "evaluate"]
    cfg.eval.batch_size = 7  # evaluation settings changed: evaluate runs again, build_data does not
    stages.run_stages(cfg, run, ["build_data", "evaluate"])
    assert calls == ["build_data", "evaluate", "evaluate"]
    cfg.eval.num_shards = 1  # how work is split is not an input
    stages.run_stages(cfg, run, ["build_data", "evaluate"])
    assert calls == ["build_data", "evaluate", "evaluate"]
    cfg.force = True
    stages.run_stages(cfg, run, ["build_data"])
    assert calls[-1] == "build_data"


def test_a_stage_that_ran_makes_everything_downstream_stale(tmp_path, calls):
    run = RunDir(tmp_path)
    cfg = xcfg.validate({})
    stages.run_stages(cfg, run, ["build_data", "train", "evaluate", "report"])
    assert calls == ["build_data", "train", "evaluate", "report"]
    cfg.force = True
    stages.run_stages(cfg, run, ["build_data"])  # redo only the first stage ...
    cfg.force = False
    stages.run_stages(cfg, run, ["build_data", "train", "evaluate", "report"])  # ... the rest follows
    assert calls[4:] == ["build_data", "train", "evaluate", "report"]
    stages.run_stages(cfg, run, ["build_data", "train", "evaluate", "report"])
    assert len(calls) == 8


def test_missing_outputs_rerun_a_done_stage(tmp_path, calls):
    import shutil

    run = RunDir(tmp_path)
    cfg = xcfg.validate({})
    stages.run_stages(cfg, run, ["build_data"])
    shutil.rmtree(run.train_set)
    assert contract.stale_reason(run, stages.STAGES["build_data"], stages.context(cfg, run, "build_data")) == "outputs missing: data/train_set"
    stages.run_stages(cfg, run, ["build_data"])
    assert calls == ["build_data", "build_data"]


def test_other_ranks_wait_for_rank0_before_train_and_skip_after(tmp_path, calls, monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "1")
    run = RunDir(tmp_path)
    cfg = xcfg.validate({})
    inputs = stages.context(cfg, run, "build_data").inputs
    contract._settle(run, "build_data", "an earlier launch", "failed")  # not this launch's: not looked at

    def rank0():  # what rank 0 records: build_data done, train started
        run.mark_done("build_data", {"provenance": {"inputs": inputs, "output_id": "x"}})
        contract._settle(run, "build_data", "L", "done")
        contract._settle(run, "train", "L", "running")

    timer = threading.Timer(0.3, rank0)
    timer.start()
    monkeypatch.setattr(contract, "WAIT_POLL_S", 0.05)
    stages.run_stages(cfg, run, ["build_data", "train", "evaluate", "report"], launch="L")
    assert calls == ["train"]  # build_data came from rank 0; evaluate and report are rank 0's


def test_other_ranks_stop_when_rank0_fails(tmp_path, calls, monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "1")
    run = RunDir(tmp_path)
    contract._settle(run, "build_data", "L", "failed")
    with pytest.raises(XltError, match="failed on rank 0"):
        stages.run_stages(xcfg.validate({}), run, ["build_data", "train"], launch="L")
    assert calls == []


def test_rank0_marks_a_failed_stage_for_the_others(tmp_path, monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "0")

    def boom(cfg, run, ctx):
        raise RuntimeError("broken")

    monkeypatch.setitem(stages.STAGES, "build_data", dataclasses.replace(stages.STAGES["build_data"], run=boom))
    run = RunDir(tmp_path)
    with pytest.raises(RuntimeError):
        stages.run_stages(xcfg.validate({}), run, ["build_data"], launch="L")
    assert (tmp_path / "stages" / "build_data.failed").is_file()
    assert json.loads((tmp_path / "stages" / "build_data.attempt").read_text()) == {"launch": "L", "state": "failed"}


def test_a_stage_reads_another_stages_inputs_through_its_context(tmp_path):
    """The report stage checks results against the evaluate stage's inputs as they are now without importing
    that stage: its context computes them from the table the engine was handed (StageContext.of). The table is
    no input: it enters neither the hash nor the records. A context built without the table names the fix."""
    run = RunDir(tmp_path)
    cfg = xcfg.validate({})
    ctx = stages.context(cfg, run, "report")
    assert ctx.of(cfg, run, "evaluate") == stages.context(cfg, run, "evaluate", force=False)
    assert ctx.of(cfg, run, "train").detail["files"] == stages.STAGES["train"].files(cfg, run)
    alone = contract.context(cfg, run, stages.STAGES["report"])
    assert (alone.inputs, alone.detail, alone.record()) == (ctx.inputs, ctx.detail, ctx.record())
    with pytest.raises(XltError, match="stage report reads the inputs of stage evaluate, which is not in the stage table"):
        alone.of(cfg, run, "evaluate")

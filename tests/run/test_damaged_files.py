"""xlt's own files damaged the ordinary ways end in ``xlt: error:`` naming the file and the fix, or are
recovered; never in a Python traceback."""

from __future__ import annotations

import logging
import os
import socket

import pytest
from datasets import Dataset, DatasetDict

from xlt.errors import DataError, XltError
from xlt.run.layout import RunDir
from xlt.run.lock import RunLock, RunLockedError, _alive
from xlt.run.state import Damaged, read_jsonl_state, read_state

DEEP = "[" * 100_000 + "]" * 100_000


def test_a_lock_pid_out_of_range_is_a_dead_holder():
    assert _alive({"host": socket.gethostname(), "pid": 2**80}) is False


def test_a_file_where_the_lock_folder_belongs_is_named(tmp_path):
    (tmp_path / "locks").write_text("x")
    with pytest.raises(RunLockedError, match=r"locks is a file where xlt keeps its lock folder: remove it"):
        RunLock(tmp_path).acquire()


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes into read-only folders")
def test_an_unwritable_lock_folder_is_named(tmp_path):
    (tmp_path / "locks").mkdir()
    (tmp_path / "locks").chmod(0o500)
    try:
        with pytest.raises(RunLockedError, match=r"cannot write the lock folder .*locks"):
            RunLock(tmp_path).acquire()
    finally:
        (tmp_path / "locks").chmod(0o700)


def test_deeply_nested_json_is_damaged_not_a_recursion_error(tmp_path):
    (tmp_path / "a.json").write_text(DEEP)
    (tmp_path / "b.jsonl").write_text(DEEP + "\n")
    with pytest.raises(Damaged, match="nested too deeply"):
        read_state(tmp_path / "a.json")
    with pytest.raises(Damaged, match="line 1: JSON nested too deeply"):
        read_jsonl_state(tmp_path / "b.jsonl")


def test_source_files_nested_too_deeply_or_looping_are_named(tmp_path):
    from xlt.data.benchmarks.base import load_local_file
    from xlt.data.sources.files import iter_file

    deep = tmp_path / "train.jsonl"
    deep.write_text('{"a": 1}\n' + DEEP + "\n")
    with pytest.raises(DataError, match=r"train.jsonl:line 2: JSON nested too deeply"):
        list(iter_file(deep))
    loop = tmp_path / "loop.jsonl"
    os.symlink(loop, loop)
    for read in (lambda: list(iter_file(loop)), lambda: load_local_file(loop)):
        with pytest.raises(DataError, match=r"loop.jsonl: cannot be read \(Too many levels of symbolic links\)"):
            read()


def test_a_folder_where_the_call_log_belongs_is_logged_not_raised(tmp_path, caplog):
    from xlt.cli import _record_call

    run = RunDir(tmp_path)
    (tmp_path / "calls.jsonl").mkdir()
    with caplog.at_level(logging.WARNING, logger="xlt"):
        _record_call(run, ["evaluate"], [])
    assert "not recorded in" in caplog.text and "calls.jsonl" in caplog.text


def test_a_truncated_training_set_is_named_with_the_fix(tmp_path):
    from xlt.run.artifacts import checked_train_set, sealed_fingerprint

    run = RunDir(tmp_path)
    rows = {"id": [str(i) for i in range(200)], "text": ["some words " * 20] * 200}
    DatasetDict({"train": Dataset.from_dict(rows), "dev": Dataset.from_dict(rows)}).save_to_disk(str(run.train_set))
    run.mark_done("build_data", {"provenance": {"inputs": "x", "output_id": "y",
                                                "outputs": {"data/train_set": sealed_fingerprint(run.train_set)}}})
    assert len(checked_train_set(run)["train"]) == 200
    arrow = next(run.train_set.glob("train/data-*.arrow"))
    arrow.write_bytes(arrow.read_bytes()[: arrow.stat().st_size // 2])
    with pytest.raises(XltError, match=r"changed or damaged since build_data wrote it.*run the build_data stage"):
        checked_train_set(run)


def test_a_file_where_stale_checkpoints_go_is_replaced(tmp_path):
    from xlt.training.checkpoints import settle

    folder = tmp_path / "checkpoints"
    (folder / "checkpoint-5").mkdir(parents=True)  # no weights, no trainer state: incomplete
    (tmp_path / "stale").write_text("x")
    settle(folder, tmp_path / "stale")
    assert (tmp_path / "stale").is_dir() and not (folder / "checkpoint-5").exists()


def test_compare_refuses_a_config_yaml_edited_or_deleted_after_the_run(tmp_path):
    from omegaconf import OmegaConf

    from xlt import config as xcfg
    from xlt.config.keys import stage_values
    from xlt.reporting.run_tables import read_config

    cfg = xcfg.validate({"seed": 2})
    run = RunDir(tmp_path)
    (tmp_path / "config.yaml").write_text(OmegaConf.to_yaml(cfg))
    run.mark_done("train", {"provenance": {"inputs": "x", "output_id": "y",
                                           "detail": {"config": stage_values(cfg, "train")}}})
    assert read_config(tmp_path)["seed"] == 2
    OmegaConf.update(cfg, "seed", 3)
    (tmp_path / "config.yaml").write_text(OmegaConf.to_yaml(cfg))
    with pytest.raises(DataError, match=r"config.yaml: edited after the run \(seed=3 there, while the train stage ran "
                                        r"with 2\); restore it, or rerun a stage"):
        read_config(tmp_path)
    (tmp_path / "config.yaml").unlink()
    with pytest.raises(DataError, match=r"config.yaml: deleted after the run .* rerun a stage of it"):
        read_config(tmp_path)

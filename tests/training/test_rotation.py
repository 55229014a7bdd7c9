"""Checkpoint rotation is xlt's (training.save_total_limit): old checkpoints go only after the new one's
completeness record is written, the best one stays, and a real SIGKILL while the record is computed or
while old checkpoints are deleted leaves a run that resumes to the uninterrupted run's model, bit for bit.

The killed runs are forked children of the test process (a real process and a real SIGKILL, no second
start of Python), as in tests/run/test_run_damage.py."""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
from pathlib import Path

import pytest
import torch

from tests.training.conftest import make_cfg, write_train_set
from xlt.run.layout import RunDir
from xlt.run.state import StateError
from xlt.stages import call_stage
from xlt.training import checkpoints as ck

# Checkpoints at 2, 4, 6; one kept beside the best (the Trainer's rotation would delete before the record).
SETTINGS = {"training.max_steps": 6, "training.eval_steps": 2, "training.save_total_limit": 1,
            "training.per_device_train_batch_size": 8}


def _run(root: Path) -> RunDir:
    run = RunDir(root)
    write_train_set(run, 96, 32)
    return run


def _weights(run: RunDir) -> bytes:
    return (run.model / "model.safetensors").read_bytes()


@pytest.fixture(scope="module")
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # forked children inherit it: bit-identical models
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def reference(tmp_path_factory, one_thread) -> tuple[RunDir, dict]:
    run = _run(tmp_path_factory.mktemp("ref") / "run")
    return run, call_stage("train", make_cfg(**SETTINGS), run)


def _killed(run: RunDir, patch) -> None:
    """Train ``run`` in a forked child with ``patch()`` applied there; the child must die of SIGKILL."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            patch()
            call_stage("train", make_cfg(**SETTINGS), run)
        finally:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, status


def _best(folder: Path) -> str | None:
    best = json.loads((folder / "trainer_state.json").read_text())["best_model_checkpoint"]
    return Path(best).name if best else None


def test_rotation_keeps_the_newest_and_the_best(reference):
    run, summary = reference
    left = sorted(p.name for p in ck.checkpoints(run.checkpoints))
    best = f"checkpoint-{summary['best_step']}"
    assert left == sorted({"checkpoint-6", best}), left
    assert all(ck.checkpoint_problem(run.checkpoints / n) is None for n in left)
    assert not [p for p in run.checkpoints.iterdir() if p.name.startswith(ck.PRUNING)]


def test_kill_9_while_the_completeness_record_is_computed(reference, tmp_path):
    """SIGKILL while rank 0 hashes checkpoint-4's files: checkpoint-2, complete, is still there (the
    Trainer's own rotation would have deleted it before the record), and the rerun resumes from it."""
    ref, _ = reference
    run = _run(tmp_path / "run")

    def patch():
        real = ck.file_sha256

        def sha(path: Path) -> str:
            if path.parent.name == "checkpoint-4" and path.name == "optimizer.pt":
                os.kill(os.getpid(), signal.SIGKILL)
            return real(path)

        ck.file_sha256 = sha

    _killed(run, patch)
    assert ck.checkpoint_problem(run.checkpoints / "checkpoint-2") is None
    assert not (run.checkpoints / "checkpoint-4" / ck.COMPLETE_FILE).exists()
    # It is not kept as the best: the rotation the Trainer did would have removed it.
    assert _best(run.checkpoints / "checkpoint-4") != "checkpoint-2" or pytest.skip("checkpoint-2 is the best")
    summary = call_stage("train", make_cfg(**SETTINGS), run)
    assert summary["resumed_from"].endswith("checkpoint-2")
    assert _weights(run) == _weights(ref)


def test_kill_9_while_old_checkpoints_are_deleted(reference, tmp_path):
    """SIGKILL half-way through deleting a pruned checkpoint: it was renamed out of the checkpoint names
    first, so the rerun sees only complete checkpoints, removes the remains and resumes bit-identically."""
    ref, _ = reference
    run = _run(tmp_path / "run")

    def patch():
        real = shutil.rmtree

        def rmtree(path, *args, **kwargs):
            path = Path(path)
            if path.name.startswith(ck.PRUNING):
                next(p for p in path.iterdir() if p.is_file()).unlink()  # part of it gone, then the kill
                os.kill(os.getpid(), signal.SIGKILL)
            return real(path, *args, **kwargs)

        ck.shutil.rmtree = rmtree

    _killed(run, patch)
    remains = [p for p in run.checkpoints.iterdir() if p.name.startswith(ck.PRUNING)]
    assert len(remains) == 1
    left = ck.checkpoints(run.checkpoints)
    assert left and all(ck.checkpoint_problem(p) is None for p in left)
    summary = call_stage("train", make_cfg(**SETTINGS), run)
    assert summary["resumed_from"] == str(left[0])
    assert not [p for p in run.checkpoints.iterdir() if p.name.startswith(ck.PRUNING)]
    assert _weights(run) == _weights(ref)


def test_no_best_dev_accuracy_for_a_best_checkpoint_that_cannot_be_loaded(reference, tmp_path, caplog):
    """The best checkpoint set aside (e.g. damaged, moved to stale/) before a resume: load_best_model_at_end
    only warns, so the stage refuses to write metrics describing a model it cannot save."""
    ref, summary = reference
    run = RunDir(tmp_path / "run")
    shutil.copytree(ref.path, run.path)
    shutil.rmtree(run.model)
    (run.path / "train_metrics.json").unlink()
    best = run.checkpoints / f"checkpoint-{summary['best_step']}"
    if best.name == "checkpoint-6":
        pytest.skip("the best checkpoint is the last one: nothing to resume from without it")
    shutil.rmtree(best)
    with caplog.at_level(logging.WARNING), pytest.raises(StateError, match="best checkpoint .* cannot be loaded") as err:
        call_stage("train", make_cfg(**SETTINGS), run)
    assert "the best checkpoint so far cannot be loaded" in caplog.text  # said before training, too
    assert "force=true" in str(err.value) and best.name in str(err.value)
    assert not (run.path / "train_metrics.json").exists() and not run.model.exists()

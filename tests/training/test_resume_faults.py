"""Resume under faults, in one process: the mean training loss of a resumed run, a prune that cannot delete
a file, a tokenization cache left truncated beside the training set."""

from __future__ import annotations

import contextlib
import json
import logging
import subprocess
from pathlib import Path

import pytest
from transformers import TrainerCallback

from tests.training.conftest import make_cfg, write_train_set
from xlt.cluster import signals
from xlt.run.layout import RunDir
from xlt.stages import call_stage
from xlt.training import checkpoints as ck


class SignalAt(TrainerCallback):
    """SLURM's warning signal during optimizer step ``step + 1``: a checkpoint at its end, then Preempted."""

    def __init__(self, step: int):
        self.step = step

    def on_step_begin(self, args, state, control, **kwargs):
        if state.global_step == self.step:
            signals._requested["signal"] = "SIGUSR1"


# A learning rate at which the tiny model's loss moves (at 2e-3 it stays within 1e-6 of ln 4 for 10 steps,
# and no mean can be told from another): the since-resume mean is then 3% off.
SETTINGS = {"training.max_steps": 10, "training.eval_steps": 5, "training.logging_steps": 5,
            "training.learning_rate": 3e-2, "training.per_device_train_batch_size": 8}


def test_train_loss_after_a_resume_is_the_uninterrupted_runs(tmp_path):
    """The Trainer's ``training_loss`` of a resumed run averages the steps since the resume only (step 7
    here); train_metrics.json's ``train_loss`` is over every step, as in the uninterrupted run."""

    full = RunDir(tmp_path / "full")
    write_train_set(full, 80, 16)
    uninterrupted = call_stage("train", make_cfg(**SETTINGS), full)

    run = RunDir(tmp_path / "run")
    write_train_set(run, 80, 16)
    try:
        with pytest.raises(signals.Preempted):
            call_stage("train", make_cfg(**SETTINGS), run, extra_callbacks=[SignalAt(6)])
    finally:
        signals._requested["signal"] = None
        signals._active_callbacks.clear()
    resumed = call_stage("train", make_cfg(**SETTINGS), run)
    assert resumed["resumed_from"].endswith("checkpoint-7")
    # The loss windows differ (5, 7, 10 against 5, 10): the float32 sums of the Trainer's accumulator may
    # differ in their last bits (measured: 3e-8 relative); 10 sums of float32 stay within 1e-6.
    assert resumed["train_loss"] == pytest.approx(uninterrupted["train_loss"], rel=1e-6)
    # What the Trainer itself reports after the resume, the mean of steps 8-10 (one logged window), is far
    # off: the check above can tell them apart.
    history = json.loads((run.path / "train_metrics.json").read_text())["train_loss_history"]
    since_resume = next(h["loss"] for h in history if h["step"] == 10)
    assert abs(since_resume - uninterrupted["train_loss"]) > 1e-4 * uninterrupted["train_loss"]
    assert json.loads((run.path / "train_metrics.json").read_text())["train_loss"] == resumed["train_loss"]
    state = json.loads((run.checkpoints / "checkpoint-7" / "trainer_state.json").read_text())
    assert [h["step"] for h in state["log_history"] if "loss" in h] == [1, 5, 7]  # 7: logged at the save


@contextlib.contextmanager
def undeletable(path: Path):
    """``path`` (a new file) cannot be deleted: immutable (``chattr +i``) as root, else its folder read-only."""
    path.write_text("held open elsewhere (an NFS .nfs file)\n")
    root = subprocess.run(["id", "-u"], capture_output=True, text=True).stdout.strip() == "0"
    if root and subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode != 0:
        pytest.skip("no chattr on this file system (as root, permissions do not stop a deletion)")
    if not root:
        path.parent.chmod(0o555)
    try:
        yield
    finally:  # wherever its folder was moved to (a prune renames it first)
        for found in path.parent.parent.rglob(path.name):
            if root:
                subprocess.run(["chattr", "-i", str(found)], check=True)
            else:
                found.parent.chmod(0o755)


def _checkpoint(folder: Path, step: int) -> None:
    """A complete checkpoint as the Trainer and :func:`~xlt.training.checkpoints.mark_complete` leave it."""
    ckpt = folder / f"checkpoint-{step}"
    ckpt.mkdir(parents=True)
    for name in ("model.safetensors", "optimizer.pt", "scheduler.pt", "rng_state.pth"):
        (ckpt / name).write_bytes(b"x" * step)
    (ckpt / "trainer_state.json").write_text(json.dumps({"global_step": step, "log_history": []}))
    ck.mark_complete(ckpt)


def test_a_prune_that_cannot_delete_a_file_is_logged_and_retried_at_the_next_save(tmp_path, caplog):
    """A deletion that fails (an NFS ``.nfs*`` file, a quota, an immutable file) must not raise inside the
    Trainer's ``on_save`` on rank 0 (the other ranks would wait for it in the next collective). With real
    processes: tests/training/test_distributed.py (a torchrun rerun that cannot delete checkpoint-4)."""
    for step in (2, 4, 6):
        _checkpoint(tmp_path, step)
    with undeletable(tmp_path / "checkpoint-2" / ".nfs0000000000a1b2c3"), \
            caplog.at_level(logging.WARNING, logger="xlt.training"):
        assert ck.prune(tmp_path, 1, "checkpoint-6", None) == ["checkpoint-4"]
        assert "could not delete" in caplog.text and "retried at the next save" in caplog.text
        assert [p.name for p in ck.checkpoints(tmp_path)] == ["checkpoint-6"]  # set aside at once
        assert (tmp_path / f"{ck.PRUNING}checkpoint-2").is_dir()
    _checkpoint(tmp_path, 8)
    assert ck.prune(tmp_path, 1, "checkpoint-8", None) == ["checkpoint-6"]  # the next save retries
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint-8"]


def test_a_truncated_tokenization_cache_beside_the_training_set_is_recomputed(tmp_path, caplog):
    """What a node crash on a shared file system leaves: the ``datasets`` map cache of the tokenized split,
    beside the training set's Arrow files (build_data's own files are sealed; this cache is derived)."""
    from xlt.modeling.load import load_tokenizer
    from xlt.run.state import load_dataset_dir
    from xlt.training.data import tokenized_splits

    run = RunDir(tmp_path / "run")
    write_train_set(run, 64, 16)
    cfg = make_cfg()
    tok = load_tokenizer(cfg.model)
    first = tokenized_splits(load_dataset_dir(run.train_set), tok, 64)["train"]["input_ids"]
    cache = max(run.train_set.glob("train/cache-*.arrow"), key=lambda p: p.stat().st_size)
    # A new inode (this process still maps the old file; the crash happened to another process's file).
    half = cache.with_name("half")
    half.write_bytes(cache.read_bytes()[: cache.stat().st_size // 2])
    half.replace(cache)
    with caplog.at_level(logging.WARNING, logger="xlt.training"):
        again = tokenized_splits(load_dataset_dir(run.train_set), tok, 64)
    assert f"damaged tokenization cache {cache}" in caplog.text
    assert again["train"]["input_ids"] == first

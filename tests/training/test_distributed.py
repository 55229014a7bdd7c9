"""Two CPU processes (accelerate, gloo) train to the same result as one process with the same
effective batch, through the real entry point (`python -m xlt.finetune`)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from tests.training.conftest import write_train_set
from xlt.run import RunDir, run_name

ROOT = Path(__file__).resolve().parents[2]
COMMON = ["training.max_steps=20", "training.eval_steps=10", "training.group_by_length=false",
          "training.learning_rate=2e-3", "training.logging_steps=5", "model.max_length=64", "seed=5"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(tmp_path: Path, launcher: list[str], overrides: list[str]) -> RunDir:
    args = ["+recipe=demo", f"run_root={tmp_path}", *overrides]
    run = RunDir(tmp_path / run_name(args))
    write_train_set(run, 320, 48)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "WANDB_MODE": "disabled",
           "TQDM_DISABLE": "1", "DS_ACCELERATOR": "cpu", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([*launcher, "-m", "xlt.finetune", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert run.is_done("train") or (run.path / "train_metrics.json").exists()
    return run


def _accelerate(n: int, *extra: str) -> list[str]:
    return [sys.executable, "-m", "accelerate.commands.launch", "--num_machines", "1", "--num_processes", str(n),
            "--mixed_precision", "no", "--dynamo_backend", "no", "--main_process_port", str(_free_port()), *extra]


@pytest.fixture(scope="module")
def one_process(tmp_path_factory) -> RunDir:
    return _run(tmp_path_factory.mktemp("one"), [sys.executable], [*COMMON, "training.per_device_train_batch_size=16"])


@pytest.mark.slow
def test_two_processes_match_one(tmp_path, one_process):
    one = one_process
    two = _run(tmp_path / "two", _accelerate(2, "--multi_gpu"), [*COMMON, "training.per_device_train_batch_size=8"])

    m1 = json.loads((one.path / "train_metrics.json").read_text())
    m2 = json.loads((two.path / "train_metrics.json").read_text())
    assert m2["world_size"] == 2 and m2["effective_batch_size"] == m1["effective_batch_size"] == 16
    assert m2["global_step"] == m1["global_step"] == 20
    # Same data per optimizer step, gradients averaged over ranks: the same losses (not doubled: the
    # MC head's loss must not be scaled by the number of processes) and dev accuracy.
    assert [h["loss"] for h in m2["train_loss"]] == pytest.approx([h["loss"] for h in m1["train_loss"]], abs=2e-3)
    assert [h["accuracy"] for h in m2["dev"]] == pytest.approx([h["accuracy"] for h in m1["dev"]], abs=1e-6)
    w1, w2 = load_file(one.model / "model.safetensors"), load_file(two.model / "model.safetensors")
    assert w1.keys() == w2.keys()
    for k in w1:
        assert torch.allclose(w1[k], w2[k], atol=1e-3), k  # float summation order differs
    # Only rank 0 wrote: one model card, one done-marker.
    assert (two.model / "README.md").exists() and two.is_done("train")


@pytest.mark.slow
def test_deepspeed_zero2_two_processes(tmp_path, one_process):
    """ZeRO-2 over gloo on CPU (DeepSpeed compiles its CPU Adam op once, ~1-3 min on a fresh machine)."""
    pytest.importorskip("deepspeed")
    run = _run(tmp_path, _accelerate(2, "--multi_gpu"),
               [*COMMON, "training.per_device_train_batch_size=8", "training.deepspeed=zero2"])
    m = json.loads((run.path / "train_metrics.json").read_text())
    m1 = json.loads((one_process.path / "train_metrics.json").read_text())
    assert m["world_size"] == 2 and m["global_step"] == 20 and m["effective_batch_size"] == 16
    # DeepSpeed's Adam is not torch's, so only close: same data, same schedule, same first loss.
    assert m["train_loss"][0]["loss"] == pytest.approx(m1["train_loss"][0]["loss"], abs=1e-4)
    assert [h["loss"] for h in m["train_loss"]] == pytest.approx([h["loss"] for h in m1["train_loss"]], abs=0.05)
    # Resumable DeepSpeed checkpoints (engine state under global_stepN + `latest` tag) and a plain
    # safetensors model without DeepSpeed files.
    ckpt = run.checkpoints / "checkpoint-20"
    assert (ckpt / "latest").read_text().strip() == "global_step20" and (ckpt / "global_step20").is_dir()
    assert (run.model / "model.safetensors").exists() and not list(run.model.glob("global_step*"))
    weights = load_file(run.model / "model.safetensors")
    assert all(torch.isfinite(w).all() for w in weights.values())


@pytest.mark.slow
def test_deepspeed_zero3_saves_full_weights(tmp_path):
    """ZeRO-3 partitions parameters from construction on; the saved model must hold gathered, full-shape
    weights that load as a plain model."""
    pytest.importorskip("deepspeed")
    from xlt.modeling.load import load_trained

    run = _run(tmp_path, _accelerate(2, "--multi_gpu"),
               [*COMMON, "training.per_device_train_batch_size=8", "training.deepspeed=zero3"])
    m = json.loads((run.path / "train_metrics.json").read_text())
    assert m["world_size"] == 2 and m["global_step"] == 20
    model, tok = load_trained(run.model)
    emb = model.roberta.embeddings.word_embeddings.weight
    assert emb.shape == (len(tok), 64) and torch.isfinite(emb).all() and emb.abs().sum() > 0


@pytest.mark.slow
def test_accelerate_launch_of_the_whole_pipeline(tmp_path):
    """`accelerate launch -m xlt.train` with every stage: data, evaluation and report run once, on
    rank 0; the other rank waits for the data and joins training only."""
    args = ["+recipe=demo", f"run_root={tmp_path}", *COMMON, "training.per_device_train_batch_size=8",
            "eval.benchmarks.belebele.max_questions=8", "eval.benchmarks.global_mmlu.enabled=false"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "WANDB_MODE": "disabled",
           "TQDM_DISABLE": "1", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([*_accelerate(2, "--multi_gpu"), "-m", "xlt.train", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = RunDir(tmp_path / run_name(args))
    for stage in ("build_data", "train", "evaluate", "report"):
        assert run.is_done(stage), stage
    metrics = json.loads((run.path / "train_metrics.json").read_text())
    assert metrics["world_size"] == 2
    assert json.loads((run.eval / "belebele" / "eng_Latn.json").read_text())["n"] == 8
    assert not list((run.path / "stages").glob("*.failed"))

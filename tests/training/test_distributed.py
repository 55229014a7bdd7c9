"""Multi-process training through the real entry points (accelerate launch, gloo on CPU).

* Two processes with half the per-device batch take the same optimizer steps as one process: the first
  steps' losses and gradient norms agree to float rounding. A loss or gradient scaled by the number of
  processes (summed instead of averaged) would differ by a factor of 2.
* A launch that asked for two processes but started one is reported in train_metrics.json.
* The multi-GPU commands of docs/fine-tuning.md (plain DDP, ZeRO-2, ZeRO-3 and ZeRO-3 with offload) run train, evaluate and
  report in one command: the stages after training must not inherit the DeepSpeed/accelerate state of
  training. The plain DDP launch is the two-process run of the first point (one launch checked both ways).
  ZeRO-2 with offload is not launched end to end: its optimizer offload (DeepSpeed's CPU Adam) runs in the
  ZeRO-3 offload launch, its ZeRO-2 partitioning in the ZeRO-2 launch, and its config is checked like the
  others' in tests/training/test_args.py (shipped configs, and accepted by TrainingArguments).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from tests.training.conftest import write_train_set
from xlt.run import RunDir, run_name

ROOT = Path(__file__).resolve().parents[2]
STEPS = 6
COMMON = [f"training.max_steps={STEPS}", "training.eval_steps=3", "training.group_by_length=false",
          "training.learning_rate=2e-3", "training.logging_steps=1", "model.max_length=64", "seed=5"]
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "WANDB_MODE": "disabled", "TQDM_DISABLE": "1",
       "DS_ACCELERATOR": "cpu", "PYTHONPATH": str(ROOT),
       # CPU + gloo on every machine: on a GPU machine two ranks would otherwise share one GPU over NCCL.
       "CUDA_VISIBLE_DEVICES": ""}
# Relative differences allowed between one and two processes in the first steps' losses and gradient
# norms. Measured over 6 steps: loss 8.6e-8 / 1.7e-7, gradient norm 6.4e-6 / 4.0e-5 with
# OMP_NUM_THREADS=1 / 2 on 320 RACE rows; on the demo build that the pipeline launch trains on, loss
# 1.7e-7, gradient norm 2.0e-5 with OMP_NUM_THREADS=1 (twice). Only the float summation order differs (one batch of 16 vs two of 8, averaged),
# and Adam's normalised updates grow that difference step by step; hence 25x headroom on the largest
# measured value. A loss or gradient scaled by the number of processes differs by 100%.
REL = {"loss": 1e-5, "grad_norm": 1e-3}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _accelerate(n: int, *extra: str) -> list[str]:
    return [sys.executable, "-m", "accelerate.commands.launch", "--num_machines", "1", "--num_processes", str(n),
            "--mixed_precision", "no", "--dynamo_backend", "no", "--main_process_port", str(_free_port()), *extra]


def _run(tmp_path: Path, launcher: list[str], overrides: list[str], module: str = "xlt.finetune") -> RunDir:
    args = ["+recipe=demo_tiny", f"run_root={tmp_path}", *overrides]
    run = RunDir(tmp_path / run_name(args))
    if module == "xlt.finetune":
        write_train_set(run, 320, 48)
    proc = subprocess.run([*launcher, "-m", module, *args], cwd=ROOT, env=ENV, capture_output=True, text=True,
                          timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return run


def _metrics(run: RunDir) -> dict:
    return json.loads((run.path / "train_metrics.json").read_text())


# The whole pipeline's arguments; evaluation settings do not change training (nor the run's training data).
PIPELINE = [*COMMON, "training.max_dev_rows=48", "eval.benchmarks.belebele.max_questions=8",
            "eval.benchmarks.global_mmlu.enabled=false"]


@pytest.fixture(scope="module")
def one_process(tmp_path_factory) -> RunDir:
    return _run(tmp_path_factory.mktemp("one"), [sys.executable],
                [*PIPELINE, "training.per_device_train_batch_size=16", "stages=[build_data,train]"], module="xlt.train")


@pytest.fixture(scope="module")
def ddp_pipeline(tmp_path_factory) -> RunDir:
    """`accelerate launch --multi_gpu --num_processes 2 -m xlt.train` with plain DDP (checked by both tests)."""
    return _run(tmp_path_factory.mktemp("ddp"), _accelerate(2, "--multi_gpu"),
                [*PIPELINE, "training.per_device_train_batch_size=8"], module="xlt.train")


@pytest.mark.slow
def test_two_processes_take_the_same_steps_as_one(one_process, ddp_pipeline):
    m1, m2 = _metrics(one_process), _metrics(ddp_pipeline)
    assert m2["world_size"] == 2 and m2["effective_batch_size"] == m1["effective_batch_size"] == 16
    assert m2["global_step"] == m1["global_step"] == STEPS and m2["launch_warnings"] == []
    h1, h2 = m1["train_loss_history"], m2["train_loss_history"]
    assert [h["step"] for h in h2] == [h["step"] for h in h1] == list(range(1, STEPS + 1))
    for key in ("loss", "grad_norm"):
        a, b = [h[key] for h in h1], [h[key] for h in h2]
        print(key, "max relative difference", max(abs(x - y) / abs(x) for x, y in zip(a, b, strict=True)))
        assert b == pytest.approx(a, rel=REL[key]), key
    # Only rank 0 wrote: one model card, one done-marker.
    assert (ddp_pipeline.model / "README.md").exists() and ddp_pipeline.is_done("train")


@pytest.mark.slow
def test_lost_processes_are_reported(tmp_path):
    """`accelerate launch --num_processes 2` without --multi_gpu starts one process: said loudly."""
    run = _run(tmp_path, _accelerate(2), ["training.max_steps=2", "training.eval_steps=2", "model.max_length=64"])
    m = _metrics(run)
    assert m["world_size"] == 1
    assert len(m["launch_warnings"]) == 1 and "started ONE" in m["launch_warnings"][0]


@pytest.mark.slow
@pytest.mark.parametrize("deepspeed", [None, "zero2", "zero3", "zero3_offload"])
def test_accelerate_launch_of_the_whole_pipeline(tmp_path, request, deepspeed):
    """`accelerate launch --multi_gpu --num_processes 2 -m xlt.train` (docs/fine-tuning.md), plain DDP and DeepSpeed:
    data, evaluation and report run once, on rank 0, after training."""
    if deepspeed:
        pytest.importorskip("deepspeed")  # DeepSpeed compiles its CPU ops once (~1-3 min on a fresh machine)
        run = _run(tmp_path, _accelerate(2, "--multi_gpu"),
                   [*PIPELINE, "training.per_device_train_batch_size=8", f"training.deepspeed={deepspeed}"],
                   module="xlt.train")
    else:
        run = request.getfixturevalue("ddp_pipeline")
    for stage in ("build_data", "train", "evaluate", "report"):
        assert run.is_done(stage), stage
    assert not list((run.path / "stages").glob("*.failed"))
    m = _metrics(run)
    assert m["world_size"] == 2 and m["global_step"] == STEPS and m["effective_batch_size"] == 16
    assert json.loads((run.eval / "belebele" / "eng_Latn.json").read_text())["n"] == 8
    assert (run.path / "report.md").exists()
    weights = load_file(run.model / "model.safetensors")
    assert all(torch.isfinite(w).all() for w in weights.values())
    assert not list(run.model.glob("global_step*"))  # a plain model, no DeepSpeed files
    if deepspeed:
        # Resumable DeepSpeed checkpoints: engine state under global_stepN + the `latest` tag.
        ckpt = run.checkpoints / f"checkpoint-{STEPS}"
        assert (ckpt / "latest").read_text().strip() == f"global_step{STEPS}" and (ckpt / f"global_step{STEPS}").is_dir()
    if deepspeed and deepspeed.startswith("zero3"):
        # ZeRO-3 partitions parameters from construction on; the saved weights are gathered, full-shape.
        emb = weights["roberta.embeddings.word_embeddings.weight"]
        assert emb.shape[1] == 64 and emb.abs().sum() > 0


# --- preemption under `accelerate launch --multi_gpu --num_processes 2` ------------------------------------
# The workers pause at the end of optimizer step PAUSE_AT (before the callbacks run) until their stop
# request has arrived: a hook loaded at interpreter start (sitecustomize, workers only), so the signal lands
# mid-run at a known step, not in a race with 6 fast steps. Step 4 is not a save step (eval_steps=3).
PAUSE_AT = 4
PAUSE_HOOK = """
import os, time
from pathlib import Path
if os.environ.get("XLT_PAUSE_AT") and "RANK" in os.environ and os.environ["RANK"] in os.environ["XLT_PAUSE_RANKS"].split(","):
    import transformers.trainer_callback as tc

    _real = tc.CallbackHandler.on_step_end

    def on_step_end(self, args, state, control):
        if state.global_step == int(os.environ["XLT_PAUSE_AT"]):
            from xlt import cluster

            Path(os.environ["XLT_PAUSE_DIR"], "paused-" + os.environ["RANK"]).write_text(str(os.getpid()))
            end = time.time() + 120
            while cluster.preemption_requested() is None and time.time() < end:
                time.sleep(0.05)
        return _real(self, args, state, control)

    tc.CallbackHandler.on_step_end = on_step_end
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"


def _wait(cond, timeout: float, what: str) -> None:
    end = time.time() + timeout
    while not cond():
        assert time.time() < end, what
        time.sleep(0.1)


def _preempted_launch(tmp_path: Path, pause_ranks: str, send) -> tuple[RunDir, subprocess.CompletedProcess, list[int]]:
    """Launch the ddp_pipeline's command in ``tmp_path``, let ranks ``pause_ranks`` pause at step PAUSE_AT,
    then ``send(launcher, worker_pids)``; return the run, the launcher's outcome and the worker pids."""
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(PAUSE_HOOK)
    args = ["+recipe=demo_tiny", f"run_root={tmp_path}", *PIPELINE, "training.per_device_train_batch_size=8"]
    env = {**ENV, "PYTHONPATH": f"{hook}{os.pathsep}{ROOT}", "XLT_PAUSE_AT": str(PAUSE_AT),
           "XLT_PAUSE_RANKS": pause_ranks, "XLT_PAUSE_DIR": str(tmp_path)}
    launcher = subprocess.Popen([*_accelerate(2, "--multi_gpu"), "-m", "xlt.train", *args], cwd=ROOT, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    pids: list[int] = []
    try:
        paused = [tmp_path / f"paused-{r}" for r in pause_ranks.split(",")]
        _wait(lambda: all(p.exists() for p in paused) or launcher.poll() is not None, 600, "no rank paused")
        assert launcher.poll() is None, launcher.communicate()[1][-3000:]
        pids = [int(p.read_text()) for p in paused]
        send(launcher, pids)
        out, err = launcher.communicate(timeout=300)
        return RunDir(tmp_path / run_name(args)), subprocess.CompletedProcess(launcher.args, launcher.returncode, out, err), pids
    finally:
        if launcher.poll() is None:
            launcher.kill()


@pytest.mark.slow
def test_usr1_to_the_launcher_checkpoints_every_rank_and_the_rerun_matches(tmp_path, ddp_pipeline):
    """USR1 to `accelerate launch` only (its agent does not handle USR1: the launcher dies at once). Its
    workers get TERM as it dies (PR_SET_PDEATHSIG), agree on the step, write one complete checkpoint there
    and exit with the requeue status; none outlives the launcher. The rerun resumes from that checkpoint and
    ends with the model bytes of the uninterrupted 2-rank run."""
    from xlt.training.checkpoints import checkpoint_problem

    run, proc, pids = _preempted_launch(tmp_path, "0,1", lambda launcher, pids: launcher.send_signal(signal.SIGUSR1))
    assert proc.returncode == -signal.SIGUSR1
    _wait(lambda: not any(_alive(p) for p in pids), 120, "a worker outlived its launcher")
    saved = sorted(p.name for p in run.checkpoints.glob("checkpoint-*"))
    assert saved == ["checkpoint-3", f"checkpoint-{PAUSE_AT}"], saved
    assert checkpoint_problem(run.checkpoints / f"checkpoint-{PAUSE_AT}") is None
    assert not run.model.exists() and not run.is_done("train")

    rerun = subprocess.run([*_accelerate(2, "--multi_gpu"), "-m", "xlt.train", "+recipe=demo_tiny", f"run_root={tmp_path}",
                            *PIPELINE, "training.per_device_train_batch_size=8"], cwd=ROOT, env=ENV,
                           capture_output=True, text=True, timeout=900)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    m = _metrics(run)
    assert m["resumed_from"].endswith(f"checkpoint-{PAUSE_AT}") and m["global_step"] == STEPS
    assert (run.model / "model.safetensors").read_bytes() == (ddp_pipeline.model / "model.safetensors").read_bytes()


@pytest.mark.slow
def test_term_to_the_launcher_stops_every_rank_at_the_same_step(tmp_path):
    """TERM to `accelerate launch`, as slurm/common.sh sends it: the agent forwards it to both workers. Rank 1
    pauses at step PAUSE_AT until it has the signal, while rank 0 already waits in the step-end reduction
    of the stop flag (its own flag read before the signal came): the reduction makes both save that step,
    with its completeness record, and exit with the requeue status; no worker outlives the launcher."""
    from xlt.training.checkpoints import checkpoint_problem

    run, proc, pids = _preempted_launch(tmp_path, "1", lambda launcher, pids: launcher.send_signal(signal.SIGTERM))
    assert proc.returncode != 0
    _wait(lambda: not any(_alive(p) for p in pids), 120, "a worker outlived its launcher")
    saved = sorted(p.name for p in run.checkpoints.glob("checkpoint-*"))
    assert saved == ["checkpoint-3", f"checkpoint-{PAUSE_AT}"], saved
    assert checkpoint_problem(run.checkpoints / f"checkpoint-{PAUSE_AT}") is None
    assert "preempted (SIGTERM received; checkpoint saved at step 4)" in proc.stderr, proc.stderr[-3000:]

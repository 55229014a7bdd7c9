"""Hydra launchers (conf/hydra/launcher/slurm.yaml, local.yaml), preemption handling (xlt.cluster) and
requeue safety: a multirun through submitit, the sbatch script submitit generates, a run killed by the
scheduler's signal and resubmitted."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest
import yaml

from tests.cli import ENV, REPO, xlt
from tests.fixtures.scontrol import controller_stub
from tests.training.conftest import make_cfg, write_train_set
from xlt.cluster import signals
from xlt.run.layout import RunDir


def test_slurm_launcher_config_resolves():
    proc = xlt("xlt.train", "+recipe=xlmr_zeroshot", "hydra/launcher=slurm", "hydra.launcher.partition=gpu",
               "--cfg", "hydra", "-p", "hydra.launcher")
    assert proc.returncode == 0, proc.stderr
    launcher = yaml.safe_load(proc.stdout)
    assert launcher["_target_"].endswith("SlurmLauncher")
    assert launcher["partition"] == "gpu" and launcher["gpus_per_node"] == 1 and launcher["tasks_per_node"] == 1
    assert launcher["max_num_timeout"] >= 1 and launcher["additional_parameters"] == {"requeue": True}
    assert "export HF_HUB_OFFLINE=1" in launcher["setup"]


def test_slurm_multirun_submits_one_job_array(tmp_path):
    """With stub sbatch/srun/sacct on PATH, capture the array script submitit generates."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    captured = tmp_path / "captured.sh"
    (bin_dir / "sbatch").write_text(f'#!/bin/bash\ncp "${{@: -1}}" {captured}\necho "sbatch: stub refuses" >&2\nexit 1\n')
    for tool in ("srun", "sacct", "scancel"):
        (bin_dir / tool).write_text("#!/bin/bash\nexit 1\n")
    for f in bin_dir.iterdir():
        f.chmod(0o755)
    env = {**ENV, "PATH": f"{bin_dir}:{ENV['PATH']}"}
    proc = xlt("xlt.train", "-m", "+recipe=xlmr_zeroshot", "seed=1,2,3", "hydra/launcher=slurm",
               "hydra.launcher.partition=gpu", "hydra.launcher.account=proj", "hydra.launcher.array_parallelism=2",
               f"run_root={tmp_path / 'runs'}", env=env, timeout=120)
    assert captured.exists(), proc.stderr[-2000:]
    script = captured.read_text()
    sb = dict(re.findall(r"^#SBATCH --([\w-]+)(?:=(.*))?$", script, flags=re.M))
    assert sb["array"] == "0-2%2"  # one array, three elements, two at a time
    assert sb["partition"] == "gpu" and sb["account"] == "proj"
    assert sb["gpus-per-node"] == "1" and sb["ntasks-per-node"] == "1" and sb["nodes"] == "1"
    assert sb["signal"] == "USR2@300" and "requeue" in sb and sb["time"] == "720"
    assert "%A_%a" in sb["output"] and str(tmp_path / "runs" / ".submitit") in sb["output"]
    assert "export HF_HUB_OFFLINE=1" in script
    assert "srun" in script and "submitit.core._submit" in script


def test_signal_without_active_training_raises_preempted():
    old = {s: signal.getsignal(getattr(signal, s)) for s in signals.SIGNALS}
    try:
        signals.install_signal_handlers()
        with pytest.raises(signals.Preempted):
            os.kill(os.getpid(), signal.SIGUSR1)
            time.sleep(1)
        assert signals.preemption_requested() == "SIGUSR1"
        # the entry points exit REQUEUE_EXIT (75) on it, 130 on other interrupts: "rerun to resume"
        assert isinstance(signals.Preempted(), KeyboardInterrupt)
    finally:
        for s, h in old.items():
            signal.signal(getattr(signal, s), h)
        signals._requested["signal"] = None


@pytest.mark.slow
def test_signal_during_training_checkpoints_then_resume_finishes(tmp_path):
    """USR1 mid-training: a checkpoint at that very step (not a save step), Preempted; a rerun resumes from it."""
    from transformers import TrainerCallback

    from xlt.stages import call_stage

    class SignalAtStep(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            if state.global_step == 7:
                os.kill(os.getpid(), signal.SIGUSR1)
            return control

    settings = {"training.max_steps": 16, "training.eval_steps": 10}
    run = RunDir(tmp_path / "run")
    write_train_set(run, 200, 32)
    old = signal.getsignal(signal.SIGUSR1)
    try:
        signals.install_signal_handlers(("SIGUSR1",))
        with pytest.raises(signals.Preempted, match="checkpoint saved at step 7"):
            call_stage("train", make_cfg(**settings), run, extra_callbacks=[SignalAtStep(), signals.checkpoint_callback()])
    finally:
        signal.signal(signal.SIGUSR1, old)
        signals._requested["signal"] = None
        signals._active_callbacks.clear()
    assert (run.checkpoints / "checkpoint-7" / "trainer_state.json").exists()
    assert not run.model.exists()
    summary = call_stage("train", make_cfg(**settings), run)
    assert summary["resumed_from"].endswith("checkpoint-7") and summary["global_step"] == 16
    assert run.model.exists()


DEMO_FAST = ["training.max_steps=30", "eval.benchmarks.belebele.max_questions=20",
             "eval.benchmarks.global_mmlu.enabled=false"]


@pytest.mark.slow
def test_local_submitit_multirun_two_seeds_and_seed_summary(tmp_path):
    runs = tmp_path / "runs"
    proc = xlt("xlt.train", "-m", "+recipe=demo_tiny", "seed=1,2", "hydra/launcher=local", f"run_root={runs}", *DEMO_FAST,
               timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    dirs = sorted(p for p in (runs / "demo_tiny").iterdir() if p.is_dir())
    assert [d.name.split("seed=")[1].split(",")[0] for d in dirs] == ["1", "2"]
    for d in dirs:
        for stage in ("build_data", "train", "evaluate", "report"):
            assert (d / "stages" / f"{stage}.json").exists(), (d, stage)
    assert list((runs / ".submitit").iterdir()), "submitit logs missing"
    # The multirun callback wrote the seed summary by itself when the sweep ended.
    auto = (runs / "multirun" / "demo_tiny").iterdir()
    auto_dir = next(auto)
    assert auto_dir.name.startswith("seed=1,2") and (auto_dir / "compare.md").is_file()
    assert ',2,"1,2",' in (auto_dir / "belebele_seeds.csv").read_text()
    out = tmp_path / "cmp"
    proc = xlt("xlt.report", "--compare", *map(str, dirs), "--out", str(out))
    assert proc.returncode == 0, proc.stderr[-3000:]
    seeds = (out / "belebele_seeds.csv").read_text().splitlines()
    assert seeds[0] == "system,runs,seeds,mean,std"
    assert len(seeds) == 2 and ',2,"1,2",' in seeds[1]  # one system, two seeds
    means = [json.loads((d / "stages" / "evaluate.json").read_text())["belebele"]["mean_accuracy"] for d in dirs]
    reported_mean = float(seeds[1].split(",")[-2])
    assert reported_mean == pytest.approx(sum(means) / 2)


@pytest.mark.slow
def test_requeued_array_element_resumes_without_redoing_work(tmp_path):
    """Run one sweep line through slurm/train_array.sbatch, signal it like SLURM does before the time limit,
    check it was requeued, resubmit: finished stages are skipped and training resumes from its checkpoint."""
    runs = tmp_path / "runs"
    sweep = tmp_path / "sweep.txt"
    sweep.write_text(f"+recipe=demo_tiny run_root={runs} training.max_steps=200 training.eval_steps=20 "
                     "training.save_steps=20 stages=[build_data,train]\n")
    bin_dir = controller_stub(tmp_path / "bin", tmp_path / "scontrol.log")
    env = {**ENV, "PATH": f"{bin_dir}:{ENV['PATH']}", "XLT_HOME": str(REPO), "XLT_PYTHON": sys.executable,
           "SLURM_ARRAY_TASK_ID": "1", "SLURM_JOB_ID": "555", "XLT_GRACE": "60"}
    cmd = ["bash", str(REPO / "slurm" / "train_array.sbatch"), str(sweep)]

    proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 300
    while True:
        found = list(runs.glob("demo_tiny/*/checkpoints/checkpoint-*/trainer_state.json"))
        if found:
            break
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        assert time.time() < deadline, "no checkpoint within 300 s"
        time.sleep(0.05)
    proc.send_signal(signal.SIGUSR1)
    out, err = proc.communicate(timeout=300)
    assert "requeue 555" in (tmp_path / "scontrol.log").read_text(), err[-3000:]
    run = RunDir(found[0].parents[2])
    assert run.is_done("build_data") and not run.is_done("train") and not run.model.exists()
    data_marker = run.marker("build_data").stat().st_mtime_ns
    ckpts = sorted(int(p.name.split("-")[1]) for p in run.checkpoints.glob("checkpoint-*"))
    assert ckpts and ckpts[-1] < 200

    # resubmission: same script, same arguments
    (tmp_path / "scontrol.log").unlink()
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert run.marker("build_data").stat().st_mtime_ns == data_marker  # not rebuilt
    assert "up to date" in proc.stderr + proc.stdout
    train = run.done_info("train")
    assert train["resumed_from"] and int(train["resumed_from"].rsplit("-", 1)[1]) >= ckpts[-1] > 0
    assert train["global_step"] == 200 and run.model.exists()
    assert not (tmp_path / "scontrol.log").exists()

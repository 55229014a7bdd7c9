"""Launch checks: a launch that lost processes, or trains another batch than asked, is reported."""

from __future__ import annotations

import json
import warnings

import pytest

from xlt.training.launch import DEEPSPEED_DEPRECATIONS, launch_warnings, quiet_deepspeed_deprecations

# What `accelerate launch --num_processes 2 script` (no --multi_gpu) puts in the environment of its ONE process.
SIMPLE_LAUNCHER_2 = {"ACCELERATE_USE_CPU": "False", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500",
                     "ACCELERATE_MIXED_PRECISION": "no"}


def test_accelerate_without_multi_gpu_is_reported():
    (msg,) = launch_warnings(1, 8, 2, env=SIMPLE_LAUNCHER_2)
    assert "started ONE" in msg and "--multi_gpu" in msg and "effective batch 16" in msg


@pytest.mark.parametrize("env", [
    {},  # python -m xlt.train
    {"ACCELERATE_MIXED_PRECISION": "no", "ACCELERATE_USE_CPU": "False"},  # accelerate launch, 1 process
    {**SIMPLE_LAUNCHER_2, "WORLD_SIZE": "2", "RANK": "0"},  # a real multi-process launcher
])
def test_normal_launches_are_quiet(env):
    world = int(env.get("WORLD_SIZE", 1))
    assert launch_warnings(world, 8, 1, env=env) == []


def test_idle_gpus_are_reported():
    (msg,) = launch_warnings(1, 8, 1, env={}, visible_gpus=4)
    assert "4 GPUs are visible" in msg
    assert launch_warnings(4, 8, 1, env={"WORLD_SIZE": "4"}, visible_gpus=4) == []


def test_deepspeed_batch_that_does_not_match(tmp_path):
    ds = tmp_path / "ds.json"
    ds.write_text(json.dumps({"train_batch_size": 32, "zero_optimization": {"stage": 2}}))
    (msg,) = launch_warnings(2, 8, 1, env={"WORLD_SIZE": "2"}, deepspeed=str(ds))
    assert "train_batch_size 32" in msg and "= 16" in msg
    assert launch_warnings(2, 8, 2, env={"WORLD_SIZE": "2"}, deepspeed=str(ds)) == []
    ds.write_text(json.dumps({"train_batch_size": "auto"}))
    assert launch_warnings(2, 8, 1, env={"WORLD_SIZE": "2"}, deepspeed=str(ds)) == []


def test_only_deepspeeds_deprecations_are_silenced():
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        quiet_deepspeed_deprecations()
        for name in ("all_gather_into_tensor", "reduce_scatter_tensor"):
            warnings.warn(f"`torch.distributed.{name}` is deprecated. Please use x instead.", FutureWarning, stacklevel=1)
        warnings.warn("`torch.distributed.broadcast` is deprecated.", FutureWarning, stacklevel=1)
    assert [str(w.message) for w in seen] == ["`torch.distributed.broadcast` is deprecated."]
    assert "all_gather_into_tensor" in DEEPSPEED_DEPRECATIONS

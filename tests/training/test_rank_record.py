"""The completeness record holds the files every rank wrote, not one node's listing: two plain processes
in a gloo group (no model) drive the real completeness callback; rank 0's directory listing does not show
rank 1's RNG state yet (what NFS attribute caching does to files another node has just written)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli import free_port

ROOT = Path(__file__).resolve().parents[2]

CHILD = r"""
import os, sys
from pathlib import Path
from types import SimpleNamespace
import torch.distributed as dist
from xlt.training import checkpoints as ck

rank = int(os.environ["RANK"])
dist.init_process_group("gloo", rank=rank, world_size=2)
out = Path(sys.argv[1])
folder = out / "checkpoint-2"
folder.mkdir(parents=True, exist_ok=True)
if rank == 0:
    for name in ("model.safetensors", "optimizer.pt", "scheduler.pt", "rng_state_0.pth"):
        (folder / name).write_bytes(name.encode() * 100)
    (folder / "trainer_state.json").write_text('{"global_step": 2, "log_history": []}')
    real_walk = os.walk

    def nfs_walk(top, *a, **k):  # rank 0's node does not list rank 1's file yet
        for dirpath, dirs, names in real_walk(top, *a, **k):
            yield dirpath, dirs, [n for n in names if n != "rng_state_1.pth"]

    os.walk = nfs_walk
else:
    (folder / "rng_state_1.pth").write_bytes(b"rank one's generator state" * 50)
args = SimpleNamespace(output_dir=str(out))
state = SimpleNamespace(global_step=2, is_world_process_zero=rank == 0, best_model_checkpoint=None)
ck.completeness_callback().on_save(args, state, None)
dist.destroy_process_group()
"""


@pytest.mark.slow
def test_the_record_names_another_nodes_files_and_their_damage_is_noticed(tmp_path):
    from xlt.training.checkpoints import COMPLETE_FILE, checkpoint_problem

    script = tmp_path / "child.py"
    script.write_text(CHILD)
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "OMP_NUM_THREADS": "1",
        "CUDA_VISIBLE_DEVICES": "",
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(free_port()),
        "WORLD_SIZE": "2",
    }
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), str(tmp_path)],
            env={**env, "RANK": str(r)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for r in (0, 1)
    ]
    for p in procs:
        _, err = p.communicate(timeout=180)
        assert p.returncode == 0, err[-3000:]
    folder = tmp_path / "checkpoint-2"
    files = json.loads((folder / COMPLETE_FILE).read_text())["files"]
    assert sorted(files) == [
        "model.safetensors",
        "optimizer.pt",
        "rng_state_0.pth",
        "rng_state_1.pth",
        "scheduler.pt",
        "trainer_state.json",
    ]
    assert files["rng_state_1.pth"]["size"] == len(b"rank one's generator state" * 50)
    assert checkpoint_problem(folder) is None
    damaged = bytearray((folder / "rng_state_1.pth").read_bytes())
    damaged[7] ^= 0xFF
    (folder / "rng_state_1.pth").write_bytes(bytes(damaged))
    assert (
        checkpoint_problem(folder) == "rng_state_1.pth is damaged (its content no longer matches the record)"
    )

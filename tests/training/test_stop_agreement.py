"""The stop request is reduced across ranks at every step end (xlt.cluster.checkpoint_callback): two plain
processes in a gloo group (free port, no model) drive the real callback through 4 steps; only rank 1 is
signalled, during step 2. Both must save at step 2 and then stop, and neither before; both stop the same
way: Preempted after the scheduler's USR1, Terminated after a TERM that was no preemption (what torch-elastic
sends the surviving workers when one fails)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli import free_port

ROOT = Path(__file__).resolve().parents[2]

CHILD = r'''
import json, os, signal, sys
import torch.distributed as dist
from transformers import TrainerControl, TrainerState, TrainingArguments
from xlt.cluster import signals

rank = int(os.environ["RANK"])
dist.init_process_group("gloo", rank=rank, world_size=2)
signals.install_signal_handlers()
cb = signals.checkpoint_callback()
args = TrainingArguments(output_dir=sys.argv[1], use_cpu=True, report_to=["none"])
state, control = TrainerState(), TrainerControl()
cb.on_train_begin(args, state, control)
saves = []
try:
    for step in range(1, 5):
        state.global_step = step
        if rank == 1 and step == 2:
            os.kill(os.getpid(), getattr(signal, sys.argv[2]))  # only this rank is signalled
        control.should_save = False
        cb.on_step_end(args, state, control)
        if control.should_save:
            saves.append(step)
            cb.on_save(args, state, control)
    outcome = "finished"
except signals.Stopped as err:
    outcome = type(err).__name__ + ": " + str(err)
print(json.dumps({"saves": saves, "outcome": outcome}))
dist.destroy_process_group()
'''


@pytest.mark.slow
# USR1: a preemption on every rank. A TERM that is no preemption is agreed the same way (Terminated on both):
# with real launchers, test_term_to_the_launcher_stops_every_rank_at_the_same_step (test_distributed.py).
@pytest.mark.parametrize(("sig", "stop"), [("SIGUSR1", "Preempted")])
def test_a_signal_to_one_rank_makes_every_rank_save_the_same_step(tmp_path, sig, stop):
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": "",
           "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port()), "WORLD_SIZE": "2"}
    procs = [subprocess.Popen([sys.executable, str(script), str(tmp_path), sig], env={**env, "RANK": str(r)},
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for r in (0, 1)]
    results = []
    for p in procs:
        out, err = p.communicate(timeout=180)
        assert p.returncode == 0, err[-3000:]
        results.append(json.loads(out.strip().splitlines()[-1]))
    assert [r["saves"] for r in results] == [[2], [2]]
    assert results[0]["outcome"] == f"{stop}: a signal to another rank received; checkpoint saved at step 2"
    assert results[1]["outcome"] == f"{stop}: {sig} received; checkpoint saved at step 2"

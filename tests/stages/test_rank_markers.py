"""Stage markers under a 2-rank launch, with two plain Python processes (RANK 0/1, WORLD_SIZE 2; no model):
ranks > 0 follow rank 0's decision on each stage of this launch (``stages/<stage>.attempt``, keyed by rank
0's lock), never a marker rank 0 has not settled yet. Rank 0 pauses 1.5 s before clearing old markers (its
stage guard), the window in which rank 1 used to read them:

* a rerun after a failed 2-rank run: rank 1 used to read the old ``build_data.failed`` and stop;
* ``force=true`` on a finished run: rank 1 used to accept the previous build_data marker (same inputs)
  and train on its old output id.

Both launches use the same rendezvous variables (the same MASTER_PORT, as a requeued job would), so
only the lock's identity tells them apart."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

CHILD = r'''
import dataclasses, json, os, sys, time
from pathlib import Path
from omegaconf import OmegaConf
import pytest

from xlt import contract, stages
from xlt.run.lock import RunLock
from xlt.run.layout import RunDir

root, force = Path(sys.argv[1]), sys.argv[2]
rank = int(os.environ["RANK"])
contract.WAIT_POLL_S = 0.05


def guard(cfg, run):
    if rank == 0:
        time.sleep(1.5)  # the window in which rank 1 reads whatever markers are on disk


def build(cfg, run, ctx):
    if os.environ.get("FAIL") == "1":
        raise RuntimeError("build_data failed (on purpose)")
    return {"rows": 1}


def train(cfg, run, ctx):
    (run.path / f"seen-{rank}.json").write_text(json.dumps(ctx.upstream))
    other = run.path / f"seen-{1 - rank}.json"
    end = time.time() + 60
    while not other.exists() and time.time() < end:  # every rank trains (a file barrier)
        time.sleep(0.05)
    return {"ok": True}


# The real contract with stand-in stages and config values (no model, no data, no Hydra composition).
S = stages.STAGES
S["build_data"] = dataclasses.replace(S["build_data"], run=build, guard=guard, check=None, outputs=(),
                                      files=lambda cfg, run: {})
S["train"] = dataclasses.replace(S["train"], run=train, check=None, outputs=(), files=lambda cfg, run: {},
                                 upstream=lambda cfg: ("build_data",), code=None)
contract.stage_values = lambda cfg, stage: {"seed": 1}
cfg = OmegaConf.create({"force": force == "true"})
run = RunDir(root / "run")
run.path.mkdir(parents=True, exist_ok=True)
for p in run.path.glob("seen-*.json"):
    if rank == 0:
        p.unlink()
time.sleep(0.3)
with RunLock(run.path, rank=rank) as lock:
    stages.run_stages(cfg, run, ["build_data", "train"], launch=lock.owner)
'''


def _launch(tmp_path: Path, force: bool = False, fail: bool = False) -> list[subprocess.CompletedProcess]:
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT), "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1",
           # MASTER_PORT is only read as the launch's name (xlt.run.lock.launch_id): nothing listens on it.
           "MASTER_PORT": "29555", "TORCHELASTIC_RUN_ID": "none", "FAIL": "1" if fail else "0",
           "HF_HUB_OFFLINE": "1"}
    procs = [subprocess.Popen([sys.executable, str(script), str(tmp_path), str(force).lower()], cwd=ROOT,
                              env={**env, "RANK": str(r), "LOCAL_RANK": str(r)}, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for r in (0, 1)]
    out = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=120)
        out.append(subprocess.CompletedProcess(p.args, p.returncode, stdout, stderr))
    return out


def _marker_id(tmp_path: Path) -> str:
    return json.loads((tmp_path / "run" / "stages" / "build_data.json").read_text())["provenance"]["output_id"]


def _seen(tmp_path: Path) -> list[str]:
    return [json.loads((tmp_path / "run" / f"seen-{r}.json").read_text())["build_data"] for r in (0, 1)]


@pytest.mark.slow  # over 15 s (several full runs, a wheel, a sweep): the slow tier, docs/testing.md
def test_reruns_after_a_failure_and_with_force_behave_like_one_rank(tmp_path):
    failed = _launch(tmp_path, fail=True)
    assert failed[0].returncode != 0 and "failed (on purpose)" in failed[0].stderr
    assert failed[1].returncode != 0 and "build_data failed on rank 0" in failed[1].stderr, failed[1].stderr[-2000:]
    assert (tmp_path / "run" / "stages" / "build_data.failed").exists()

    rerun = _launch(tmp_path)  # the .failed of the last launch is still on disk when rank 1 starts
    assert [p.returncode for p in rerun] == [0, 0], rerun[1].stderr[-3000:]
    first = _marker_id(tmp_path)
    assert _seen(tmp_path) == [first, first]
    assert not (tmp_path / "run" / "stages" / "build_data.failed").exists()

    forced = _launch(tmp_path, force=True)  # the previous marker has the same inputs
    assert [p.returncode for p in forced] == [0, 0], forced[1].stderr[-3000:]
    second = _marker_id(tmp_path)
    assert second != first and _seen(tmp_path) == [second, second]

    again = _launch(tmp_path)  # all up to date: rank 0 skips both stages and rank 1 follows (no training)
    assert [p.returncode for p in again] == [0, 0], again[1].stderr[-3000:]
    assert _marker_id(tmp_path) == second and not list((tmp_path / "run").glob("seen-*.json"))

"""The stage contract through the CLI, scenario by scenario: no stale result survives a change upstream.

Each scenario is replayed as a user would type it (``python -m xlt.train ...``) on a small demo run
(40 training steps, two Belebele languages and one Global-MMLU language), and checks what was recomputed
from the files' provenance, not from log text alone.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cli import ENV, REPO, xlt
from xlt.run.lock import _proc_start
from xlt.training.checkpoints import COMPLETE_FILE

SMALL = ["+recipe=demo_tiny", "training.max_steps=40", "training.eval_steps=20",
         "eval.benchmarks.belebele.languages=[eng_Latn,fra_Latn]", "eval.benchmarks.global_mmlu.languages=[en]",
         "eval.benchmarks.xcopa.languages=[it]"]


def run_dir(root: Path) -> Path:
    return root / "demo_tiny" / "training.eval_steps=20,training.max_steps=40"


def ok(proc: subprocess.CompletedProcess) -> str:
    """The log of a successful call (Hydra logs to stdout, tqdm and errors go to stderr)."""
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout + proc.stderr


def results(run: Path) -> dict[str, dict]:
    return {p.relative_to(run / "eval").as_posix(): json.loads(p.read_text())
            for p in sorted((run / "eval").glob("*/*.json")) if p.name != "plan.json"}


def marker(run: Path, stage: str) -> dict:
    return json.loads((run / "stages" / f"{stage}.json").read_text())


@pytest.fixture(scope="module")
def small_runs(tmp_path_factory) -> tuple[Path, Path]:
    """The small demo run (the tests below change it) and an untouched copy of it taken as soon as it
    finished: the uninterrupted run that the kill -9 test compares with (one training run for both)."""
    root = tmp_path_factory.mktemp("contract")
    ok(xlt("xlt.train", *SMALL, f"run_root={root}"))
    ref = tmp_path_factory.mktemp("uninterrupted")
    shutil.copytree(run_dir(root), run_dir(ref), symlinks=True)
    return root, ref


@pytest.fixture(scope="module")
def small(small_runs) -> Path:
    return small_runs[0]


def test_every_result_records_its_provenance(small):
    run = run_dir(small)
    train_id = marker(run, "train")["provenance"]["output_id"]
    model_fp = json.loads((run / "model" / "xlt_provenance.json").read_text())["fingerprint"]
    res = results(run)
    assert set(res) == {"belebele/eng_Latn.json", "belebele/fra_Latn.json", "global_mmlu/en.json", "xcopa/it.json"}
    for r in res.values():
        p = r["provenance"]
        assert p["upstream"] == {"train": train_id} and p["model"] == model_fp and p["xlt_version"]
        assert p["data"] and p["job"]
    pred = json.loads((run / "eval" / "belebele" / "predictions" / "eng_Latn.jsonl").read_text().splitlines()[0])
    assert pred["job"] == res["belebele/eng_Latn.json"]["provenance"]["job"]
    for f in ("train_metrics.json", "data/build_report.json", "report.json"):
        assert json.loads((run / f).read_text())["provenance"]["xlt_version"], f
    assert json.loads((run / "report.json").read_text())["provenance"]["upstream"]["evaluate"] == \
        marker(run, "evaluate")["provenance"]["output_id"]


def test_weights_swapped_stop_with_the_fix_and_restored_weights_are_up_to_date(small):
    """Weights in model/ that training did not save (another run's, edited, truncated): not scored under
    this run's name; the error names model/xlt_provenance.json and the fix. Put back, all is current."""
    from safetensors.torch import load_file, save_file

    run = run_dir(small)
    before = results(run)
    weights = run / "model" / "model.safetensors"
    original = weights.read_bytes()
    state = load_file(str(weights))
    state = {k: (-v if k.startswith("classifier") else v) for k, v in state.items()}  # another model
    save_file(state, str(weights), metadata={"format": "pt"})
    proc = xlt("xlt.train", *SMALL, "stages=[evaluate,report]", f"run_root={small}")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "xlt_provenance.json" in proc.stderr and "force=true" in proc.stderr
    assert results(run) == before
    weights.write_bytes(original)
    assert ok(xlt("xlt.train", *SMALL, "stages=[evaluate,report]", f"run_root={small}")).count("up to date") == 2


@pytest.mark.slow  # over 15 s (several full runs, a wheel, a sweep): the slow tier, docs/testing.md
def test_force_retrains_and_recomputes_every_evaluation(small):
    run = run_dir(small)
    before = results(run)
    old_train = marker(run, "train")["provenance"]["output_id"]
    log = ok(xlt("xlt.train", *SMALL, "force=true", "stages=[train,evaluate,report]", f"run_root={small}"))
    assert "force=true" in log
    new_train = marker(run, "train")["provenance"]["output_id"]
    assert new_train != old_train
    after = results(run)
    assert set(after) == set(before)
    for key, r in after.items():  # every result belongs to the new training, none was reused
        assert r["provenance"]["upstream"]["train"] == new_train, key
    # ... and a plain rerun now skips everything.
    log = ok(xlt("xlt.train", *SMALL, f"run_root={small}"))
    assert log.count("up to date") == 4


@pytest.mark.slow  # over 15 s (several full runs, a wheel, a sweep): the slow tier, docs/testing.md
def test_a_changed_recipe_value_trains_fresh_and_moves_old_checkpoints_away(small, tmp_path):
    conf = tmp_path / "conf"
    shutil.copytree(REPO / "conf", conf)
    demo = conf / "training" / "demo.yaml"
    text = demo.read_text()
    edited = re.sub(r"(?m)^learning_rate: .*$", "learning_rate: 1.234e-4", text)
    assert edited != text
    demo.write_text(edited)
    run = run_dir(small)
    old_inputs = json.loads((run / "checkpoints" / "xlt_inputs.json").read_text())["inputs"]
    log = ok(xlt("xlt.train", *SMALL, "stages=[train]", f"run_root={small}", env={"XLT_CONF_DIR": str(conf)}))
    assert "inputs changed: training.learning_rate" in log
    assert "training starts fresh" in log
    assert (run / "stale" / f"checkpoints-{old_inputs}").is_dir()
    metrics = json.loads((run / "train_metrics.json").read_text())
    assert metrics["resumed_from"] is None and metrics["global_step"] == 40


def _source_copy(tmp_path: Path) -> Path:
    src = tmp_path / "race"
    shutil.copytree(REPO / "xlt" / "assets" / "demo" / "race", src)
    return src


@pytest.mark.slow  # over 10 s of full runs through the CLI: the slow tier, docs/testing.md
def test_an_edited_source_file_rebuilds_the_training_set(tmp_path):
    src = _source_copy(tmp_path)
    args = ["+recipe=demo_tiny", "stages=[build_data]", f"data.sources.race.path={src}", f"run_root={tmp_path / 'runs'}"]
    ok(xlt("xlt.train", *args))
    assert "up to date" in ok(xlt("xlt.train", *args))
    train = src / "train.jsonl"
    lines = train.read_text().splitlines()
    train.write_text("\n".join(lines[:-10]) + "\n")  # edited in place, same path
    assert "inputs changed: file data.sources.race" in ok(xlt("xlt.train", *args))


@pytest.mark.slow  # over 10 s of full runs through the CLI: the slow tier, docs/testing.md
def test_changed_decontamination_benchmarks_rebuild_the_training_set(tmp_path):
    bele = tmp_path / "belebele"
    shutil.copytree(REPO / "xlt" / "assets" / "demo" / "belebele", bele)
    args = ["+recipe=demo_tiny", "stages=[build_data]", "data.decontamination.enabled=true",
            f"eval.benchmarks.belebele.path={bele}", f"run_root={tmp_path / 'runs'}"]
    ok(xlt("xlt.train", *args))
    eng = bele / "data" / "eng_Latn.jsonl"
    eng.write_text(eng.read_text().splitlines()[0] + "\n")
    assert "inputs changed: file eval.benchmarks.belebele.path" in ok(xlt("xlt.train", *args))


def _write_lock(run: Path, pid: int) -> None:
    (run / "locks").mkdir(parents=True, exist_ok=True)
    info = {"host": socket.gethostname(), "pid": pid, "proc_start": _proc_start(pid), "launch": "other",
            "started": time.time(), "command": "+recipe=demo_tiny (the other run)"}
    (run / "locks" / "run.json").write_text(json.dumps(info))


def test_a_concurrent_second_run_is_refused_naming_the_holder(tmp_path):
    args = ["+recipe=demo_tiny", "stages=[build_data]", f"run_root={tmp_path}"]
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        _write_lock(tmp_path / "demo_tiny" / "default", holder.pid)
        proc = xlt("xlt.train", *args)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr
        assert f"PID {holder.pid}" in proc.stderr and "in use by another xlt process" in proc.stderr
        assert not (tmp_path / "demo_tiny" / "default" / "stages").exists()
    finally:
        holder.kill()
        holder.wait()
    # The holder is dead now: its lock is stale and is taken over.
    assert "stale lock" in ok(xlt("xlt.train", *args))
    assert not (tmp_path / "demo_tiny" / "default" / "locks" / "run.json").exists()  # released at the end


def test_two_runs_started_together_one_refused(tmp_path):
    args = [sys.executable, "-m", "xlt.train", "+recipe=demo_tiny", "stages=[build_data]", f"run_root={tmp_path}"]
    procs = [subprocess.Popen(args, cwd=REPO, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    codes = sorted(p.returncode for p in procs)
    assert codes[0] == 0 and codes[1] in (0, 2), outs
    if codes[1] == 2:  # the second found the first holding the directory
        assert any("in use by another xlt process" in err for _, err in outs)


def _kill_when(args: list[str], ready, what: str, log: Path) -> bool:
    """Start ``python -m xlt.train args``, SIGKILL it as soon as ``ready()`` holds (or let it finish);
    return whether it was killed. Its output goes to ``log``."""
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "xlt.train", *args], cwd=REPO, env=ENV, stdout=out, stderr=out)
        deadline = time.time() + 300
        while not ready() and proc.poll() is None:
            assert time.time() < deadline, f"no {what} within 300 s"
            time.sleep(0.05)
        killed = proc.poll() is None
        if killed:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    return killed


def _predictions(run: Path) -> dict[str, list]:
    out = {}
    for p in sorted((run / "eval").glob("*/predictions/*.jsonl")):
        rows = [json.loads(line) for line in p.read_text().splitlines()]
        out[p.relative_to(run).as_posix()] = [{k: v for k, v in r.items() if k != "job"} for r in rows]
    return out


@pytest.mark.slow  # over 15 s (several full runs, a wheel, a sweep): the slow tier, docs/testing.md
def test_kill_9_during_build_train_and_evaluation_then_rerun_matches_an_uninterrupted_run(tmp_path, small_runs):
    """Crash-and-resume under the contract: each rerun takes over the dead run's lock, resumes (training
    from its checkpoint, evaluation at the next language), and ends with the same training set, the same
    model bit for bit and the same predictions as an uninterrupted run (the same command, run once for
    the module: ``small_runs``)."""
    from datasets import load_from_disk
    from safetensors.torch import load_file

    args = [*SMALL, f"run_root={tmp_path}"]
    run = run_dir(tmp_path)
    logs = [tmp_path / f"log{i}.txt" for i in range(3)]
    _kill_when([*args, "stages=[build_data]"], lambda: (run / "data").exists(), "build", logs[0])
    # Ready once checkpoint-20's completeness record is written (the Trainer's files come before it: a kill
    # between the two rightly sets the checkpoint aside and starts fresh, so "resuming from" needs the record).
    killed_in_training = _kill_when([*args, "stages=[build_data,train]"], lambda: (
        run / "checkpoints" / "checkpoint-20" / COMPLETE_FILE).exists(), "complete checkpoint", logs[1])
    killed_in_eval = _kill_when(args, lambda: len(list((run / "eval").glob("*/*_*.json"))) >= 1, "first result",
                                logs[2])
    if killed_in_training:  # the next call took the dead run's lock over and resumed the checkpoint
        assert "stale lock" in logs[2].read_text() and "resuming from" in logs[2].read_text()
    log = ok(xlt("xlt.train", *args))
    if killed_in_eval:
        assert "stale lock" in log and "evaluate   running" in log

    ref = small_runs[1]  # the same command, uninterrupted
    a = load_file(str(run / "model" / "model.safetensors"))
    b = load_file(str(run_dir(ref) / "model" / "model.safetensors"))
    assert a.keys() == b.keys() and all((a[k] == b[k]).all() for k in a)
    da, db = load_from_disk(str(run / "data" / "train_set")), load_from_disk(str(run_dir(ref) / "data" / "train_set"))
    assert all(da[s].to_list() == db[s].to_list() for s in ("train", "dev"))
    assert _predictions(run) == _predictions(run_dir(ref)) and len(_predictions(run)) == 4


def test_bad_run_root_is_named(tmp_path):
    afile = tmp_path / "file"
    afile.write_text("x")
    proc = xlt("xlt.train", "+recipe=demo_tiny", f"run_root={afile}")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert f"run_root={afile}" in proc.stderr and "is a file" in proc.stderr
    if os.geteuid() != 0:  # root can write anywhere
        ro = tmp_path / "ro"
        ro.mkdir(mode=0o500)
        proc = xlt("xlt.train", "+recipe=demo_tiny", f"run_root={ro / 'runs'}")
        assert proc.returncode == 2 and "run_root=" in proc.stderr and "Traceback" not in proc.stderr

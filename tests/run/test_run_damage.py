"""Damaged run directories: every file xlt reads back is checked, and each damage has its class.

One small demo run (8 training steps, checkpoints at 4 and 8, two Belebele languages and one Global-MMLU
language, 24 questions each) is built once; each case copies it, damages one file in one way, reruns the
stages a user would rerun at that point of the run's life, and asserts the outcome:

* **recomputed** (markers, results, predictions, plans, reports, metrics, recorded inputs): the rerun
  succeeds, the log names the damaged file, and its numbers are identical to the undamaged run's;
* **recovered** (checkpoints): training resumes from the previous complete checkpoint, the damaged one is
  moved to ``stale/``, and the final model is bit-identical to the uninterrupted run's;
* **the user's to decide** (model weights that are not what training saved, a damaged lock): an
  :class:`XltError` naming the file and the fix (``force=true``, the path to remove).

Stages run in-process (faithful: the entry points only add the lock and ``config.yaml``); the CLI runs
only where the user-facing message is the point (a kill -9 during a checkpoint save, ``xlt: error:``).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
from pathlib import Path

import pytest
import torch

from tests.cli import xlt
from xlt.config.compose import compose
from xlt.errors import XltError
from xlt.run.layout import RunDir, run_name
from xlt.run.lock import RunLock
from xlt.run.results import verified_result
from xlt.stages import run_stages

ARGS = ["+recipe=demo_tiny", "training.max_steps=8", "training.eval_steps=4", "training.max_train_rows=256",
        "training.max_dev_rows=48", "eval.benchmarks.belebele.languages=[eng_Latn,fra_Latn]",
        "eval.benchmarks.global_mmlu.languages=[en]", "eval.benchmarks.belebele.max_questions=24",
        "eval.benchmarks.global_mmlu.max_questions=24", "eval.bootstrap_samples=50"]
ALL = ["build_data", "train", "evaluate", "report"]
JOBS = [("belebele", "eng_Latn"), ("belebele", "fra_Latn"), ("global_mmlu", "en")]


def _results(run: RunDir) -> dict[str, dict]:
    keys = ("accuracy", "n", "correct", "ci_low", "ci_high")
    out = {}
    for benchmark, language in JOBS:
        r = verified_result(run, benchmark, language)  # raises when damaged
        assert r is not None, (benchmark, language)
        out[f"{benchmark}/{language}"] = {k: r[k] for k in keys}
    return out


def _predictions(run: RunDir) -> dict[str, list]:
    out = {}
    for p in sorted(run.eval.glob("*/predictions/*.jsonl")):
        out[p.name] = [{k: v for k, v in json.loads(line).items() if k != "job"} for line in p.read_text().splitlines()]
    return out


def _report_numbers(run: RunDir) -> dict:
    rep = json.loads((run.path / "report.json").read_text())
    return {b: [(r["language"], r["accuracy"]) for r in v["per_language"]] for b, v in rep["benchmarks"].items()}


def _weights(run: RunDir) -> bytes:
    return (run.model / "model.safetensors").read_bytes()


class Base:
    def __init__(self, root: Path):
        self.root = root
        self.cfg = compose(None, [*ARGS, f"run_root={root}"])
        self.run = RunDir(root / run_name(ARGS))
        run_stages(self.cfg, self.run, ALL)
        from omegaconf import OmegaConf

        (self.run.path / "config.yaml").write_text(OmegaConf.to_yaml(self.cfg))
        self.results = _results(self.run)
        self.predictions = _predictions(self.run)
        self.report = _report_numbers(self.run)
        self.weights = _weights(self.run)
        self.train_set = self.run.train_set

    def copy(self, dest: Path) -> RunDir:
        run = RunDir(dest / run_name(ARGS))
        shutil.copytree(self.run.path, run.path, symlinks=True)
        return run


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as in the CLI subprocesses (OMP_NUM_THREADS=1): bit-identical models
    try:
        yield Base(tmp_path_factory.mktemp("damage") / "runs")
    finally:
        torch.set_num_threads(threads)


@pytest.fixture(autouse=True)
def no_plots(monkeypatch):
    """The report's PNG plots (2-3 s of matplotlib per report) are not under test here: the numbers are."""
    from xlt.reporting import plots

    monkeypatch.setattr(plots, "all_plots", lambda results, folder: [])


@pytest.fixture
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


# --- ways to damage a file -------------------------------------------------------------------------

def damage(path: Path, kind: str) -> None:
    if kind == "deleted":
        path.unlink()
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "truncated":  # what a kill or a full disk leaves
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2])
    elif kind == "garbage":  # bytes that are not UTF-8
        path.write_bytes(b"\x89\xfe\x00 not json \xff" * 8)
    elif kind == "other_shape":  # valid JSON, not what xlt writes there
        path.write_text('{"unexpected": true}\n' if path.suffix == ".jsonl" else '[1, 2, 3]\n')
    elif kind == "folder":  # a folder where the file belongs
        path.unlink()
        path.mkdir()
        (path / "x").write_text("x")
    else:  # pragma: no cover
        raise ValueError(kind)


KINDS = ("deleted", "empty", "truncated", "garbage", "other_shape", "folder")

# file -> (stages a user reruns at that point, what must come out identical)
DERIVABLE = {
    "stages/build_data.json": (["build_data"], "train_set"),
    "data/build_report.json": (["build_data"], "train_set"),
    "stages/train.json": (["train"], "model"),
    "train_metrics.json": (["train"], "model"),
    "stages/evaluate.json": (["evaluate", "report"], "results"),
    "eval/belebele/fra_Latn.json": (["evaluate", "report"], "results"),
    "eval/belebele/predictions/fra_Latn.jsonl": (["evaluate", "report"], "results"),
    "eval/global_mmlu/en.json": (["evaluate"], "results"),
    "eval/belebele/plan.json": (["evaluate", "report"], "results"),
    "stages/report.json": (["report"], "report"),
    "report.json": (ALL, "report"),
}
# Expensive reruns (a rebuild or a reload of the model) take the four commonest damages.
FEW = ("truncated", "garbage", "folder")
CASES = [(f, k) for f, (stages, _) in DERIVABLE.items()
         for k in (KINDS if stages[0] in ("evaluate", "report") or stages == ALL else FEW)]


def _same_as_base(base: Base, run: RunDir, what: str) -> None:
    if what == "train_set":
        from datasets import load_from_disk

        a, b = load_from_disk(str(run.train_set)), load_from_disk(str(base.train_set))
        assert all(a[s].to_list() == b[s].to_list() for s in ("train", "dev"))
    if what == "model":
        assert _weights(run) == base.weights
    if what in ("results", "report"):
        assert _results(run) == base.results
        assert _predictions(run) == base.predictions
    if what == "report" or (run.path / "report.json").is_file():
        assert _report_numbers(run) == base.report


@pytest.mark.parametrize(("rel", "kind"), CASES, ids=[f"{f}-{k}" for f, k in CASES])
def test_damaged_derivable_file_is_recomputed(base, tmp_path, caplog, one_thread, rel, kind):
    run = base.copy(tmp_path)
    damage(run.path / rel, kind)
    stages, what = DERIVABLE[rel]
    with caplog.at_level(logging.INFO):
        ran = run_stages(base.cfg, run, stages)
    assert ran, "a damaged file must not leave its stage 'up to date'"
    text = caplog.text
    name = Path(rel).name
    if kind != "deleted":  # the log names the damaged file and why it is redone
        assert name in text and ("damaged" in text or "not done yet" in text), text[-2000:]
    assert (run.path / rel).is_file()
    _same_as_base(base, run, what)


@pytest.mark.parametrize("change", ["accuracy", "correct", "n"])
def test_a_result_that_disagrees_with_its_predictions_is_recomputed(base, tmp_path, caplog, one_thread, change):
    run = base.copy(tmp_path)
    path = run.eval / "belebele" / "eng_Latn.json"
    res = json.loads(path.read_text())
    res[change] = res[change] + (1 if change != "accuracy" else 12.5)
    path.write_text(json.dumps(res))
    with caplog.at_level(logging.INFO):
        run_stages(base.cfg, run, ["evaluate", "report"])
    assert "disagrees with its predictions" in caplog.text and "eng_Latn.json" in caplog.text
    _same_as_base(base, run, "report")


@pytest.mark.parametrize("how", ["line_dropped", "other_job"])
def test_predictions_that_no_longer_match_their_result_are_recomputed(base, tmp_path, one_thread, how):
    run = base.copy(tmp_path)
    path = run.eval / "global_mmlu" / "predictions" / "en.jsonl"
    lines = path.read_text().splitlines()
    if how == "line_dropped":
        lines = lines[:-1]
    else:
        lines = [json.dumps({**json.loads(x), "job": "0" * 16}) for x in lines]
    path.write_text("\n".join(lines) + "\n")
    assert run_stages(base.cfg, run, ["evaluate", "report"]) == ["evaluate", "report"]
    _same_as_base(base, run, "report")


def test_a_deleted_result_is_recomputed_and_only_it(base, tmp_path, caplog, one_thread):
    run = base.copy(tmp_path)
    keep = (run.eval / "belebele" / "eng_Latn.json").stat().st_mtime_ns
    (run.eval / "belebele" / "fra_Latn.json").unlink()
    with caplog.at_level(logging.INFO):
        assert run_stages(base.cfg, run, ["evaluate", "report"]) == ["evaluate", "report"]
    assert "fra_Latn.json missing" in caplog.text and "1 to do" in caplog.text
    assert (run.eval / "belebele" / "eng_Latn.json").stat().st_mtime_ns == keep
    _same_as_base(base, run, "report")


@pytest.mark.parametrize("kind", ["truncated", "other_shape"])
def test_damaged_recorded_inputs_retrain_fresh(base, tmp_path, caplog, one_thread, kind):
    """Killed after the last checkpoint, before the model was saved; the checkpoints' inputs record is
    damaged: their inputs are unknown, so they are set aside and training starts fresh (same model)."""
    run = base.copy(tmp_path)
    for p in ("model", "train_metrics.json", "stages/train.json", "stages/evaluate.json", "stages/report.json"):
        shutil.rmtree(run.path / p) if (run.path / p).is_dir() else (run.path / p).unlink()
    damage(run.checkpoints / "xlt_inputs.json", kind)
    with caplog.at_level(logging.INFO):
        run_stages(base.cfg, run, ["train"])
    assert "xlt_inputs.json" in caplog.text and "training starts fresh" in caplog.text
    assert json.loads((run.path / "train_metrics.json").read_text())["resumed_from"] is None
    assert _weights(run) == base.weights


def test_damaged_arrow_file_of_the_training_set_is_rebuilt(base, tmp_path, caplog, one_thread):
    run = base.copy(tmp_path)
    arrow = next((run.train_set / "train").glob("data-*.arrow"))
    damage(arrow, "truncated")
    with caplog.at_level(logging.INFO):
        assert run_stages(base.cfg, run, ["build_data"]) == ["build_data"]
    assert "data/train_set damaged" in caplog.text
    _same_as_base(base, run, "train_set")
    # Training alone on a damaged set: a clear error naming the folder and the stage that rebuilds it.
    damage(next((run.train_set / "train").glob("data-*.arrow")), "truncated")
    from xlt.run.artifacts import checked_train_set
    from xlt.training.data import load_training_set

    with pytest.raises(XltError, match="train_set.*build_data"):
        load_training_set(base.cfg.training, run, checked_train_set(run))


# --- checkpoints: recovered -----------------------------------------------------------------------

def _interrupted_before_the_model(run: RunDir) -> None:
    """The state a kill during the last checkpoint save leaves: no model, metrics or later markers."""
    for p in ("model", "train_metrics.json", "stages/train.json", "stages/evaluate.json", "stages/report.json",
              "eval", "report.json"):
        q = run.path / p
        if q.is_dir():
            shutil.rmtree(q)
        elif q.exists():
            q.unlink()


CKPT_DAMAGE = [("optimizer.pt", "truncated"), ("scheduler.pt", "deleted"), ("rng_state.pth", "truncated"),
               ("trainer_state.json", "garbage"), ("model.safetensors", "truncated"), ("xlt_complete.json", "deleted")]


@pytest.mark.parametrize(("name", "kind"), CKPT_DAMAGE, ids=[f"{n}-{k}" for n, k in CKPT_DAMAGE])
def test_damaged_newest_checkpoint_resumes_from_the_previous_complete_one(base, tmp_path, caplog, one_thread, name, kind):
    run = base.copy(tmp_path)
    _interrupted_before_the_model(run)
    damage(run.checkpoints / "checkpoint-8" / name, kind)
    with caplog.at_level(logging.INFO):
        run_stages(base.cfg, run, ["train"])
    assert "checkpoint-8 is incomplete or damaged" in caplog.text
    assert json.loads((run.path / "train_metrics.json").read_text())["resumed_from"].endswith("checkpoint-4")
    assert any(p.name.startswith("checkpoint-8-incomplete") for p in (run.path / "stale").iterdir())
    assert _weights(run) == base.weights  # = an uninterrupted run from checkpoint-4


def test_an_older_damaged_checkpoint_is_set_aside_and_the_newest_resumed(base, tmp_path, caplog, one_thread):
    run = base.copy(tmp_path)
    _interrupted_before_the_model(run)
    damage(run.checkpoints / "checkpoint-4" / "optimizer.pt", "truncated")
    with caplog.at_level(logging.INFO):
        run_stages(base.cfg, run, ["train"])
    assert "checkpoint-4 is incomplete or damaged" in caplog.text
    assert json.loads((run.path / "train_metrics.json").read_text())["resumed_from"].endswith("checkpoint-8")


def test_no_complete_checkpoint_left_starts_fresh_and_says_so(base, tmp_path, caplog, one_thread):
    run = base.copy(tmp_path)
    _interrupted_before_the_model(run)
    damage(run.checkpoints / "checkpoint-8" / "scheduler.pt", "deleted")
    damage(run.checkpoints / "checkpoint-4" / "trainer_state.json", "truncated")
    with caplog.at_level(logging.INFO):
        run_stages(base.cfg, run, ["train"])
    assert "no complete checkpoint left" in caplog.text and "training starts fresh" in caplog.text
    assert json.loads((run.path / "train_metrics.json").read_text())["resumed_from"] is None
    assert _weights(run) == base.weights


# --- the user's to decide -------------------------------------------------------------------------

def _swap_weights(path: Path) -> None:
    from safetensors.torch import load_file, save_file

    state = load_file(str(path))
    save_file({k: (-v if k.startswith("classifier") else v) for k, v in state.items()}, str(path),
              metadata={"format": "pt"})


MODEL_DAMAGE = ["weights_truncated", "weights_replaced", "provenance_deleted", "provenance_garbage"]


@pytest.mark.parametrize("how", MODEL_DAMAGE)
@pytest.mark.parametrize("stages", [["evaluate", "report"], ALL], ids=["evaluate", "all"])
def test_a_model_that_is_not_what_training_saved_stops_with_the_fix(base, tmp_path, how, stages):
    run = base.copy(tmp_path)
    target = {"weights_truncated": "model.safetensors", "weights_replaced": "model.safetensors",
              "provenance_deleted": "xlt_provenance.json", "provenance_garbage": "xlt_provenance.json"}[how]
    if how == "weights_replaced":
        _swap_weights(run.model / target)
    else:
        damage(run.model / target, how.split("_")[1])
    before = {p: p.read_bytes() for p in run.eval.glob("*/*.json")}
    with pytest.raises(XltError) as err:
        run_stages(base.cfg, run, stages)
    msg = str(err.value)
    assert str(run.model) in msg and "xlt_provenance.json" in msg and "force=true" in msg
    assert {p: p.read_bytes() for p in run.eval.glob("*/*.json")} == before  # nothing scored with it


def test_an_in_place_rewrite_with_its_mtime_restored_is_noticed(tmp_path, monkeypatch):
    from xlt.run import fingerprint

    monkeypatch.setenv("XLT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(fingerprint, "_MEMO", {})
    f = tmp_path / "w.bin"
    f.write_bytes(b"a" * 64)
    before = fingerprint.path_fingerprint(f)
    st = f.stat()
    with f.open("r+b") as h:  # same size, same inode
        h.write(b"b")
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))  # what touch -d / cp -p can restore; ctime they cannot
    assert f.stat().st_mtime_ns == st.st_mtime_ns and f.stat().st_ino == st.st_ino
    assert fingerprint.path_fingerprint(f) != before


# An empty or cut-short lock is what a kill between create and write leaves: taken over once unchanged for a
# lease (tests/run/test_lock_safety.py). Any other damage is not what xlt leaves: the user decides.
@pytest.mark.parametrize("kind", ["garbage", "other_shape", "folder"])
def test_a_damaged_lock_is_named_with_how_to_remove_it(tmp_path, monkeypatch, kind):
    import xlt.run.lock

    monkeypatch.setattr(xlt.run.lock, "DAMAGED_RECHECK_S", 0.01)
    lock = tmp_path / "locks" / "run.json"
    lock.parent.mkdir(parents=True)
    lock.write_text("{}")
    damage(lock, kind)
    with pytest.raises(XltError) as err:
        RunLock(tmp_path).acquire()
    msg = str(err.value)
    assert "damaged" in msg and str(lock) in msg and "rm -r" in msg and "another host" not in msg


def test_damaged_lock_and_model_through_the_cli_are_xlt_errors(base, tmp_path):
    run = base.copy(tmp_path / "r")
    cli_args = [*ARGS, f"run_root={tmp_path / 'r'}"]
    (run.path / "locks").mkdir(exist_ok=True)
    (run.path / "locks" / "run.json").write_text('["not", "a", "lock"]')
    proc = xlt("xlt.train", *cli_args, "stages=[evaluate]")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "xlt: error:" in proc.stderr and "locks/run.json is damaged (not the file xlt writes" in proc.stderr
    (run.path / "locks" / "run.json").unlink()
    _swap_weights(run.model / "model.safetensors")
    proc = xlt("xlt.train", *cli_args, "stages=[evaluate,report]")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "xlt: error:" in proc.stderr and "no longer match what the train stage saved" in proc.stderr
    assert "force=true 'stages=[train,evaluate,report]'" in proc.stderr


# --- kill -9 during a checkpoint save -------------------------------------------------------------

def _kill_9_inside_the_save_of(suffix: str) -> None:
    """From here on (a forked child), ``torch.save`` of a file ending in ``suffix`` writes the file, cuts it
    to a third, and SIGKILLs the process: a job killed while the Trainer writes a checkpoint."""
    real = torch.save

    def save(obj, f, *args, **kwargs):
        real(obj, f, *args, **kwargs)
        if str(f).endswith(suffix):
            data = Path(f).read_bytes()
            with open(f, "wb") as out:
                out.write(data[: len(data) // 3])
                out.flush()
                os.fsync(out.fileno())
            os.kill(os.getpid(), signal.SIGKILL)

    torch.save = save


def test_kill_9_during_a_checkpoint_save_resumes_from_the_previous_one_bit_identical(base, tmp_path, caplog, one_thread):
    """A process SIGKILLed inside the save of checkpoint-8 (weights written, optimizer.pt cut short, no
    scheduler, RNG or trainer state): the rerun sets checkpoint-8 aside, resumes from checkpoint-4 and ends
    with the uninterrupted run's model, bit for bit."""
    run = RunDir(tmp_path / run_name(ARGS))
    run.path.mkdir(parents=True)
    shutil.copytree(base.run.path / "data", run.path / "data")  # the built set: the killed call only trains
    (run.path / "stages").mkdir()
    shutil.copy(base.run.marker("build_data"), run.marker("build_data"))
    pid = os.fork()  # a real process, killed by a real SIGKILL (forked: no second start of Python)
    if pid == 0:  # pragma: no cover - the child
        try:
            _kill_9_inside_the_save_of(os.path.join("checkpoint-8", "optimizer.pt"))
            run_stages(base.cfg, run, ["build_data", "train"])
        finally:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, status
    ck8 = run.checkpoints / "checkpoint-8"
    assert (ck8 / "model.safetensors").is_file() and (ck8 / "optimizer.pt").is_file()
    assert not (ck8 / "xlt_complete.json").exists() and not run.model.exists()
    with caplog.at_level(logging.INFO):
        assert run_stages(base.cfg, run, ["build_data", "train"]) == ["train"]
    assert "checkpoint-8 is incomplete or damaged" in caplog.text
    assert json.loads((run.path / "train_metrics.json").read_text())["resumed_from"].endswith("checkpoint-4")
    assert _weights(run) == base.weights


# --- report --compare on damaged or repeated runs ---------------------------------------------------

def test_compare_refuses_the_same_run_twice_and_an_out_that_is_a_file(base, tmp_path):
    from xlt.reporting.compare_runs import compare_runs

    other = base.copy(tmp_path / "b")
    with pytest.raises(XltError, match="is the same run directory as"):
        compare_runs([base.run.path, other.path, Path(str(base.run.path) + "/")], tmp_path / "cmp")
    afile = tmp_path / "cmp.txt"
    afile.write_text("x")
    with pytest.raises(XltError, match="--out .*cmp.txt: is a file"):
        compare_runs([base.run.path, other.path], afile)
    payload = compare_runs([base.run.path, other.path], tmp_path / "cmp")  # two distinct copies compare
    assert len(payload["runs"]) == 2


@pytest.mark.parametrize(("rel", "kind"), [("config.yaml", "garbage"), ("config.yaml", "other_shape"),
                                           ("eval/belebele/plan.json", "truncated"),
                                           ("eval/belebele/predictions/fra_Latn.jsonl", "truncated"),
                                           ("eval/global_mmlu/en.json", "other_shape")])
def test_compare_names_a_damaged_run(base, tmp_path, rel, kind):
    from xlt.reporting.compare_runs import compare_runs

    other = base.copy(tmp_path / "b")
    damage(other.path / rel, kind)
    with pytest.raises(XltError) as err:
        compare_runs([base.run.path, other.path], tmp_path / "cmp")
    assert Path(rel).name in str(err.value) and str(other.path) in str(err.value)


def test_compare_through_the_cli_is_an_xlt_error(base, tmp_path):
    proc = xlt("xlt.report", "--compare", str(base.run.path), str(base.run.path), "--out", str(tmp_path / "cmp"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and "xlt: error:" in proc.stderr


@pytest.mark.parametrize("rel", ["eval/belebele/predictions", "stages"])
def test_a_file_where_a_folder_belongs_is_named_with_the_fix(base, tmp_path, rel):
    run = base.copy(tmp_path)
    (run.eval / "belebele" / "fra_Latn.json").unlink()  # something to write
    (run.path / "stages" / "evaluate.json").unlink()
    target = run.path / rel
    shutil.rmtree(target)
    target.write_text("not a folder")
    with pytest.raises(XltError) as err:
        run_stages(base.cfg, run, ["evaluate"])
    assert f"{target} is a file where a folder belongs: remove it" in str(err.value)

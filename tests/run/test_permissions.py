"""Runs and caches a group can share (issue 40, item 5): what xlt writes follows the umask like any file the
user writes (files 0666, folders 0777, less the umask; a setgid folder's group inherited), so a colleague in
the group reads a run written under ``umask 002`` in a group folder, and a second user of a group-shared
``XLT_CACHE`` uses the model the first one converted; where the second user cannot write, a clear error.

The "colleague" is a second process under another uid (65534, ``nobody``) and a group of its own: it needs
root to start, and is skipped with the reason otherwise. The interpreter is started as root and drops its
privileges once it has imported what it runs (the interpreter may live where ``nobody`` cannot read)."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.reporting.fake_runs import MODELS, write_run
from xlt.run.files import atomic_dir, atomic_write_json, atomic_write_text

COLLEAGUE_UID, GROUP_GID = 65534, 4242
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(params=[0o002, 0o022], ids=["umask002", "umask022"])
def umask(request):
    old = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_atomic_writes_follow_the_umask(tmp_path, umask):
    atomic_write_text(tmp_path / "a.txt", "x")
    atomic_write_json(tmp_path / "sub" / "b.json", {"a": 1})
    with atomic_dir(tmp_path / "folder") as tmp:
        (tmp / "inside.txt").write_text("y")
    with atomic_dir(tmp_path / "folder") as tmp:  # replacing an existing folder
        (tmp / "inside.txt").write_text("z")
    assert _mode(tmp_path / "a.txt") == _mode(tmp_path / "sub" / "b.json") == 0o666 & ~umask
    assert _mode(tmp_path / "folder") == _mode(tmp_path / "sub") == 0o777 & ~umask
    assert (tmp_path / "folder" / "inside.txt").read_text() == "z"
    assert not [p for p in tmp_path.rglob("*") if p.name.endswith(".tmp")]  # no temporary left


def test_what_a_library_writes_owner_only_follows_the_umask(tmp_path, umask):
    """safetensors writes 0600 whatever the umask (safetensors#782): inside an atomic folder (a model, a
    converted package) and in a checkpoint xlt marks complete, the file gets the umask's mode."""
    import torch
    from safetensors.torch import save_file

    from xlt.training.checkpoints import mark_complete

    with atomic_dir(tmp_path / "model") as tmp:
        save_file({"w": torch.zeros(2)}, str(tmp / "model.safetensors"))
        assert _mode(tmp / "model.safetensors") == 0o600  # what the library does (the reason for this code)
        (tmp / "run.sh").write_text("#!/bin/sh\n")
        os.chmod(tmp / "run.sh", 0o700)
    checkpoint = tmp_path / "checkpoints" / "checkpoint-15"
    checkpoint.mkdir(parents=True)
    save_file({"w": torch.zeros(2)}, str(checkpoint / "model.safetensors"))
    mark_complete(checkpoint)
    assert _mode(tmp_path / "model" / "model.safetensors") == _mode(checkpoint / "model.safetensors") == 0o666 & ~umask
    assert _mode(tmp_path / "model" / "run.sh") == 0o777 & ~umask  # an executable stays one


def test_a_setgid_group_folder_keeps_its_group_and_bit(tmp_path):
    group = tmp_path / "group"
    group.mkdir()
    os.chmod(group, 0o2775)
    old = os.umask(0o002)
    try:
        with atomic_dir(group / "model") as tmp:
            (tmp / "w").write_text("x")
        atomic_write_text(group / "model" / "card.md", "x")
    finally:
        os.umask(old)
    folder = (group / "model").stat()
    assert folder.st_mode & stat.S_ISGID and folder.st_gid == group.stat().st_gid
    assert _mode(group / "model") == 0o2775 and _mode(group / "model" / "card.md") == 0o664


def test_every_file_of_an_evaluated_run_follows_the_umask(tmp_path, umask):
    """The evaluate stage's writers (plans, results, predictions, translate-test records): none is owner-only."""
    from tests.fixtures.benchmarks import write_belebele
    from xlt import config as xcfg
    from xlt.run.layout import RunDir
    from xlt.stages import call_stage

    data = write_belebele(tmp_path / "bele", ["fra_Latn", "eng_Latn"], n=4)
    cfg = xcfg.validate({"translate": {"kind": "echo"}, "eval": {"scorer": "gold", "bootstrap_samples": 20, "benchmarks": {
        "belebele": {"kind": "belebele", "path": str(data)},
        "belebele_tt": {"kind": "belebele", "path": str(data), "translate_test": True}}}})
    run = RunDir(tmp_path / "run")
    call_stage("evaluate", cfg, run)
    files = [p for p in run.path.rglob("*") if p.is_file()]
    assert len(files) >= 10
    wrong = {str(p.relative_to(run.path)): oct(_mode(p)) for p in files if _mode(p) != 0o666 & ~umask}
    assert wrong == {}
    folders = [p for p in run.path.rglob("*") if p.is_dir()]
    assert {oct(_mode(p)) for p in folders} == {oct(0o777 & ~umask)}


# --- a second user ----------------------------------------------------------------------------------

def _need_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("starting a process as another uid needs root (the colleague is uid 65534)")


@pytest.fixture
def group_folder():
    """A folder of the group ``GROUP_GID``, setgid, group-writable, where uid 65534 can reach it (/tmp)."""
    _need_root()
    path = Path(tempfile.mkdtemp(prefix="xlt-group-"))
    os.chmod(path, 0o755)  # mkdtemp: 0700
    shared = path / "project"
    shared.mkdir()
    os.chown(shared, -1, GROUP_GID)
    os.chmod(shared, 0o2775)
    try:
        yield shared
    finally:
        shutil.rmtree(path, ignore_errors=True)


_DROP = """
import importlib, os, sys
for name in {modules!r}:
    importlib.import_module(name)
{warm}
os.setgroups([]); os.setgid({gid}); os.setuid({uid})
"""


def as_colleague(code: str, modules: list[str], env: dict[str, str], warm: str = "") -> subprocess.CompletedProcess:
    """Run ``code`` in a Python process as uid 65534 in group ``GROUP_GID``; first, as root, ``modules`` are
    imported and ``warm`` runs (the same work elsewhere: what it imports lazily is loaded before the drop)."""
    prelude = _DROP.format(modules=modules, warm=warm, gid=GROUP_GID, uid=COLLEAGUE_UID)
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", **env}
    return subprocess.run([sys.executable, "-c", prelude + code], env=full_env, capture_output=True, text=True,
                          timeout=300, cwd="/")


@contextlib.contextmanager
def interpreter_reachable():
    """The colleague's Python on a cluster is one it can read (a shared environment, or its own). Here the
    interpreter lives under root's home (/root: 0700), which uid 65534 cannot pass through, and Hydra reads its
    own config files there at every compose: the folders above the interpreter's files get o+x (passing
    through, not listing) for the test, as they are, and are restored after."""
    folders = {Path(p) for p in {sys.prefix, sys.base_prefix, *sys.path} if p and Path(p).is_dir()}
    above = {a for f in folders for a in (f, *f.parents)}
    closed = {a: a.stat().st_mode for a in above if not a.stat().st_mode & stat.S_IXOTH}
    try:
        for folder in closed:
            os.chmod(folder, stat.S_IMODE(closed[folder]) | stat.S_IXOTH)
        yield
    finally:
        for folder, mode in closed.items():
            os.chmod(folder, stat.S_IMODE(mode))


def _as_xlt_writes(run: Path) -> None:
    """Rewrite every file of a constructed run through xlt's own writer, as a real run writes them."""
    for path in sorted(p for p in run.rglob("*") if p.is_file()):
        atomic_write_text(path, path.read_text())


@pytest.mark.slow  # two comparisons (~10 s each on 2 cores): the slow tier, docs/testing.md
def test_a_colleague_compares_runs_written_in_a_group_folder(group_folder):
    """A run written under umask 002 in a group folder: a colleague's report --compare reads it (it stopped on
    the first config.yaml, 0600, with advice to rerun the run), and writes its comparison there."""
    old = os.umask(0o002)
    try:
        _colleague_compares(group_folder)
    finally:
        os.umask(old)


def _colleague_compares(group_folder: Path) -> None:
    runs = [write_run(group_folder / "runs" / name, MODELS[fam], 1, belebele={"deu_Latn": 60.0, "fra_Latn": 50.0})
            for name, fam in (("a", "XLM-R"), ("b", "XLM-V"))]
    for run in runs:
        _as_xlt_writes(run)
    out, warm_out = group_folder / "cmp", group_folder.parent / "warm-up"
    call = "from xlt.reporting.compare_runs import compare_runs\npayload = compare_runs({runs!r}, {out!r}, samples=50)\n"
    code = call.format(runs=[str(r) for r in runs], out=str(out)) + "print('compared', len(payload['runs']))\n"
    proc = as_colleague(code, ["xlt.reporting.compare_runs"],
                        {"HOME": str(group_folder), "MPLCONFIGDIR": str(group_folder / ".mpl"),
                         "XLT_CACHE": str(group_folder / ".cache")},
                        warm=call.format(runs=[str(r) for r in runs], out=str(warm_out)))
    assert proc.returncode == 0 and "compared 2" in proc.stdout, proc.stderr[-3000:]
    assert (out / "compare.json").stat().st_uid == COLLEAGUE_UID


_CACHE_USER = """
import sys
from pathlib import Path
from filelock import FileLock
from xlt.errors import XltError
from xlt.modeling import packaged

def fake_conversion(src, out):  # what the conversion writes, without the 2 s of converting it
    (Path(out) / "model.safetensors").write_bytes(b"weights")
    (Path(out) / "tokenizer.json").write_text("{}")
    (Path(out) / "config.json").write_text("{}")

packaged.package_file = lambda: Path("/the/package/e5-small-q4.bin")
packaged.write_checkpoint = fake_conversion
try:
    path = packaged.checkpoint_dir()
except XltError as err:
    print("xlt: error:", err)
    sys.exit(2)
for f in sorted(path.iterdir()):
    f.read_bytes()
with FileLock(str(path) + ".lock"):  # the lock the conversion takes: the second user can take it too
    pass
print("read", path)
"""


def _first_user_converts(monkeypatch, cache: Path) -> Path:
    from xlt.modeling import packaged

    exec(_CACHE_USER.split("try:")[0], ns := {})  # the same fake conversion, in this process
    monkeypatch.setenv("XLT_CACHE", str(cache))
    monkeypatch.setattr(packaged, "package_file", ns["packaged"].package_file)
    monkeypatch.setattr(packaged, "write_checkpoint", ns["fake_conversion"])
    return packaged.checkpoint_dir()


@pytest.mark.slow  # a second interpreter as another uid (~5 s of imports): the slow tier
def test_a_group_shared_cache_serves_the_second_user(group_folder, monkeypatch):
    """The first user converts the packaged model into the shared XLT_CACHE under umask 002; the second reads
    it and takes its lock (it got a raw PermissionError traceback: the folder was 0700, so it converted again
    and could not replace the first user's folder)."""
    cache = group_folder / "cache"
    old = os.umask(0o002)
    try:
        path = _first_user_converts(monkeypatch, cache)
    finally:
        os.umask(old)
    proc = as_colleague(_CACHE_USER, ["xlt.modeling.packaged", "filelock", "xlt.errors"],
                        {"HOME": str(group_folder), "XLT_CACHE": str(cache)})
    assert proc.returncode == 0 and f"read {path}" in proc.stdout, proc.stderr[-3000:]
    assert _mode(path) == 0o2775 and path.stat().st_gid == GROUP_GID


@pytest.mark.slow  # a second interpreter as another uid (~5 s of imports): the slow tier
def test_a_cache_the_second_user_cannot_write_is_a_clear_error(group_folder, monkeypatch):
    """Nothing converted yet, and the cache's models folder not writable for the second user (made under
    umask 022): an error naming the folder and the ways out, not a traceback."""
    cache = group_folder / "cache"
    old = os.umask(0o022)
    try:
        (cache / "models").mkdir(parents=True)
    finally:
        os.umask(old)
    proc = as_colleague(_CACHE_USER, ["xlt.modeling.packaged", "filelock", "xlt.errors"],
                        {"HOME": str(group_folder), "XLT_CACHE": str(cache)})
    assert proc.returncode == 2, proc.stdout + proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    assert f"into {cache / 'models'}" in proc.stdout and "not writable for you" in proc.stdout
    assert "set XLT_CACHE to a folder of yours" in proc.stdout


@pytest.mark.slow  # a second interpreter as another uid (~5 s of imports): the slow tier
def test_a_converted_model_the_second_user_cannot_read_is_a_clear_error(group_folder, monkeypatch):
    """A folder converted with owner-only permissions (xlt before this fix, or umask 077): named, with the fix."""
    cache = group_folder / "cache"
    old = os.umask(0o077)
    try:
        path = _first_user_converts(monkeypatch, cache)
        os.chmod(cache / "models", 0o2775)  # the folder above it is the group's; the model is not
        os.chmod(cache, 0o2775)
    finally:
        os.umask(old)
    assert _mode(path) & 0o077 == 0
    proc = as_colleague(_CACHE_USER, ["xlt.modeling.packaged", "filelock", "xlt.errors"],
                        {"HOME": str(group_folder), "XLT_CACHE": str(cache)})
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stdout + proc.stderr[-3000:]
    assert "you cannot read it" in proc.stdout and "chmod -R g+rX" in proc.stdout
    assert json.dumps(str(path))[1:-1] in proc.stdout


_TRAIN = """
import os, sys
os.umask(0o002)
from xlt.train import main as train
from xlt.evaluate import main as evaluate

def call(entry, args):
    sys.argv = ["xlt", *args]
    try:
        entry()
    except SystemExit as err:
        if err.code not in (0, None):
            raise

call(train, {owner!r})  # the owner (root) trains a model in the group folder; it also loads every lazy import
os.setgroups([]); os.setgid({gid}); os.setuid({uid})  # the colleague from here on
call(train, {resume!r})  # the run the owner left at a checkpoint: resumed from it
call(evaluate, {evaluate!r})  # the owner's model, scored in a run of the colleague's
print("colleague done", flush=True)
os._exit(0)  # the interpreter's exit would clean up what it made as root (a library's temporary folder)
"""


@pytest.mark.slow  # three tiny trainings and an evaluation (~1 min on 2 cores): the slow tier
def test_a_colleague_loads_the_model_and_resumes_from_the_checkpoint(group_folder):
    """Under umask 002 in a setgid group folder, the weights xlt lets safetensors write (0600 whatever the umask,
    safetensors#782) follow the umask like every other file: a second uid of the group resumes the owner's run
    from its checkpoint and scores the owner's model."""
    import signal
    import time

    tiny = ["+recipe=demo_tiny", "training.eval_steps=15", "stages=[build_data,train]",
            "eval.benchmarks.belebele.languages=[eng_Latn]", "eval.benchmarks.global_mmlu.enabled=false",
            "eval.benchmarks.xcopa.enabled=false", "eval.benchmarks.belebele.max_questions=4"]
    runs = group_folder / "runs"
    stopped = [*tiny, "training.max_steps=90", f"run_root={runs}", "seed=2"]
    (group_folder / "tmp").mkdir(mode=0o777)
    os.chmod(group_folder / "tmp", 0o1777)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "HOME": str(group_folder),
           "TMPDIR": str(group_folder / "tmp"),
           "XLT_CACHE": str(group_folder / "cache"), "HF_HOME": str(group_folder / "hf"), "TQDM_DISABLE": "1"}
    # The owner's run, stopped by the scheduler's USR1 once its first checkpoint is complete.
    log = group_folder.parent / "owner.log"  # a file, not a pipe: nothing blocks the owner's output
    with log.open("w") as out:
        owner = subprocess.Popen([sys.executable, "-m", "xlt.train", *stopped], env=env, cwd=group_folder,
                                 umask=0o002, stdout=out, stderr=subprocess.STDOUT)
    from xlt.cluster.sweeps import run_dir
    from xlt.config.overrides import override_form

    run = Path(run_dir(stopped))
    deadline = time.monotonic() + 900  # generous: the slow tier shares 2 cores with the SLURM cluster's jobs
    while not list((run / "checkpoints").glob("checkpoint-*/xlt_complete.json")):
        assert owner.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
        time.sleep(0.1)
    owner.send_signal(signal.SIGUSR1)
    owner.wait(timeout=120)
    assert owner.returncode == 75, log.read_text()[-3000:]
    (weights, *_) = sorted((run / "checkpoints").glob("checkpoint-*/model.safetensors"))
    assert _mode(weights) == 0o664, oct(_mode(weights))
    owners_model = [*tiny, "training.max_steps=20", f"run_root={runs}", "seed=1"]
    code = _TRAIN.format(owner=owners_model, resume=stopped, gid=GROUP_GID, uid=COLLEAGUE_UID, evaluate=[
        "+recipe=demo_tiny", *shlex.split(override_form("eval.model", f"{run_dir(owners_model)}/model")), "stages=[evaluate]", *tiny[3:],
        f"run_root={group_folder / 'colleague'}"])
    with interpreter_reachable():
        proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=1200,
                              cwd=group_folder)
    assert proc.returncode == 0 and "colleague done" in proc.stdout, proc.stderr[-4000:]
    model = Path(run_dir(owners_model)) / "model" / "model.safetensors"
    assert _mode(model) == 0o664 and model.stat().st_uid == 0, oct(_mode(model))
    resumed = json.loads((run / "stages" / "train.json").read_text())
    assert resumed["resumed_from"] and "checkpoint-" in resumed["resumed_from"], resumed
    assert (run / "model" / "model.safetensors").stat().st_uid == COLLEAGUE_UID
    assert list((group_folder / "colleague").rglob("eng_Latn.json")), "the colleague's evaluation wrote no result"
    not_shared = [p for p in runs.rglob("*") if p.is_file() and _mode(p) & 0o060 != 0o060]  # every file, any writer
    assert not_shared == [], f"files the group cannot read and write: {not_shared[:5]}"

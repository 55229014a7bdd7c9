"""The stage contract: what each stage reads and writes, and the one place that decides what runs.

Every stage (build_data, translate, train, evaluate, report) is declared in :data:`STAGES` with

* its **config inputs**: the keys the schema marks as affecting it (:func:`xlt.config.keys.stage_values`);
* its **file inputs**: content fingerprints of what it reads from outside the run directory (local source
  copies, benchmark copies used for decontamination, imported translations, local models, benchmark copies,
  the model it scores) — :mod:`xlt.fingerprint`;
* its **upstream stages**: their markers' ``output_id`` (a new id every time a stage really runs);
* its **outputs** in the run directory.

Their hash is the stage's *input hash*. :func:`run_stages` skips a stage only when its done-marker was
written under the same input hash and its outputs exist and pass its check; otherwise it runs it and logs why (never
run, ``force=true``, which inputs changed, outputs missing or damaged). Every file read back goes
through :mod:`xlt.state`: a damaged marker or output of a derivable kind reruns the stage, while a model
that is not what training saved stops with an :class:`~xlt.state.StateError` (a stage's ``guard``). Because a stage that runs gets a new
``output_id``, everything downstream of it is stale by construction: ``force=true`` on train makes every
evaluation recompute, and a rebuilt training set retrains. Every result file records the provenance of
what produced it (:meth:`StageContext.record`); the stages reuse partial work (training checkpoints,
evaluation languages, translation parts) only when its recorded inputs still match.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import socket
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from xlt import __version__
from xlt import languages as langtab
from xlt.config.eval import uses_translator
from xlt.config.keys import stage_values, translator_values
from xlt.config.model import TINY_MODEL_ID
from xlt.config.translate import translate_train_all
from xlt.errors import ConfigError, DataError, XltError
from xlt.fingerprint import digest, path_fingerprint, resource_fingerprint
from xlt.lock import launch_id
from xlt.modeling import packaged
from xlt.run import RunDir, atomic_write_json, atomic_write_text, is_main_process, remove_path, world_size
from xlt.state import (
    BUILD_REPORT,
    INPUTS,
    MODEL_PROVENANCE,
    REPORT,
    TRAIN_METRICS,
    Damaged,
    StateError,
    load_dataset_dir,
    read_or_redo,
    read_state,
)
from xlt.translation import engines

log = logging.getLogger("xlt")

WAIT_POLL_S = 2.0


def _local(path: Any) -> str | None:
    """Fingerprint of a local input (None when absent); a file in it that the OS cannot open (a symbolic-link
    loop, no permission) is a :class:`DataError` naming it."""
    if not (path and Path(str(path)).expanduser().exists()):
        return None
    try:
        return path_fingerprint(path)
    except OSError as err:
        bad = err.filename or path
        raise DataError(f"{bad}: cannot be read ({err.strerror or err}), an input of this run ({path}); replace it "
                        "with the data file (a symbolic link must point at a readable file) or remove it") from None


# --- file inputs of each stage -------------------------------------------------------------------

def _build_data_files(cfg: Any, run: RunDir) -> dict[str, Any]:
    files = {f"data.sources.{name}": _local(src.path) for name, src in sorted(cfg.data.sources.items())
             if src.enabled and src.path}
    if cfg.data.decontamination.enabled:  # build_data reads the local benchmark copies
        for name, b in sorted(cfg.eval.benchmarks.items()):
            if b.enabled and b.path:
                files[f"eval.benchmarks.{name}.path"] = _local(b.path)
                files[f"eval.benchmarks.{name}.languages"] = list(b.languages) if b.languages else None
    return files


def _translate_files(cfg: Any, run: RunDir) -> dict[str, Any]:
    t = cfg.translate
    files: dict[str, Any] = {"translate.import_dir": _local(t.import_dir), "translate.model": _local(t.model_name_or_path)}
    if not t.import_dir and t.languages:  # what the translator resolves to (engine, dtype, cached commit)
        files["translator"] = translator_inputs(cfg)
    return files


def model_fingerprint(name_or_path: str | None, revision: str | None = None) -> str | None:
    """:func:`xlt.fingerprint.resource_fingerprint`, and for a model converted from an installed package
    (:mod:`xlt.modeling.packaged`) the converted folder's content."""
    if packaged.is_packaged(name_or_path):
        return f"{name_or_path}:{path_fingerprint(packaged.checkpoint_dir())}"
    return resource_fingerprint(name_or_path, revision)


def _train_files(cfg: Any, run: RunDir) -> dict[str, Any]:
    m = cfg.model
    built = m.name_or_path == TINY_MODEL_ID  # built offline from model.tiny (config keys)
    return {"model.name_or_path": None if built else model_fingerprint(m.name_or_path, m.revision),
            "model.tokenizer": model_fingerprint(m.tokenizer, m.revision),
            "translate.sampling": OmegaConf.to_container(cfg.translate.sampling) if translate_train_all(cfg) else None}


def scored_model(cfg: Any, run: RunDir) -> str | None:
    """Fingerprint of the model the evaluate stage scores (weights, tokenizer, config; not the card)."""
    e = cfg.eval
    if e.scorer == "llm":
        model = resource_fingerprint(e.llm.model, e.llm.revision)
        tokenizer = resource_fingerprint(e.llm.tokenizer, e.llm.revision)
        return f"{model}+tokenizer:{tokenizer}" if tokenizer else model
    if e.scorer != "mc":
        return None
    # another model than the run's is loaded at model.revision (xlt.scoring.mc): its identity is that commit
    return path_fingerprint(run.model) if e.model == "run" else model_fingerprint(e.model, cfg.model.revision)


# What the multiple-choice scorer reads of the ``model`` section (xlt.scoring.mc.MCScorer.from_config) when it
# scores another model than the run's (``eval.model`` not ``run``): these keys affect the train stage, so
# with eval.model=run they reach results through the train stage's output; for another model they are read
# by the evaluate stage itself and enter its inputs and every job hash (tests/test_hash_coverage.py walks them).
MC_MODEL_READS = ("model.max_length", "model.revision", "model.trust_remote_code")


def scorer_model_settings(cfg: Any) -> dict[str, Any] | None:
    """The ``model`` keys the evaluate stage's scorer reads for an external ``eval.model`` (None otherwise)."""
    if cfg.eval.scorer != "mc" or cfg.eval.model == "run":
        return None
    return {key: OmegaConf.select(cfg, key) for key in MC_MODEL_READS}


def translator_inputs(cfg: Any) -> dict[str, Any]:
    """What the ``translate`` group's translator computes from: its settings (the schema's ``translator``
    keys, :func:`xlt.config.keys.translator_values`), its checkpoint (a local folder's fingerprint, or the
    commit the Hub cache resolves its revision to) and what it resolves to on this machine (engine, dtype
    or compute type: :func:`xlt.translation.engines.resolved_settings`)."""
    t = cfg.translate
    hf = t.kind == "hf"
    try:
        resolved = engines.resolved_settings(t)
    except XltError as err:  # e.g. translate.device=cuda where no GPU is visible: the translator says so
        resolved = {"unresolved": str(err).splitlines()[0]}
    return {"settings": translator_values(cfg),
            "model": resource_fingerprint(t.model_name_or_path, t.revision) if hf else None,
            "resolved": resolved}


def translate_test_values(cfg: Any) -> dict[str, Any] | None:
    """Translate-test, and the machine-translated entries xlt makes, translate with the ``translate`` group's
    model: its inputs are evaluation inputs."""
    if not any(b.enabled and uses_translator(b) for b in cfg.eval.benchmarks.values()):
        return None
    return translator_inputs(cfg)


def _evaluate_files(cfg: Any, run: RunDir) -> dict[str, Any]:
    files: dict[str, Any] = {"model": scored_model(cfg, run), "translate_test": translate_test_values(cfg)}
    settings = scorer_model_settings(cfg)
    if settings is not None:  # absent otherwise: the hashes of runs that score their own model are unchanged
        files["model settings"] = settings
    for name, b in sorted(cfg.eval.benchmarks.items()):
        if b.enabled and b.path:
            files[f"eval.benchmarks.{name}.path"] = _local(b.path)
    return files


def _report_files(cfg: Any, run: RunDir) -> dict[str, Any]:
    # The language table gives the report its names, scripts, families and default resource levels: a new
    # table (e.g. another taxonomy) is another report. Its content, not its path (installs differ).
    return {"eval.resource_groups": _local(cfg.eval.resource_groups), "language table": langtab.table_digest()}


# --- output checks of a done stage (xlt.state): damaged derivable outputs rerun the stage ----------------

def _json_problems(run: RunDir, files: dict[str, Any]) -> list[str]:
    out = []
    for rel, schema in files.items():
        try:
            if read_state(run.path / rel, schema) is None:
                out.append(f"{rel} missing")
        except Damaged as err:
            out.append(f"{rel} damaged ({err.why})")
    return out


def sealed_fingerprint(path: Path) -> str:
    """Fingerprint of an output folder as its stage wrote it (``datasets`` map caches left out)."""
    if not path.is_dir():
        return path_fingerprint(path)
    files = [p for p in path.rglob("*") if p.is_file() and not p.name.startswith(("cache-", "tmp", "."))]
    return path_fingerprint(path, files)


def sealed_problems(run: RunDir, stage: str) -> list[str]:
    """Outputs of a done stage whose content is no longer what the stage wrote (its marker records their
    fingerprints): Arrow files cannot be checked by their structure alone (a truncated stream reads short)."""
    try:
        recorded = run.done_info(stage).get("provenance", {}).get("outputs") or {}
    except Damaged:
        return []
    return [f"{rel} changed or damaged since {stage} wrote it" for rel, fp in recorded.items()
            if sealed_fingerprint(run.path / rel) != fp]


def checked_train_set(run: RunDir) -> Any:
    """``run.train_set`` as the build_data stage wrote it (its Arrow data checked against the fingerprints
    in its marker); a missing, damaged or changed set is a :class:`~xlt.errors.DataError` naming the fix."""
    fix = "run the build_data stage (python -m xlt.build_data with the same recipe and overrides: it rebuilds it)"
    if not (run.train_set / "dataset_dict.json").is_file():
        raise DataError(f"no training set at {run.train_set}: {fix}")
    try:
        changed = sealed_problems(run, "build_data")
        if changed:
            raise Damaged(run.train_set, changed[0])
        return load_dataset_dir(run.train_set)
    except Damaged as err:
        raise DataError(f"{err}; {fix}") from None


def _check_build_data(cfg: Any, run: RunDir, ctx: Any) -> list[str]:
    out = _json_problems(run, {"data/build_report.json": BUILD_REPORT})
    try:
        load_dataset_dir(run.train_set)
    except Damaged as err:
        out.append(f"data/train_set damaged ({err.why})")
    return out or sealed_problems(run, "build_data")


def _check_translate(cfg: Any, run: RunDir, ctx: Any) -> list[str]:
    return _json_problems(run, {"data/translation_report.json": None})


def model_problem(run: RunDir) -> str | None:
    """Why ``run.model`` is not the model the train stage saved (None: its files match the fingerprint
    recorded in ``model/xlt_provenance.json``)."""
    if not run.model.exists():
        return None  # no model yet: scoring says so (train first)
    prov_file = run.model / "xlt_provenance.json"
    try:
        prov = read_state(prov_file, MODEL_PROVENANCE)
    except Damaged as err:
        return f"{prov_file} is damaged ({err.why}), so the weights cannot be checked"
    if prov is None:
        return f"{prov_file} is missing, so the weights in {run.model} cannot be checked"
    now = path_fingerprint(run.model)
    if now != prov["fingerprint"]:
        return (f"the files in {run.model} no longer match what the train stage saved ({prov_file} records "
                f"fingerprint {prov['fingerprint']}, the files give {now}: weights replaced, edited or truncated)")
    return None


def check_model(run: RunDir) -> None:
    """Refuse a run model that is not what training produced: the user decides what it should be."""
    problem = model_problem(run)
    if problem:
        raise StateError(
            f"{problem}.\n  To retrain it: add force=true 'stages=[train,evaluate,report]' to the command. To score "
            f"other weights, give them their own folder and pass eval.model=/path/to/that/folder (another run).")


def _check_train(cfg: Any, run: RunDir, ctx: Any) -> list[str]:
    check_model(run)
    return _json_problems(run, {"train_metrics.json": TRAIN_METRICS})


def _check_report(cfg: Any, run: RunDir, ctx: Any) -> list[str]:
    return _json_problems(run, {"report.json": REPORT})


def _evaluate_guard(cfg: Any, run: RunDir) -> None:
    if cfg.eval.scorer == "mc" and cfg.eval.model == "run":
        check_model(run)


def _evaluate_upstream(cfg: Any) -> tuple[str, ...]:
    return ("train",) if cfg.eval.scorer == "mc" and cfg.eval.model == "run" else ()


@dataclass(frozen=True)
class StageSpec:
    name: str
    # "module:function" (in xlt.stages, one module per stage) taking (cfg, run, ctx) and returning a
    # summary, or None if incomplete
    func: str
    upstream: Callable[[Any], tuple[str, ...]]
    files: Callable[[Any, RunDir], dict[str, Any]]
    outputs: tuple[str, ...]
    shard_section: str | None = None  # config section whose shard_index/num_shards split this stage
    # Outputs whose fingerprints go into the done-marker and are compared on every check (folders whose
    # damage their structure does not show, e.g. Arrow files).
    sealed: tuple[str, ...] = ()
    # Checks the outputs of a done stage beyond their existence (:mod:`xlt.state`): the list of missing or
    # damaged ones (derivable: the stage reruns); raises StateError for what the user must decide.
    # (a function, or "module:function" for a module that imports this one)
    check: Callable[[Any, RunDir, Any], list[str]] | str | None = None
    # Runs before the stage is skipped or run (and before its marker is cleared): raises StateError for
    # state the user must decide about (e.g. scoring a model that is not what training saved).
    guard: Callable[[Any, RunDir], None] | None = None


STAGES: dict[str, StageSpec] = {s.name: s for s in (
    StageSpec("build_data", "xlt.stages.build_data:run_stage", lambda cfg: (), _build_data_files,
              ("data/train_set", "data/build_report.json"), check=_check_build_data, sealed=("data/train_set",)),
    StageSpec("translate", "xlt.stages.translate:run_stage", lambda cfg: ("build_data",), _translate_files,
              ("data/translation_report.json",), shard_section="translate", check=_check_translate),
    StageSpec("train", "xlt.stages.train:run_stage",
              lambda cfg: ("build_data", "translate") if translate_train_all(cfg) else ("build_data",),
              _train_files, ("model", "train_metrics.json"), check=_check_train),
    StageSpec("evaluate", "xlt.stages.evaluate:run_stage", _evaluate_upstream, _evaluate_files, ("eval",),
              shard_section="eval", check="xlt.scoring.results:check_outputs", guard=_evaluate_guard),
    StageSpec("report", "xlt.stages.report:run_stage", lambda cfg: ("evaluate",), _report_files,
              ("report.json",), check=_check_report),
)}


@dataclass
class StageContext:
    """What a running stage knows about its inputs; :meth:`record` goes into every result file."""

    stage: str
    inputs: str  # the input hash
    detail: dict[str, Any]  # config values, file fingerprints, upstream output ids
    force: bool = False

    @property
    def upstream(self) -> dict[str, str | None]:
        return self.detail["upstream"]

    def record(self, **extra: Any) -> dict[str, Any]:
        """Provenance of a result: stage, input hash, upstream output ids, model/data fingerprints, version."""
        files = self.detail["files"]
        out = {"stage": self.stage, "inputs": self.inputs, "upstream": self.upstream, "xlt_version": __version__}
        if "model" in files:
            out["model"] = files["model"]
        data = {k: v for k, v in files.items() if k != "model" and v is not None}
        if data:
            out["data"] = data
        return {**out, **extra}


# Partial work a stage resumes (training checkpoints, translation parts) records the inputs it was made
# under in this file inside its folder; it is resumed only when they are the stage's current inputs.
INPUTS_FILE = "xlt_inputs.json"


def recorded_inputs(folder: Path) -> str | None:
    """The input hash recorded in ``folder`` (None: nothing recorded, or a damaged record: logged, and the
    partial work is then treated as made under unknown inputs)."""
    value = read_or_redo(folder / INPUTS_FILE, INPUTS, what="ignored: the partial work in its folder is not resumed")
    return value["inputs"] if value else None


def record_inputs(folder: Path, ctx: StageContext) -> None:
    """Record ``ctx``'s inputs in ``folder`` (created if needed): its partial work is made under them."""
    folder.mkdir(parents=True, exist_ok=True)
    remove_path(folder / INPUTS_FILE)
    atomic_write_json(folder / INPUTS_FILE, {"inputs": ctx.inputs, "detail": ctx.detail})


def output_id(run: RunDir, stage: str) -> str | None:
    """The ``output_id`` of ``stage``'s done-marker (None if the stage is not done)."""
    try:
        return run.done_info(stage).get("provenance", {}).get("output_id")
    except Damaged:
        return None


def context(cfg: Any, run: RunDir, stage: str, force: bool | None = None) -> StageContext:
    """The stage's inputs as they are now (config values, file fingerprints, upstream outputs)."""
    spec = STAGES[stage]
    detail = {
        "config": stage_values(cfg, stage),
        "files": spec.files(cfg, run),
        "upstream": {name: output_id(run, name) for name in spec.upstream(cfg)},
    }
    return StageContext(stage, digest(detail), detail, bool(cfg.force if force is None else force))


def _changes(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """What differs between two input details, e.g. ``training.learning_rate``, ``file model``."""
    out = []
    for part, label in (("config", ""), ("files", "file "), ("upstream", "upstream ")):
        a, b = old.get(part, {}), new.get(part, {})
        out += [f"{label}{key}" for key in sorted(set(a) | set(b)) if a.get(key) != b.get(key)]
    return out


def stale_reason(run: RunDir, ctx: StageContext, cfg: Any = None) -> str | None:
    """Why ``ctx.stage`` must run (None: its done-marker matches and its outputs exist)."""
    if ctx.force:
        return "force=true"
    try:
        info = run.done_info(ctx.stage)
    except Damaged as err:
        return f"its done-marker is damaged ({err}); redoing the stage"
    if not info:
        return "not done yet"
    prov = info["provenance"]
    if prov.get("inputs") != ctx.inputs:
        detail = prov.get("detail")
        changed = _changes(detail, ctx.detail) if isinstance(detail, dict) else []
        return "inputs changed: " + (", ".join(changed[:8]) if changed else "(an earlier xlt version's marker)")
    missing = [o for o in STAGES[ctx.stage].outputs if not (run.path / o).exists()]
    if missing:
        return f"outputs missing: {', '.join(missing)}"
    check = STAGES[ctx.stage].check
    if isinstance(check, str):
        module, _, func = check.partition(":")
        check = getattr(importlib.import_module(module), func)
    problems = check(cfg, run, ctx) if check is not None and cfg is not None else []
    if problems:
        return "outputs missing or damaged: " + "; ".join(problems[:8])
    return None


def _stage_function(name: str) -> Callable[..., dict[str, Any] | None]:
    module, _, func = STAGES[name].func.partition(":")
    return getattr(importlib.import_module(module), func)


def call_stage(name: str, cfg: Any, run: RunDir, force: bool | None = None, **extra: Any) -> dict[str, Any] | None:
    """Run stage ``name`` once with its current context, outside :func:`run_stages` (no skip decision, no
    done-marker): for tests and tools that drive one stage directly. ``extra`` goes to the stage function
    (e.g. the train stage's ``extra_callbacks``)."""
    return _stage_function(name)(cfg, run, context(cfg, run, name, force=force), **extra)


# Rank 0's decision on each stage, per launch (``stages/<stage>.attempt``): ranks > 0 read markers only
# after rank 0 has settled them (cleared a ``.failed`` or, with force=true or damaged outputs, the previous
# marker), so every rank follows the decision one process would take.
ATTEMPT_STATES = ("skipped", "running", "done", "failed")


def _attempt_file(run: RunDir, name: str) -> Path:
    return run.path / "stages" / f"{name}.attempt"


def _settle(run: RunDir, name: str, launch: str, state: str) -> None:
    """Rank 0: record its decision on stage ``name`` for this launch (see :data:`ATTEMPT_STATES`)."""
    _attempt_file(run, name).parent.mkdir(parents=True, exist_ok=True)
    atomic_write_json(_attempt_file(run, name), {"launch": launch, "state": state})


def _wait_for_rank0(run: RunDir, name: str, launch: str, states: tuple[str, ...]) -> str:
    """On ranks > 0: wait until rank 0 has recorded, for this launch, one of ``states`` for stage ``name``
    (a ``failed`` raises); return it. Tokens of earlier launches (other ``launch``) are not looked at."""
    log.info("stage %-10s: waiting for rank 0", name)
    while True:
        with contextlib.suppress(Damaged):  # being rewritten by rank 0
            info = read_state(_attempt_file(run, name), {"launch": str, "state": str}) or {}
            if info.get("launch") == launch:
                if info["state"] == "failed":
                    raise XltError(f"stage {name} failed on rank 0 (see its log); this rank stops too")
                if info["state"] in states:
                    return info["state"]
        time.sleep(WAIT_POLL_S)


def _sharded(cfg: Any, spec: StageSpec) -> bool:
    return spec.shard_section is not None and int(cfg[spec.shard_section].num_shards) > 1


def run_stages(cfg: Any, run: RunDir, stages: Sequence[str], on_first_run: Callable[[], None] | None = None,
               launch: str | None = None) -> list[str]:
    """Run ``stages`` in order under the contract (see the module docstring); return those that ran.

    ``on_first_run`` is called once, before the first stage that really runs (the entry point writes
    ``config.yaml`` there, so calls that only skip leave it alone).

    Under a multi-process launcher only ``train`` runs on every rank; the other stages run on rank 0,
    while the other ranks wait for stages before ``train`` and skip those after. Ranks > 0 follow rank 0's
    decision on each stage up to ``train`` (its ``stages/<stage>.attempt`` token of this ``launch``: the
    identity of rank 0's lock, :attr:`xlt.lock.RunLock.owner`; default :func:`xlt.lock.launch_id`), read
    only after rank 0 has cleared old markers. A sharded job (a ``num_shards`` > 1 job of translate or
    evaluate) runs only its own stage and what follows it; the stages before must be done.
    """
    markers = run.path / "stages"
    if markers.exists() and not markers.is_dir():
        raise StateError(f"{markers} is a file where a folder belongs: remove it, then rerun (its stages are redone)")
    distributed = world_size() > 1
    if launch is None:
        launch = launch_id()
    follower = distributed and not is_main_process()
    train_at = list(stages).index("train") if "train" in stages else len(stages)
    sharded_at = next((i for i, s in enumerate(stages) if _sharded(cfg, STAGES[s])), None)
    ran: list[str] = []
    for i, name in enumerate(stages):
        if follower and i < train_at:  # rank 0 runs it; its markers are read once rank 0 has settled them
            _wait_for_rank0(run, name, launch, ("skipped", "done"))
            continue
        if follower and i > train_at:
            log.info("stage %-10s runs on rank 0 only", name)
            continue
        if follower and i == train_at and _wait_for_rank0(run, name, launch, ("skipped", "running")) == "skipped":
            continue
        tell = distributed and not follower and i <= train_at  # ranks > 0 wait for rank 0's decision

        def cleared(name: str = name, tell: bool = tell) -> None:
            if tell:  # the old markers are gone: ranks > 0 may read them (train: and start training)
                _settle(run, name, launch, "running")

        try:
            _run_one(cfg, run, stages, i, follower, sharded_at, on_first_run if not ran else None, ran, cleared)
        except BaseException:
            if tell:  # ranks > 0 waiting for it stop too
                atomic_write_text(run.path / "stages" / f"{name}.failed", "failed\n")
                _settle(run, name, launch, "failed")
            raise
        if tell and name not in ran:
            _settle(run, name, launch, "skipped")
        elif tell and i < train_at:
            _settle(run, name, launch, "done" if run.marker(name).exists() else "failed")
    return ran


def _run_one(cfg: Any, run: RunDir, stages: Sequence[str], i: int, follower: bool, sharded_at: int | None,
             on_first_run: Callable[[], None] | None, ran: list[str], cleared: Callable[[], None]) -> None:
    """Stage ``stages[i]`` of :func:`run_stages`: skip it, or run it and write its done-marker (appended
    to ``ran`` when it ran); ``cleared`` is called once its old markers are removed (rank 0)."""
    name = stages[i]
    if STAGES[name].guard is not None:
        STAGES[name].guard(cfg, run)
    ctx = context(cfg, run, name)
    reason = "rank 0 runs it" if follower else stale_reason(run, ctx, cfg)
    if reason is None:
        log.info("stage %-10s up to date (%s); skipping. Use force=true to redo it.", name, run.marker(name))
        return
    if sharded_at is not None and i < sharded_at:
        shard = stages[sharded_at]
        raise ConfigError(f"stage {name} must be done before the sharded {shard} jobs start ({reason}); "
                          f"run it once without {STAGES[shard].shard_section}.num_shards/shard_index")
    if on_first_run is not None:
        on_first_run()
    if not follower:
        (run.path / "stages" / f"{name}.failed").unlink(missing_ok=True)
        if not _sharded(cfg, STAGES[name]):
            run.clear(name)  # a crash from here on leaves no done-marker that looks current
        cleared()
    log.info("stage %-10s running: %s", name, reason)
    started = time.time()
    summary = _stage_function(name)(cfg, run, ctx)
    ran.append(name)
    if summary is not None and not follower:
        finished = time.time()
        prov = {**ctx.record(), "detail": ctx.detail, "host": socket.gethostname(), "pid": os.getpid(),
                "started": started, "finished": finished,
                "output_id": digest([ctx.inputs, finished, os.getpid(), socket.gethostname()]),
                "outputs": {rel: sealed_fingerprint(run.path / rel) for rel in STAGES[name].sealed}}
        run.mark_done(name, {**summary, "provenance": prov})
    log.info("stage %-10s finished", name)

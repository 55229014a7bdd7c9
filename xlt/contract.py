"""The stage engine: the one place that decides whether a stage runs, and the hand-off between ranks.

Each stage declares itself beside its code (``STAGE`` in :mod:`xlt.stages.build_data`, ...; the table is
:data:`xlt.stages.STAGES`) as a :class:`StageSpec`:

* its **config inputs**: the keys the schema marks as affecting it (:func:`xlt.config.keys.stage_values`);
* its **file inputs** (``files``): content fingerprints of what it reads from outside the run directory (local source
  copies, benchmark copies used for decontamination, imported translations, local models, benchmark copies,
  the model it scores) — :mod:`xlt.run.fingerprint`;
* its **upstream stages**: their markers' ``output_id`` (a new id every time a stage really runs);
* the **versions of its code** that changed what it computes (``code``), only for the settings they apply to;
* its **outputs** in the run directory, and the ``check`` and ``guard`` that read them back.

Their hash is the stage's *input hash*. :func:`run_stages` skips a stage only when its done-marker was
written under the same input hash and its outputs exist and pass its check; otherwise it runs it and logs why (never
run, ``force=true``, which inputs changed, outputs missing or damaged). Every file read back goes
through :mod:`xlt.run.state`: a damaged marker or output of a derivable kind reruns the stage, while a model
that is not what training saved stops with an :class:`~xlt.run.state.StateError` (a stage's ``guard``). Because a stage that runs gets a new
``output_id``, everything downstream of it is stale by construction: ``force=true`` on train makes every
evaluation recompute, and a rebuilt training set retrains. Every result file records the provenance of
what produced it (:meth:`StageContext.record`); the stages reuse partial work (training checkpoints,
evaluation languages, translation parts) only when its recorded inputs still match
(:func:`recorded_inputs`). A stage never imports another: what it reads of an upstream stage's outputs goes
through the run directory's checked readers (:mod:`xlt.run.artifacts`), and where it must check them against
that stage's inputs as they are now (the report stage: the evaluation results against the evaluate stage's),
it asks its context (:meth:`StageContext.of`), which computes them from the stage table the engine was handed.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xlt import __version__
from xlt.config.keys import stage_values
from xlt.errors import ConfigError, XltError
from xlt.run.artifacts import sealed_fingerprint
from xlt.run.files import atomic_write_json, atomic_write_text, remove_path
from xlt.run.fingerprint import digest
from xlt.run.layout import INPUTS_FILE, RunDir, is_main_process, world_size
from xlt.run.lock import check_held, launch_id, report_progress
from xlt.run.state import INPUTS, Damaged, StateError, read_or_redo, read_state

log = logging.getLogger("xlt")

WAIT_POLL_S = 2.0


@dataclass(frozen=True)
class StageSpec:
    """One stage as its module declares it (``STAGE`` in ``xlt/stages/<name>.py``)."""

    name: str
    # The stage's code: (cfg, run, ctx) -> a summary (written into its done-marker), or None if incomplete
    # (e.g. a shard whose siblings are not done yet).
    run: Callable[..., dict[str, Any] | None]
    upstream: Callable[[Any], tuple[str, ...]]
    files: Callable[[Any, RunDir], dict[str, Any]]
    outputs: tuple[str, ...]  # paths relative to the run directory (xlt.run.layout.RunDir's names)
    shard_section: str | None = None  # config section whose shard_index/num_shards split this stage
    # Outputs whose fingerprints go into the done-marker and are compared on every check (folders whose
    # damage their structure does not show, e.g. Arrow files).
    sealed: tuple[str, ...] = ()
    # Checks the outputs of a done stage beyond their existence (:mod:`xlt.run.state`): the list of missing or
    # damaged ones (derivable: the stage reruns); raises StateError for what the user must decide.
    check: Callable[[Any, RunDir, Any], list[str]] | None = None
    # Runs before the stage is skipped or run (and before its marker is cleared): raises StateError for
    # state the user must decide about (e.g. scoring a model that is not what training saved).
    guard: Callable[[Any, RunDir], None] | None = None
    # Versions of the stage's code that changed what it computes, for the settings they apply to (cfg -> {what:
    # version}). A non-empty dict enters the input hash as detail["code"]; an empty one adds nothing, so the
    # hashes of the settings a fix leaves unchanged stay as they were (no needless recomputation).
    code: Callable[[Any], dict[str, str]] | None = None


# --- output checks of a done stage (xlt.run.state): damaged derivable outputs rerun the stage ----------------

def json_problems(run: RunDir, files: dict[Path, Any]) -> list[str]:
    """``files`` (paths in the run directory -> their :mod:`xlt.run.state` schema) that are missing or damaged."""
    out = []
    for path, schema in files.items():
        rel = path.relative_to(run.path).as_posix()
        try:
            if read_state(path, schema) is None:
                out.append(f"{rel} missing")
        except Damaged as err:
            out.append(f"{rel} damaged ({err.why})")
    return out


@dataclass
class StageContext:
    """What a running stage knows about its inputs; :meth:`record` goes into every result file."""

    stage: str
    inputs: str  # the input hash
    detail: dict[str, Any]  # config values, file fingerprints, upstream output ids
    force: bool = False
    # The stage table the engine was handed (name -> StageSpec, :data:`xlt.stages.STAGES`): not an input (out of
    # the hash and of every record), the way to another stage's declaration without importing its module.
    table: Mapping[str, StageSpec] = field(default_factory=dict, repr=False, compare=False)

    @property
    def upstream(self) -> dict[str, str | None]:
        return self.detail["upstream"]

    def of(self, cfg: Any, run: RunDir, stage: str) -> StageContext:
        """Stage ``stage``'s inputs as they are now (never forced), from the table this context was built with:
        for a stage that checks what it reads of ``stage``'s outputs against them."""
        if stage not in self.table:
            raise XltError(f"stage {self.stage} reads the inputs of stage {stage}, which is not in the stage table "
                           f"it was run with ({', '.join(self.table) or 'none'}): run it through xlt.stages")
        return context(cfg, run, self.table[stage], force=False, table=self.table)

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
# under in a file inside its folder (xlt.run.layout.INPUTS_FILE); it is resumed only when they are the stage's
# current inputs.

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


def context(cfg: Any, run: RunDir, spec: StageSpec, force: bool | None = None,
            table: Mapping[str, StageSpec] | None = None) -> StageContext:
    """The inputs of stage ``spec`` as they are now (config values, file fingerprints, upstream outputs);
    ``table``: the stage table (:meth:`StageContext.of` reads other stages' declarations from it)."""
    detail = {
        "config": stage_values(cfg, spec.name),
        "files": spec.files(cfg, run),
        "upstream": {name: output_id(run, name) for name in spec.upstream(cfg)},
    }
    code = spec.code(cfg) if spec.code is not None else {}
    if code:
        detail["code"] = code
    return StageContext(spec.name, digest(detail), detail, bool(cfg.force if force is None else force),
                        dict(table) if table is not None else {spec.name: spec})


def _changes(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """What differs between two input details, e.g. ``training.learning_rate``, ``file model``."""
    out = []
    for part, label in (("config", ""), ("files", "file "), ("upstream", "upstream "), ("code", "code ")):
        a, b = old.get(part, {}), new.get(part, {})
        out += [f"{label}{key}" for key in sorted(set(a) | set(b)) if a.get(key) != b.get(key)]
    return out


# xlt's own package folder: a config value naming a file under it (the bundled demo data, a bundled benchmark
# sample) names the same file in every copy of xlt (another checkout, another virtual environment).
PACKAGE_DIR = Path(__file__).resolve().parent


def _bundled_rel(value: Any) -> str | None:
    """``value``'s path relative to this installed package, when it names a file bundled with xlt."""
    if not isinstance(value, str) or not value.startswith("/"):
        return None
    try:
        return Path(value).relative_to(PACKAGE_DIR).as_posix()
    except ValueError:
        return None


def _relocated(old: dict[str, Any], new: dict[str, Any], changed: list[str]) -> bool:
    """Whether every change between two input details is a config value naming the same file bundled with xlt
    in another copy of it: the current value under this package (``<package>/<rel>``), the recorded one under
    another copy's (``.../xlt/<rel>``), and its content fingerprinted among the stage's file inputs with no
    change there (the same files are the same inputs, wherever xlt is installed)."""
    if not changed:
        return False
    old_cfg, new_cfg = old.get("config", {}), new.get("config", {})
    files = set(new.get("files", {})) & set(old.get("files", {}))
    for key in changed:
        rel = _bundled_rel(new_cfg.get(key))
        recorded = old_cfg.get(key)
        if rel is None or not isinstance(recorded, str) or not recorded.startswith("/") \
                or not recorded.endswith(f"/{PACKAGE_DIR.name}/{rel}") \
                or not any(key == f or key.startswith(f + ".") for f in files):
            return False
    return True


def stale_reason(run: RunDir, spec: StageSpec, ctx: StageContext, cfg: Any = None) -> str | None:
    """Why stage ``spec`` must run under ``ctx`` (None: its done-marker matches and its outputs exist)."""
    if ctx.force:
        return "force=true"
    try:
        info = run.done_info(spec.name)
    except Damaged as err:
        return f"its done-marker is damaged ({err}); redoing the stage"
    if not info:
        return "not done yet"
    prov = info["provenance"]
    if prov.get("inputs") != ctx.inputs:
        detail = prov.get("detail")
        changed = _changes(detail, ctx.detail) if isinstance(detail, dict) else []
        # the same bundled files, read from another copy of xlt: the same inputs
        if not (isinstance(detail, dict) and _relocated(detail, ctx.detail, changed)):
            return "inputs changed: " + (", ".join(changed[:8]) if changed else "(an earlier xlt version's marker)")
    missing = [o for o in spec.outputs if not (run.path / o).exists()]
    if missing:
        return f"outputs missing: {', '.join(missing)}"
    problems = spec.check(cfg, run, ctx) if spec.check is not None and cfg is not None else []
    if problems:
        return "outputs missing or damaged: " + "; ".join(problems[:8])
    return None


def call_stage(spec: StageSpec, cfg: Any, run: RunDir, force: bool | None = None,
               table: Mapping[str, StageSpec] | None = None, **extra: Any) -> dict[str, Any] | None:
    """Run stage ``spec`` once with its current context, outside :func:`run_stages` (no skip decision, no
    done-marker): for tests and tools that drive one stage directly. ``extra`` goes to the stage function
    (e.g. the train stage's ``extra_callbacks``); ``table``: the stage table (:func:`context`)."""
    return spec.run(cfg, run, context(cfg, run, spec, force=force, table=table), **extra)


# Rank 0's decision on each stage, per launch (``stages/<stage>.attempt``, :meth:`xlt.run.layout.RunDir.attempt`):
# ranks > 0 read markers only after rank 0 has settled them (cleared a ``.failed`` or, with force=true or
# damaged outputs, the previous marker), so every rank follows the decision one process would take.
ATTEMPT_STATES = ("skipped", "running", "done", "failed")


def _settle(run: RunDir, name: str, launch: str, state: str) -> None:
    """Rank 0: record its decision on stage ``name`` for this launch (see :data:`ATTEMPT_STATES`)."""
    run.attempt(name).parent.mkdir(parents=True, exist_ok=True)
    atomic_write_json(run.attempt(name), {"launch": launch, "state": state})


def _wait_for_rank0(run: RunDir, name: str, launch: str, states: tuple[str, ...]) -> str:
    """On ranks > 0: wait until rank 0 has recorded, for this launch, one of ``states`` for stage ``name``
    (a ``failed`` raises); return it. Tokens of earlier launches (other ``launch``) are not looked at."""
    log.info("stage %-10s: waiting for rank 0", name)
    while True:
        with contextlib.suppress(Damaged):  # being rewritten by rank 0
            info = read_state(run.attempt(name), {"launch": str, "state": str}) or {}
            if info.get("launch") == launch:
                if info["state"] == "failed":
                    raise XltError(f"stage {name} failed on rank 0 (see its log); this rank stops too")
                if info["state"] in states:
                    return info["state"]
        time.sleep(WAIT_POLL_S)


def _sharded(cfg: Any, spec: StageSpec) -> bool:
    return spec.shard_section is not None and int(cfg[spec.shard_section].num_shards) > 1


def run_stages(cfg: Any, run: RunDir, stages: Sequence[StageSpec], on_first_run: Callable[[], None] | None = None,
               launch: str | None = None, table: Mapping[str, StageSpec] | None = None) -> list[str]:
    """Run ``stages`` in order under the contract (see the module docstring); return the names of those that ran.

    ``on_first_run`` is called once, before the first stage that really runs (the entry point writes
    ``config.yaml`` there, so calls that only skip leave it alone). ``table``: the whole stage table (default:
    ``stages``), whose declarations a stage's context reads (:meth:`StageContext.of`).

    Under a multi-process launcher only ``train`` runs on every rank; the other stages run on rank 0,
    while the other ranks wait for stages before ``train`` and skip those after. Ranks > 0 follow rank 0's
    decision on each stage up to ``train`` (its ``stages/<stage>.attempt`` token of this ``launch``: the
    identity of rank 0's lock, :attr:`xlt.run.lock.RunLock.owner`; default :func:`xlt.run.lock.launch_id`), read
    only after rank 0 has cleared old markers. A sharded job (a ``num_shards`` > 1 job of translate or
    evaluate) runs only its own stage and what follows it; the stages before must be done.
    """
    if run.markers.exists() and not run.markers.is_dir():
        raise StateError(f"{run.markers} is a file where a folder belongs: remove it, then rerun (its stages are redone)")
    distributed = world_size() > 1
    if launch is None:
        launch = launch_id()
    follower = distributed and not is_main_process()
    names = [spec.name for spec in stages]
    table = dict(table) if table is not None else {spec.name: spec for spec in stages}
    train_at = names.index("train") if "train" in names else len(names)
    sharded_at = next((i for i, spec in enumerate(stages) if _sharded(cfg, spec)), None)
    ran: list[str] = []
    for i, name in enumerate(names):
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
            _run_one(cfg, run, stages, i, follower, sharded_at, on_first_run if not ran else None, ran, cleared,
                     table)
        except BaseException:
            if tell:  # ranks > 0 waiting for it stop too
                atomic_write_text(run.failed(name), "failed\n")
                _settle(run, name, launch, "failed")
            raise
        if tell and name not in ran:
            _settle(run, name, launch, "skipped")
        elif tell and i < train_at:
            _settle(run, name, launch, "done" if run.marker(name).exists() else "failed")
    return ran


def _run_one(cfg: Any, run: RunDir, stages: Sequence[StageSpec], i: int, follower: bool, sharded_at: int | None,
             on_first_run: Callable[[], None] | None, ran: list[str], cleared: Callable[[], None],
             table: Mapping[str, StageSpec] | None = None) -> None:
    """Stage ``stages[i]`` of :func:`run_stages`: skip it, or run it and write its done-marker (appended
    to ``ran`` when it ran); ``cleared`` is called once its old markers are removed (rank 0)."""
    spec = stages[i]
    name = spec.name
    if spec.guard is not None:
        spec.guard(cfg, run)
    ctx = context(cfg, run, spec, table=table)
    reason = "rank 0 runs it" if follower else stale_reason(run, spec, ctx, cfg)
    if reason is None:
        log.info("stage %-10s up to date (%s); skipping. Use force=true to redo it.", name, run.marker(name))
        return
    if sharded_at is not None and i < sharded_at:
        shard = stages[sharded_at]
        raise ConfigError(f"stage {name} must be done before the sharded {shard.name} jobs start ({reason}); "
                          f"run it once without {shard.shard_section}.num_shards/shard_index")
    if on_first_run is not None:
        on_first_run()
    if not follower:
        check_held()  # a run whose lock is lost removes nothing of the run that took it over
        run.failed(name).unlink(missing_ok=True)
        if not _sharded(cfg, spec):
            run.clear(name)  # a crash from here on leaves no done-marker that looks current
        cleared()
    log.info("stage %-10s running: %s", name, reason)
    started = time.time()
    report_progress(stage=name, since=started, step=None, max_steps=None)
    summary = spec.run(cfg, run, ctx)
    ran.append(name)
    if summary is not None and not follower:
        finished = time.time()
        prov = {**ctx.record(), "detail": ctx.detail, "host": socket.gethostname(), "pid": os.getpid(),
                "started": started, "finished": finished,
                "output_id": digest([ctx.inputs, finished, os.getpid(), socket.gethostname()]),
                "outputs": {rel: sealed_fingerprint(run.path / rel) for rel in spec.sealed}}
        run.mark_done(name, {**summary, "provenance": prov})
    log.info("stage %-10s finished", name)

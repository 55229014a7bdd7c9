"""``xlt status PATH... [--state S] [--json] [overrides]`` (or ``python -m xlt.status``): a sweep's state at a glance.

``PATH`` is a run directory, a run root (every run directory below it), or a sweep file (its runs' directories,
the ``overrides`` applied as ``slurm/train_array.sbatch`` applies them). Each run is, first that holds:

* **running**: a holder of one of its locks is alive: its process runs on this host, or the scheduler says its
  job runs, or (neither can tell) its heartbeat changed while this command watched it, as the lock itself
  judges a holder (:mod:`xlt.run.lock`; never by comparing the holder's clock with this host's);
* **stopped**: a lock is left whose holder is gone without a record (killed);
* **failed**: a call left a failure record: ``failed.json`` (a whole-run call) or ``failed.<shard>.json``
  (each shard's own): each failed shard with its exit status and error line;
* **preempted**: a call left a preemption record (``preempted.json``, ``preempted.<shard>.json``): how often the
  job was requeued, and what the scheduler says of it now;
* **done**: every stage of its recipe is done and current; **partial**: some are; **not started**;
* **unknown**: with ``--no-stages``, a run whose stages nothing recorded tells (no call recorded).

Beside the state: each stage done (``+``), stale (``~``, with why: the engine's own rule,
:func:`xlt.contract.stale_reason`) or missing (``-``) (with ``--no-stages``: done as recorded, ``+``, not
checked), and the headline accuracy (the mean over languages per benchmark) once the report is written.
Everything read from a run directory is checked: a damaged file is named in the line, never a traceback.

The output starts with the counts per state, then the runs grouped by state (paths relative to the root given);
``--state failed,preempted`` (or repeated) keeps those; ``--json`` prints one object ``{"summary": {"runs": N,
"states": {state: count}}, "runs": [{"run", "path", "state", "stages", "detail", ...}]}`` (docs/clusters.md).

At scale: the scheduler is asked once for all jobs (:func:`xlt.cluster.scheduler.job_states`), each distinct
config structure is composed once (:mod:`xlt.cluster.sweep_configs`), benchmark copies are fingerprinted once
(:func:`xlt.run.fingerprint.steady`), and the stage check runs offline (``HF_HUB_OFFLINE=1``): a thousand runs
in seconds (benchmarks/status_bench.py). ``--full`` composes and validates every run on its own (the reference
the fast path is measured against).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from xlt.errors import XltError
from xlt.run import layout
from xlt.run.layout import RunDir
from xlt.run.lock import Snapshot, beat_interval, holder_state, read_lock
from xlt.run.state import REPORT, Damaged, read_jsonl_state, read_state

MARKS = {"done": "+", "stale": "~", "missing": "-", "recorded": "+"}
# The order of the groups in the output: what needs a look first.
STATES = ("failed", "preempted", "stopped", "running", "partial", "not started", "unknown", "done")
# Scheduler states in which a job's processes run (a holder of that job is alive).
LIVE_JOB_STATES = ("RUNNING", "COMPLETING", "CONFIGURING", "STOPPING", "SIGNALING", "RESIZING")
# The longest a status call watches heartbeats that neither this host nor the scheduler can vouch for.
WATCH_MAX_S = 30.0


@dataclass
class RunStatus:
    """One run's line of ``xlt status`` (and its object in ``--json``)."""

    run: str  # as shown: relative to the root given
    state: str
    path: str = ""  # the run directory
    stages: dict[str, str] = field(default_factory=dict)  # stage -> "done" | "stale: why" | "missing" | "recorded"
    detail: str = ""
    accuracy: dict[str, float] = field(default_factory=dict)  # benchmark -> mean over languages (percent)
    slurm: dict[str, Any] | None = None
    job: str | None = None  # the scheduler's name of the job (ARRAYJOB_TASK for an array element)
    scheduler: str | None = None  # what the scheduler says of it now (RUNNING, PENDING (BeginTime), COMPLETED)
    progress: dict[str, Any] | None = None
    alive: str | None = None  # how the holder was told alive or gone
    exit_status: int | None = None
    error: str | None = None
    requeues: int | None = None
    shards: dict[str, dict[str, Any]] = field(default_factory=dict)  # "run" or shard -> its failure/preemption
    problems: list[str] = field(default_factory=list)

    def line(self, width: int) -> str:
        stages = " ".join(f"{MARKS[v.split(':')[0]]}{k}" for k, v in self.stages.items()) or "(stages unknown)"
        acc = " ".join(f"{k} {v:.1f}" for k, v in self.accuracy.items())
        parts = [p for p in (self.detail, acc, "; ".join(self.problems)) if p]
        return f"{self.run:<{width}}  {self.state:<11} {stages}  {' · '.join(parts)}".rstrip()


def job_name(slurm: dict[str, Any] | None) -> str:
    """The scheduler's name of a recorded job: ``ARRAYJOB_TASK`` for an array element, else its id."""
    if not slurm:
        return ""
    if slurm.get("array_job_id") and slurm.get("array_task_id"):
        return f"{slurm['array_job_id']}_{slurm['array_task_id']}"
    return str(slurm.get("job_id", "") or "")


@contextlib.contextmanager
def offline() -> Iterator[None]:
    """``HF_HUB_OFFLINE=1`` for the stage check (a login node may have no network: never a retry, never a wait),
    the caller's setting restored after."""
    before = os.environ.get("HF_HUB_OFFLINE")
    os.environ["HF_HUB_OFFLINE"] = "1"
    constants = sys.modules.get("huggingface_hub.constants")
    was = getattr(constants, "HF_HUB_OFFLINE", None)
    if constants is not None:
        constants.HF_HUB_OFFLINE = True
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("HF_HUB_OFFLINE", None)
        else:
            os.environ["HF_HUB_OFFLINE"] = before
        if constants is not None:
            constants.HF_HUB_OFFLINE = was


def _overrides_of(run: RunDir) -> list[str] | None:
    """The overrides of the run's last call (``calls.jsonl``), or None when it has none."""
    last = _last_call(run)
    return list(last["overrides"]) if last else None


def _last_call(run: RunDir) -> dict[str, Any] | None:
    try:
        calls = read_jsonl_state(run.calls, {"overrides": list})
    except Damaged:
        return None
    return calls[-1] if calls else None


def _check_stages(cfg: Any, run: RunDir, status: RunStatus) -> None:
    """Each stage of the config: done, stale (why) or missing, by the stage engine's own rule."""
    from xlt.contract import context, stale_reason  # lazy: start-up time
    from xlt.stages import STAGES  # lazy: start-up time

    for name in cfg.stages:
        spec = STAGES[name]
        try:
            info = run.done_info(name)
        except Damaged as err:
            status.stages[name] = f"stale: done-marker damaged ({err})"
            continue
        if not info:
            status.stages[name] = "missing"
            continue
        why = stale_reason(run, spec, context(cfg, run, spec, force=False, table=STAGES))
        status.stages[name] = "done" if why is None else f"stale: {why}"


def _stage_states(run: RunDir, overrides: list[str] | None, status: RunStatus, configs: Any) -> None:
    """The stages of the run's config (its call's overrides; a first call under way: the config.yaml it wrote),
    checked (:func:`_check_stages`); ``configs``: shared compositions (:class:`xlt.cluster.sweep_configs.
    SweepConfigs`), None to compose and validate this run on its own (``--full``)."""
    if overrides is None and not run.config.exists():
        status.problems.append("no call recorded (calls.jsonl) and no config.yaml: stages not checked")
        return
    try:
        from xlt import config as xcfg  # lazy: start-up time
        from xlt.config.compose import compose  # lazy: start-up time

        overrides = None if overrides is None else [o for o in overrides
                                                    if not o.lstrip("+~").startswith(("hydra.", "hydra/"))]
        if overrides is not None and configs is not None:
            configs.with_config(overrides, lambda cfg: _check_stages(cfg, run, status))
            return
        if overrides is not None:
            cfg = compose(None, overrides)
        else:  # its first call is under way, or stopped: the config that call wrote when it started
            from omegaconf import OmegaConf  # lazy: start-up time

            cfg = OmegaConf.load(run.config)
        _check_stages(xcfg.validate(cfg, list(cfg.stages)), run, status)
    except (XltError, Exception) as err:  # noqa: BLE001 - a run composed with another xlt: say so, go on
        status.stages.clear()
        status.problems.append(f"stages not checked ({type(err).__name__}: {str(err).splitlines()[0][:200]})")


def _recorded_stages(run: RunDir, status: RunStatus) -> None:
    """``--no-stages``: the stages the last call named (``calls.jsonl``), each done as its marker records it
    (``recorded``: not checked for staleness) or missing."""
    last = _last_call(run)
    names = last.get("stages") if last else None
    if not isinstance(names, list):
        names = sorted(p.stem for p in run.markers.glob("*.json")) if run.markers.is_dir() else []
    for name in names:
        status.stages[str(name)] = "recorded" if run.marker(str(name)).is_file() else "missing"


def _accuracy(run: RunDir, status: RunStatus) -> None:
    if not run.report("json").exists():
        return
    try:
        report = read_state(run.report("json"), REPORT)
    except Damaged as err:
        status.problems.append(str(err))
        return
    for name, bench in (report.get("benchmarks") or {}).items():
        mean = (bench.get("summary") or {}).get("mean") if isinstance(bench, dict) else None
        if isinstance(mean, (int, float)):
            status.accuracy[name] = round(float(mean), 1)


@dataclass
class _Held:
    """A lock of a run as read once: its holder alive (True), gone (False) or not told yet (None)."""

    path: Path
    snap: Snapshot
    info: dict[str, Any]
    alive: bool | None
    why: str
    job: str
    read_at: float = field(default_factory=time.monotonic)  # this host's monotonic clock at the first read


@dataclass
class _Seen:
    status: RunStatus
    held: list[_Held] = field(default_factory=list)
    records: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)  # (kind, shard, record)


def _read_locks(run: RunDir, seen: _Seen) -> None:
    locks = sorted(run.locks.glob("*.json")) if run.locks.is_dir() else []
    for path in locks:
        try:
            snap = read_lock(path)
        except Exception as err:  # noqa: BLE001 - a damaged lock is named, the next is read
            seen.status.problems.append(f"{path}: {err}")
            continue
        if snap is None or snap.info is None:
            if snap is not None:
                seen.status.problems.append(f"{path}: {snap.damage}")
            continue
        alive, why = holder_state(snap.info)
        slurm = snap.info.get("slurm") if isinstance(snap.info.get("slurm"), dict) else None
        seen.held.append(_Held(path, snap, snap.info, alive, why, job_name(slurm)))


def _read_records(run: RunDir, seen: _Seen) -> None:
    for kind, name in (("failed", layout.FAILURE_FILE), ("preempted", layout.PREEMPTION_FILE)):
        for shard, path in run.records(name).items():
            try:
                record = read_state(path, {"exit_status": int})
            except Damaged as err:
                seen.status.problems.append(str(err))
                continue
            if record is not None:
                seen.records.append((kind, shard or layout.WHOLE_RUN, record))


def _look(path: str, shown: str, overrides: list[str] | None, stages: bool, configs: Any) -> _Seen:
    """What a run directory holds (its stages, report, locks and records), before the scheduler is asked."""
    run = RunDir(path)
    seen = _Seen(RunStatus(run=shown, state="not started", path=str(path)))
    if not run.path.is_dir():
        seen.status.detail = "no run directory yet"
        return seen
    if stages:
        _stage_states(run, overrides if overrides is not None else _overrides_of(run), seen.status, configs)
    else:
        _recorded_stages(run, seen.status)
    _accuracy(run, seen.status)
    _read_locks(run, seen)
    _read_records(run, seen)
    return seen


def _ask_scheduler(seen: list[_Seen], ask: Callable[[list[str]], dict[str, str]]) -> dict[str, str]:
    """What the scheduler says of every job a lock or record names, in one question."""
    jobs = [h.job for s in seen for h in s.held if h.alive is None and h.job]
    jobs += [job_name(r.get("slurm") if isinstance(r.get("slurm"), dict) else None)
             for s in seen for kind, _, r in s.records if kind == "preempted"]
    jobs = [j for j in dict.fromkeys(jobs) if j]
    return ask(jobs) if jobs else {}


def _judge_by_scheduler(seen: list[_Seen], states: dict[str, str]) -> None:
    for s in seen:
        for h in s.held:
            if h.alive is not None or h.job not in states:
                continue
            said = states[h.job]
            h.alive = said.split()[0] in LIVE_JOB_STATES
            h.why = f"the scheduler says job {h.job} is {said}"


def _watch(seen: list[_Seen], started: float, limit: float) -> None:
    """The locks nothing else could judge, watched together as the lock judges a holder: alive when the file
    changed since it was first read; gone when it did not change for one and a half of its holder's heartbeat
    intervals since then (at most ``limit`` seconds after ``started``; this host's monotonic clock only)."""
    todo = [h for s in seen for h in s.held if h.alive is None]
    if not todo:
        return

    def lease(h: _Held) -> float:
        value = h.info.get("lease_s")
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else 40.0

    wait = min(max(1.5 * beat_interval(lease(h)) for h in todo), limit)
    deadline = min(max(h.read_at for h in todo) + wait, started + limit)
    while todo:
        still = []
        for h in todo:
            try:
                now = read_lock(h.path)
            except OSError:
                now = None
            if now is None:
                h.alive, h.why = False, "its lock was released while this command watched it"
            elif not now.same(h.snap):
                h.alive, h.why = True, "its heartbeat changed while this command watched it"
                h.info = now.info or h.info
            else:
                still.append(h)
        todo = still
        if not todo or time.monotonic() >= deadline:
            break
        time.sleep(min(0.2, max(deadline - time.monotonic(), 0.01)))
    for h in todo:
        h.alive = False
        h.why = (f"its heartbeat did not change in {wait:.1f} s (it beats every {beat_interval(lease(h)):g} s) "
                 f"and the scheduler did not vouch for it ({h.why})")


def _settle(s: _Seen, states: dict[str, str], stages_checked: bool) -> RunStatus:
    """The run's state from its locks, records and stages (module docstring: the first that holds)."""
    status = s.status
    for kind, shard, record in s.records:
        status.shards[shard] = {"state": kind, "exit_status": record["exit_status"],
                                "error": str(record.get("error", "")) if kind == "failed" else None,
                                "cause": record.get("cause") if kind == "preempted" else None,
                                "job": job_name(record.get("slurm") if isinstance(record.get("slurm"), dict) else None)}
    live = [h for h in s.held if h.alive]
    gone = [h for h in s.held if h.alive is False]
    if live or gone:
        h = (live or gone)[0]
        info = h.info
        status.slurm = info.get("slurm") if isinstance(info.get("slurm"), dict) else None
        status.progress = info.get("progress") if isinstance(info.get("progress"), dict) else None
        status.job = h.job or None
        status.scheduler = states.get(h.job)
        status.alive = h.why
        where = [str(info.get("host", "?"))]
        if status.slurm:
            where.append(f"job {h.job} (restart {status.slurm.get('restart_count', '0')})")
        if live:
            status.state = "running"
            prog = status.progress or {}
            if prog.get("stage"):
                step = f" step {prog['step']}/{prog.get('max_steps', '?')}" if prog.get("step") is not None else ""
                where.append(f"{prog['stage']}{step}")
            others = [f"{x.path.stem}" for x in live[1:]]
            status.detail = ", ".join(where) + (f"; also held: {', '.join(others)}" if others else "")
            status.detail += _shard_note(status, skip=None)
            return status
        status.state = "stopped"
        status.detail = f"lock {h.path.name} left by {', '.join(where)}: {h.why}" + _shard_note(status, skip=None)
        return status
    failed = [(shard, r) for kind, shard, r in s.records if kind == "failed"]
    preempted = [(shard, r) for kind, shard, r in s.records if kind == "preempted"]
    if failed:
        status.state = "failed"
        shard, record = failed[0]
        status.slurm = record.get("slurm") if isinstance(record.get("slurm"), dict) else None
        status.exit_status = record["exit_status"]
        status.error = str(record.get("error", ""))
        status.job = job_name(status.slurm) or None
        parts = []
        for shard, record in failed:
            job = job_name(record.get("slurm") if isinstance(record.get("slurm"), dict) else None)
            who = "" if shard == layout.WHOLE_RUN else f"{shard}: "
            parts.append(f"{who}exit status {record['exit_status']}: {record.get('error', '')}"
                         + (f" (job {job})" if job else ""))
        status.detail = "; ".join(parts) + _shard_note(status, skip="failed")
        return status
    if preempted:
        status.state = "preempted"
        shard, record = preempted[0]
        status.slurm = record.get("slurm") if isinstance(record.get("slurm"), dict) else None
        status.exit_status = record["exit_status"]
        job = job_name(status.slurm)
        status.job = job or None
        count = int((status.slurm or {}).get("restart_count", "0") or 0)
        status.requeues = count + 1 if (status.slurm or {}).get("job_id") else None
        status.scheduler = states.get(job)
        who = "" if shard == layout.WHOLE_RUN else f"{shard} "
        status.detail = (f"{who}preempted at {time.strftime('%H:%M:%S', time.localtime(record.get('time', 0)))}"
                         + (f", job {job} requeue {status.requeues}" if job else "")
                         + (f", SLURM: {status.scheduler}" if status.scheduler else "")
                         + f"; {record.get('cause', '')}".rstrip("; ") + _shard_note(status, skip="preempted"))
        return status
    values = list(status.stages.values())
    if values and all(v in ("done", "recorded") for v in values):
        status.state = "done"
        if not stages_checked:
            status.detail = "done as recorded (stages not checked: --no-stages)"
    elif any(v != "missing" for v in values):
        status.state = "partial"
    elif not stages_checked and not values and Path(status.path).is_dir():
        status.state = "unknown"
        status.detail = "no call recorded: its stages cannot be told without the stage check"
    return status


def _shard_note(status: RunStatus, skip: str | None) -> str:
    others = [f"{shard} {v['state']}" for shard, v in status.shards.items() if v["state"] != skip]
    return f" (also: {', '.join(others)})" if others else ""


def statuses(runs: list[tuple[str, str, list[str] | None]], stages: bool = True, full: bool = False,
             ask: Callable[[list[str]], dict[str, str]] | None = None, watch_s: float = WATCH_MAX_S,
             configs: Any = None) -> list[RunStatus]:
    """The state of each run ``(path, shown as, its call's overrides or None)`` (module docstring). ``ask``: the
    scheduler's states of jobs (default :func:`xlt.cluster.scheduler.job_states`, where ``squeue`` exists);
    ``full``: compose and validate every run on its own (the reference path)."""
    from xlt.cluster.scheduler import job_states  # lazy: start-up time
    from xlt.run.fingerprint import steady  # lazy: start-up time

    if ask is None:
        ask = job_states if shutil.which("squeue") else (lambda jobs: {})
    if stages and not full and configs is None:
        from xlt.cluster.sweep_configs import SweepConfigs  # lazy: start-up time

        configs = SweepConfigs()
    started = time.monotonic()
    with offline(), (steady() if not full else contextlib.nullcontext()):
        seen = [_look(path, shown, over, stages, None if full else configs) for path, shown, over in runs]
    states = _ask_scheduler(seen, ask)
    _judge_by_scheduler(seen, states)
    _watch(seen, started, watch_s)
    return [_settle(s, states, stages) for s in seen]


def run_status(path: str | Path, overrides: list[str] | None = None, stages: bool = True,
               **kw: Any) -> RunStatus:
    """The state of one run directory (see the module docstring); ``overrides``: its call, when known."""
    return statuses([(str(path), str(path), overrides)], stages=stages, **kw)[0]


# What makes a folder a run directory for `xlt status` (any one of them).
_RUN_MARKS = (layout.CALLS_FILE, layout.CONFIG_FILE, layout.MARKERS_DIR, layout.LOCKS_DIR, layout.FAILURE_FILE,
              layout.PREEMPTION_FILE)


def _is_run(path: Path) -> bool:
    return any((path / mark).exists() for mark in _RUN_MARKS) or any(path.glob("failed.*.json")) \
        or any(path.glob("preempted.*.json"))


def _runs_below(root: Path, depth: int = 4) -> list[Path]:
    """The run directories below a run root (``<run_root>/<recipe>/<name>``; a few levels, not into a run)."""
    found, todo = [], [(root, 0)]
    while todo:
        folder, level = todo.pop()
        for child in sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")):
            if _is_run(child):
                found.append(child)
            elif level + 1 < depth:
                todo.append((child, level + 1))
    return sorted(found)


def _shown(path: Path, root: Path | None) -> str:
    """A run's path as shown: relative to the root given, else to the working folder when below it."""
    for base in ([root] if root is not None else []) + [Path.cwd()]:
        with contextlib.suppress(ValueError):
            rel = path.resolve().relative_to(base.resolve())
            return str(rel) if str(rel) != "." else path.name
    return str(path)


def find_runs(paths: list[str], overrides: list[str], configs: Any = None) -> list[tuple[str, str, list[str] | None]]:
    """The run directories ``paths`` name (see the module docstring): ``(path, shown as, overrides or None)``."""
    from xlt.cluster.plan import plan_sweep  # lazy: start-up time

    out: list[tuple[str, str, list[str] | None]] = []
    for arg in paths:
        path = Path(arg)
        if path.is_file():
            for run in plan_sweep(path, overrides, configs).runs:
                out.append((run.run_dir, _shown(Path(run.run_dir), None), run.args))
        elif path.is_dir() and _is_run(path):
            out.append((str(path), str(path), None))
        elif path.is_dir():
            found = _runs_below(path)
            if not found:
                raise XltError(f"{path}: no run directory below it (none holds {', '.join(_RUN_MARKS)})")
            out.extend((str(p), _shown(p, path), None) for p in found)
        else:
            raise XltError(f"{path}: neither a run directory, a run root nor a sweep file")
    return out


def summary(runs: list[RunStatus]) -> dict[str, Any]:
    counts: dict[str, int] = {}
    for r in runs:
        counts[r.state] = counts.get(r.state, 0) + 1
    order = {s: i for i, s in enumerate(STATES)}
    return {"runs": len(runs), "states": dict(sorted(counts.items(), key=lambda kv: order.get(kv[0], 99)))}


def render(runs: list[RunStatus], total: dict[str, Any]) -> str:
    """The text output: the counts first, then the runs grouped by state (module docstring)."""
    counts = ", ".join(f"{n} {s}" for s, n in total["states"].items())
    lines = [f"{total['runs']} run(s): {counts}" if counts else f"{total['runs']} run(s)"]
    width = max((len(r.run) for r in runs), default=3)
    groups: dict[str, list[RunStatus]] = {}
    for r in runs:
        groups.setdefault(r.state, []).append(r)
    order = {s: i for i, s in enumerate(STATES)}
    for state in sorted(groups, key=lambda s: order.get(s, 99)):
        lines += ["", f"{state} ({len(groups[state])})  stages: + done, ~ stale, - missing"]
        lines += [r.line(width) for r in groups[state]]
    return "\n".join(lines)


def _states_wanted(values: list[str] | None) -> set[str] | None:
    if not values:
        return None
    wanted = {s.strip() for v in values for s in v.split(",") if s.strip()}
    unknown = sorted(wanted - set(STATES))
    if unknown:
        raise XltError(f"--state {', '.join(unknown)}: not a state; use {', '.join(STATES)}")
    return wanted


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="xlt status", description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", metavar="PATH", help="run directories, run roots or sweep files; "
                        "key=value arguments are overrides for the sweep files' runs")
    parser.add_argument("--json", action="store_true", help='one object: {"summary": ..., "runs": [...]}')
    parser.add_argument("--state", action="append", metavar="STATE",
                        help=f"only runs in these states (comma list or repeated): {', '.join(STATES)}")
    parser.add_argument("--no-stages", action="store_true",
                        help="skip the stage check: done stages as their markers record them")
    parser.add_argument("--full", action="store_true",
                        help="compose and validate every run on its own (slow; the reference of the fast check)")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    # key=value is an override; a run directory's own name holds '=' too, but a path is not a dotted key
    overrides = [p for p in args.paths if re.match(r"[+~]?[A-Za-z_][\w.]*=", p) and not Path(p).exists()]
    paths = [p for p in args.paths if p not in overrides]
    try:
        wanted = _states_wanted(args.state)
        configs = None
        if not args.full:
            from xlt.cluster.sweep_configs import SweepConfigs  # lazy: start-up time

            configs = SweepConfigs()
        found = find_runs(paths, overrides, configs)
        runs = statuses(found, stages=not args.no_stages, full=args.full, configs=configs)
    except XltError as err:
        print(f"xlt: error: {err}", file=sys.stderr)
        return 2
    total = summary(runs)
    shown = [r for r in runs if wanted is None or r.state in wanted]
    if args.json:
        print(json.dumps({"summary": total, "runs": [asdict(r) for r in shown]}, indent=2, ensure_ascii=False))
        return 0
    print(render(shown, total))
    return 0


if __name__ == "__main__":
    sys.exit(main())

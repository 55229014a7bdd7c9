"""``xlt status PATH... [--json] [overrides]`` (or ``python -m xlt.status``): a sweep's state at a glance, one line per run.

``PATH`` is a run directory, a run root (every run directory below it), or a sweep file (its runs' directories,
the ``overrides`` applied as ``slurm/train_array.sbatch`` applies them). Each run is, first that holds:

* **running**: its lock's holder is alive (this host) or its heartbeat is recent (another host): the host, the
  SLURM job (``ARRAYJOB_INDEX``), the restart count, the last heartbeat, and the stage and step it is at;
* **stopped**: a lock is left whose holder is gone without a record (killed);
* **failed**: the last call left ``failed.json``: its exit status and error line;
* **preempted**: the last call left ``preempted.json``: how often the job was requeued, and what SLURM says of
  it now (``squeue``, where reachable);
* **done**: every stage of its recipe is done and current; **partial**: some are; **not started**.

Beside the state: each stage done (``+``), stale (``~``, with why: the engine's own rule,
:func:`xlt.contract.stale_reason`) or missing (``-``), and the headline accuracy (the mean over languages per
benchmark) once the report is written. Everything read from a run directory is checked: a damaged file is
named in the line, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from xlt.errors import XltError
from xlt.run import layout
from xlt.run.layout import RunDir
from xlt.run.lock import BEAT_MAX_S, holder_state, read_lock
from xlt.run.state import REPORT, Damaged, read_jsonl_state, read_state

# A heartbeat older than this (from another host) no longer says the run is alive.
FRESH_S = 6 * BEAT_MAX_S
MARKS = {"done": "+", "stale": "~", "missing": "-"}


@dataclass
class RunStatus:
    """One run's line of ``xlt status``."""

    run: str
    state: str
    stages: dict[str, str] = field(default_factory=dict)  # stage -> "done" | "stale: why" | "missing"
    detail: str = ""
    accuracy: dict[str, float] = field(default_factory=dict)  # benchmark -> mean over languages (percent)
    slurm: dict[str, Any] | None = None
    progress: dict[str, Any] | None = None
    heartbeat_age_s: float | None = None
    exit_status: int | None = None
    error: str | None = None
    requeues: int | None = None
    problems: list[str] = field(default_factory=list)

    def line(self, width: int) -> str:
        stages = " ".join(f"{MARKS[v.split(':')[0]]}{k}" for k, v in self.stages.items()) or "(stages unknown)"
        acc = " ".join(f"{k} {v:.1f}" for k, v in self.accuracy.items())
        parts = [p for p in (self.detail, acc, "; ".join(self.problems)) if p]
        return f"{self.run:<{width}}  {self.state:<11} {stages}  {' · '.join(parts)}".rstrip()


def _job_name(slurm: dict[str, Any] | None) -> str:
    if not slurm:
        return ""
    if slurm.get("array_job_id") and slurm.get("array_task_id"):
        return f"{slurm['array_job_id']}_{slurm['array_task_id']}"
    return str(slurm.get("job_id", ""))


def _ago(seconds: float) -> str:
    return f"{seconds:.0f} s ago" if seconds < 120 else f"{seconds / 60:.0f} min ago"


def _squeue_state(job: str) -> str | None:
    """What SLURM says of a job now (``PENDING (BeginTime)``), or None where squeue is missing or forgot it."""
    if not job or not shutil.which("squeue"):
        return None
    try:
        proc = subprocess.run(["squeue", "-h", "-j", job, "-o", "%T (%r)"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    out = proc.stdout.strip().splitlines()
    return out[0] if proc.returncode == 0 and out else None


def _overrides_of(run: RunDir) -> list[str] | None:
    """The overrides of the run's last call (``calls.jsonl``), or None when it has none."""
    try:
        calls = read_jsonl_state(run.calls, {"overrides": list})
    except Damaged:
        return None
    return list(calls[-1]["overrides"]) if calls else None


def _stage_states(run: RunDir, overrides: list[str] | None, status: RunStatus) -> None:
    """Each stage of the run's recipe: done, stale (why) or missing, by the stage engine's own rule."""
    if overrides is None and not run.config.exists():
        status.problems.append("no call recorded (calls.jsonl) and no config.yaml: stages not checked")
        return
    try:
        from xlt import config as xcfg  # lazy: start-up time
        from xlt.config.compose import compose  # lazy: start-up time
        from xlt.contract import context, stale_reason  # lazy: start-up time
        from xlt.stages import STAGES  # lazy: start-up time

        if overrides is not None:
            cfg = compose(None, [o for o in overrides if not o.lstrip("+~").startswith(("hydra.", "hydra/"))])
        else:  # its first call is under way, or stopped: the config that call wrote when it started
            from omegaconf import OmegaConf  # lazy: start-up time

            cfg = OmegaConf.load(run.config)
        cfg = xcfg.validate(cfg, list(cfg.stages))
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
    except (XltError, Exception) as err:  # noqa: BLE001 - a run composed with another xlt: say so, go on
        status.problems.append(f"stages not checked ({type(err).__name__}: {str(err).splitlines()[0][:200]})")


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


def _lock_state(run: RunDir, status: RunStatus) -> bool:
    """Fill the running/stopped state from the run's locks; True when one holds."""
    locks = sorted(run.locks.glob("*.json")) if run.locks.is_dir() else []
    for path in locks:
        try:
            snap = read_lock(path)
        except Exception as err:  # noqa: BLE001 - a damaged lock is named, the next is read
            status.problems.append(f"{path}: {err}")
            continue
        if snap is None or snap.info is None:
            if snap is not None:
                status.problems.append(f"{path}: {snap.damage}")
            continue
        info = snap.info
        alive, why = holder_state(info)
        beat = info.get("heartbeat")
        age = time.time() - float(beat) if isinstance(beat, (int, float)) else None
        if alive is None:
            alive = age is not None and age < FRESH_S
        status.slurm = info.get("slurm") if isinstance(info.get("slurm"), dict) else None
        status.progress = info.get("progress") if isinstance(info.get("progress"), dict) else None
        status.heartbeat_age_s = round(age, 1) if age is not None else None
        where = [str(info.get("host", "?"))]
        if status.slurm:
            where.append(f"job {_job_name(status.slurm)} (restart {status.slurm.get('restart_count', '0')})")
        if alive:
            status.state = "running"
            prog = status.progress or {}
            if prog.get("stage"):
                step = f" step {prog['step']}/{prog.get('max_steps', '?')}" if prog.get("step") is not None else ""
                where.append(f"{prog['stage']}{step}")
            if age is not None:
                where.append(f"heartbeat {_ago(age)}")
            status.detail = ", ".join(where)
            return True
        status.state = "stopped"
        status.detail = f"lock {path.name} left by {', '.join(where)}: {why}" + (
            f", last heartbeat {_ago(age)}" if age is not None else "")
    return False


def run_status(path: str | Path, overrides: list[str] | None = None, stages: bool = True) -> RunStatus:
    """The state of one run directory (see the module docstring); ``overrides``: its call, when known."""
    run = RunDir(path)
    status = RunStatus(run=str(path), state="not started")
    if not run.path.is_dir():
        status.detail = "no run directory yet"
        return status
    if stages:
        _stage_states(run, overrides if overrides is not None else _overrides_of(run), status)
    _accuracy(run, status)
    if _lock_state(run, status):
        return status
    for record_path, state in ((run.failure, "failed"), (run.preemption, "preempted")):
        if not record_path.exists():
            continue
        try:
            record = read_state(record_path, {"exit_status": int})
        except Damaged as err:
            status.problems.append(str(err))
            continue
        status.state = state
        status.slurm = record.get("slurm") if isinstance(record.get("slurm"), dict) else status.slurm
        status.exit_status = record["exit_status"]
        job = _job_name(status.slurm)
        if state == "failed":
            status.error = str(record.get("error", ""))
            status.detail = f"exit status {status.exit_status}: {status.error}" + (f" (job {job})" if job else "")
        else:
            count = int((status.slurm or {}).get("restart_count", "0") or 0)
            status.requeues = count + 1 if (status.slurm or {}).get("job_id") else None
            now = _squeue_state(str((status.slurm or {}).get("job_id", "")))
            status.detail = (f"preempted at {time.strftime('%H:%M:%S', time.localtime(record.get('time', 0)))}"
                             + (f", job {job} requeue {status.requeues}" if job else "")
                             + (f", SLURM: {now}" if now else "") + f"; {record.get('cause', '')}".rstrip("; "))
        return status
    if status.stages and all(v == "done" for v in status.stages.values()):
        status.state = "done"
    elif any(v != "missing" for v in status.stages.values()):
        status.state = "partial"
    return status


# What makes a folder a run directory for `xlt status` (any one of them).
_RUN_MARKS = (layout.CALLS_FILE, layout.CONFIG_FILE, layout.MARKERS_DIR, layout.LOCKS_DIR, layout.FAILURE_FILE,
              layout.PREEMPTION_FILE)


def _is_run(path: Path) -> bool:
    return any((path / mark).exists() for mark in _RUN_MARKS)


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


def find_runs(paths: list[str], overrides: list[str]) -> list[tuple[str, list[str] | None]]:
    """The run directories ``paths`` name (see the module docstring), with their overrides where known."""
    from xlt.cluster.sweeps import read_sweep, run_dir  # lazy: start-up time

    out: list[tuple[str, list[str] | None]] = []
    for arg in paths:
        path = Path(arg)
        if path.is_file():
            for args in read_sweep(path):
                out.append((run_dir([*args, *overrides]), [*args, *overrides]))
        elif path.is_dir() and _is_run(path):
            out.append((str(path), None))
        elif path.is_dir():
            found = _runs_below(path)
            if not found:
                raise XltError(f"{path}: no run directory below it (none holds {', '.join(_RUN_MARKS)})")
            out.extend((str(p), None) for p in found)
        else:
            raise XltError(f"{path}: neither a run directory, a run root nor a sweep file")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="xlt status", description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", metavar="PATH", help="run directories, run roots or sweep files; "
                        "key=value arguments are overrides for the sweep files' runs")
    parser.add_argument("--json", action="store_true", help="one JSON object per run, in a list")
    parser.add_argument("--no-stages", action="store_true", help="skip the stage check (faster)")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    # key=value is an override; a run directory's own name holds '=' too, but a path is not a dotted key
    overrides = [p for p in args.paths if re.match(r"[+~]?[A-Za-z_][\w.]*=", p) and not Path(p).exists()]
    paths = [p for p in args.paths if p not in overrides]
    try:
        runs = [run_status(path, over, stages=not args.no_stages) for path, over in find_runs(paths, overrides)]
    except XltError as err:
        print(f"xlt: error: {err}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps([asdict(r) for r in runs], indent=2, ensure_ascii=False))
        return 0
    width = max((len(r.run) for r in runs), default=3)
    counts: dict[str, int] = {}
    for r in runs:
        counts[r.state] = counts.get(r.state, 0) + 1
    print(f"{'run':<{width}}  {'state':<11} stages (+ done, ~ stale, - missing)  detail")
    for r in runs:
        print(r.line(width))
    print(f"{len(runs)} run(s): " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())

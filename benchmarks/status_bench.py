"""Benchmark: ``xlt status`` over N finished run directories, the fast check against the full one.

Makes N run directories of a ``demo_tiny`` sweep (``+recipe=demo_tiny seed=<i> run_root=<root>``): copies of
one finished run (``--template``, e.g. made by ``python -m xlt.train +recipe=demo_tiny run_root=/tmp/r``; without
one, a run whose done-markers are written from the stages' own contexts with their outputs in place), hard-linked,
each with its call (``calls.jsonl``) and its done-markers made consistent with its seed (the ``seed`` of every
stage's recorded config and the input hash over it), as the run would have left them; the content hashes the
runs left in ``$XLT_CACHE`` are left there too (their models' files). One run in 20 gets a failure record, one in
20 loses its report stage's marker (partial), one in 20 records another seed than its call (stale).

Then times ``xlt status`` (:func:`xlt.status.statuses`: one composition per structure, the scheduler asked once)
over all N, and the full check (``--full``: every run composed and validated on its own) over the first
``--full-n``, checks that both give the same state and stages for those runs, and prints seconds per run and
the machine's load. Also times ``python -m xlt.cluster plan`` of a sweep file of the N lines. Usage::

    OMP_NUM_THREADS=1 python benchmarks/status_bench.py [--n 1000] [--full-n 50] [--template RUN_DIR] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

RECIPE = "demo_tiny"


def synthetic_run(run_root: Path, overrides: list[str] | None = None) -> Path:
    """A finished run made by the cheap path: for each stage of the recipe, in order, its outputs in place (empty)
    and its done-marker written from the stage's context as the engine writes it (input hash, detail, output
    id). ``xlt status`` reads it as done."""
    from xlt.config.compose import compose
    from xlt.config.keys import run_name
    from xlt.contract import context
    from xlt.run.fingerprint import digest
    from xlt.run.layout import RunDir
    from xlt.stages import STAGES

    args = [f"+recipe={RECIPE}", f"run_root={run_root}", *(overrides or [])]
    cfg = compose(None, args)
    run = RunDir(run_root / run_name(args))
    run.path.mkdir(parents=True)
    (run.model).mkdir()
    (run.model / "model.safetensors").write_bytes(b"tiny weights " * 100)
    (run.model / "config.json").write_text('{"model_type": "xlm-roberta"}')
    for name in cfg.stages:
        spec = STAGES[name]
        for out in spec.outputs:
            target = run.path / out
            if not target.exists():
                target.parent.mkdir(parents=True, exist_ok=True)
                target.mkdir() if not Path(out).suffix else target.write_text('{"provenance": {}}')
        ctx = context(cfg, run, spec, force=False, table=STAGES)
        run.mark_done(name, {"provenance": {"stage": name, "inputs": ctx.inputs, "detail": ctx.detail,
                                            "output_id": digest([name, ctx.inputs])}})
    _call(run.path, args, list(cfg.stages))
    return run.path


def _call(run: Path, args: list[str], stages: list[str]) -> None:
    line = {"time": "2026-12-05T00:00:00+0000", "overrides": args, "stages": stages, "ran": stages}
    (run / "calls.jsonl").unlink(missing_ok=True)  # a hard link to the template's: a file of its own
    (run / "calls.jsonl").write_text(json.dumps(line) + "\n")


def _link_tree(src: Path, dst: Path) -> None:
    shutil.copytree(src, dst, copy_function=os.link, ignore=shutil.ignore_patterns("locks", "xlt.log"))


def make_runs(template: Path, run_root: Path, n: int) -> list[tuple[Path, list[str]]]:
    """N copies of ``template`` (a finished demo_tiny run) as the runs ``seed=1..n`` of a sweep, consistent
    (module docstring); returns ``(run directory, its call's overrides)``."""
    from xlt.config.keys import run_name
    from xlt.run.fingerprint import _MEMO, _save_memo, _stat_key, digest, file_hash

    markers = {p.stem: json.loads(p.read_text()) for p in sorted((template / "stages").glob("*.json"))}
    stages = list(json.loads((template / "calls.jsonl").read_text().splitlines()[-1])["stages"])
    model_files = [p for p in (template / "model").rglob("*") if p.is_file()] if (template / "model").is_dir() else []
    hashes = {p.relative_to(template): file_hash(p) for p in model_files}
    memo: dict[str, str] = {}
    out = []
    for i in range(1, n + 1):
        args = [f"+recipe={RECIPE}", f"seed={i}", f"run_root={run_root}"]
        dest = run_root / run_name(args)
        dest.parent.mkdir(parents=True, exist_ok=True)
        _link_tree(template, dest)
        recorded = i + 100_000 if i % 20 == 7 else i  # one in 20: its markers record another seed (stale)
        for name, marker in markers.items():
            if name == "report" and i % 20 == 3:  # one in 20: no report marker (partial)
                (dest / "stages" / "report.json").unlink()
                continue
            prov = json.loads(json.dumps(marker["provenance"]))
            detail = prov.get("detail") or {}
            if "seed" in detail.get("config", {}):
                detail["config"]["seed"] = recorded
                prov["inputs"] = digest(detail)
            target = dest / "stages" / f"{name}.json"
            target.unlink()
            target.write_text(json.dumps({**marker, "provenance": prov}))
        _call(dest, args, stages)
        if i % 20 == 11:  # one in 20: its last call failed
            (dest / "failed.json").write_text(json.dumps({"exit_status": 2, "error": "xlt: error: a bench failure",
                                                          "time": time.time()}))
        out.append((dest, args))
    for dest, _ in out:  # what each run's own evaluate stage left in the memo (after the last link: ctime)
        for rel, h in hashes.items():
            memo[_stat_key(dest / rel)] = h
    _save_memo(memo)
    _MEMO.update(memo)
    return out


def _key(status: Any) -> tuple[Any, ...]:
    return status.state, tuple(sorted(status.stages.items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--full-n", type=int, default=50)
    parser.add_argument("--template", type=Path, help="a finished demo_tiny run directory to copy")
    parser.add_argument("--keep", type=Path, help="make the runs here and keep them (default: a temporary folder)")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="xlt-status-bench-"))
    os.environ.setdefault("XLT_CACHE", str(work / "cache"))
    from xlt.status import statuses

    t0 = time.perf_counter()
    template = args.template or synthetic_run(work / "template")
    made = make_runs(template, work / "runs", args.n)
    print(f"made {len(made)} runs in {time.perf_counter() - t0:.1f} s under {work / 'runs'}"
          f" (template: {'copied ' + str(args.template) if args.template else 'synthetic'})")
    runs = [(str(p), str(p.relative_to(work / 'runs')), None) for p, _ in made]

    load = os.getloadavg()
    t0 = time.perf_counter()
    fast = statuses(runs, watch_s=0)
    fast_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    full = statuses(runs[:args.full_n], full=True, watch_s=0)
    full_s = time.perf_counter() - t0
    same = [_key(a) == _key(b) for a, b in zip(fast[:args.full_n], full, strict=True)]
    counts: dict[str, int] = {}
    for s in fast:
        counts[s.state] = counts.get(s.state, 0) + 1
    sweep = work / "sweep.txt"
    sweep.write_text("".join(f"+recipe={RECIPE} seed={i}\n" for i in range(1, args.n + 1)))
    from xlt.cluster.plan import plan_sweep

    t0 = time.perf_counter()
    plan = plan_sweep(sweep, [f"run_root={work / 'runs'}"])
    plan_s = time.perf_counter() - t0
    assert [r.run_dir for r in plan.runs] == [str(p) for p, _ in made], "the plan's run directories differ"
    print(f"machine: {os.cpu_count()} CPUs, load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} at the start")
    print(f"fast  xlt status: {len(fast)} runs in {fast_s:.2f} s = {fast_s / len(fast) * 1000:.1f} ms per run; "
          f"states {counts}")
    print(f"full  xlt status --full: {len(full)} runs in {full_s:.2f} s = {full_s / max(len(full), 1) * 1000:.0f} ms "
          f"per run (x{len(fast)}: {full_s / max(len(full), 1) * len(fast):.0f} s extrapolated)")
    print(f"same state and stages as the full check: {sum(same)}/{len(same)}")
    print(f"plan of a {args.n}-line sweep: {plan_s:.2f} s")
    if not all(same):
        bad = [(a.run, _key(a), _key(b)) for a, b, ok in zip(fast, full, same, strict=False) if not ok][:3]
        raise SystemExit(f"the fast check differs from the full one: {bad}")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

"""Result tables of one run: per-language rows joined with the language table, and the summaries.

:func:`collect` reads ``run/eval/<benchmark>/<lang>.json`` for every planned job (erroring clearly when
some are missing), and returns one :class:`BenchmarkResults` per benchmark: a per-language DataFrame
(accuracy in %, n, 95% interval, code, name, script, family, resource level; Global-MMLU adds the tier,
the translation source and ``acc_<subset>`` / ``n_<subset>`` columns) and its summary dict.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from xlt import languages as langtab
from xlt.data.benchmarks import get_benchmark
from xlt.errors import DataError
from xlt.run import RunDir
from xlt.scoring.metrics import belebele_summary, gmmlu_summary
from xlt.scoring.results import (
    Job,
    current_jobs,
    enabled_benchmarks,
    missing_jobs,
    missing_message,
    planned_jobs,
    read_result,
    result_path,
)


@dataclass
class BenchmarkResults:
    name: str
    kind: str
    per_language: pd.DataFrame
    summary: dict[str, Any]

    @property
    def is_gmmlu(self) -> bool:
        return bool(get_benchmark(self.kind).subsets)


def language_columns(code: str, groups: dict[str, str] | None) -> dict[str, Any]:
    lang = langtab.lookup(code)
    return {
        "code": lang.code if lang else code,
        "name": lang.name if lang else code,
        "script": lang.script if lang else "n/a",
        "family": lang.family if lang else "n/a",
        "resource": langtab.resource_level(code, groups),
        "tier": (lang.gmmlu_tier if lang and lang.gmmlu_tier else langtab.UNGROUPED),
        "translation": (lang.translation if lang and lang.translation else langtab.UNGROUPED),
    }


def per_language_frame(results: list[dict[str, Any]], groups: dict[str, str] | None) -> pd.DataFrame:
    rows = []
    for r in results:
        row = {"benchmark": r["benchmark"], "language": r["language"], **language_columns(r["language"], groups),
               "accuracy": r["accuracy"], "n": r["n"], "ci_low": r["ci_low"], "ci_high": r["ci_high"],
               # argmax ties and odd items of the benchmark file (counted by the loader, see data_checks)
               "ties": r.get("ties", 0), "odd_items": sum((r.get("data_checks") or {}).values())}
        if r.get("truncated") is not None:  # items cut to fit max_length (encoder scorers count them)
            row["truncated"] = int(r["truncated"])
        meta = r.get("scorer_meta") or {}
        if "comparable_to_harness" in meta:  # LLM scoring: can this number stand beside the harness's?
            row["comparable_to_harness"] = bool(meta["comparable_to_harness"])
            row["not_comparable_because"] = "; ".join(meta.get("not_comparable_because") or [])
        for name, sub in (r.get("subsets") or {}).items():
            row[f"acc_{name}"] = sub["accuracy"] if sub["n"] else float("nan")
            row[f"n_{name}"] = sub["n"]
        rows.append(row)
    return pd.DataFrame(rows)


def collect(cfg: Any, run: RunDir) -> dict[str, BenchmarkResults]:
    """All results of a run, per enabled benchmark; missing languages raise :class:`DataError`."""
    jobs = planned_jobs(cfg, run)
    missing = missing_jobs(run, jobs)
    if missing:
        raise DataError(f"{run.eval}: " + missing_message(missing, int(cfg.eval.num_shards)))
    stale = missing_jobs(run, jobs, current_jobs(cfg, run, jobs))
    if stale:
        raise DataError(f"{run.eval}: {len(stale)} result(s) were computed for another model, data or settings "
                        f"than this config's (e.g. {stale[0].benchmark}/{stale[0].language}); rerun the evaluate "
                        "stage (it recomputes exactly those) before the report")
    groups = langtab.read_groups(cfg.eval.resource_groups) if cfg.eval.resource_groups else None
    out: dict[str, BenchmarkResults] = {}
    for name, bcfg in enabled_benchmarks(cfg).items():
        bjobs = [j for j in jobs if j.benchmark == name]
        out[name] = results_from_files(name, bjobs[0].kind if bjobs else bcfg.kind,
                                       [read_result(run, j) for j in bjobs], groups)
    return out


def results_from_files(name: str, kind: str, results: list[dict[str, Any]],
                       groups: dict[str, str] | None = None) -> BenchmarkResults:
    df = per_language_frame(results, groups)
    if bool(get_benchmark(kind).subsets):
        summary = gmmlu_summary(df)
        summary["mean"] = summary["full"]
    else:
        summary = belebele_summary(df, with_resource=True)
        summary["resource_taxonomy"] = ("user grouping file" if groups is not None else
                                        "Global-MMLU tiers (Singh et al., 2024), same language code only")
    return BenchmarkResults(name, kind, df, summary)


def load_run_results(run_path: str | Path) -> dict[str, BenchmarkResults]:
    """Results of a finished run directory without its config: every ``eval/<benchmark>/plan.json``."""

    run = RunDir(run_path)
    out: dict[str, BenchmarkResults] = {}
    from xlt.state import PLAN, Damaged, read_state

    for plan_file in sorted(run.eval.glob("*/plan.json")):
        try:
            plan = read_state(plan_file, PLAN)
        except Damaged as err:
            raise DataError(f"{err}; rerun the evaluate stage of {run.path} (it rewrites the plan)") from None
        jobs = [Job(plan["benchmark"], lang, plan["kind"]) for lang in plan["languages"]]
        missing = [j for j in missing_jobs(run, jobs) if not result_path(run, j).exists()]  # damaged: read_result says why
        if missing:
            raise DataError(f"{run.eval}: " + missing_message(missing))
        out[plan["benchmark"]] = results_from_files(plan["benchmark"], plan["kind"],
                                                    [read_result(run, j) for j in jobs])
    if not out:
        raise DataError(f"{run.path}: no evaluation results (eval/<benchmark>/plan.json); run the evaluate stage")
    return out


def summary_frames(res: BenchmarkResults) -> dict[str, pd.DataFrame]:
    """Small DataFrames of a benchmark's summary, one per grouping (for Markdown/LaTeX/CSV)."""
    s = res.summary
    frames: dict[str, pd.DataFrame] = {}
    if res.is_gmmlu:
        frames["subsets"] = pd.DataFrame([{"subset": k, "mean accuracy": s[k]} for k in ("full", "MA", "CS", "CA")])
        frames["by category"] = pd.DataFrame([{"category": k, "mean accuracy": v} for k, v in s["by_category"].items()])
        for key, label in (("by_tier", "resource tier"), ("by_translation", "translation")):
            frames[f"by {label}"] = pd.DataFrame([{label: g, **vals} for g, vals in s[key].items()])
    else:
        frames["overview"] = pd.DataFrame([{"mean accuracy": s["mean"], "languages": s["n_languages"],
                                            "languages >= 50": s["n_ge_50"], "languages >= 70": s["n_ge_70"]}])
        for key in ("by_script", "by_family", "by_resource"):
            if key in s:
                label = key.removeprefix("by_")
                frames[f"by {label}"] = pd.DataFrame([{label: g, "mean accuracy": v["mean"],
                                                       "languages": v["n_languages"]} for g, v in s[key].items()])
    return frames

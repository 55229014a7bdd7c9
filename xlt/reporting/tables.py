"""Result tables of one run: per-language rows joined with the language table, and the summaries.

:func:`collect` reads ``run/eval/<benchmark>/<lang>.json`` for every planned job (erroring clearly when
some are missing), and returns one :class:`BenchmarkResults` per benchmark: a per-language DataFrame
(accuracy in %, n, 95% interval, chance level, the language columns its definition declares
(:meth:`~xlt.data.benchmarks.base.Benchmark.language_info`), and ``acc_<subset>`` / ``n_<subset>`` per
subset) and its summary dict (:func:`summarize_results`). The summaries, their tables and the report's
columns are built here from the definition's report declaration
(:class:`~xlt.data.benchmarks.declarations.Report`: groupings, subsets, thresholds, labels, title).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from xlt import languages as langtab
from xlt.config.eval import EvalConfig
from xlt.config.model import ModelConfig
from xlt.data.benchmarks import Benchmark, get_benchmark
from xlt.errors import DataError
from xlt.metrics import summarize
from xlt.run.layout import RunDir
from xlt.run.results import read_result
from xlt.run.state import PLAN, Damaged, read_state
from xlt.scoring import before
from xlt.scoring.jobs import enabled_benchmarks, planned_jobs
from xlt.scoring.results import current_jobs, missing_jobs, missing_message
from xlt.scoring.tokenizer_measures import COLUMNS as TOKENIZER_COLUMNS

# The chance level of a result written before results recorded theirs (every benchmark then had 4 options).
DEFAULT_CHANCE = 100 / 4


@dataclass
class BenchmarkResults:
    name: str
    kind: str
    per_language: pd.DataFrame
    summary: dict[str, Any]

    @property
    def definition(self) -> Benchmark:
        """The benchmark's definition: what to group by, which subsets, how to show and check it."""
        return get_benchmark(self.kind)

    @property
    def heading(self) -> str:
        """The benchmark's name for people (its definition's title; :func:`heading`)."""
        return heading(self.definition, self.name)

    @property
    def chance(self) -> float:
        """The chance level (%): the mean over languages of each result's ``chance``."""
        return chance_level(self.per_language)


def heading(bench: Benchmark, name: str) -> str:
    """How reports and plots name the config entry ``name`` of benchmark ``bench``: its title, and the entry's
    name beside it where that says more (e.g. "Belebele (belebele_tt)" for a translate-test entry)."""
    return bench.title if name in (bench.kind, bench.title) else f"{bench.title} ({name})"


def finding_prefix(bench: Benchmark) -> str:
    """What the ids of a benchmark's findings start with: its declared ``finding_prefix``, else its kind."""
    return bench.report.finding_prefix or bench.kind


def chance_level(per_language: pd.DataFrame) -> float:
    if "chance" in per_language and per_language["chance"].notna().any():
        return float(per_language["chance"].mean())
    return DEFAULT_CHANCE


def per_language_frame(results: list[dict[str, Any]], groups: dict[str, str] | None, bench: Benchmark) -> pd.DataFrame:
    rows = []
    for r in results:
        chance = r.get("chance")
        row = {"benchmark": r["benchmark"], "language": r["language"], **bench.language_info(r["language"], groups),
               "accuracy": r["accuracy"], "n": r["n"], "ci_low": r["ci_low"], "ci_high": r["ci_high"],
               "chance": float(chance) if chance is not None else DEFAULT_CHANCE,
               # argmax ties and odd items of the benchmark file (counted by the loader, see data_checks)
               "ties": r.get("ties", 0), "odd_items": sum((r.get("data_checks") or {}).values())}
        if r.get("machine_translated_from") and "translation" in row:  # a version xlt machine-translated
            row["translation"] = f"machine (xlt, from {r['machine_translated_from']})"
        if r.get("truncated") is not None:  # items cut to fit max_length (encoder scorers count them)
            row["truncated"] = int(r["truncated"])
        meta = r.get("scorer_meta") or {}
        if "comparable_to_harness" in meta:  # LLM scoring: can this number stand beside the harness's?
            row["comparable_to_harness"] = bool(meta["comparable_to_harness"])
            row["not_comparable_because"] = "; ".join(meta.get("not_comparable_because") or [])
        tok = r.get("tokenizer")
        if isinstance(tok, dict):  # the scorer's tokenizer on the items (xlt.scoring.tokenizer_measures)
            row.update({c: tok.get(c) if tok.get(c) is not None else float("nan") for c in TOKENIZER_COLUMNS})
            row["tokenizer_notes"] = tok.get("notes") or ""
            # counts of a long text the tokenizer may not give its parts as it gives the whole (the reason)
            row["tokenizer_estimated"] = tok.get("estimated") or ""
            row["tokenizer_fingerprint"] = tok.get("tokenizer")  # which systems share a vocabulary
        draws = r.get("draws")
        if isinstance(draws, dict):  # an LLM under eval.llm.protocol=paper: the mean over few-shot draws, its spread
            row.update(protocol=r.get("protocol", "paper"), draws=int(draws["k"]),
                       draw_accuracies=" / ".join(f"{a:.1f}" for a in draws["accuracy"]),
                       draw_std=draws["std"], draw_min=draws["min"], draw_max=draws["max"])
        for name, sub in (r.get("subsets") or {}).items():
            row[f"acc_{name}"] = sub["accuracy"] if sub["n"] else float("nan")
            row[f"n_{name}"] = sub["n"]
        rows.append(row)
    return pd.DataFrame(rows)


def collect(eval_cfg: EvalConfig, model: ModelConfig, run: RunDir, evaluate_ctx: Any, train_files: dict[str, Any], *,
            seed: int) -> dict[str, BenchmarkResults]:
    """All results of a run, per enabled benchmark; missing languages raise :class:`DataError`, and so do
    results computed under other inputs than the evaluate stage's now (``evaluate_ctx``, from the stage);
    ``train_files``: what the train stage reads, which with ``model`` and ``seed`` identifies the untrained model's
    results."""
    jobs = planned_jobs(eval_cfg, run)
    missing = missing_jobs(run, jobs)
    if missing:
        raise DataError(f"{run.eval}: " + missing_message(missing, int(eval_cfg.num_shards)))
    stale = missing_jobs(run, jobs, current_jobs(jobs, evaluate_ctx))
    if stale:
        raise DataError(f"{run.eval}: {len(stale)} result(s) were computed for another model, data or settings "
                        f"than this config's (e.g. {stale[0].benchmark}/{stale[0].language}); rerun the evaluate "
                        "stage (it recomputes exactly those) before the report")
    groups = langtab.read_groups(eval_cfg.resource_groups) if eval_cfg.resource_groups else None
    untrained = before.accuracies(model, eval_cfg, run, evaluate_ctx, jobs, train_files, seed=seed)  # eval.before_training: the same model untrained
    out: dict[str, BenchmarkResults] = {}
    for name, bcfg in enabled_benchmarks(eval_cfg).items():
        bjobs = [j for j in jobs if j.benchmark == name]
        res = results_from_files(name, bjobs[0].kind if bjobs else bcfg.kind, [read_result(run, j.benchmark, j.language) for j in bjobs], groups)
        if untrained:
            res.per_language[before.COLUMN] = [untrained.get((name, lang), float("nan"))
                                               for lang in res.per_language["language"]]
        out[name] = res
    return out


def results_from_files(name: str, kind: str, results: list[dict[str, Any]],
                       groups: dict[str, str] | None = None) -> BenchmarkResults:
    bench = get_benchmark(kind)
    df = per_language_frame(results, groups, bench)
    return BenchmarkResults(name, kind, df, summarize_results(bench, df, groups))


def load_run_results(run_path: str | Path, groups: dict[str, str] | None = None) -> dict[str, BenchmarkResults]:
    """Results of a finished run directory without its config: every ``eval/<benchmark>/plan.json``;
    ``groups``: the run's resource grouping (``eval.resource_groups``), else the table's levels."""

    run = RunDir(run_path)
    out: dict[str, BenchmarkResults] = {}

    for plan_file in sorted(run.eval.glob("*/plan.json")):
        try:
            plan = read_state(plan_file, PLAN)
        except Damaged as err:
            raise DataError(f"{err}; rerun the evaluate stage of {run.path} (it rewrites the plan)") from None
        name, langs = plan["benchmark"], plan["languages"]
        missing = [(name, lang) for lang in langs if not run.result(name, lang).exists()]  # damaged: read_result says why
        if missing:
            raise DataError(f"{run.eval}: " + missing_message(missing))
        out[name] = results_from_files(name, plan["kind"], [read_result(run, name, lang) for lang in langs], groups)
    if not out:
        raise DataError(f"{run.path}: no evaluation results (eval/<benchmark>/plan.json); run the evaluate stage")
    return out


def summarize_results(bench: Benchmark, per_lang: pd.DataFrame, groups: dict[str, str] | None = None) -> dict[str, Any]:
    """Headline numbers over languages (:func:`xlt.metrics.summarize`: ``mean`` always, the declared
    threshold counts, each subset's mean, the means per grouping); ``resource_taxonomy`` says where the
    resource levels come from when results are grouped by them."""
    report = bench.report
    out = summarize(per_lang, report.language_groupings, report.subset_names, report.thresholds)
    if "resource" in report.language_groupings:
        out["resource_taxonomy"] = langtab.resource_taxonomy(groups)
    return out


def summary_frames(res: BenchmarkResults) -> dict[str, pd.DataFrame]:
    """Small DataFrames of a benchmark's summary, one per table (for Markdown/LaTeX/HTML)."""
    return summary_tables(res.definition, res.summary)


def summary_tables(bench: Benchmark, summary: dict[str, Any]) -> dict[str, pd.DataFrame]:
    """Small DataFrames of a :func:`summarize_results` summary, one per table of ``report.md`` (title -> frame)."""
    report = bench.report
    subsets, label = report.subset_names, report.label
    overview = {"mean accuracy": summary["mean"], "languages": summary["n_languages"],
                **{f"languages >= {t:g}": summary.get(f"n_ge_{t:g}") for t in report.thresholds}}
    if summary.get("chance") is not None:
        overview["chance"] = summary["chance"]
    frames = {"overview": pd.DataFrame([overview])}
    if subsets:
        frames["subsets"] = pd.DataFrame([{"subset": s, "mean accuracy": summary.get(s)} for s in ("full", *subsets)])
    for key, value in summary.items():  # finer subsets, e.g. by_category
        by = key.removeprefix("by_")
        if key.startswith("by_") and by not in report.language_groupings and isinstance(value, dict):
            frames[f"by {label(by)}"] = pd.DataFrame([{label(by): k, "mean accuracy": v} for k, v in value.items()])
    for by in report.language_groupings:
        if f"by_{by}" in summary:
            frames[f"by {label(by)}"] = pd.DataFrame([
                {label(by): g, "mean accuracy": v["mean"], "languages": v["n_languages"],
                 **{s: v.get(s) for s in subsets}} for g, v in summary[f"by_{by}"].items()])
    return frames


def headline(res: BenchmarkResults) -> list[tuple[str, Any]]:
    """The few numbers a results page shows first: (label, value) pairs."""
    report, summary = res.definition.report, res.summary
    out: list[tuple[str, Any]] = [("languages", summary["n_languages"]), ("mean accuracy", summary["mean"])]
    out += [(f"languages >= {t:g}", summary.get(f"n_ge_{t:g}")) for t in report.thresholds]
    out += [(report.label(s), summary.get(s)) for s in report.subset_names]
    if summary.get("chance") is not None:
        out.append(("chance", summary["chance"]))
    if summary.get("resource_taxonomy"):
        out.append(("resource levels", summary["resource_taxonomy"]))
    return out


def report_columns(bench: Benchmark) -> list[str]:
    """The columns of the per-language table in ``report.md`` / ``report.tex`` (those present)."""
    report = bench.report
    return ["language", "name", *report.language_groupings, "accuracy", "ci_low", "ci_high",
            *(f"acc_{s}" for s in report.subset_names), *TOKENIZER_COLUMNS, "n", "truncated"]


def display_frame(res: BenchmarkResults) -> pd.DataFrame:
    """The per-language table of the report: the definition's columns, best first."""
    df = res.per_language.sort_values("accuracy", ascending=False)
    columns = [c for c in report_columns(res.definition) if c in df]
    if before.COLUMN in df and "accuracy" in columns:  # the same model before fine-tuning, beside its accuracy
        columns.insert(columns.index("accuracy") + 1, before.COLUMN)
    if "draws" in df and "accuracy" in columns:  # paper-protocol LLM results: each draw's accuracy and the spread
        at = columns.index("ci_high" if "ci_high" in columns else "accuracy") + 1
        columns[at:at] = [c for c in DRAW_COLUMNS if c not in columns]
    out = df[columns].copy()
    for c in TOKENIZER_COLUMNS:  # ratios near 1: two decimals (three for the rare unknown pieces); NaN empty
        if c in out:
            digits = 3 if c == "unk_rate" else 2
            out[c] = [f"{v:.{digits}f}" if v == v and v is not None else "" for v in out[c]]
    return out


# The per-language columns of results over several few-shot draws (eval.llm.protocol=paper).
DRAW_COLUMNS = ("draw_accuracies", "draw_std", "draw_min", "draw_max")


def protocol_line(df: pd.DataFrame) -> str:
    """For LLM results over several few-shot draws (``eval.llm.protocol=paper``): how the numbers were made."""
    if "draws" not in df or not df["draws"].notna().any():
        return ""
    k = int(df["draws"].max())
    return (f"\nFew-shot protocol: the Belebele paper's (`eval.llm.protocol=paper`): the examples are drawn from the "
            f"English training set, {k} draw(s) of them are scored, and `accuracy` is the mean of the draws' "
            f"accuracies (`draw_accuracies`; `draw_std` the sample std, `draw_min`-`draw_max` their range). The "
            "interval resamples questions over each question's share of right draws.\n")

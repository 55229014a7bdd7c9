"""The ``report`` stage: merge all per-language results into ``run/report.{md,csv,json,tex}`` and plots.

It merges the evaluate stage's shards (every planned language must have its result file; otherwise it
stops with a message listing what is missing), joins the language table, computes the summaries each
benchmark's definition declares (mean, languages at or above its thresholds, its subsets' means, by
each of its language groupings; :class:`xlt.data.benchmarks.base.Benchmark`), and writes:

* ``report.csv``  — one row per (benchmark, language), all columns;
* ``report.json`` — summaries and per-language rows (with the scored tokenizer's measures), and each
  benchmark's cross-language item report (:mod:`xlt.reporting.items`; per item in ``report_items.csv``);
* ``report.md`` / ``report.tex`` — the summary tables and the per-language table;
* ``report.html`` — one self-contained page: sortable, filterable tables and interactive charts
  (:mod:`xlt.reporting.html`);
* ``plots/*.png`` — accuracy per language (sorted), bars per grouping, the declared contrast per language.

:data:`STAGE` declares it to the contract.
"""

from __future__ import annotations

import logging
from typing import Any

from xlt import languages as langtab
from xlt.contract import StageContext, StageSpec, json_problems
from xlt.markdown import markdown_table
from xlt.reporting.model_card import card_problem, write_hub_card
from xlt.reporting.run_report import (  # noqa: F401 - the report stage's writers, named here as before
    comparability_line,
    data_checks_line,
    llm_source,
    render_latex,
    render_markdown,
    run_items,
    tokenizer_line,
    write_report,
)
from xlt.reporting.tables import BenchmarkResults, collect
from xlt.run.layout import REPORT_FILE, RunDir
from xlt.run.state import REPORT
from xlt.scoring import declaration
from xlt.stages.inputs import local_fingerprint, train_stage_files
from xlt.tracking import log_report

log = logging.getLogger("xlt.report")


def card_summary(results: dict[str, BenchmarkResults]) -> str:
    """The model card's evaluation section: mean accuracy per benchmark, and where the details are."""
    table = markdown_table(["benchmark", "languages", "mean accuracy (%)"],
                     [[name, len(r.per_language), f"{r.summary['mean']:.1f}"] for name, r in results.items()])
    return table + "\nPer-language results, intervals and subsets: `report.md` in the run directory."


def card_model_name(recipe_name: str, run: RunDir) -> str:
    """The name of the card's ``model-index``: the recipe, and the run's overrides unless it is the default."""
    return recipe_name if run.path.name == "default" else f"{recipe_name} ({run.path.name})"


def run_stage(cfg: Any, run: RunDir, ctx: StageContext) -> dict[str, Any]:
    """Merge the evaluation results of ``run`` and write the report; return headline numbers.

    Also rewrites the run's model card with the results, as the Hub reads them (when the run's own model
    was evaluated: :func:`xlt.reporting.model_card.write_hub_card`) and logs tables and plots to W&B (when
    ``logger=wandb``).
    """
    results = collect(cfg.eval, cfg.model, run, ctx.of(cfg, run, "evaluate"), train_stage_files(cfg, run),
                      seed=cfg.seed)
    files = write_report(cfg, run, results, ctx.record())
    if declaration.names_run_model(cfg.eval.model) and run.model_card.is_file():
        write_hub_card(run.model_card, run.report(), run.model_provenance, model=cfg.model, data=cfg.data,
                       eval_cfg=cfg.eval, model_name=card_model_name(cfg.recipe_name, run), summary=card_summary(results))
    tables = {f"{name}_per_language": r.per_language for name, r in results.items()}
    log_report(cfg.logger, run, cfg, files, tables)
    log.info("report written: %s", run.report("md"))
    return {name: {"mean_accuracy": r.summary["mean"], "n_languages": int(len(r.per_language))}
            for name, r in results.items()}


# --- the stage's declaration (xlt.contract.StageSpec) -------------------------------------------------

def files(cfg: Any, run: RunDir) -> dict[str, Any]:
    # The language table gives the report its names, scripts, families and default resource levels: a new
    # table (e.g. another taxonomy) is another report. Its content, not its path (installs differ).
    return {"eval.resource_groups": local_fingerprint(cfg.eval.resource_groups), "language table": langtab.table_digest()}


def check(cfg: Any, run: RunDir, ctx: Any) -> list[str]:
    problems = json_problems(run, {run.report(): REPORT})
    if not problems and declaration.names_run_model(cfg.eval.model) and run.model_card.is_file():
        # The card the report wrote: another model or report since (a card of the train stage alone) reruns it.
        card = card_problem(run.model_card, run.report(), run.model_provenance)
        problems += [f"model card out of date: {card}"] if card else []
    return problems


STAGE = StageSpec("report", run_stage, upstream=lambda cfg: ("evaluate",), files=files, outputs=(REPORT_FILE,),
                  check=check)

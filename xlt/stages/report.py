"""The ``report`` stage: the files derived from a run's results, written from :mod:`xlt.reporting`.

It merges the evaluate stage's shards (every planned language must have its result file; otherwise it
stops with a message listing what is missing: :func:`xlt.reporting.tables.collect`), joins the language table,
computes the summaries each benchmark's definition declares (mean, languages at or above its thresholds, its
subsets' means, by each of its language groupings; :class:`xlt.data.benchmarks.base.Benchmark`), and writes

* the report: ``report.{md,csv,json,tex,html}``, ``report_items.csv``, ``plots/*.png``
  (:func:`xlt.reporting.run_report.write_report`);
* the model card's evaluation section, when the run's own model was evaluated
  (:func:`xlt.reporting.model_card.write_hub_card`);
* with ``eval.llm.harness_output``, the results as lm-evaluation-harness's output folder
  (:func:`xlt.reporting.harness.output.write_harness_output`).

:data:`STAGE` declares it to the contract: its outputs, and a check that reads each of them back (a harness
folder asked for after the report reruns the stage).
"""

from __future__ import annotations

import logging
from typing import Any

from xlt import languages as langtab
from xlt.contract import StageContext, StageSpec, json_problems
from xlt.reporting.harness.output import harness_output_problems, write_harness_output
from xlt.reporting.model_card import card_problem, write_hub_card
from xlt.reporting.run_report import card_model_name, card_summary, write_report
from xlt.reporting.tables import collect
from xlt.run.layout import (
    ITEMS_REPORT_FILE,
    REPORT_FILE,
    REPORT_FORMATS,
    REPORT_STEM,
    RunDir,
    is_main_process,
)
from xlt.run.state import REPORT
from xlt.scoring import declaration
from xlt.stages.inputs import local_fingerprint, train_stage_files
from xlt.tracking import log_report

log = logging.getLogger("xlt.report")


def run_stage(cfg: Any, run: RunDir, ctx: StageContext) -> dict[str, Any]:
    """Merge the evaluation results of ``run`` and write the report; return headline numbers.

    Also rewrites the run's model card with the results, as the Hub reads them (when the run's own model
    was evaluated: :func:`xlt.reporting.model_card.write_hub_card`), writes the harness folder (with
    ``eval.llm.harness_output``; the main process only) and logs tables and plots to W&B (when ``logger=wandb``).
    """
    results = collect(cfg.eval, cfg.model, run, ctx.of(cfg, run, "evaluate"), train_stage_files(cfg, run),
                      seed=cfg.seed)
    files = write_report(cfg.eval, cfg.model, run, results, ctx.record(), recipe_name=cfg.recipe_name, seed=cfg.seed)
    if declaration.names_run_model(cfg.eval.model) and run.model_card.is_file():
        write_hub_card(run.model_card, run.report(), run.model_provenance, model=cfg.model, data=cfg.data,
                       eval_cfg=cfg.eval, model_name=card_model_name(cfg.recipe_name, run), summary=card_summary(results))
    if is_main_process():
        write_harness_output(cfg.eval, run)
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
    return problems + harness_output_problems(cfg.eval, run)


# The report files (``check`` reads report.json back); the harness folder, where eval.llm.harness_output asks for
# one, is checked by ``check`` (where it goes is a neutral setting, not a fixed path of the run directory).
OUTPUTS = (*(f"{REPORT_STEM}.{ext}" for ext in REPORT_FORMATS if ext != "json"), ITEMS_REPORT_FILE, REPORT_FILE)

STAGE = StageSpec("report", run_stage, upstream=lambda cfg: ("evaluate",), files=files, outputs=OUTPUTS, check=check)
